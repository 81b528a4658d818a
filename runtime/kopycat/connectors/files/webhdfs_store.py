"""HDFS for the storage sink through WebHDFS, the NameNode's REST API (fsspec's client).

Why WebHDFS and not pyarrow's ``HadoopFileSystem``: pyarrow reaches HDFS through libhdfs, a JNI
library that needs a Hadoop installation (``libhdfs.so``, ``HADOOP_HOME``, the Hadoop class path)
and a JVM inside the Python process; WebHDFS needs an HTTP client and the NameNode's HTTP port.
Confluent's HDFS connector talks RPC through the Java client; the files and their names are the
same either way, and Spark writes the same store through its own Hadoop client.

The store is an :class:`~kopycat.connectors.files.store.ArrowStore` over fsspec's ``WebHDFS``
wrapped as a pyarrow filesystem, so the commit protocol is the local one. One difference is
checked here: a WebHDFS ``RENAME`` that cannot happen (the source gone, the destination taken)
answers ``{"boolean": false}`` instead of failing, so :class:`CheckedWebHdfs` turns that answer
into an error; a commit that silently did nothing would lose a file.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlparse

import pyarrow.fs as pafs
from fsspec.implementations.webhdfs import WebHDFS

from kopycat.api.errors import ConfigError
from kopycat.connectors.files.store import HDFS_WEBHDFS_URL_CONFIG, ArrowStore, StoreLocation

__all__ = ["DEFAULT_WEBHDFS_PORT", "CheckedWebHdfs", "open_webhdfs_store", "webhdfs_address"]

DEFAULT_WEBHDFS_PORT: Final = 9870
"""Hadoop 3's NameNode HTTP port (``dfs.namenode.http-address``)."""


class CheckedWebHdfs(WebHDFS):  # type: ignore[misc]
    """fsspec's WebHDFS client whose ``mv`` fails when the NameNode refused the rename."""

    def mv(self, path1: str, path2: str, **kwargs: Any) -> None:
        response = self._call("RENAME", method="put", path=path1, destination=path2)
        if not response.json().get("boolean"):
            raise OSError(f"WebHDFS refused to rename {path1} to {path2} (the source is missing or the "
                          f"destination exists)")


def webhdfs_address(values: Mapping[str, Any], location: StoreLocation) -> tuple[str, int]:
    """The NameNode's HTTP host and port: ``hdfs.webhdfs.url``, else the ``hdfs://`` host on 9870."""
    configured = str(values.get(HDFS_WEBHDFS_URL_CONFIG) or "")
    if configured:
        parsed = urlparse(configured)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ConfigError.for_key(HDFS_WEBHDFS_URL_CONFIG, configured,
                                      "must be the NameNode's HTTP address, e.g. http://namenode:9870")
        return parsed.hostname, parsed.port or DEFAULT_WEBHDFS_PORT
    host = urlparse(f"hdfs://{location.authority}").hostname
    if not host:
        raise ConfigError.for_key("store.url", location.url, "names no NameNode: write hdfs://namenode:8020/path")
    return host, DEFAULT_WEBHDFS_PORT


def open_webhdfs_store(values: Mapping[str, Any], location: StoreLocation) -> ArrowStore:
    """The store below ``location.root`` on the HDFS ``location`` names, as user ``$HADOOP_USER_NAME``
    (else the OS user), as Hadoop's client picks its simple-auth user."""
    host, port = webhdfs_address(values, location)
    https = str(values.get(HDFS_WEBHDFS_URL_CONFIG) or "").startswith("https")
    client = CheckedWebHdfs(host=host, port=port, user=os.environ.get("HADOOP_USER_NAME") or getpass.getuser(),
                            use_https=https)
    return ArrowStore(location.root, location.url, pafs.PyFileSystem(pafs.FSSpecHandler(client)))
