"""Source offsets on a compacted Kafka topic, shared with Kafka Connect (``connect-offsets``).

Follows Kafka Connect's ``KafkaOffsetBackingStore`` (and the ``KafkaBasedLog`` under it): the
topic is created compacted if missing (and refused if it exists but is not compact-only), read
from the beginning to its end offsets on start, keeping the last value per key (tombstones
delete: compaction may not have run yet); writes are produced with the Java partitioner's
placement so that a Kafka Connect worker reading the same topic finds them.

Differences from Kafka Connect, and why:

- no background consumer thread: the table is brought up to date on ``start`` and, by default,
  on every ``get`` (Kafka's ``readToEnd`` before each read, which Kafka also does in ``get``).
  Bounded runs read offsets once, at start; a long-running worker reads them only when a task
  (re)starts, which is when ``get`` is called;
- the producer is idempotent (Kafka Connect turns it off to support brokers older than 2.8,
  which need an IDEMPOTENT_WRITE ACL); Kopycat targets Kafka 4.x (DESIGN.md §5), and
  idempotence keeps retried offset writes in order;
- the consumer always reads ``read_committed`` (Kafka does when exactly-once source is on), so
  offsets written in an aborted transaction are never seen, and "the end" is the last stable
  offset, read with the admin client as ``KafkaBasedLog.readEndOffsets`` does.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection, Mapping
from concurrent.futures import Future
from typing import Any, Final, NamedTuple

from confluent_kafka import (
    Consumer, IsolationLevel, KafkaError, KafkaException, Message, Producer, TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from kopycat.api.errors import ConnectError
from kopycat.kafka import ensure_properties
from kopycat.storage.config import (
    KAFKA_OFFSET_STORE_CONFIG, OFFSET_STORAGE_PARTITIONS_CONFIG, OFFSET_STORAGE_REPLICATION_FACTOR_CONFIG,
    OFFSET_STORAGE_TOPIC_CONFIG, OFFSET_STORAGE_TOPIC_DEFAULT,
)
from kopycat.storage.offset_codec import default_partition
from kopycat.storage.offset_store import OffsetBackingStore, OffsetTable, SetCallback, completed_future
from kopycat.storage.topic_admin import (
    create_topic_if_missing, partition_count, retrying, verify_topic_cleanup_policy_only_compact,
)

__all__ = ["CONSUMER_OVERRIDES", "PRODUCER_OVERRIDES", "KafkaOffsetStore", "OffsetRecord"]

log = logging.getLogger(__name__)

PRODUCER_OVERRIDES: Final[Mapping[str, Any]] = {
    # librdkafka's murmur2_random is the Java default partitioner for non-null keys.
    "partitioner": "murmur2_random",
    "acks": "all",
    "enable.idempotence": True,
}
CONSUMER_OVERRIDES: Final[Mapping[str, Any]] = {
    "isolation.level": "read_committed",
    "enable.auto.commit": False,
    "auto.offset.reset": "earliest",
    "enable.partition.eof": True,  # tells the read-to-end loop where each partition ends
}
CONSUMER_DEFAULTS: Final[Mapping[str, Any]] = {
    "fetch.queue.backoff.ms": 10,  # librdkafka's default stalls ~1 s whenever the queue fills
}
_BATCH: Final = 10_000
_UNRECOVERABLE: Final = frozenset({
    KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION,
    KafkaError._UNKNOWN_TOPIC,
})


class OffsetRecord(NamedTuple):
    """One offsets-topic record for the engine to produce inside its own transaction.

    ``partition`` is where a Java producer would put ``key``: produce to it explicitly, so the
    placement does not depend on the transactional producer's partitioner setting.
    """

    topic: str
    partition: int
    key: bytes
    value: bytes | None


class _SetTracker:
    """Completes one ``set`` when every record is acknowledged, or at the first failure
    (Kafka's ``SetCallbackFuture``). Delivery reports arrive on the producer's poll thread."""

    def __init__(self, count: int, table: OffsetTable, callback: SetCallback | None) -> None:
        self.future: Future[None] = Future()
        self._left = count
        self._table = table
        self._callback = callback
        self._lock = threading.Lock()
        self._done = False

    def on_delivery(self, key: bytes, value: bytes | None) -> Any:
        def report(error: KafkaError | None, message: Message) -> None:
            if error is not None:
                self.finish(KafkaException(error))
                return
            self._table.apply(key, value)  # acked (acks=all): it is in the log
            with self._lock:
                self._left -= 1
                last = self._left == 0
            if last:
                self.finish(None)
        return report

    def finish(self, error: BaseException | None) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
        if self._callback is not None:
            try:
                self._callback(error)
            except Exception:  # a callback's bug must not kill the producer's poll thread
                log.exception("An offset write callback failed")
        if error is None:
            self.future.set_result(None)
        else:
            self.future.set_exception(error)


class KafkaOffsetStore(OffsetBackingStore):
    """Offsets on the ``offset.storage.topic`` topic (Kafka Connect's ``KafkaOffsetBackingStore``).

    ``client_config`` (librdkafka properties: security, client.id, ...) goes to the admin client,
    producer and consumer; ``producer_config``/``consumer_config`` to one of them. The settings
    in :data:`PRODUCER_OVERRIDES` and :data:`CONSUMER_OVERRIDES` are forced (a different value is
    replaced, with a warning), as Kafka Connect forces its own.

    Thread-safety: all methods may be called from any thread. Reads to the end are serialized;
    delivery reports are handled by a background thread that polls the producer.
    """

    def __init__(self, bootstrap_servers: str, *, topic: str = OFFSET_STORAGE_TOPIC_DEFAULT,
                 partitions: int = 25, replication_factor: int = 3,
                 client_config: Mapping[str, Any] | None = None,
                 producer_config: Mapping[str, Any] | None = None,
                 consumer_config: Mapping[str, Any] | None = None,
                 read_to_end_on_get: bool = True, timeout_s: float = 60.0) -> None:
        self.topic = topic
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.read_to_end_on_get = read_to_end_on_get
        self.timeout_s = timeout_s
        self.table = OffsetTable()
        common = {"bootstrap.servers": bootstrap_servers, "client.id": "kopycat-offsets",
                  **(client_config or {})}
        self._admin_config = dict(common)
        self._producer_config = ensure_properties({**common, **(producer_config or {})}, PRODUCER_OVERRIDES,
                                                   "offsets topic producer")
        # group.id only names the reader: it never joins the group (assign) nor commits
        self._consumer_config = ensure_properties(
            {"group.id": f"{common['client.id']}-reader", **CONSUMER_DEFAULTS, **common,
             **(consumer_config or {})},
            CONSUMER_OVERRIDES, "offsets topic consumer")
        self._admin: AdminClient | None = None
        self._consumer: Consumer | None = None
        self._producer: Producer | None = None
        self._num_partitions = 0
        self._positions: dict[int, int] = {}
        self._read_lock = threading.Lock()
        self._stopping = threading.Event()
        self._poller: threading.Thread | None = None

    @classmethod
    def from_config(cls, props: Mapping[str, Any], **kwargs: Any) -> KafkaOffsetStore:
        """A store from worker properties: ``bootstrap.servers`` and the ``offset.storage.*`` keys."""
        values = KAFKA_OFFSET_STORE_CONFIG.parse(props)
        if not props.get("bootstrap.servers"):
            raise ConnectError("bootstrap.servers must be set to use the Kafka offset store")
        return cls(str(props["bootstrap.servers"]), topic=values[OFFSET_STORAGE_TOPIC_CONFIG],
                   partitions=values[OFFSET_STORAGE_PARTITIONS_CONFIG],
                   replication_factor=values[OFFSET_STORAGE_REPLICATION_FACTOR_CONFIG], **kwargs)

    @property
    def num_partitions(self) -> int:
        """The topic's actual partition count (known after ``start``), which placement uses."""
        return self._num_partitions

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        log.info("Starting KafkaOffsetStore on topic '%s'", self.topic)
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        log.info("Finished reading offsets topic '%s' (%d offsets) and starting KafkaOffsetStore",
                 self.topic, len(self.table))

    def _start(self) -> None:
        self._admin = AdminClient(self._admin_config)
        created = create_topic_if_missing(
            self._admin, self.topic, partitions=self.partitions, replication_factor=self.replication_factor,
            config={"cleanup.policy": "compact"}, timeout_s=self.timeout_s)
        if not created:
            verify_topic_cleanup_policy_only_compact(self._admin, self.topic, OFFSET_STORAGE_TOPIC_CONFIG,
                                                     "source connector offsets", self.timeout_s)
        self._num_partitions = partition_count(self._admin, self.topic, self.timeout_s)
        if not created and self.partitions != -1 and self._num_partitions != self.partitions:
            log.info("Topic '%s' exists with %d partitions (%s is %d); using the topic as it is",
                     self.topic, self._num_partitions, OFFSET_STORAGE_PARTITIONS_CONFIG, self.partitions)
        # Explicit start offsets, not OFFSET_BEGINNING: librdkafka resolves a logical offset with a
        # ListOffsets per partition that it first sends before the partition leader's connection is
        # up, then retries 500 ms later, and fetches the partitions as their answers come in, so an
        # empty one can hold the first fetch for fetch.wait.max.ms: 1.2 s per start, measured on a
        # 25-partition topic holding one record; 0.24 s for the whole start this way.
        starts = self._list_offsets(OffsetSpec.earliest(), "start")  # type: ignore[no-untyped-call]
        self._consumer = Consumer(self._consumer_config)
        self._consumer.assign([TopicPartition(self.topic, p, starts[p]) for p in range(self._num_partitions)])
        self._positions = dict(starts)
        self.read_to_end()
        self._producer = Producer(self._producer_config)
        self._stopping.clear()
        self._poller = threading.Thread(target=self._poll_producer, name=f"kopycat-offsets-{self.topic}",
                                        daemon=True)
        self._poller.start()

    def stop(self) -> None:
        log.info("Stopping KafkaOffsetStore on topic '%s'", self.topic)
        if self._producer is not None:
            left = self._producer.flush(self.timeout_s)
            if left:
                log.warning("%d offset writes to '%s' were still unacknowledged when the store stopped",
                            left, self.topic)
        self._stopping.set()
        if self._poller is not None:
            self._poller.join(timeout=5.0)
        if self._consumer is not None:
            with self._read_lock:
                self._consumer.close()
        # dropping the clients destroys them (the admin client has no close())
        self._producer = self._consumer = self._poller = self._admin = None

    def _poll_producer(self) -> None:
        producer = self._producer
        assert producer is not None
        while not self._stopping.is_set():
            producer.poll(0.1)

    # ------------------------------------------------------------------ reading

    def read_to_end(self, timeout_s: float | None = None) -> None:
        """Consume every record up to the end offsets as of now (Kafka's ``readToEnd``).

        The end of each partition is its last stable offset, taken once at the start of the call:
        records produced meanwhile may or may not be seen. Raises ConnectError on timeout.
        """
        consumer = self._consumer
        if consumer is None:
            raise ConnectError("The KafkaOffsetStore is not started")
        with self._read_lock:
            ends = self._end_offsets()
            remaining = {p for p, end in ends.items() if self._positions[p] < end}
            deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
            while remaining:
                messages = consumer.consume(num_messages=_BATCH, timeout=0.2)
                for message in messages:
                    self._handle(message)
                if not messages:  # control records and aborted batches advance the position only
                    for tp in consumer.position([TopicPartition(self.topic, p) for p in remaining]):
                        if tp.offset >= 0:
                            self._positions[tp.partition] = max(self._positions[tp.partition], tp.offset)
                remaining = {p for p in remaining if self._positions[p] < ends[p]}
                if remaining and time.monotonic() > deadline:
                    behind = {p: f"{self._positions[p]}/{ends[p]}" for p in sorted(remaining)}
                    raise ConnectError(f"Timed out reading offsets topic '{self.topic}' to its end; "
                                       f"partitions not caught up (position/end): {behind}")

    def _handle(self, message: Message) -> None:
        error = message.error()
        partition = message.partition()
        assert partition is not None  # every consumed record and EOF event names its partition
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                self._positions[partition] = max(self._positions[partition], message.offset() or 0)
                return
            if error.fatal() or error.code() in _UNRECOVERABLE:
                raise ConnectError(f"Failed to read offsets topic '{self.topic}': {error.str()}")
            log.warning("Reading offsets topic '%s': %s (still trying)", self.topic, error.str())
            return
        self.table.apply(message.key(), message.value())
        self._positions[partition] = (message.offset() or 0) + 1

    def _end_offsets(self) -> dict[int, int]:
        """Last stable offset per partition (``KafkaBasedLog.readEndOffsets`` with read_committed)."""
        return self._list_offsets(OffsetSpec.latest(), "end")  # type: ignore[no-untyped-call]

    def _list_offsets(self, spec: OffsetSpec, which: str) -> dict[int, int]:
        """``spec``'s offset of every partition, read_committed, in one ListOffsets round."""
        admin = self._admin
        assert admin is not None
        request = {TopicPartition(self.topic, p): spec for p in range(self._num_partitions)}

        def list_offsets() -> dict[int, int]:
            futures = admin.list_offsets(request, isolation_level=IsolationLevel.READ_COMMITTED,
                                         request_timeout=self.timeout_s)
            return {tp.partition: future.result(self.timeout_s).offset for tp, future in futures.items()}

        return retrying(list_offsets, f"read the {which} offsets of offsets topic '{self.topic}'", self.timeout_s)

    def get(self, keys: Collection[bytes]) -> dict[bytes, bytes | None]:
        if self.read_to_end_on_get:
            self.read_to_end()
        return self.table.get(keys)

    def connector_partitions(self, connector: str) -> list[dict[str, Any] | None]:
        if self.read_to_end_on_get:
            self.read_to_end()
        return self.table.connector_partitions(connector)

    # ------------------------------------------------------------------ writing

    def set(self, values: Mapping[bytes, bytes | None],
            callback: SetCallback | None = None) -> Future[None]:
        producer = self._producer
        if producer is None:
            error = ConnectError("The KafkaOffsetStore is not started")
            if callback is not None:
                callback(error)
            return completed_future(error)
        tracker = _SetTracker(len(values), self.table, callback)
        if not values:
            tracker.finish(None)
        for key, value in values.items():
            try:
                self._produce(producer, key, value, tracker.on_delivery(key, value))
            except (KafkaException, BufferError, ConnectError) as exc:
                tracker.finish(exc)
                break
        return tracker.future

    def _produce(self, producer: Producer, key: bytes, value: bytes | None, on_delivery: Any) -> None:
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                producer.produce(self.topic, key=key, value=value, on_delivery=on_delivery)
                return
            except BufferError:  # the local queue is full: let deliveries drain it
                if time.monotonic() > deadline:
                    raise
                producer.poll(0.1)

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
        if not self._num_partitions:
            raise ConnectError("The KafkaOffsetStore is not started")
        return [OffsetRecord(self.topic, default_partition(key, self._num_partitions), key, value)
                for key, value in values.items()]

    def record_committed(self, values: Mapping[bytes, bytes | None]) -> None:
        """Note offsets the engine committed in its own transaction."""
        self.table.apply_all(values)

