"""moto's S3 in server mode on a free loopback port: a real HTTP endpoint for S3 clients.

Clients (boto3, pyarrow's S3FileSystem, Spark's s3a) reach it with `endpoint_url` and any
credentials; buckets live in the server's memory until it stops.
"""

from __future__ import annotations

from typing import Any

from kopycat.dev.ports import free_port, wait_for_port
from kopycat.dev.service import LocalService

ACCESS_KEY = "kopycat-test"
SECRET_KEY = "kopycat-test-secret"  # noqa: S105 - moto accepts any credentials
REGION = "us-east-1"


class LocalS3(LocalService):
    """A moto S3 server owned by this object (context manager or start/stop)."""

    def __init__(self) -> None:
        self.port = 0
        self._server: Any = None

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        from moto.server import ThreadedMotoServer

        self.port = free_port()
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self._server.start()
        if not wait_for_port(self.port, 30):
            raise RuntimeError(f"moto's S3 server did not listen on {self.endpoint_url}")

    def client(self) -> Any:
        """A boto3 S3 client pointed at this server."""
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint_url, region_name=REGION,
                            aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None
