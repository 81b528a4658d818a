"""An authenticating gate on loopback in front of the session's Apicurio registry.

Apicurio's own authentication needs a full OIDC server, so a test puts this gate in front of it: a
request whose headers ``admits`` refuses is answered 401 (as a secured registry answers), the others
are forwarded. It counts what it let through and what it refused, and keeps the headers it admitted.
"""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kopycat.dev.schema_registry import CCOMPAT_PATH

__all__ = ["RegistryGate", "registry_gate"]


class RegistryGate(ThreadingHTTPServer):
    """The gate of the module docstring before ``upstream`` (the registry's base URL)."""

    def __init__(self, upstream: str, admits: Callable[[Message], bool]) -> None:
        super().__init__(("127.0.0.1", 0), _GateHandler)
        self.upstream = upstream
        self.admits = admits
        self.passed = 0
        self.refused = 0
        self.admitted: list[Message] = []

    @property
    def url(self) -> str:
        """Confluent's API through the gate."""
        return f"http://127.0.0.1:{self.server_address[1]}{CCOMPAT_PATH}"


class _GateHandler(BaseHTTPRequestHandler):
    server: RegistryGate

    def _forward(self) -> None:
        if not self.server.admits(self.headers):
            self.server.refused += 1
            self._reply(401, b'{"error_code": 401, "message": "Unauthorized"}')
            return
        self.server.passed += 1
        self.server.admitted.append(self.headers)
        length = int(self.headers.get("Content-Length") or 0)
        request = urllib.request.Request(self.server.upstream + self.path, data=self.rfile.read(length) or None,
                                         method=self.command, headers={"Content-Type": self.headers["Content-Type"]
                                                                       or "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                self._reply(answer.status, answer.read())
        except urllib.error.HTTPError as exc:
            self._reply(exc.code, exc.read())

    def _reply(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _forward

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - BaseHTTPRequestHandler's
        """Quiet."""


@contextmanager
def registry_gate(schema_registry: str, admits: Callable[[Message], bool]) -> Iterator[RegistryGate]:
    """A running gate before the session registry whose ccompat URL is ``schema_registry``."""
    server = RegistryGate(schema_registry.removesuffix(CCOMPAT_PATH), admits)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
