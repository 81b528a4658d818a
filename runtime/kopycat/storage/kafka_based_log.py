"""One compacted internal topic, read to its end and appended to (Kafka Connect's ``KafkaBasedLog``).

The offsets, config and status stores each compose a :class:`KafkaBasedLog`, as Kafka's
``KafkaOffsetBackingStore``, ``KafkaConfigBackingStore`` and ``KafkaStatusBackingStore`` do. The
log creates its topic if missing (``cleanup.policy=compact``, the partitions and replication
factor asked for) and refuses an existing topic that is not compact-only, naming the worker key
that chose it; it reads the topic from the beginning to its end offsets and hands every record to
the store's callback in log order; and it produces records placed by the Java producer's default
partitioner (murmur2 of the key bytes, librdkafka's ``murmur2_random``), so a Kafka Connect worker
reading the same topic finds each key where it looks and sees a key's records in the order written.

Differences from Kafka Connect, and why:

- no background consumer thread: the store calls :meth:`KafkaBasedLog.read_to_end` when it needs
  to be current (on start and before reads). Bounded Airflow runs read their state once, at start,
  and have no thread to spare for following the topic;
- the producer is idempotent (Kafka Connect turns it off to support brokers older than 2.8,
  which need an IDEMPOTENT_WRITE ACL); Kopycat targets Kafka 4.x (DESIGN.md §5), and
  idempotence keeps retried writes in order;
- the consumer always reads ``read_committed`` (Kafka does when exactly-once source is on), so
  records written in an aborted transaction are never seen, and "the end" is the last stable
  offset, read with the admin client as ``KafkaBasedLog.readEndOffsets`` does.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any, Final

from confluent_kafka import (
    Consumer,
    IsolationLevel,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from kopycat.api.errors import ConnectError
from kopycat.client_security import without_tracebacks
from kopycat.idempotent_producer import connect_idempotent
from kopycat.kafka import ensure_properties
from kopycat.storage.topic_admin import (
    create_topic_if_missing,
    partition_count,
    retrying,
    verify_topic_cleanup_policy_only_compact,
)
from kopycat.storage.write_completion import SetCallback, completed_future

__all__ = [
    "CONSUMER_DEFAULTS", "CONSUMER_OVERRIDES", "PRODUCER_OVERRIDES", "KafkaBasedLog", "RecordCallback",
    "worker_bootstrap_servers",
]

log = logging.getLogger(__name__)

RecordCallback = Callable[[bytes | None, bytes | None], None]
"""Receives one record's key and value (None for a tombstone)."""

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
    # librdkafka's default backoff pauses fetching for a long while whenever the fetch queue fills
    "fetch.queue.backoff.ms": 10,
}
_BATCH: Final = 10_000
_UNRECOVERABLE: Final = frozenset({
    KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION,
    KafkaError._UNKNOWN_TOPIC,
})


def worker_bootstrap_servers(props: Mapping[str, Any], store: str) -> str:
    """``bootstrap.servers`` from worker properties, for a Kafka store's ``from_config``.

    Raises ConnectError naming ``store`` ("the Kafka offset store") when it is unset.
    """
    servers = props.get("bootstrap.servers")
    if not servers:
        raise ConnectError(f"bootstrap.servers must be set to use {store}")
    return str(servers)


class _SendTracker:
    """Completes one :meth:`KafkaBasedLog.send` when every record is acknowledged, or at the first
    failure (Kafka's ``SetCallbackFuture``). Delivery reports arrive on the producer's poll thread."""

    def __init__(self, count: int, on_acknowledged: RecordCallback | None, callback: SetCallback | None) -> None:
        self.future: Future[None] = Future()
        self._left = count
        self._on_acknowledged = on_acknowledged
        self._callback = callback
        self._lock = threading.Lock()
        self._done = False

    def on_delivery(self, key: bytes, value: bytes | None) -> Any:
        def report(error: KafkaError | None, message: Message) -> None:
            if error is not None:
                self.finish(KafkaException(error))
                return
            if self._on_acknowledged is not None:  # acks=all: it is in the log
                self._on_acknowledged(key, value)
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
                log.exception("A write callback failed")
        if error is None:
            self.future.set_result(None)
        else:
            self.future.set_exception(error)


