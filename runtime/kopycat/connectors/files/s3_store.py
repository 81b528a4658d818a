"""The storage sink's S3 store, through boto3: writes in ``s3.part.size`` parts, commits of any size.

Why boto3 here when local and HDFS stores use pyarrow.fs: pyarrow's S3FileSystem has no part size,
so Confluent's ``s3.part.size`` could not be honoured, and its move is a single CopyObject, which
S3 refuses for objects over 5 GB, so a big file could never be committed. boto3 gives both: plain
UploadPart calls for writes, and its managed copy (UploadPartCopy in parts) for commits.

Followed: Confluent's ``io.confluent.connect.s3.storage.S3OutputStream`` (kafka-connect-storage-cloud):
a buffer of one part, each full part uploaded as it fills, the upload completed on a clean commit
and aborted otherwise, so a half-written file never appears. Unlike Confluent, a file smaller than
one part is sent with one PutObject: most sink files are, and that saves two round trips.

Paths are ``bucket/key``, as pyarrow names S3 files, so the partition writer and recovery see
the same paths on every store. A commit copies the temporary object to its committed key (the
committed object appears whole or not at all, multipart copy included), then deletes the temporary.
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final

import boto3
import botocore.exceptions as boto_errors
import pyarrow as pa
from boto3.s3.transfer import TransferConfig
from botocore.config import Config

from kopycat.api.errors import ConnectError, RetriableError
from kopycat.connectors.files.store import (
    AWS_ACCESS_KEY_CONFIG,
    AWS_SECRET_KEY_CONFIG,
    S3_PART_SIZE_CONFIG,
    S3_REGION_CONFIG,
    Store,
    StoreLocation,
    s3_key_pair,
)

__all__ = ["S3MultipartOutput", "S3OutputFile", "S3Store", "open_s3_store"]

log = logging.getLogger(__name__)

_RETRIABLE_CODES: Final = frozenset({
    "SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException",
    "RequestTimeout", "RequestTimeoutException", "InternalError", "ServiceUnavailable", "OperationAborted",
})
"""S3 error codes worth another try (as botocore's standard retry mode classifies them)."""

_NOT_FOUND_CODES: Final = frozenset({"NoSuchKey", "NotFound", "404"})

_CHECKSUM: Final = "CRC32"
"""Part checksums as boto3's own transfers send them (s3transfer's default algorithm)."""


@dataclass(frozen=True)
class S3Store(Store):
    """One bucket (and prefix) through a boto3 client; the client is thread-safe, so is the store."""

    client: Any
    part_size: int

    def open_output(self, path: str) -> S3OutputFile:
        """A stream writing ``path``: one PutObject, or a multipart upload once it passes a part.

        Closed cleanly, the object appears; left by an exception (``with``) or after a failed
        write, the upload is aborted and nothing appears.
        """
        bucket, key = self._split(path)
        return S3OutputFile(S3MultipartOutput(self, bucket, key), mode="w")

    def read_bytes(self, path: str) -> bytes:
        bucket, key = self._split(path)
        with self._errors(f"reading {path}"):
            return bytes(self.client.get_object(Bucket=bucket, Key=key)["Body"].read())

    def move(self, source: str, destination: str) -> None:
        """Commit: boto3's managed copy (UploadPartCopy in parts above one part, so past 5 GB), then delete."""
        (source_bucket, source_key), (bucket, key) = self._split(source), self._split(destination)
        config = TransferConfig(multipart_threshold=self.part_size, multipart_chunksize=self.part_size)
        with self._errors(f"committing {source} as {destination}"):
            self.client.copy({"Bucket": source_bucket, "Key": source_key}, bucket, key, Config=config)
        self.delete(source)

    def delete(self, path: str) -> None:
        """Delete an object; a missing one is fine (S3 says so with success, and recovery may run twice)."""
        bucket, key = self._split(path)
        with self._errors(f"deleting {path}"):
            self.client.delete_object(Bucket=bucket, Key=key)

    def exists(self, path: str) -> bool:
        """An object at ``path``, or any object below it (a "directory"), as pyarrow's S3 answers."""
        bucket, key = self._split(path)
        with self._errors(f"looking up {path}"):
            try:
                if key:
                    self.client.head_object(Bucket=bucket, Key=key)
                    return True
            except boto_errors.ClientError as exc:
                if _error_code(exc) not in _NOT_FOUND_CODES:
                    raise
            below = self.client.list_objects_v2(Bucket=bucket, Prefix=_as_prefix(key), MaxKeys=1)
            return bool(below.get("KeyCount", 0))

    def list_files(self, directory: str) -> Iterator[str]:
        """Paths of all objects below ``directory`` (recursive); nothing when none is there."""
        bucket, key = self._split(directory)
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=_as_prefix(key))
        with self._errors(f"listing {directory}"):
            for page in pages:
                for item in page.get("Contents", ()):
                    if not item["Key"].endswith("/"):  # a "directory marker", as pyarrow skips it
                        yield f"{bucket}/{item['Key']}"

    def _split(self, path: str) -> tuple[str, str]:
        bucket, _, key = path.partition("/")
        return bucket, key

    def _errors(self, what: str) -> contextlib.AbstractContextManager[None]:
        return _translated(self.url, what)


