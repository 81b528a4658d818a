"""Retries, ``errors.tolerance`` and error reporting, after Kafka Connect's ``runtime.errors``.

What :class:`RetryWithToleranceOperator` does when a step of a task's pipeline fails::

    operation() raises
     ├── RetriableError        called again with exponential backoff (300 ms, 600 ms, ...,
     │                         errors.retry.delay.max.ms) while errors.retry.timeout lasts
     └── any other Exception, or the retries are over (timeout, or stop()):
          ├── the stage does not tolerate it   ConnectError "Unhandled exception in error handler"
          ├── errors.tolerance=none            ConnectError "Tolerance exceeded in error handler"
          └── errors.tolerance=all             counted, returned as None: the caller skips the record

Every final failure is first handed to the :class:`ErrorReporter` list (the log and the dead
letter queue, in :mod:`kopycat.runtime.error_reporters`), so nothing is dropped silently.

As Kafka's ``TOLERABLE_EXCEPTIONS``, converters and transformations tolerate every Exception;
task poll/put and Kafka produce/consume tolerate only RetriableError: anything else there is a
broken task or destination and fails the task whatever errors.tolerance says. BaseExceptions
that are not Exceptions (KeyboardInterrupt, SystemExit) pass through untouched, as Java Errors do.

Deviations from Kafka, on purpose:

- When retries run out Kafka skips the record even with errors.tolerance=none; here the
  tolerance decides, so ``none`` never loses a record.
- The retry timeout runs from the first failure rather than from before the first attempt:
  the happy path reads no clock.
- errors.tolerance is validated ignoring case (Kafka's validator is case-sensitive, its getter not).
- Only simple counters are kept (``total_failures``, ``total_skipped``, ...), not Kafka's
  ``ErrorHandlingMetrics`` sensors; kopycat.runtime.task_metrics exports them under those sensors' names.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeVar

from kopycat.api.config import CaseInsensitiveValidString, ConfigDef, ConfigType, Importance, Width
from kopycat.api.errors import ConnectError, RetriableError
from kopycat.api.records import SourceRecord

if TYPE_CHECKING:
    from confluent_kafka import Message

__all__ = [
    "DLQ_CONTEXT_HEADERS_ENABLE_CONFIG", "DLQ_TOPIC_NAME_CONFIG", "DLQ_TOPIC_REPLICATION_FACTOR_CONFIG",
    "ERRORS_CONFIG", "ERRORS_LOG_ENABLE_CONFIG", "ERRORS_LOG_INCLUDE_MESSAGES_CONFIG",
    "ERRORS_RETRY_MAX_DELAY_CONFIG", "ERRORS_RETRY_TIMEOUT_CONFIG", "ERRORS_TOLERANCE_CONFIG",
    "ERROR_GROUP", "RETRIES_DELAY_MIN_MS", "SINK_ERRORS_CONFIG", "ConsumedRecord", "ContextSource",
    "ErrorReporter", "ProcessingContext", "RetryWithToleranceOperator", "Stage", "ToleranceType",
    "qualified_name",
]

log = logging.getLogger(__name__)

_T = TypeVar("_T")


class Stage(Enum):
    """A logical stage of a task's pipeline, named in errors, logs and DLQ headers (Kafka's Stage)."""

    TASK_POLL = "TASK_POLL"
    TASK_PUT = "TASK_PUT"
    TRANSFORMATION = "TRANSFORMATION"
    KEY_CONVERTER = "KEY_CONVERTER"
    VALUE_CONVERTER = "VALUE_CONVERTER"
    HEADER_CONVERTER = "HEADER_CONVERTER"
    KAFKA_PRODUCE = "KAFKA_PRODUCE"
    KAFKA_CONSUME = "KAFKA_CONSUME"


# Kafka's TOLERABLE_EXCEPTIONS: these stages may skip a record for any Exception; the others
# only for RetriableError.
_TOLERATE_ANY_ERROR: Final = frozenset(
    {Stage.TRANSFORMATION, Stage.HEADER_CONVERTER, Stage.KEY_CONVERTER, Stage.VALUE_CONVERTER})


class ToleranceType(Enum):
    """How many failed records a task survives: ``none`` fails at the first, ``all`` skips them."""

    NONE = "none"
    ALL = "all"


# Keys, defaults and docs as Kafka's ConnectorConfig and SinkConnectorConfig.
ERROR_GROUP: Final = "Error Handling"
ERRORS_RETRY_TIMEOUT_CONFIG: Final = "errors.retry.timeout"
ERRORS_RETRY_MAX_DELAY_CONFIG: Final = "errors.retry.delay.max.ms"
ERRORS_TOLERANCE_CONFIG: Final = "errors.tolerance"
ERRORS_LOG_ENABLE_CONFIG: Final = "errors.log.enable"
ERRORS_LOG_INCLUDE_MESSAGES_CONFIG: Final = "errors.log.include.messages"
DLQ_TOPIC_NAME_CONFIG: Final = "errors.deadletterqueue.topic.name"
DLQ_TOPIC_REPLICATION_FACTOR_CONFIG: Final = "errors.deadletterqueue.topic.replication.factor"
DLQ_CONTEXT_HEADERS_ENABLE_CONFIG: Final = "errors.deadletterqueue.context.headers.enable"

RETRIES_DELAY_MIN_MS: Final = 300
"""The first backoff; each later one doubles, up to errors.retry.delay.max.ms (Kafka's constant)."""

ERRORS_CONFIG: Final = (
    ConfigDef()
    .define(ERRORS_RETRY_TIMEOUT_CONFIG, ConfigType.LONG, 0, importance=Importance.MEDIUM,
            doc="The maximum duration in milliseconds that a failed operation will be reattempted. "
                "The default is 0, which means no retries will be attempted. Use -1 for infinite retries.",
            group=ERROR_GROUP, order_in_group=1, width=Width.MEDIUM, display_name="Retry Timeout for Errors")
    .define(ERRORS_RETRY_MAX_DELAY_CONFIG, ConfigType.LONG, 60000, importance=Importance.MEDIUM,
            doc="The maximum duration in milliseconds between consecutive retry attempts. Jitter will be "
                "added to the delay once this limit is reached to prevent thundering herd issues.",
            group=ERROR_GROUP, order_in_group=2, width=Width.MEDIUM,
            display_name="Maximum Delay Between Retries for Errors")
    .define(ERRORS_TOLERANCE_CONFIG, ConfigType.STRING, ToleranceType.NONE.value,
            CaseInsensitiveValidString.in_(ToleranceType.NONE.value, ToleranceType.ALL.value),
            Importance.MEDIUM,
            "Behavior for tolerating errors during connector operation. 'none' is the default value and "
            "signals that any error will result in an immediate connector task failure; 'all' changes "
            "the behavior to skip over problematic records.",
            group=ERROR_GROUP, order_in_group=3, width=Width.SHORT, display_name="Error Tolerance")
    .define(ERRORS_LOG_ENABLE_CONFIG, ConfigType.BOOLEAN, False, importance=Importance.MEDIUM,
            doc="If true, write each error and the details of the failed operation and problematic record "
                "to the Connect application log. This is 'false' by default, so that only errors that are "
                "not tolerated are reported.",
            group=ERROR_GROUP, order_in_group=4, width=Width.SHORT, display_name="Log Errors")
    .define(ERRORS_LOG_INCLUDE_MESSAGES_CONFIG, ConfigType.BOOLEAN, False, importance=Importance.MEDIUM,
            doc="Whether to include in the log the Connect record that resulted in a failure. For sink "
                "records, the topic, partition, offset, and timestamp will be logged. For source records, "
                "the key and value (and their schemas), all headers, and the timestamp, Kafka topic, Kafka "
                "partition, source partition, and source offset will be logged. This is 'false' by default, "
                "which will prevent record keys, values, and headers from being written to log files.",
            group=ERROR_GROUP, order_in_group=5, width=Width.SHORT, display_name="Log Error Details")
)
"""The error keys every connector accepts (Kafka's ConnectorConfig, group "Error Handling")."""

SINK_ERRORS_CONFIG: Final = (
    ConfigDef()
    .define(DLQ_TOPIC_NAME_CONFIG, ConfigType.STRING, "", importance=Importance.MEDIUM,
            doc="The name of the topic to be used as the dead letter queue (DLQ) for messages that result "
                "in an error when processed by this sink connector, or its transformations or converters. "
                "The topic name is blank by default, which means that no messages are to be recorded in "
                "the DLQ.",
            group=ERROR_GROUP, order_in_group=6, width=Width.MEDIUM,
            display_name="Dead Letter Queue Topic Name")
    .define(DLQ_TOPIC_REPLICATION_FACTOR_CONFIG, ConfigType.SHORT, 3, importance=Importance.MEDIUM,
            doc="Replication factor used to create the dead letter queue topic when it doesn't already exist.",
            group=ERROR_GROUP, order_in_group=7, width=Width.MEDIUM,
            display_name="Dead Letter Queue Topic Replication Factor")
    .define(DLQ_CONTEXT_HEADERS_ENABLE_CONFIG, ConfigType.BOOLEAN, False, importance=Importance.MEDIUM,
            doc="If true, add headers containing error context to the messages written to the dead letter "
                "queue. To avoid clashing with headers from the original record, all error context header "
                "keys will start with <code>__connect.errors.</code>",
            group=ERROR_GROUP, order_in_group=8, width=Width.MEDIUM,
            display_name="Enable Error Context Headers")
)
"""The dead letter queue keys only sink connectors accept (Kafka's SinkConnectorConfig)."""


def qualified_name(cls: type | None) -> str:
    """``module.QualName`` of a class, as Java's ``Class.getName``; builtins bare, None as "null"."""
    if cls is None:
        return "null"
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


class ConsumedRecord(NamedTuple):
    """A record as consumed from Kafka, raw bytes and all: what a DLQ re-produces.

    ``timestamp`` is epoch ms, None when the broker had none; ``headers`` as confluent-kafka
    gives them.
    """

    topic: str
    partition: int
    offset: int
    key: bytes | None = None
    value: bytes | None = None
    headers: Sequence[tuple[str, bytes | None]] = ()
    timestamp: int | None = None

    @classmethod
    def from_message(cls, message: Message) -> ConsumedRecord:
        """Copy what a confluent-kafka Message holds (topic, partition, offset, bytes, headers, time)."""
        timestamp_type, timestamp = message.timestamp()
        return cls(message.topic() or "", message.partition() or 0, message.offset() or 0,
                   message.key(), message.value(), message.headers() or (),
                   timestamp if timestamp_type else None)


@dataclass
class ProcessingContext:
    """What failed and on which record: given to reporters and quoted in errors.

    Kafka's ``ProcessingContext``. Build it only when something failed: :meth:`execute` takes a
    factory for it (see :data:`ContextSource`), and the operator fills in ``stage``,
    ``executing_class``, ``error`` and ``attempt``. Not thread-safe; one task thread owns it.
    """

    stage: Stage | None = None
    executing_class: type | None = None
    error: BaseException | None = None
    consumer_record: ConsumedRecord | None = None
    source_record: SourceRecord | None = None
    attempt: int = 0

    @classmethod
    def for_message(cls, message: Message) -> ProcessingContext:
        """A context for a record consumed with confluent-kafka (the sink side)."""
        return cls(consumer_record=ConsumedRecord.from_message(message))

    @classmethod
    def for_source(cls, record: SourceRecord) -> ProcessingContext:
        """A context for a record a SourceTask returned (the source side)."""
        return cls(source_record=record)

    def failed(self) -> bool:
        return self.error is not None

    def location(self) -> str:
        """Where the record came from: "topic 'x', partition 3, offset 42", or "" with no record."""
        if self.consumer_record is not None:
            record = self.consumer_record
            return f"topic '{record.topic}', partition {record.partition}, offset {record.offset}"
        if self.source_record is not None:
            source = self.source_record
            return f"source partition {source.source_partition} offset {source.source_offset}"
        return ""


ContextSource = ProcessingContext | Callable[[], ProcessingContext]
"""What :meth:`RetryWithToleranceOperator.execute` takes to describe the record: a context, or a
factory called only on failure (``partial(ProcessingContext.for_message, message)``) so the
happy path builds nothing."""


class ErrorReporter(ABC):
    """Where a failure goes once it is final: the log, a dead letter queue (Kafka's ErrorReporter).

    Called by the operator with its lock held, from the task's thread.
    """

    @abstractmethod
    def report(self, context: ProcessingContext) -> Future[Any] | None:
        """Report one failure; a Future when the report completes later (a DLQ produce)."""

    def flush(self, timeout: float | None = None) -> None:  # noqa: B027 - optional hook, empty by default
        """Wait until reports in flight are stored; raise ConnectError if any was lost."""

    def close(self) -> None:  # noqa: B027 - optional hook, empty by default
        """Release what the reporter holds, after storing reports in flight."""


class RetryWithToleranceOperator:
    """Runs a pipeline step with retries and errors.tolerance (Kafka's RetryWithToleranceOperator).

    One per task. :meth:`execute` and the reporting methods are called from the task's thread;
    :meth:`stop` may be called from any thread. The counters mirror Kafka's error metrics:
    ``total_failures`` operations that finally failed, ``total_skipped`` records skipped,
    ``total_retries`` retries made, ``last_error_time`` (epoch s) of the last failure.
    """

    def __init__(self, retry_timeout_ms: int = 0, max_retry_delay_ms: int = 60000,
                 tolerance: ToleranceType = ToleranceType.NONE, reporters: Sequence[ErrorReporter] = (), *,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] | None = None) -> None:
        """``sleep`` (seconds) replaces the default wait, which :meth:`stop` cuts short; for tests."""
        self.retry_timeout_ms = retry_timeout_ms
        self.max_retry_delay_ms = max_retry_delay_ms
        self.tolerance = tolerance
        self.reporters: list[ErrorReporter] = list(reporters)
        self.total_failures = 0
        self.total_skipped = 0
        self.total_retries = 0
        self.last_error_time = 0.0
        self._clock = clock
        self._stopping = threading.Event()
        self._sleep = sleep if sleep is not None else self._stopping.wait
        self._lock = threading.RLock()
        self._last_failed = False

    @classmethod
    def from_config(cls, values: Mapping[str, Any],
                    reporters: Sequence[ErrorReporter] = ()) -> RetryWithToleranceOperator:
        """An operator for a connector's config (parsed values or text; missing keys default)."""
        parsed = ERRORS_CONFIG.parse(values)
        return cls(parsed[ERRORS_RETRY_TIMEOUT_CONFIG], parsed[ERRORS_RETRY_MAX_DELAY_CONFIG],
                   ToleranceType(parsed[ERRORS_TOLERANCE_CONFIG].lower()), reporters)

    def execute(self, operation: Callable[[], _T], stage: Stage, executing_class: type,
                context: ContextSource) -> _T | None:
        """``operation()``, retried and tolerated as the module docstring draws; None = skip the record.

        ``context`` is a ProcessingContext or a factory for one, called only on failure. A
        None result may also be the operation's own (a transform filtering the record): ask
        :meth:`failed` to tell them apart.
        """
        self._last_failed = False
        try:
            return operation()
        except Exception as exc:  # noqa: BLE001 - classified below, outside this handler
            error: Exception = exc
        return self._recover(operation, error, stage, executing_class, context)

    def failed(self) -> bool:
        """Whether the last :meth:`execute` failed (its None means the record was skipped)."""
        return self._last_failed

    def within_tolerance_limits(self) -> bool:
        """False once a failure happened under errors.tolerance=none (Kafka's withinToleranceLimits)."""
        return self.tolerance is ToleranceType.ALL or self.total_failures == 0

    def execute_failed(self, stage: Stage, executing_class: type, error: BaseException,
                       context: ContextSource) -> None:
        """Record a failure that happened outside :meth:`execute`, such as a producer send error.

        Kafka's ``executeFailed``: counted and reported, then ConnectError unless tolerated.
        """
        failed = self._context(context, stage, executing_class, error, attempt=1)
        with self._lock:
            self._mark_as_failed()
            report_error = self._report_quietly(failed)
        if not self.within_tolerance_limits():
            raise ConnectError(_message("Tolerance exceeded in error handler", failed) + _TOLERANCE_FIX) from error
        if report_error is not None:
            raise report_error

    def report(self, context: ProcessingContext) -> None:
        """Hand ``context`` to every reporter, counting nothing (Kafka's ``report``)."""
        with self._lock:
            for reporter in self.reporters:
                reporter.report(context)

    def flush(self, timeout: float | None = None) -> None:  # noqa: B027 - optional hook, empty by default
        """Wait for every reporter's reports in flight; ConnectError if one was lost.

        Call before committing offsets: a skipped record's offset may be committed only once
        its dead letter queue copy is stored.
        """
        with self._lock:
            for reporter in self.reporters:
                reporter.flush(timeout)

    def stop(self) -> None:
        """Stop retrying: a backoff under way ends now and the failure is final (Kafka's triggerStop)."""
        self._stopping.set()

    def close(self) -> None:
        """Close every reporter; ConnectError naming all that failed, after trying each."""
        with self._lock:
            reporters, self.reporters = self.reporters, []
        problems: list[BaseException] = []
        for reporter in reporters:
            try:
                reporter.close()
            except Exception as exc:  # noqa: BLE001 - every reporter gets closed
                problems.append(exc)
        if problems:
            raise ConnectError("Failed to close all reporters: " + "; ".join(
                f"{type(p).__name__}: {p}" for p in problems)) from problems[0]

    def _recover(self, operation: Callable[[], _T], error: Exception, stage: Stage, executing_class: type,
                 context: ContextSource) -> _T | None:
        attempt = 1
        if isinstance(error, RetriableError):
            succeeded, outcome, attempt = self._retry(operation, error, stage, executing_class)
            if succeeded:
                return outcome  # type: ignore[no-any-return]
            error = outcome
        self._fail(error, attempt, stage, executing_class, context)
        return None

    def _retry(self, operation: Callable[[], _T], error: Exception, stage: Stage,
               executing_class: type) -> tuple[bool, Any, int]:
        """Kafka's ``execAndRetry`` after a first RetriableError: (succeeded, result or last error, attempts)."""
        timeout_ms = self.retry_timeout_ms
        deadline = math.inf if timeout_ms < 0 else self._clock() + timeout_ms / 1000
        attempt = 1
        while not self._stopping.is_set() and self._clock() < deadline:
            log.debug("Retrying stage %s with class %s after attempt %s failed: %s",
                      stage.name, qualified_name(executing_class), attempt, error)
            self._backoff(attempt, deadline)
            if self._stopping.is_set():
                break
            self.total_retries += 1
            attempt += 1
            try:
                return True, operation(), attempt
            except RetriableError as exc:
                error = exc
            except Exception as exc:  # noqa: BLE001 - a non-retriable error ends the retries
                return False, exc, attempt
        return False, error, attempt

    def _backoff(self, attempt: int, deadline: float) -> None:
        """Sleep 300 ms doubled per attempt; past the maximum a random delay under it (Kafka's jitter)."""
        delay_ms = RETRIES_DELAY_MIN_MS << min(attempt - 1, 40)
        if delay_ms > self.max_retry_delay_ms:
            delay_ms = random.randrange(self.max_retry_delay_ms) if self.max_retry_delay_ms > 0 else 0
        remaining_ms = (deadline - self._clock()) * 1000
        delay_s = max(0.0, min(delay_ms, remaining_ms)) / 1000
        log.debug("Sleeping for up to %s millis", round(delay_s * 1000))
        self._sleep(delay_s)

    def _fail(self, error: Exception, attempt: int, stage: Stage, executing_class: type,
              context: ContextSource) -> None:
        """Report a final failure, then raise unless this stage tolerates it under errors.tolerance."""
        failed = self._context(context, stage, executing_class, error, attempt)
        tolerable = stage in _TOLERATE_ANY_ERROR or isinstance(error, RetriableError)
        with self._lock:
            self._mark_as_failed()
            report_error = self._report_quietly(failed)
        if not tolerable:
            raise ConnectError(_message("Unhandled exception in error handler", failed)
                               + f" Stage {stage.name} tolerates only RetriableError, whatever "
                               f"{ERRORS_TOLERANCE_CONFIG} says: fix the cause, or raise RetriableError "
                               f"for a transient failure.") from error
        if not self.within_tolerance_limits():
            raise ConnectError(_message("Tolerance exceeded in error handler", failed) + _TOLERANCE_FIX) from error
        if report_error is not None:
            raise report_error  # a skipped record must reach its reporters, or the task stops
        self.total_skipped += 1

    def _report_quietly(self, context: ProcessingContext) -> BaseException | None:
        """Report; a reporter's failure is returned, so it cannot hide the error being reported."""
        try:
            self.report(context)
        except Exception as exc:
            log.error("Could not report the failure of stage %s on %s", context.stage, context.location(),
                      exc_info=exc)
            return exc
        return None

    def _mark_as_failed(self) -> None:
        self._last_failed = True
        self.total_failures += 1
        self.last_error_time = time.time()

    @staticmethod
    def _context(source: ContextSource, stage: Stage, executing_class: type, error: BaseException,
                 attempt: int) -> ProcessingContext:
        context = source if isinstance(source, ProcessingContext) else source()
        context.stage, context.executing_class = stage, executing_class
        context.error, context.attempt = error, attempt
        return context

    def __repr__(self) -> str:
        return (f"RetryWithToleranceOperator(retry_timeout_ms={self.retry_timeout_ms}, max_retry_delay_ms="
                f"{self.max_retry_delay_ms}, tolerance={self.tolerance.value}, total_failures={self.total_failures})")


_TOLERANCE_FIX: Final = (f" With {ERRORS_TOLERANCE_CONFIG}=none the task stops at the first bad record: fix "
                         f"the record or the configuration, or set {ERRORS_TOLERANCE_CONFIG}=all to skip such "
                         f"records (and {DLQ_TOPIC_NAME_CONFIG} to keep them in a dead letter queue).")


def _message(headline: str, context: ProcessingContext) -> str:
    """``headline``: which stage and class failed, on which record, after how many attempts, and why."""
    where = context.location()
    attempts = f" after {context.attempt} attempts" if context.attempt > 1 else ""
    error = context.error
    return (f"{headline}: executing stage '{context.stage.name if context.stage else None}' with class "
            f"'{qualified_name(context.executing_class)}'" + (f" on {where}" if where else "")
            + f" failed{attempts} ({qualified_name(type(error))}: {error}).")
