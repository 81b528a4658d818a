"""Open the store ``store.url`` names: local disk through pyarrow.fs, HDFS through WebHDFS, S3 through boto3.

The one module that knows every :class:`~kopycat.connectors.files.store.Store` kind. It is apart
from :mod:`~kopycat.connectors.files.store` because the S3 store builds on that module's contract:
``store`` <- ``s3_store`` <- ``store_factory`` keeps the imports one way. boto3 (the ``s3`` extra) is
imported only when an s3 store is opened, fsspec (the ``hdfs`` extra) only when an hdfs one is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow.fs as pafs

from kopycat.api.errors import ConfigError
from kopycat.connectors.files.store import STORE_CONFIG, STORE_URL_CONFIG, ArrowStore, Store, locate_store

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
        try:
            from kopycat.connectors.files.webhdfs_store import open_webhdfs_store
        except ImportError as exc:
            raise ConfigError.for_key(STORE_URL_CONFIG, location.url,
                                      f"needs fsspec and requests (WebHDFS), which are not installed ({exc}): "
                                      f"pip install 'kopycat[hdfs]'") from exc
        return open_webhdfs_store(values, location)
    return ArrowStore(location.root, location.url, pafs.LocalFileSystem())

