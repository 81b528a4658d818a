"""Where final failures go: the task's log and a dead letter queue topic.

Kafka Connect's ``LogReporter`` and ``DeadLetterQueueReporter``, and ``Worker.sinkTaskReporters``
as :func:`build_reporters`. Kept apart from :mod:`kopycat.runtime.errors` because they need
confluent-kafka, which importing that module (config validation, docs) should not; this module
imports that one, never the other way round.

A DLQ write that fails is never silent (Kafka only logs it): :meth:`DeadLetterQueueReporter.flush`
and ``close`` raise ConnectError, and the runner flushes before committing offsets, so a
record's offset is never committed while its dead letter copy is lost.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Mapping
from concurrent.futures import Future
from types import MappingProxyType
from typing import Any, Final

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient

from kopycat.api.errors import ConfigError, ConnectError
from kopycat.api.records import RecordMetadata
from kopycat.runtime.errors import (
    DLQ_CONTEXT_HEADERS_ENABLE_CONFIG,
    DLQ_TOPIC_NAME_CONFIG,
    DLQ_TOPIC_REPLICATION_FACTOR_CONFIG,
    ERRORS_CONFIG,
    ERRORS_LOG_ENABLE_CONFIG,
    ERRORS_LOG_INCLUDE_MESSAGES_CONFIG,
    SINK_ERRORS_CONFIG,
    ErrorReporter,
    ProcessingContext,
    qualified_name,
)
from kopycat.storage.topic_admin import create_topic_if_missing

__all__ = ["DLQ_PRODUCER_DEFAULTS", "DeadLetterQueueReporter", "LogReporter", "build_reporters", "cause_chain",
           "dlq_context_headers"]

log = logging.getLogger(__name__)

HEADER_PREFIX: Final = "__connect.errors."
ERROR_HEADER_ORIG_TOPIC: Final = HEADER_PREFIX + "topic"
ERROR_HEADER_ORIG_PARTITION: Final = HEADER_PREFIX + "partition"
ERROR_HEADER_ORIG_OFFSET: Final = HEADER_PREFIX + "offset"
ERROR_HEADER_CONNECTOR_NAME: Final = HEADER_PREFIX + "connector.name"
ERROR_HEADER_TASK_ID: Final = HEADER_PREFIX + "task.id"
ERROR_HEADER_STAGE: Final = HEADER_PREFIX + "stage"
ERROR_HEADER_EXECUTING_CLASS: Final = HEADER_PREFIX + "class.name"
ERROR_HEADER_EXCEPTION: Final = HEADER_PREFIX + "exception.class.name"
ERROR_HEADER_EXCEPTION_MESSAGE: Final = HEADER_PREFIX + "exception.message"
ERROR_HEADER_EXCEPTION_STACK_TRACE: Final = HEADER_PREFIX + "exception.stacktrace"

DLQ_NUM_DESIRED_PARTITIONS: Final = 1

DLQ_PRODUCER_DEFAULTS: Final[Mapping[str, Any]] = MappingProxyType({
    # As Kafka's Worker.baseProducerConfigs: every replica acknowledges a DLQ record.
    "acks": "all",
    # The Java default partitioner, so keyed DLQ records land where a Java worker puts them.
    "partitioner": "murmur2_random",
})
_NO_OVERRIDES: Final[Mapping[str, Any]] = MappingProxyType({})


def cause_chain(error: BaseException) -> str:
    """``error`` and its causes in words on one line: ``DataError: bad json; caused by ValueError: ...``.

    Follows ``__cause__``, else an unsuppressed ``__context__`` (Python's order of "The above
    exception was the direct cause of..."), outermost first; each class once per loop.
    """
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        text = " ".join(str(current).split())
        parts.append(f"{type(current).__name__}: {text}" if text else type(current).__name__)
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return "; caused by ".join(parts)


class LogReporter(ErrorReporter):
    """Logs each final failure as one ERROR line (Kafka's ``LogReporter``), its traceback at DEBUG.

    The line carries the record's coordinates (topic, partition, offset; or source partition and
    offset), the stage and class, and the error's cause chain in words: a batch of bad records
    reads as that many lines, not that many tracebacks. The record's content (key, value, headers,
    timestamp) is logged only with ``errors.log.include.messages``, so data stays out of log files
    unless asked for.
    """

    def __init__(self, connector_name: str, task_id: int, include_messages: bool = False) -> None:
        self.connector_name = connector_name
        self.task_id = task_id
        self.include_messages = include_messages
        self.errors_logged = 0

    def report(self, context: ProcessingContext) -> None:
        if context.error is None:
            return
        log.error("%s Caused by: %s", self.message(context), cause_chain(context.error))
        log.debug("Stack trace of the error in task %s-%s%s", self.connector_name, self.task_id,
                  f" at {context.location()}" if context.location() else "", exc_info=context.error)
        self.errors_logged += 1

    def message(self, context: ProcessingContext) -> str:
        """Kafka's text: "Error encountered in task c-0. Executing stage 'X' with class 'Y', where ...."."""
        stage = context.stage.name if context.stage is not None else "null"
        return (f"Error encountered in task {self.connector_name}-{self.task_id}. Executing stage "
                f"'{stage}' with class '{qualified_name(context.executing_class)}'{self._record(context)}.")

    def _record(self, context: ProcessingContext) -> str:
        consumed, source = context.consumer_record, context.source_record
        if consumed is not None:
            content = (f", timestamp={consumed.timestamp}, key={consumed.key!r}, value={consumed.value!r}, "
                       f"headers={list(consumed.headers)!r}") if self.include_messages else ""
            return (f", where consumed record is {{topic='{consumed.topic}', partition={consumed.partition}, "
                    f"offset={consumed.offset}{content}}}")
        if source is not None:
            if self.include_messages:
                return f", where source record is = {source!r}"
            return (f", where source record is {{source_partition={source.source_partition}, "
                    f"source_offset={source.source_offset}}}")
        return ""


