"""Connectors between files and Kafka, after Kafka's connect-file module.

:class:`FileStreamSourceConnector` streams the lines of one file (Kafka's ``file``) or of every
file matching glob patterns (``files``, KIP-26's log import) into a topic, with Kafka Connect's
offsets (``{"filename": path}`` -> ``{"position": bytes}``), so either engine can resume the
other's work. :class:`FileStreamSinkConnector` appends record values to a file, one per line.

:class:`FileSinkConnector` (Confluent's HDFS and S3 sinks) exports topics as Parquet or JSON
files to local disk, HDFS or S3, partitioned for query engines and committed exactly once.
It is imported lazily (it needs pyarrow): ``kopycat.connectors.files.file_sink``.
"""

from __future__ import annotations

from kopycat.connectors.files.filestream_sink import FileStreamSinkConnector, FileStreamSinkTask
from kopycat.connectors.files.filestream_source import (
    FileStreamSourceConnector,
    FileStreamSourceTask,
)

__all__ = [
    "FileStreamSinkConnector", "FileStreamSinkTask", "FileStreamSourceConnector",
    "FileStreamSourceTask",
]