@contextlib.contextmanager
def _translated(url: str, what: str) -> Iterator[None]:
    """Turn boto3's errors into Kopycat's, naming the store and the path; secrets never appear.

    Throttling, connection trouble and 5xx are RetriableError (the task backs off); a missing
    object is FileNotFoundError, as pyarrow raises it; the rest (access denied, no such bucket,
    no credentials) is ConnectError, since trying again will not help.
    """
    try:
        yield
    except (boto_errors.BotoCoreError, boto_errors.ClientError) as exc:
        raise _translate(f"Store {url}: {what} failed: {exc}", exc) from exc


def _translate(message: str, exc: Exception) -> Exception:
    if isinstance(exc, boto_errors.ClientError):
        code = _error_code(exc)
        if code in _NOT_FOUND_CODES:
            return FileNotFoundError(message)
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        if code in _RETRIABLE_CODES or status >= 500:
            return RetriableError(message)
        if code == "NoSuchBucket":
            return ConnectError(f"{message}. Create the bucket, or fix store.url / s3.bucket.name")
        return ConnectError(message)
    if isinstance(exc, boto_errors.ConnectionError | boto_errors.HTTPClientError):
        return RetriableError(message)
    if isinstance(exc, boto_errors.NoCredentialsError | boto_errors.PartialCredentialsError):
        return ConnectError(f"{message}. Set {AWS_ACCESS_KEY_CONFIG} and {AWS_SECRET_KEY_CONFIG}, or give the "
                            f"worker credentials the AWS SDK finds (AWS_ACCESS_KEY_ID, a profile, a role)")
    return ConnectError(message)


