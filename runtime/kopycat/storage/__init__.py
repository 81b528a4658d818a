"""Where the engine keeps its state: source offsets (and, later, connector configs and status).

Offsets follow Kafka Connect's ``connect/runtime`` storage classes:
:class:`OffsetBackingStore` with :class:`MemoryOffsetStore`, :class:`FileOffsetStore` (standalone)
and :class:`KafkaOffsetStore` (the ``connect-offsets`` topic, readable by Kafka Connect itself),
wrapped per connector by :class:`OffsetStorageReaderImpl` and :class:`OffsetStorageWriter`.
The byte format lives in :mod:`kopycat.storage.offset_codec`.
"""

from __future__ import annotations

from kopycat.storage.file_offset_store import FileOffsetStore
from kopycat.storage.kafka_offset_store import KafkaOffsetStore, OffsetRecord
from kopycat.storage.offset_storage import OffsetStorageReaderImpl, OffsetStorageWriter
from kopycat.storage.offset_store import MemoryOffsetStore, OffsetBackingStore

__all__ = [
    "FileOffsetStore", "KafkaOffsetStore", "MemoryOffsetStore", "OffsetBackingStore", "OffsetRecord",
    "OffsetStorageReaderImpl", "OffsetStorageWriter",
]