class KafkaBasedLog:
    """A compacted topic that one store reads to its end and writes to (Kafka's ``KafkaBasedLog``).

    :param topic: the topic; created with ``partitions`` and ``replication_factor`` if missing
        (either may be -1 for the broker's default, KIP-464).
    :param topic_config: the worker key that named the topic, quoted when the topic is refused.
    :param purpose: what the topic holds ("source connector offsets"), for messages.
    :param consumed_callback: gets every record read, in log order; must not raise for bad records.
    :param client_id: ``client.id`` of the clients unless ``client_config`` sets one; the reader's
        ``group.id`` is derived from it (the reader never joins the group nor commits).
    :param client_config: librdkafka properties (security, ...) for the admin client, producer and
        consumer; ``producer_config``/``consumer_config`` for one of them. The settings in
        :data:`PRODUCER_OVERRIDES` and :data:`CONSUMER_OVERRIDES` are forced (a different value is
        replaced, with a warning), as Kafka Connect forces its own.

    Thread-safety: all methods may be called from any thread. Reads to the end are serialized;
    delivery reports are handled by a background thread that polls the producer.
    """

    def __init__(self, bootstrap_servers: str, *, topic: str, partitions: int, replication_factor: int,
                 topic_config: str, purpose: str, consumed_callback: RecordCallback, client_id: str,
                 client_config: Mapping[str, Any] | None = None,
                 producer_config: Mapping[str, Any] | None = None,
                 consumer_config: Mapping[str, Any] | None = None, timeout_s: float = 60.0) -> None:
        self.topic = topic
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.topic_config = topic_config
        self.purpose = purpose
        self.consumed_callback = consumed_callback
        self.timeout_s = timeout_s
        common = {"bootstrap.servers": bootstrap_servers, "client.id": client_id, **(client_config or {})}
        self.admin_config: dict[str, Any] = dict(common)
        self.producer_config = ensure_properties({**common, **(producer_config or {})}, PRODUCER_OVERRIDES,
                                                 f"producer of topic '{topic}'")
        self.consumer_config = ensure_properties(
            {"group.id": f"{common['client.id']}-reader", **CONSUMER_DEFAULTS, **common,
             **(consumer_config or {})},
            CONSUMER_OVERRIDES, f"consumer of topic '{topic}'")
        self._admin: AdminClient | None = None
        self._consumer: Consumer | None = None
        self._producer: Producer | None = None
        self._num_partitions = 0
        self._positions: dict[int, int] = {}
        self._read_lock = threading.Lock()
        self._stopping = threading.Event()
        self._poller: threading.Thread | None = None

    @property
    def num_partitions(self) -> int:
        """The topic's actual partition count (known after ``start``; 0 before)."""
        return self._num_partitions

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Create or check the topic, read it to its end, then open the producer.

        On failure everything opened so far is closed again before the error propagates.
        """
        log.info("Starting the log of %s on topic '%s'", self.purpose, self.topic)
        try:
            self._start()
        except BaseException as exc:
            self.stop()
            if isinstance(exc, Exception):
                raise without_tracebacks(exc)  # noqa: B904 - exc itself, its chain kept
            raise
        log.info("Read topic '%s' to its end: %s loaded", self.topic, self.purpose)

    def _start(self) -> None:
        self._admin = AdminClient(self.admin_config)
        created = create_topic_if_missing(
            self._admin, self.topic, partitions=self.partitions, replication_factor=self.replication_factor,
            config={"cleanup.policy": "compact"}, timeout_s=self.timeout_s)
        if not created:
            verify_topic_cleanup_policy_only_compact(self._admin, self.topic, self.topic_config, self.purpose,
                                                     self.timeout_s)
        self._num_partitions = partition_count(self._admin, self.topic, self.timeout_s)
        if not created and self.partitions != -1 and self._num_partitions != self.partitions:
            log.info("Topic '%s' exists with %d partitions (%d asked for); using the topic as it is",
                     self.topic, self._num_partitions, self.partitions)
        # Explicit start offsets, not OFFSET_BEGINNING: librdkafka resolves a logical offset with a
        # ListOffsets per partition, may send it before the partition leader's connection is up and
        # then retries after a backoff, and fetches partitions as their answers come in, so an empty
        # one can hold the first fetch for fetch.wait.max.ms. One ListOffsets round for all
        # partitions avoids both waits.
        starts = self._list_offsets(OffsetSpec.earliest(), "start")  # type: ignore[no-untyped-call]
        self._consumer = Consumer(self.consumer_config)
        self._consumer.assign([TopicPartition(self.topic, p, starts[p]) for p in range(self._num_partitions)])
        self._positions = dict(starts)
        self.read_to_end()
        self._producer = Producer(self.producer_config)
        connect_idempotent(self._producer, f"The log of {self.purpose} on '{self.topic}'")
        self._stopping.clear()
        self._poller = threading.Thread(target=self._poll_producer, name=f"{self.admin_config['client.id']}-"
                                        f"{self.topic}", daemon=True)
        self._poller.start()

    def stop(self) -> None:
        """Wait (up to ``timeout_s``) for unacknowledged writes, then close the clients."""
        log.info("Stopping the log of %s on topic '%s'", self.purpose, self.topic)
        if self._producer is not None:
            left = self._producer.flush(self.timeout_s)
            if left:
                log.warning("%d writes to '%s' were still unacknowledged when its log stopped", left, self.topic)
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

    def _not_started(self) -> ConnectError:
        return ConnectError(f"The log of {self.purpose} on topic '{self.topic}' is not started")

    # ------------------------------------------------------------------ reading

    def read_to_end(self, timeout_s: float | None = None) -> None:
        """Consume every record up to the end offsets as of now (Kafka's ``readToEnd``).

        The end of each partition is its last stable offset, taken once at the start of the call:
        records produced meanwhile may or may not be seen. Raises ConnectError on timeout.
        """
        consumer = self._consumer
        if consumer is None:
            raise self._not_started()
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
                    raise ConnectError(f"Timed out reading topic '{self.topic}' ({self.purpose}) to its end; "
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
                raise ConnectError(f"Failed to read topic '{self.topic}' ({self.purpose}): {error.str()}")
            log.warning("Reading topic '%s': %s (still trying)", self.topic, error.str())
            return
        self.consumed_callback(message.key(), message.value())
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

        return retrying(list_offsets, f"read the {which} offsets of topic '{self.topic}'", self.timeout_s)

    # ------------------------------------------------------------------ writing

    def send(self, values: Mapping[bytes, bytes | None], callback: SetCallback | None = None,
             on_acknowledged: RecordCallback | None = None) -> Future[None]:
        """Produce one record per entry, in order (None is a tombstone); Kafka's ``send`` for many.

        The future resolves when the broker acknowledged every record (``acks=all``), or fails at
        the first error; ``callback`` runs just before. ``on_acknowledged`` gets each record as it
        is acknowledged, for a store that keeps its writes without reading them back.
        """
        producer = self._producer
        if producer is None:
            error = self._not_started()
            if callback is not None:
                callback(error)
            return completed_future(error)
        tracker = _SendTracker(len(values), on_acknowledged, callback)
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