def dlq_context_headers(context: ProcessingContext, connector_name: str,
                        task_id: int) -> list[tuple[str, bytes | None]]:
    """The ``__connect.errors.*`` headers Kafka's DeadLetterQueueReporter adds, in its order.

    Values are UTF-8 text as Kafka writes them. Class names are Python's (``module.QualName``,
    e.g. ``kopycat.api.errors.DataError``), the stack trace is Python's traceback with its
    causes, and an exception without a message gets a null value, as Java's null getMessage().
    """
    headers: list[tuple[str, bytes | None]] = []
    record = context.consumer_record
    if record is not None:
        headers += [(ERROR_HEADER_ORIG_TOPIC, record.topic.encode()),
                    (ERROR_HEADER_ORIG_PARTITION, str(record.partition).encode()),
                    (ERROR_HEADER_ORIG_OFFSET, str(record.offset).encode())]
    stage = context.stage.name if context.stage is not None else "null"
    headers += [(ERROR_HEADER_CONNECTOR_NAME, connector_name.encode()),
                (ERROR_HEADER_TASK_ID, str(task_id).encode()),
                (ERROR_HEADER_STAGE, stage.encode()),
                (ERROR_HEADER_EXECUTING_CLASS, qualified_name(context.executing_class).encode())]
    error = context.error
    if error is not None:
        message = str(error)
        headers += [(ERROR_HEADER_EXCEPTION, qualified_name(type(error)).encode()),
                    (ERROR_HEADER_EXCEPTION_MESSAGE, message.encode() if message else None),
                    (ERROR_HEADER_EXCEPTION_STACK_TRACE, "".join(traceback.format_exception(error)).encode())]
    return headers


