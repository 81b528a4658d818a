"""Open the store ``store.url`` names: local disk and HDFS through pyarrow.fs, S3 through boto3.

The one module that knows every :class:`~kopycat.connectors.files.store.Store` kind. It is apart
from :mod:`~kopycat.connectors.files.store` because the S3 store builds on that module's contract:
``store`` <- ``s3_store`` <- ``store_factory`` keeps the imports one way. boto3 (the ``s3`` extra) is
imported only when an s3 store is opened.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from kopycat.api.errors import ConfigError, ConnectError
from kopycat.connectors.files.store import (
    STORE_CONFIG,
    STORE_URL_CONFIG,
    ArrowStore,
    Store,
    StoreLocation,
    locate_store,
)

__all__ = ["open_store"]


def open_store(props: Mapping[str, Any]) -> Store:
    """Connect to the store ``store.url`` names (see :func:`locate_store`); ``props`` raw or parsed."""
    values = STORE_CONFIG.parse(props)
    location = locate_store(values)
    if location.scheme == "s3":
        try:
            from kopycat.connectors.files.s3_store import open_s3_store
        except ImportError as exc:
            raise ConfigError.for_key(STORE_URL_CONFIG, location.url,
                                      f"needs boto3, which is not installed ({exc}): pip install "
                                      f"'kopycat[s3]'") from exc
        return open_s3_store(values, location)
    if location.scheme == "hdfs":
        return ArrowStore(location.root, location.url, _hdfs_filesystem(location))
    return ArrowStore(location.root, location.url, pafs.LocalFileSystem())


def _hdfs_filesystem(location: StoreLocation) -> pafs.FileSystem:
    try:
        return pafs.HadoopFileSystem.from_uri(f"hdfs://{location.authority}")
    except (OSError, pa.ArrowException) as exc:
        raise ConnectError(f"Cannot reach HDFS for {STORE_URL_CONFIG}={location.url}: {exc}. pyarrow needs a Hadoop "
                           f"client: set HADOOP_HOME, JAVA_HOME and CLASSPATH=$(hadoop classpath --glob) "
                           f"(or ARROW_LIBHDFS_DIR)") from exc
