"""Where a storage sink's files go: local disk, HDFS or S3. Local through pyarrow.fs, HDFS through
WebHDFS (:mod:`~kopycat.connectors.files.webhdfs_store`, fsspec's client as a pyarrow filesystem),
S3 through boto3.

Why pyarrow.fs: the Parquet writer is pyarrow's already. Why not pyarrow's HadoopFileSystem for
HDFS: it needs libhdfs and a Hadoop installation in the Python process. Why not pyarrow for S3
(:mod:`~kopycat.connectors.files.s3_store`): pyarrow's S3FileSystem has no part size, so
Confluent's ``s3.part.size`` could not be honoured, and its move is one CopyObject, which S3
refuses above 5 GB; boto3 (the ``s3`` extra, imported only for an s3 store) does both.

The commit protocol (DESIGN.md §3) is the same on every store, behind :class:`Store`: a file
is written under a temporary name, then moved to its committed name. A local or HDFS move is an
atomic rename; on S3 it is a server-side copy (atomic: the committed object appears whole or not
at all) then a delete of the temporary object. A temporary name on S3 as well, because a file's
commit belongs to its round (several files, one manifest), not to the end of its write.

:func:`~kopycat.connectors.files.store_factory.open_store` opens the store. ``store.url`` names the
root: ``file:///data/exports`` (or a plain path), ``hdfs://nn:8020/data``, ``s3://bucket/prefix``.
Confluent's S3 way is accepted too: ``s3.bucket.name`` with ``store.url`` as the endpoint
(``http://minio:9000``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import posixpath
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.fs as pafs

from kopycat.api.config import NO_DEFAULT, ConfigDef, ConfigType, Importance, NonEmptyString, Password, Range
from kopycat.api.errors import ConfigError, RetriableError

__all__ = [
    "ArrowStore", "HDFS_WEBHDFS_URL_CONFIG", "S3_BUCKET_CONFIG", "S3_ENDPOINT_CONFIG", "S3_PART_SIZE_CONFIG",
    "S3_REGION_CONFIG", "STORE_CONFIG", "STORE_URL_CONFIG", "Store", "StoreLocation", "locate_store", "s3_key_pair",
]

log = logging.getLogger(__name__)

STORE_URL_CONFIG: Final = "store.url"
S3_BUCKET_CONFIG: Final = "s3.bucket.name"
S3_REGION_CONFIG: Final = "s3.region"
S3_ENDPOINT_CONFIG: Final = "s3.endpoint.url"
AWS_ACCESS_KEY_CONFIG: Final = "aws.access.key.id"
AWS_SECRET_KEY_CONFIG: Final = "aws.secret.access.key"  # noqa: S105 - a key name
S3_PART_SIZE_CONFIG: Final = "s3.part.size"
HDFS_WEBHDFS_URL_CONFIG: Final = "hdfs.webhdfs.url"

S3_MIN_PART_SIZE: Final = 5 * 1024 * 1024
"""S3's smallest part (all but the last part of a multipart upload)."""

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
    .define(S3_PART_SIZE_CONFIG, ConfigType.INT, 25 * 1024 * 1024, Range(min=S3_MIN_PART_SIZE, max=2**31 - 1),
            Importance.HIGH,
            "The part size of S3 multipart uploads, in bytes (Confluent's key and default, 25 MiB): a file "
            "is uploaded in parts of this size as it is written (one PutObject when it is smaller), and "
            "committed by a copy in parts of this size (so files over 5 GB commit). At least 5242880, "
            "S3's smallest part; a task holds about one part in memory per file it writes.",
            group=_GROUP, order_in_group=7, display_name="S3 Part Size")
    .define(HDFS_WEBHDFS_URL_CONFIG, ConfigType.STRING, "", None, Importance.MEDIUM,
            "The NameNode's HTTP address, where WebHDFS answers, for hdfs:// store URLs (the Python "
            "sink writes HDFS through WebHDFS; Spark through the hdfs:// URL itself); empty: the "
            "store.url host on port 9870, e.g. http://namenode:9870.",
            group=_GROUP, order_in_group=8, display_name="WebHDFS URL")
)
"""The storage keys every file-writing sink shares."""