class S3MultipartOutput(io.RawIOBase):
    """The raw writer under :class:`S3OutputFile`: at most one part in memory.

    A full part is uploaded only once a further byte arrives, so a file of at most one part is
    one PutObject. ``close()`` completes (or puts) the object; ``abort()`` drops it. After any
    failed call the writer is broken and ``close()`` aborts. Not thread-safe: one writer per file.
    """

    def __init__(self, store: S3Store, bucket: str, key: str) -> None:
        super().__init__()
        self.store, self.bucket, self.key = store, bucket, key
        self.upload_id: str | None = None
        self.parts: list[dict[str, Any]] = []
        self.buffer = bytearray()
        self.broken = False

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:  # any buffer: pyarrow passes bytes
        if self.closed or self.broken:
            raise ValueError(f"S3 object {self.bucket}/{self.key}: write after close or a failed write")
        view = memoryview(data).cast("B")
        size, part_size = len(view), self.store.part_size
        while view:
            if len(self.buffer) == part_size:
                self._guarded(self._upload_part)
            take = part_size - len(self.buffer)
            self.buffer += view[:take]
            view = view[take:]
        return size

    def close(self) -> None:
        """Complete the object (a clean end), or abort if a write failed."""
        if self.closed:
            return
        if self.broken:
            self.abort()
            return
        try:
            self._guarded(self._finish)
        finally:
            self.buffer = bytearray()
            super().close()

    def abort(self) -> None:
        """Drop the object: abort the multipart upload (if any), keep nothing. Never raises."""
        if self.closed:
            return
        self.broken = True
        self.buffer = bytearray()
        if self.upload_id is not None:
            try:
                self.store.client.abort_multipart_upload(Bucket=self.bucket, Key=self.key, UploadId=self.upload_id)
            except (boto_errors.BotoCoreError, boto_errors.ClientError) as exc:
                # Still no object appears; the open upload holds storage until a lifecycle rule
                # (AbortIncompleteMultipartUpload) reclaims it.
                log.warning("Store %s: aborting the upload of %s/%s failed: %s", self.store.url, self.bucket,
                            self.key, exc)
        super().close()

    def __del__(self) -> None:
        """Dropped without close(): abort, never complete (io.IOBase's finalizer would close)."""
        with contextlib.suppress(Exception):
            self.abort()

    def _guarded(self, step: Any) -> None:
        try:
            with _translated(self.store.url, f"writing {self.bucket}/{self.key}"):
                step()
        except BaseException:
            self.abort()
            raise

    def _upload_part(self) -> None:
        client = self.store.client
        if self.upload_id is None:
            self.upload_id = client.create_multipart_upload(Bucket=self.bucket, Key=self.key,
                                                            ChecksumAlgorithm=_CHECKSUM)["UploadId"]
        number = len(self.parts) + 1
        response = client.upload_part(Bucket=self.bucket, Key=self.key, UploadId=self.upload_id, PartNumber=number,
                                      Body=self.buffer, ChecksumAlgorithm=_CHECKSUM)
        part = {"PartNumber": number, "ETag": response["ETag"]}
        if f"Checksum{_CHECKSUM}" in response:
            part[f"Checksum{_CHECKSUM}"] = response[f"Checksum{_CHECKSUM}"]
        self.parts.append(part)
        self.buffer = bytearray()

    def _finish(self) -> None:
        if self.upload_id is None:
            self.store.client.put_object(Bucket=self.bucket, Key=self.key, Body=self.buffer)
            return
        self._upload_part()
        self.store.client.complete_multipart_upload(Bucket=self.bucket, Key=self.key, UploadId=self.upload_id,
                                                    MultipartUpload={"Parts": self.parts})


class S3OutputFile(pa.PythonFile):
    """What pyarrow's Parquet writer, the JSON writer and fastavro write to.

    A ``with`` block left by an exception aborts the upload before closing: pyarrow's own
    ``__exit__`` just closes, which here would complete a half-written file.
    """

    def __init__(self, raw: S3MultipartOutput, mode: str = "w") -> None:
        self.raw = raw  # pyarrow keeps its handle out of reach of Python code

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc is not None:
            self.raw.abort()
        super().__exit__(kind, exc, tb)


def open_s3_store(values: Mapping[str, Any], location: StoreLocation) -> S3Store:
    """A store on ``location`` (an s3 one) with parsed store ``values``; connects lazily."""
    return S3Store(root=location.root, url=location.url, client=_client(values, location.endpoint),
                   part_size=int(values[S3_PART_SIZE_CONFIG]))


def _client(values: Mapping[str, Any], endpoint: str | None) -> Any:
    """A boto3 S3 client: the configured key pair, else the standard AWS chain; the secret stays in boto3."""
    access_key, secret_text = s3_key_pair(values) or (None, None)
    session = boto3.session.Session(aws_access_key_id=access_key, aws_secret_access_key=secret_text,
                                    region_name=str(values.get(S3_REGION_CONFIG) or "") or None)
    # Path-style addressing for an endpoint override (MinIO, moto), as pyarrow's S3FileSystem did.
    config = Config(retries={"mode": "standard"}, s3={"addressing_style": "path"} if endpoint else None)
    if endpoint and "://" not in endpoint:
        endpoint = f"https://{endpoint}"
    log.info("S3 store: endpoint %s, region %s, credentials from %s", endpoint or "AWS",
             session.region_name or "the AWS default", AWS_ACCESS_KEY_CONFIG if access_key else "the AWS chain")
    return session.client("s3", endpoint_url=endpoint or None, config=config)


def _error_code(exc: boto_errors.ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code") or "")


def _as_prefix(key: str) -> str:
    return f"{key.rstrip('/')}/" if key else ""