class DeadLetterQueueReporter(ErrorReporter):
    """Produces the original consumed record to a dead letter queue topic (Kafka's class).

    Sink side only, as Kafka: a context without ``consumer_record`` is ignored. The key, value,
    headers and timestamp are the consumed bytes, unchanged; with context headers enabled the
    ``__connect.errors.*`` headers follow the original ones. Delivery failures are kept and
    raised by :meth:`flush` and :meth:`close` (they stay raised: the task must stop).
    Used from the task's thread (delivery callbacks run inside its produce, flush and close).
    """

    def __init__(self, producer: Producer, connector_name: str, task_id: int, topic: str,
                 context_headers_enable: bool, *, close_timeout_s: float = 30.0) -> None:
        self.topic = topic.strip()
        self.connector_name = connector_name
        self.task_id = task_id
        self.context_headers_enable = context_headers_enable
        self.produce_requests = 0
        self.produce_failures = 0
        self._producer: Producer | None = producer
        self._close_timeout_s = close_timeout_s
        self._errors: list[str] = []
        self._errors_lock = threading.Lock()

    @classmethod
    def create(cls, producer_config: str | Mapping[str, Any], connector_name: str, task_id: int, topic: str,
               replication_factor: int, context_headers_enable: bool, *,
               timeout_s: float = 30.0) -> DeadLetterQueueReporter:
        """Create the topic if missing (one partition, as Kafka), then a reporter producing to it.

        ``producer_config`` is the bootstrap servers or a whole confluent-kafka producer config;
        :data:`DLQ_PRODUCER_DEFAULTS` and Kafka's client.id come first, the config's keys win.
        """
        client_id = f"connector-dlq-producer-{connector_name}-{task_id}"
        given = {"bootstrap.servers": producer_config} if isinstance(producer_config, str) else producer_config
        config = {**DLQ_PRODUCER_DEFAULTS, "client.id": client_id, **given}
        admin = AdminClient({**config, "client.id": "connector-dlq-adminclient-"})
        try:
            create_topic_if_missing(admin, topic.strip(), partitions=DLQ_NUM_DESIRED_PARTITIONS,
                                    replication_factor=replication_factor, config={}, timeout_s=timeout_s)
        except ConnectError as exc:
            raise ConnectError(f"Could not initialize dead letter queue with topic={topic.strip()} "
                               f"({DLQ_TOPIC_NAME_CONFIG}): {exc}") from exc
        return cls(Producer(config), connector_name, task_id, topic, context_headers_enable)

    def report(self, context: ProcessingContext) -> Future[RecordMetadata] | None:
        """Produce the failed record; the Future resolves once the broker answers (during flush)."""
        record = context.consumer_record
        if record is None or not self.topic:
            return None
        producer = self._open_producer()
        self.produce_requests += 1
        headers = list(record.headers)
        if self.context_headers_enable:
            headers += dlq_context_headers(context, self.connector_name, self.task_id)
        future: Future[RecordMetadata] = Future()
        options: dict[str, Any] = {"headers": headers, "on_delivery": self._on_delivery(future, context)}
        if record.timestamp is not None:
            options["timestamp"] = record.timestamp
        while True:
            try:
                producer.produce(self.topic, record.value, record.key, **options)
                break
            except BufferError:  # the local queue is full: serve deliveries, then try again
                producer.poll(0.1)
            except KafkaException as exc:
                self.produce_failures += 1
                raise ConnectError(f"Could not produce the record from {context.location()} to dead letter "
                                   f"queue topic '{self.topic}': {exc.args[0].str()}") from exc
        producer.poll(0)
        return future

    def _on_delivery(self, future: Future[RecordMetadata], context: ProcessingContext) -> Any:
        where = context.location()

        def delivered(error: KafkaError | None, message: Message) -> None:
            if error is None:
                future.set_result(RecordMetadata(message.topic() or self.topic, message.partition() or 0,
                                                 message.offset() or 0, message.timestamp()[1]))
                return
            problem = f"record from {where}: {error.str()} ({error.name()})"
            log.error("Could not produce message to dead letter queue. topic=%s, %s", self.topic, problem)
            with self._errors_lock:
                self.produce_failures += 1
                self._errors.append(problem)
            future.set_exception(ConnectError(f"Could not produce to dead letter queue topic "
                                              f"'{self.topic}' the {problem}"))
        return delivered

    def flush(self, timeout: float | None = None) -> None:
        """Wait for every DLQ record in flight; ConnectError if one is undelivered or failed."""
        if self._producer is not None:
            remaining = self._producer.flush(-1 if timeout is None else timeout)
            if remaining:
                raise ConnectError(f"{remaining} records were not delivered to dead letter queue topic "
                                   f"'{self.topic}' within {timeout} s: is the Kafka cluster reachable? "
                                   f"Their offsets must not be committed.")
        self._raise_if_failed()

    def close(self) -> None:
        """Flush (up to ``close_timeout_s``), then close the producer; ConnectError on any loss."""
        producer, self._producer = self._producer, None
        if producer is None:
            return
        try:
            remaining = producer.flush(self._close_timeout_s)
            if remaining:
                producer.purge()
                producer.flush(0)  # serves the purged records' callbacks: they count as failures
        finally:
            producer.close()
        self._raise_if_failed()

    def _open_producer(self) -> Producer:
        if self._producer is None:
            raise ConnectError(f"The dead letter queue reporter for topic '{self.topic}' is closed.")
        return self._producer

    def _raise_if_failed(self) -> None:
        with self._errors_lock:
            errors = list(self._errors)
        if errors:
            raise ConnectError(
                f"Could not produce {len(errors)} record(s) to dead letter queue topic '{self.topic}'; "
                f"first: {errors[0]}. The task stops so their offsets are not committed: check the topic "
                f"exists and accepts these records (max.message.bytes, ACLs), then restart the task.")


def build_reporters(values: Mapping[str, Any], *, connector_name: str, task_id: int,
                    bootstrap_servers: str | None,
                    producer_overrides: Mapping[str, Any] = _NO_OVERRIDES) -> list[ErrorReporter]:
    """The reporters a task's config asks for (Kafka's ``Worker.sinkTaskReporters``).

    A :class:`LogReporter` when errors.log.enable is true, and a :class:`DeadLetterQueueReporter`
    when errors.deadletterqueue.topic.name is not blank (pass those keys for sinks only).
    ``values`` may be parsed or text; ``producer_overrides`` go to the DLQ producer last.
    """
    common = ERRORS_CONFIG.parse(values)
    sink = SINK_ERRORS_CONFIG.parse(values)
    reporters: list[ErrorReporter] = []
    if common[ERRORS_LOG_ENABLE_CONFIG]:
        reporters.append(LogReporter(connector_name, task_id, common[ERRORS_LOG_INCLUDE_MESSAGES_CONFIG]))
    topic = (sink[DLQ_TOPIC_NAME_CONFIG] or "").strip()
    if topic:
        if bootstrap_servers is None and "bootstrap.servers" not in producer_overrides:
            raise ConfigError.for_key(DLQ_TOPIC_NAME_CONFIG, topic, "A dead letter queue needs the Kafka "
                                      "cluster's bootstrap.servers: give the worker's bootstrap servers, or "
                                      "leave this key blank to have no dead letter queue.")
        config = {} if bootstrap_servers is None else {"bootstrap.servers": bootstrap_servers}
        reporters.append(DeadLetterQueueReporter.create(
            {**config, **producer_overrides}, connector_name, task_id, topic,
            sink[DLQ_TOPIC_REPLICATION_FACTOR_CONFIG], sink[DLQ_CONTEXT_HEADERS_ENABLE_CONFIG]))
    return reporters