@dataclass(frozen=True)
class Store(ABC):
    """The root directory a sink owns paths below, and the file operations its commit protocol needs.

    The partition writer and recovery see only these methods, so local, HDFS and S3 stores
    behave alike; all are safe to call from several threads.
    """

    root: str
    url: str

    def path(self, *parts: str) -> str:
        return posixpath.join(self.root, *parts) if self.root else posixpath.join(*parts)

    @abstractmethod
    def open_output(self, path: str) -> pa.NativeFile:
        """A stream writing ``path``; parents are created as needed. Use it in a ``with`` block."""

    def write_bytes(self, path: str, data: bytes) -> None:
        with self.open_output(path) as stream:
            stream.write(data)

    @abstractmethod
    def read_bytes(self, path: str) -> bytes:
        """The file's bytes; FileNotFoundError when there is none."""

    @abstractmethod
    def move(self, source: str, destination: str) -> None:
        """Commit ``source`` as ``destination``: it appears whole or not at all."""

    @abstractmethod
    def delete(self, path: str) -> None:
        """Delete a file; a missing one is fine (recovery may run twice)."""

    @abstractmethod
    def exists(self, path: str) -> bool:
        """A file, or a directory, at ``path``."""

    @abstractmethod
    def list_files(self, directory: str) -> Iterator[str]:
        """Paths of all files below ``directory`` (recursive); nothing when it does not exist."""


@dataclass(frozen=True)
class ArrowStore(Store):
    """Local disk or HDFS through a pyarrow filesystem."""

    filesystem: pafs.FileSystem

    def open_output(self, path: str) -> pa.NativeFile:
        self._create_parent(path)
        return self._call(f"writing {path}", self.filesystem.open_output_stream, path)

    def read_bytes(self, path: str) -> bytes:
        with self._call(f"reading {path}", self.filesystem.open_input_stream, path) as stream:
            return bytes(stream.read())

    def move(self, source: str, destination: str) -> None:
        """Commit: an atomic rename."""
        self._create_parent(destination)
        self._call(f"committing {source} as {destination}", self.filesystem.move, source, destination)

    def delete(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._call(f"deleting {path}", self.filesystem.delete_file, path)

    def exists(self, path: str) -> bool:
        info = self._call(f"looking up {path}", self.filesystem.get_file_info, path)
        return bool(info.type != pafs.FileType.NotFound)

    def list_files(self, directory: str) -> Iterator[str]:
        selector = pafs.FileSelector(directory, recursive=True, allow_not_found=True)
        for info in self._file_infos(directory, selector):
            if info.type == pafs.FileType.File:
                yield info.path

    def _file_infos(self, directory: str, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        """List once more when the directory appeared during the listing.

        fsspec's pyarrow handler (the WebHDFS store's) asks ``isdir`` and then ``exists``: a directory
        another writer creates between the two reads as a file and fails with NotADirectoryError.
        The second answer sees the directory whole; a real file there fails again.
        """
        try:
            return self._call(f"listing {directory}", self.filesystem.get_file_info, selector)
        except RetriableError as exc:
            if not isinstance(exc.__cause__, NotADirectoryError):
                raise
        return self._call(f"listing {directory}", self.filesystem.get_file_info, selector)

    def _create_parent(self, path: str) -> None:
        parent = posixpath.dirname(path)
        if parent:
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


def s3_key_pair(values: Mapping[str, Any]) -> tuple[str, str] | None:
    """The configured access key and its secret (plain), or None for the AWS default chain.

    The one reading of the key pair, for the Python sink's boto3 client and the Spark job's s3a
    conf alike, so both refuse a key without its secret the same way.
    """
    access_key = str(values.get(AWS_ACCESS_KEY_CONFIG) or "")
    if not access_key:
        return None
    secret = values.get(AWS_SECRET_KEY_CONFIG)
    secret_text = secret.value() if isinstance(secret, Password) else str(secret or "")
    if not secret_text:
        raise ConfigError.for_key(AWS_SECRET_KEY_CONFIG, "", f"is required with {AWS_ACCESS_KEY_CONFIG}")
    return access_key, secret_text

