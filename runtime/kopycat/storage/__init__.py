"""Where the engine keeps its state: source offsets, connector configurations and statuses.

Each follows its Kafka Connect ``connect/runtime`` storage class:

- offsets: :class:`OffsetBackingStore` with :class:`MemoryOffsetStore`, :class:`FileOffsetStore`
  (standalone) and :class:`KafkaOffsetStore` (the ``connect-offsets`` topic, readable by Kafka
  Connect itself), wrapped per connector by :class:`OffsetStorageReaderImpl` and
  :class:`OffsetStorageWriter`; the byte format lives in :mod:`kopycat.storage.offset_codec`;
- connector and task configurations and target states:
  :mod:`kopycat.storage.config_backing_store` (the ``connect-configs`` topic);
- connector, task and topic statuses: :mod:`kopycat.storage.status_backing_store` (the
  ``connect-status`` topic), with the records in :mod:`kopycat.storage.connector_status`.

The three Kafka stores each compose one :class:`~kopycat.storage.kafka_based_log.KafkaBasedLog`;
their worker keys are defined in :mod:`kopycat.storage.worker_storage_config`.
"""

from __future__ import annotations

from kopycat.storage.file_offset_store import FileOffsetStore
from kopycat.storage.kafka_offset_store import KafkaOffsetStore, OffsetRecord
from kopycat.storage.offset_backing_store import MemoryOffsetStore, OffsetBackingStore
from kopycat.storage.offset_storage_reader_writer import OffsetStorageReaderImpl, OffsetStorageWriter

__all__ = [
    "FileOffsetStore", "KafkaOffsetStore", "MemoryOffsetStore", "OffsetBackingStore", "OffsetRecord",
    "OffsetStorageReaderImpl", "OffsetStorageWriter",
]
