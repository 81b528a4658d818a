"""Where a storage sink's files go: local disk, HDFS or S3, through pyarrow's filesystems.

Why pyarrow.fs and not fsspec: the Parquet writer is pyarrow's already, and pyarrow.fs speaks
local, HDFS (libhdfs) and S3 (the AWS SDK: the standard credential chain, endpoint override for
MinIO and moto, multipart uploads for big objects) with no further dependency; fsspec would
add s3fs/aiobotocore to do the same.

The commit protocol (DESIGN.md §3) is the same on every store: a file is written under a
temporary name, then moved to its committed name. A local or HDFS move is an atomic rename; on
S3 it is a server-side CopyObject (atomic: the committed object appears whole or not at all)
then a delete of the temporary object. Writing the committed key directly would not do on S3:
pyarrow completes a multipart upload when its stream is closed, even after a failed write.

``store.url`` names the root: ``file:///data/exports`` (or a plain path), ``hdfs://nn:8020/data``,
``s3://bucket/prefix``. Confluent's S3 way is accepted too: ``s3.bucket.name`` with ``store.url``
as the endpoint (``http://minio:9000``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import posixpath
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.fs as pafs

from kopycat.api.config import NO_DEFAULT, ConfigDef, ConfigType, Importance, NonEmptyString, Password
from kopycat.api.errors import ConfigError, ConnectError, RetriableError

__all__ = [
    "S3_BUCKET_CONFIG", "S3_ENDPOINT_CONFIG", "S3_REGION_CONFIG", "STORE_CONFIG", "STORE_URL_CONFIG",
    "Store", "StoreLocation", "locate_store", "open_store",
]

log = logging.getLogger(__name__)

STORE_URL_CONFIG: Final = "store.url"
S3_BUCKET_CONFIG: Final = "s3.bucket.name"
S3_REGION_CONFIG: Final = "s3.region"
S3_ENDPOINT_CONFIG: Final = "s3.endpoint.url"
AWS_ACCESS_KEY_CONFIG: Final = "aws.access.key.id"
AWS_SECRET_KEY_CONFIG: Final = "aws.secret.access.key"  # noqa: S105 - a key name

_GROUP: Final = "Storage"

STORE_CONFIG: Final = (
    ConfigDef()
    .define(STORE_URL_CONFIG, ConfigType.STRING, NO_DEFAULT, NonEmptyString(), Importance.HIGH,
            "Where files are written: file:///path (or a path), hdfs://namenode:port/path, "
            "s3://bucket/prefix. With s3.bucket.name set (Confluent's S3 sink), the S3 endpoint URL "
            "instead, e.g. http://minio:9000.", group=_GROUP, order_in_group=1, display_name="Store URL")
    .define(S3_BUCKET_CONFIG, ConfigType.STRING, "", None, Importance.MEDIUM,
            "The S3 bucket (Confluent's key); empty when store.url is s3://bucket/prefix.",
            group=_GROUP, order_in_group=2, display_name="S3 Bucket")
    .define(S3_REGION_CONFIG, ConfigType.STRING, "", None, Importance.MEDIUM,
            "The S3 region; empty: the AWS SDK's (AWS_REGION, profile, us-east-1).",
            group=_GROUP, order_in_group=3, display_name="S3 Region")
    .define(S3_ENDPOINT_CONFIG, ConfigType.STRING, "", None, Importance.LOW,
            "An S3-compatible endpoint for s3:// URLs (MinIO, moto), e.g. http://127.0.0.1:9000.",
            group=_GROUP, order_in_group=4, display_name="S3 Endpoint")
    .define(AWS_ACCESS_KEY_CONFIG, ConfigType.STRING, "", None, Importance.MEDIUM,
            "An AWS access key id; empty: the standard AWS credential chain (environment, profile, "
            "instance role).", group=_GROUP, order_in_group=5, display_name="AWS Access Key ID")
    .define(AWS_SECRET_KEY_CONFIG, ConfigType.PASSWORD, "", None, Importance.MEDIUM,
            "The secret for aws.access.key.id; never logged.", group=_GROUP, order_in_group=6,
            display_name="AWS Secret Access Key")
)
"""The storage keys every file-writing sink shares."""


@dataclass(frozen=True)
class Store:
    """A filesystem and the root directory under it that the sink owns paths below."""

    filesystem: pafs.FileSystem
    root: str
    url: str

    def path(self, *parts: str) -> str:
        return posixpath.join(self.root, *parts) if self.root else posixpath.join(*parts)

    def open_output(self, path: str) -> pa.NativeFile:
        """A stream writing ``path``; parents are created as needed."""
        self._create_parent(path)
        return self._call(f"writing {path}", self.filesystem.open_output_stream, path)

    def write_bytes(self, path: str, data: bytes) -> None:
        with self.open_output(path) as stream:
            stream.write(data)

    def read_bytes(self, path: str) -> bytes:
        with self._call(f"reading {path}", self.filesystem.open_input_stream, path) as stream:
            return bytes(stream.read())

    def move(self, source: str, destination: str) -> None:
        """Commit: rename (local, HDFS) or copy-then-delete (S3, atomic per object)."""
        self._create_parent(destination)
        self._call(f"committing {source} as {destination}", self.filesystem.move, source, destination)

    def delete(self, path: str) -> None:
        """Delete a file; a missing one is fine (recovery may run twice)."""
        with contextlib.suppress(FileNotFoundError):
            self._call(f"deleting {path}", self.filesystem.delete_file, path)

    def exists(self, path: str) -> bool:
        info = self._call(f"looking up {path}", self.filesystem.get_file_info, path)
        return bool(info.type != pafs.FileType.NotFound)

    def list_files(self, directory: str) -> Iterator[str]:
        """Paths of all files below ``directory`` (recursive); nothing when it does not exist."""
        selector = pafs.FileSelector(directory, recursive=True, allow_not_found=True)
        for info in self._call(f"listing {directory}", self.filesystem.get_file_info, selector):
            if info.type == pafs.FileType.File:
                yield info.path

    def _create_parent(self, path: str) -> None:
        parent = posixpath.dirname(path)
        if parent and not isinstance(self.filesystem, pafs.S3FileSystem):
            self._call(f"creating {parent}", self.filesystem.create_dir, parent, recursive=True)

    def _call(self, what: str, function: Any, *args: Any, **kwargs: Any) -> Any:
        """Run a filesystem call; I/O errors become RetriableError naming the store and path."""
        try:
            return function(*args, **kwargs)
        except FileNotFoundError:
            raise
        except (OSError, pa.ArrowException) as exc:
            raise RetriableError(f"Store {self.url}: {what} failed: {exc}") from exc


@dataclass(frozen=True)
class StoreLocation:
    """What ``store.url`` (and the S3 keys) name, checked but not yet connected to."""

    scheme: str          # file, hdfs or s3
    root: str            # local path, HDFS path, or bucket[/prefix]
    url: str
    endpoint: str | None = None
    authority: str = ""  # hdfs://<authority>


def locate_store(props: Mapping[str, Any]) -> StoreLocation:
    """Check ``store.url``; a bad one is a ConfigError naming the key, the value and the fix."""
    url = str(props[STORE_URL_CONFIG])
    bucket = str(props.get(S3_BUCKET_CONFIG) or "")
    parsed = urlparse(url)
    if bucket:
        if parsed.scheme not in ("http", "https"):
            raise ConfigError.for_key(STORE_URL_CONFIG, url,
                                      f"must be the S3 endpoint (http:// or https://) when "
                                      f"{S3_BUCKET_CONFIG} is set; or drop {S3_BUCKET_CONFIG} and "
                                      f"write store.url=s3://{bucket}/prefix")
        return StoreLocation("s3", bucket, f"s3://{bucket}", endpoint=url)
    if parsed.scheme == "s3":
        if not parsed.netloc:
            raise ConfigError.for_key(STORE_URL_CONFIG, url, "names no bucket: write s3://bucket/prefix")
        prefix = parsed.path.strip("/")
        return StoreLocation("s3", f"{parsed.netloc}/{prefix}" if prefix else parsed.netloc, url,
                             endpoint=str(props.get(S3_ENDPOINT_CONFIG) or "") or None)
    if parsed.scheme == "hdfs":
        return StoreLocation("hdfs", parsed.path.rstrip("/") or "/", url, authority=parsed.netloc)
    if parsed.scheme in ("", "file"):
        path = parsed.path if parsed.scheme == "file" else url
        if not path or not os.path.isabs(path):
            raise ConfigError.for_key(STORE_URL_CONFIG, url, "needs an absolute path: file:///data/exports")
        return StoreLocation("file", path.rstrip("/") or "/", url)
    raise ConfigError.for_key(STORE_URL_CONFIG, url, "has an unknown scheme: use file://, hdfs:// or s3://")


def open_store(props: Mapping[str, Any]) -> Store:
    """Connect to the store ``store.url`` names (see :func:`locate_store`)."""
    location = locate_store(props)
    if location.scheme == "s3":
        return Store(_s3_filesystem(props, location.endpoint), location.root, location.url)
    if location.scheme == "hdfs":
        return Store(_hdfs_filesystem(location), location.root, location.url)
    return Store(pafs.LocalFileSystem(), location.root, location.url)


def _s3_filesystem(props: Mapping[str, Any], endpoint: str | None) -> pafs.S3FileSystem:
    options: dict[str, Any] = {}
    region = str(props.get(S3_REGION_CONFIG) or "")
    if region:
        options["region"] = region
    if endpoint:
        parsed = urlparse(endpoint)
        options["endpoint_override"] = parsed.netloc or endpoint
        options["scheme"] = parsed.scheme or "https"
    access_key = str(props.get(AWS_ACCESS_KEY_CONFIG) or "")
    if access_key:
        secret = props.get(AWS_SECRET_KEY_CONFIG)
        secret_text = secret.value() if isinstance(secret, Password) else str(secret or "")
        if not secret_text:
            raise ConfigError.for_key(AWS_SECRET_KEY_CONFIG, "", f"is required with {AWS_ACCESS_KEY_CONFIG}")
        options["access_key"], options["secret_key"] = access_key, secret_text
    return pafs.S3FileSystem(**options)


def _hdfs_filesystem(location: StoreLocation) -> pafs.FileSystem:
    try:
        return pafs.HadoopFileSystem.from_uri(f"hdfs://{location.authority}")
    except (OSError, pa.ArrowException) as exc:
        raise ConnectError(f"Cannot reach HDFS for {STORE_URL_CONFIG}={location.url}: {exc}. pyarrow needs a Hadoop "
                           f"client: set HADOOP_HOME, JAVA_HOME and CLASSPATH=$(hadoop classpath --glob) "
                           f"(or ARROW_LIBHDFS_DIR)") from exc
