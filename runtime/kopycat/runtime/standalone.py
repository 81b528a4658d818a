"""Standalone mode: one process runs the given connectors until told to stop.

Kafka's ``ConnectStandalone``: the worker properties (``StandaloneConfig``, with
``offset.storage.file.filename`` for the source offsets) and one file per connector. SIGTERM or
Ctrl-C stops every task, which commits its offsets first, so a restart resumes where it ended.
With ``metrics.port`` (Kopycat's key) the worker's metrics are served on ``127.0.0.1:<port>/metrics``;
with ``openlineage.transport.type`` each connector's OpenLineage run events are sent
(:mod:`kopycat.runtime.lineage_events`).
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kopycat.api.errors import ConfigError
from kopycat.runtime.config_transformer import resolve_worker_config
from kopycat.runtime.lineage_events import LineageEmitter
from kopycat.runtime.otel_metrics import start_otel_metrics
from kopycat.runtime.prometheus_metrics import start_metrics_server
from kopycat.runtime.worker import Worker
from kopycat.runtime.worker_config import (
    EXACTLY_ONCE_SOURCE_SUPPORT_CONFIG,
    METRICS_PORT_CONFIG,
    PLUGIN_PATH_CONFIG,
    STANDALONE_CONFIG,
    WORKER_CONFIG,
)
from kopycat.storage.file_offset_store import FileOffsetStore
from kopycat.storage.kafka_offset_store import KafkaOffsetStore
from kopycat.storage.offset_backing_store import OffsetBackingStore
from kopycat.storage.worker_storage_config import OFFSET_STORAGE_FILE_FILENAME_CONFIG

__all__ = ["add_plugin_path", "run_standalone"]

log = logging.getLogger(__name__)


def add_plugin_path(worker_props: Mapping[str, Any]) -> None:
    """Put ``plugin.path`` directories on the import path, where connector modules are found."""
    for directory in WORKER_CONFIG.parse(worker_props)[PLUGIN_PATH_CONFIG]:
        if not Path(directory).is_dir():
            raise ConfigError.for_key(PLUGIN_PATH_CONFIG, directory, "is not a directory")
        if directory not in sys.path:
            sys.path.append(directory)


def _offset_store(worker_props: Mapping[str, Any]) -> OffsetBackingStore:
    """The offsets file, as Kafka's standalone worker; or, beyond Kafka, the offsets topic when
    exactly-once source support is enabled (transactions need offsets on Kafka)."""
    eos = str(worker_props.get(EXACTLY_ONCE_SOURCE_SUPPORT_CONFIG, "")).lower() == "enabled"
    if eos:
        return KafkaOffsetStore.from_config(worker_props)
    if not worker_props.get(OFFSET_STORAGE_FILE_FILENAME_CONFIG):
        raise ConfigError(f"Standalone mode keeps source offsets in a file: set "
                          f"{OFFSET_STORAGE_FILE_FILENAME_CONFIG}=/path/to/connect.offsets in the worker "
                          f"properties (or {EXACTLY_ONCE_SOURCE_SUPPORT_CONFIG}=enabled to keep them on the "
                          f"offset.storage.topic)", key=OFFSET_STORAGE_FILE_FILENAME_CONFIG)
    return FileOffsetStore(STANDALONE_CONFIG.parse(worker_props)[OFFSET_STORAGE_FILE_FILENAME_CONFIG])


def run_standalone(worker_props: Mapping[str, Any], connectors: Iterable[Mapping[str, Any]],
                   stop: threading.Event) -> Worker:
    """Start the connectors and block until ``stop`` is set; returns the stopped worker.

    Raises ConfigError (before anything runs) for a bad worker or connector config. The worker's
    placeholders are resolved here, before its clients start (connectors' when their tasks start).
    """
    worker_props = resolve_worker_config(worker_props)
    add_plugin_path(worker_props)
    lineage = LineageEmitter.from_worker_props(worker_props)
    worker = Worker(worker_props, _offset_store(worker_props), run_listener=lineage)
    port = WORKER_CONFIG.parse(worker_props)[METRICS_PORT_CONFIG]
    server = start_metrics_server(worker.metrics, port) if port else None
    otel = start_otel_metrics(worker.metrics)
    worker.start()
    try:
        for props in connectors:
            worker.add_connector(props)
        log.info("Kopycat standalone worker running %s; stop with Ctrl-C or SIGTERM",
                 ", ".join(worker.connectors()))
        stop.wait()
    finally:
        log.info("Stopping: tasks commit their offsets")
        worker.stop()
        if server is not None:
            server.shutdown()
        if otel is not None:
            otel.shutdown()
        if lineage is not None:
            lineage.close()
    return worker
