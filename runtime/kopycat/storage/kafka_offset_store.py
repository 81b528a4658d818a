"""Source offsets on a compacted Kafka topic, shared with Kafka Connect (``connect-offsets``).

Follows Kafka Connect's ``KafkaOffsetBackingStore``: the topic is a
:class:`~kopycat.storage.kafka_based_log.KafkaBasedLog` (created compacted if missing, refused
if it exists but is not compact-only, read from the beginning to its end offsets on start, written
with the Java partitioner's placement so that a Kafka Connect worker reading the same topic finds
the offsets). Every record read is applied to an
:class:`~kopycat.storage.offset_backing_store.OffsetTable`, keeping the last value per key
(tombstones delete: compaction may not have run yet), and so is every write once acknowledged.

The table is brought up to date on ``start`` and, by default, on every ``get`` (Kafka's
``readToEnd`` before each read, which Kafka also does in ``get``): bounded runs read offsets once,
at start; a long-running worker reads them when a task (re)starts, which is when ``get`` is called.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from concurrent.futures import Future
from typing import Any, NamedTuple

from kopycat.api.errors import ConnectError
from kopycat.kafka import worker_client_config
from kopycat.storage.kafka_based_log import KafkaBasedLog, worker_bootstrap_servers
from kopycat.storage.kafka_topic_store import KafkaTopicStore
from kopycat.storage.offset_backing_store import OffsetBackingStore, OffsetTable
from kopycat.storage.offset_codec import default_partition
from kopycat.storage.worker_storage_config import (
    KAFKA_OFFSET_STORE_CONFIG,
    OFFSET_STORAGE_PARTITIONS_CONFIG,
    OFFSET_STORAGE_REPLICATION_FACTOR_CONFIG,
    OFFSET_STORAGE_TOPIC_CONFIG,
    OFFSET_STORAGE_TOPIC_DEFAULT,
)
from kopycat.storage.write_completion import SetCallback

__all__ = ["KafkaOffsetStore", "OffsetRecord"]

log = logging.getLogger(__name__)


class OffsetRecord(NamedTuple):
    """One offsets-topic record for the engine to produce inside its own transaction.

    ``partition`` is where a Java producer would put ``key``: produce to it explicitly, so the
    placement does not depend on the transactional producer's partitioner setting.
    """

    topic: str
    partition: int
    key: bytes
    value: bytes | None


class KafkaOffsetStore(KafkaTopicStore, OffsetBackingStore):
    """Offsets on the ``offset.storage.topic`` topic (Kafka Connect's ``KafkaOffsetBackingStore``).

    ``client_config``, ``producer_config`` and ``consumer_config`` are the
    :class:`~kopycat.storage.kafka_based_log.KafkaBasedLog`'s (``client.id`` defaults to
    ``kopycat-offsets``). Thread-safety: all methods may be called from any thread.
    """

    def __init__(self, bootstrap_servers: str, *, topic: str = OFFSET_STORAGE_TOPIC_DEFAULT,
                 partitions: int = 25, replication_factor: int = 3,
                 client_config: Mapping[str, Any] | None = None,
                 producer_config: Mapping[str, Any] | None = None,
                 consumer_config: Mapping[str, Any] | None = None,
                 read_to_end_on_get: bool = True, timeout_s: float = 60.0) -> None:
        self.topic = topic
        self.read_to_end_on_get = read_to_end_on_get
        self.table = OffsetTable()
        self.topic_log = KafkaBasedLog(
            bootstrap_servers, topic=topic, partitions=partitions, replication_factor=replication_factor,
            topic_config=OFFSET_STORAGE_TOPIC_CONFIG, purpose="source connector offsets",
            consumed_callback=self.table.apply, client_id="kopycat-offsets", client_config=client_config,
            producer_config=producer_config, consumer_config=consumer_config, timeout_s=timeout_s)

    @classmethod
    def from_config(cls, props: Mapping[str, Any], **kwargs: Any) -> KafkaOffsetStore:
        """A store from worker properties: ``bootstrap.servers`` and the ``offset.storage.*`` keys."""
        values = KAFKA_OFFSET_STORE_CONFIG.parse(props)
        kwargs.setdefault("client_config", worker_client_config(props))
        return cls(worker_bootstrap_servers(props, "the Kafka offset store"),
                   topic=values[OFFSET_STORAGE_TOPIC_CONFIG],
                   partitions=values[OFFSET_STORAGE_PARTITIONS_CONFIG],
                   replication_factor=values[OFFSET_STORAGE_REPLICATION_FACTOR_CONFIG], **kwargs)

    def start(self) -> None:
        super().start()
        log.info("Read %d offsets from topic '%s'", len(self.table), self.topic)

    def read_to_end(self, timeout_s: float | None = None) -> None:
        """Bring the table up to date with the topic's end offsets as of now (Kafka's ``readToEnd``).

        A store made with ``read_to_end_on_get=False`` sees offsets written elsewhere only after this.
        """
        self.topic_log.read_to_end(timeout_s)

    def get(self, keys: Collection[bytes]) -> dict[bytes, bytes | None]:
        if self.read_to_end_on_get:
            self.read_to_end()
        return self.table.get(keys)

    def connector_partitions(self, connector: str) -> list[dict[str, Any] | None]:
        if self.read_to_end_on_get:
            self.read_to_end()
        return self.table.connector_partitions(connector)

    def set(self, values: Mapping[bytes, bytes | None],
            callback: SetCallback | None = None) -> Future[None]:
        """Produce ``values``; each is applied to the table once acknowledged (acks=all: it is in the log)."""
        return self.topic_log.send(values, callback, on_acknowledged=self.table.apply)

    def offset_records(self, values: Mapping[bytes, bytes | None]) -> list[OffsetRecord]:
        """The records that store ``values``, for the engine's transactional producer.

        Exactly-once sources write offsets in the same transaction as the data; after the commit,
        pass the same values to :meth:`record_committed` (a later read to the end would find them
        anyway). ``commit_transaction`` returns before the commit markers are written, and until
        they are the last stable offset hides the transaction from this store's reads: a task
        resuming exactly-once must call ``init_transactions`` (which waits for its previous
        transaction to complete) before reading its offsets, as Kafka Connect's
        ``ExactlyOnceWorkerSourceTask`` does.
        """
        partitions = self.topic_log.num_partitions
        if not partitions:
            raise ConnectError("The KafkaOffsetStore is not started")
        return [OffsetRecord(self.topic, default_partition(key, partitions), key, value)
                for key, value in values.items()]

    def record_committed(self, values: Mapping[bytes, bytes | None]) -> None:
        """Note offsets the engine committed in its own transaction."""
        self.table.apply_all(values)
