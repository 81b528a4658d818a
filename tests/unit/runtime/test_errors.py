"""RetryWithToleranceOperator, the error config keys and LogReporter, without Kafka.

Backoffs are observed through an injected sleep that also moves an injected clock, so retry
timing is checked exactly (Kafka's RetryWithToleranceOperatorTest does the same with MockTime).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import Any

import pytest
from confluent_kafka import Message

from kopycat.api.errors import ConfigError, ConnectError, DataError, RetriableError
from kopycat.api.records import SourceRecord
from kopycat.runtime.error_reporters import LogReporter, build_reporters, dlq_context_headers
from kopycat.runtime.errors import (
    ERRORS_CONFIG,
    SINK_ERRORS_CONFIG,
    ConsumedRecord,
    ErrorReporter,
    ProcessingContext,
    RetryWithToleranceOperator,
    Stage,
    ToleranceType,
)

RECORD = ConsumedRecord("orders", 3, 42, b"k1", b"{not json", [("trace", b"abc")], 1700000000000)


class FakeClock:
    """A monotonic clock that only the recorded sleeps move."""

    def __init__(self) -> None:
        self.now_ms = 1_000_000  # whole milliseconds: float sums would drift past deadlines
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now_ms / 1000

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 6))
        self.now_ms += round(seconds * 1000)


class Recording(ErrorReporter):
    """Keeps what it was given: the reporters' side of the contract."""

    def __init__(self) -> None:
        self.contexts: list[ProcessingContext] = []
        self.closed = False

    def report(self, context: ProcessingContext) -> Future[Any] | None:
        self.contexts.append(context)
        return None

    def close(self) -> None:
        self.closed = True


class JsonishConverter:
    """Stands in as the executing class named in messages."""


CLASS_NAME = f"{JsonishConverter.__module__}.JsonishConverter"


def failing(times: int, error: Callable[[], Exception], result: str = "done") -> Callable[[], str]:
    """An operation that raises ``error()`` ``times`` times, then returns ``result``."""
    calls = {"n": 0}

    def operation() -> str:
        calls["n"] += 1
        if calls["n"] <= times:
            raise error()
        return result

    return operation


def operator(clock: FakeClock, *, timeout_ms: int = 0, max_delay_ms: int = 60000,
             tolerance: ToleranceType = ToleranceType.NONE,
             reporters: tuple[ErrorReporter, ...] = ()) -> RetryWithToleranceOperator:
    return RetryWithToleranceOperator(timeout_ms, max_delay_ms, tolerance, reporters, clock=clock,
                                      sleep=clock.sleep)


def context() -> ProcessingContext:
    return ProcessingContext(consumer_record=RECORD)


def test_retriable_error_is_retried_with_doubling_backoff_until_success() -> None:
    clock = FakeClock()
    retry = operator(clock, timeout_ms=-1)

    result = retry.execute(failing(4, lambda: RetriableError("broker busy")), Stage.TASK_PUT,
                           JsonishConverter, context)

    assert result == "done"
    assert clock.sleeps == [0.3, 0.6, 1.2, 2.4]
    assert (retry.total_retries, retry.total_failures, retry.failed()) == (4, 0, False)


def test_backoff_past_the_maximum_delay_is_random_jitter_below_it() -> None:
    clock = FakeClock()
    retry = operator(clock, timeout_ms=-1, max_delay_ms=1000)

    assert retry.execute(failing(8, RetriableError), Stage.TASK_POLL, JsonishConverter, context) == "done"

    assert clock.sleeps[:2] == [0.3, 0.6]
    assert len(clock.sleeps) == 8
    assert all(0 <= s < 1.0 for s in clock.sleeps[2:])


def test_retries_stop_at_the_retry_timeout_and_the_last_backoff_is_cut_to_the_deadline() -> None:
    clock = FakeClock()
    reporter = Recording()
    retry = operator(clock, timeout_ms=6000, tolerance=ToleranceType.ALL, reporters=(reporter,))

    result = retry.execute(failing(100, lambda: RetriableError("still down")), Stage.VALUE_CONVERTER,
                           JsonishConverter, context)

    assert result is None
    assert clock.sleeps == [0.3, 0.6, 1.2, 2.4, 1.5]  # as Kafka's testExecAndHandleRetriableErrorWithMaxRetriesExceeded
    assert (retry.total_failures, retry.total_skipped, retry.failed()) == (1, 1, True)
    [reported] = reporter.contexts
    assert (reported.stage, reported.attempt, str(reported.error)) == (Stage.VALUE_CONVERTER, 6, "still down")


def test_retries_running_out_under_tolerance_none_fail_the_task_rather_than_skip() -> None:
    clock = FakeClock()
    retry = operator(clock, timeout_ms=1000)

    with pytest.raises(ConnectError) as raised:
        retry.execute(failing(100, lambda: RetriableError("still down")), Stage.KEY_CONVERTER,
                      JsonishConverter, context)

    assert "after 4 attempts" in str(raised.value)
    assert clock.sleeps == [0.3, 0.6, 0.1]


def test_no_retry_with_the_default_timeout_of_zero() -> None:
    clock = FakeClock()
    retry = operator(clock, tolerance=ToleranceType.ALL)

    assert retry.execute(failing(1, RetriableError), Stage.TRANSFORMATION, JsonishConverter, context) is None
    assert clock.sleeps == []


def test_tolerance_none_raises_naming_stage_class_and_record_with_the_cause_chained() -> None:
    reporter = Recording()
    retry = operator(FakeClock(), reporters=(reporter,))
    bad = DataError("Converting byte[] to Kafka Connect data failed due to serialization error")

    with pytest.raises(ConnectError) as raised:
        retry.execute(failing(1, lambda: bad), Stage.VALUE_CONVERTER, JsonishConverter, context)

    message = str(raised.value)
    assert message.startswith("Tolerance exceeded in error handler: executing stage 'VALUE_CONVERTER' "
                              f"with class '{CLASS_NAME}' on topic 'orders', partition 3, "
                              "offset 42 failed (kopycat.api.errors.DataError: Converting byte[]")
    assert "errors.tolerance=all" in message
    assert raised.value.__cause__ is bad
    assert [c.error for c in reporter.contexts] == [bad]  # reported before the task fails


def test_tolerance_all_skips_the_record_counts_it_and_reports_it() -> None:
    reporter = Recording()
    retry = operator(FakeClock(), tolerance=ToleranceType.ALL, reporters=(reporter,))

    for _ in range(3):
        assert retry.execute(failing(1, lambda: ValueError("bad")), Stage.TRANSFORMATION,
                             JsonishConverter, context) is None
        assert retry.failed()

    assert (retry.total_failures, retry.total_skipped) == (3, 3)
    assert [(c.stage, c.executing_class, c.consumer_record) for c in reporter.contexts] == [
        (Stage.TRANSFORMATION, JsonishConverter, RECORD)] * 3
    assert retry.execute(lambda: None, Stage.TRANSFORMATION, JsonishConverter, context) is None
    assert not retry.failed()  # a transform's own None (filtered) is not a failure


def test_stages_outside_converters_and_transforms_never_tolerate_non_retriable_errors() -> None:
    retry = operator(FakeClock(), tolerance=ToleranceType.ALL)

    for stage in (Stage.TASK_PUT, Stage.TASK_POLL, Stage.KAFKA_PRODUCE, Stage.KAFKA_CONSUME):
        with pytest.raises(ConnectError, match=f"^Unhandled exception in error handler: executing stage "
                                               f"'{stage.name}'"):
            retry.execute(failing(1, lambda: OSError("disk full")), stage, JsonishConverter, context)
    assert retry.execute(failing(1, RetriableError), Stage.TASK_PUT, JsonishConverter, context) is None


def test_the_context_factory_is_called_only_on_failure() -> None:
    def no_context() -> ProcessingContext:
        raise AssertionError("built a context on the happy path")

    retry = operator(FakeClock())

    assert retry.execute(lambda: 7, Stage.KEY_CONVERTER, JsonishConverter, no_context) == 7


def test_a_ready_context_or_a_factory_built_from_a_consumed_message_both_work() -> None:
    reporter = Recording()
    retry = operator(FakeClock(), tolerance=ToleranceType.ALL, reporters=(reporter,))
    message = Message(topic="orders", partition=3, offset=42, key=b"k1", value=b"{not json",
                      headers=[("trace", b"abc")], timestamp=(1, 1700000000000))

    retry.execute(failing(1, ValueError), Stage.VALUE_CONVERTER, JsonishConverter,
                  partial(ProcessingContext.for_message, message))
    ready = ProcessingContext.for_source(SourceRecord(topic="t", source_partition={"table": "a"},
                                                      source_offset={"id": 9}))
    retry.execute(failing(1, ValueError), Stage.TRANSFORMATION, JsonishConverter, ready)

    assert reporter.contexts[0].consumer_record == RECORD
    assert reporter.contexts[1] is ready
    assert ready.location() == "source partition {'table': 'a'} offset {'id': 9}"


def test_base_exceptions_that_are_not_errors_pass_through_untouched() -> None:
    retry = operator(FakeClock(), tolerance=ToleranceType.ALL)

    with pytest.raises(KeyboardInterrupt):
        retry.execute(failing(1, KeyboardInterrupt), Stage.TRANSFORMATION, JsonishConverter, context)
    assert retry.total_failures == 0


def test_stop_cuts_a_backoff_short_and_ends_the_retries() -> None:
    retry = RetryWithToleranceOperator(-1, 60000, ToleranceType.ALL)
    threading.Timer(0.2, retry.stop).start()
    started = time.monotonic()

    assert retry.execute(failing(10**6, RetriableError), Stage.TASK_PUT, JsonishConverter, context) is None

    assert time.monotonic() - started < 5
    assert retry.total_skipped == 1


def test_execute_failed_reports_then_raises_only_under_tolerance_none() -> None:
    reporter = Recording()
    tolerant = operator(FakeClock(), tolerance=ToleranceType.ALL, reporters=(reporter,))
    tolerant.execute_failed(Stage.KAFKA_PRODUCE, JsonishConverter, OSError("send failed"), context)
    strict = operator(FakeClock(), reporters=(reporter,))

    with pytest.raises(ConnectError, match="Tolerance exceeded in error handler: executing stage "
                                           "'KAFKA_PRODUCE'"):
        strict.execute_failed(Stage.KAFKA_PRODUCE, JsonishConverter, OSError("send failed"), context)
    assert len(reporter.contexts) == 2


def test_a_reporter_failure_stops_a_skip_but_does_not_hide_the_original_error() -> None:
    class Broken(ErrorReporter):
        def report(self, context: ProcessingContext) -> None:
            raise ConnectError("dead letter queue unreachable")

    tolerant = operator(FakeClock(), tolerance=ToleranceType.ALL, reporters=(Broken(),))
    with pytest.raises(ConnectError, match="dead letter queue unreachable"):
        tolerant.execute(failing(1, ValueError), Stage.TRANSFORMATION, JsonishConverter, context)
    strict = operator(FakeClock(), reporters=(Broken(),))
    with pytest.raises(ConnectError, match="Tolerance exceeded"):
        strict.execute(failing(1, ValueError), Stage.TRANSFORMATION, JsonishConverter, context)


def test_close_closes_every_reporter_and_names_those_that_failed() -> None:
    class FailsToClose(Recording):
        def close(self) -> None:
            raise OSError("socket gone")

    first, second = Recording(), Recording()
    retry = operator(FakeClock(), reporters=(first, FailsToClose(), second))

    with pytest.raises(ConnectError, match="Failed to close all reporters: OSError: socket gone"):
        retry.close()
    assert first.closed and second.closed


def test_error_keys_parse_with_kafka_defaults_in_the_error_handling_group() -> None:
    assert ERRORS_CONFIG.parse({}) == {
        "errors.retry.timeout": 0, "errors.retry.delay.max.ms": 60000, "errors.tolerance": "none",
        "errors.log.enable": False, "errors.log.include.messages": False}
    assert SINK_ERRORS_CONFIG.parse({}) == {
        "errors.deadletterqueue.topic.name": "", "errors.deadletterqueue.topic.replication.factor": 3,
        "errors.deadletterqueue.context.headers.enable": False}
    keys = [*ERRORS_CONFIG.keys.values(), *SINK_ERRORS_CONFIG.keys.values()]
    assert [(k.group, k.order_in_group) for k in keys] == [("Error Handling", n) for n in range(1, 9)]


def test_operator_from_text_config_with_tolerance_in_any_case() -> None:
    retry = RetryWithToleranceOperator.from_config(
        {"errors.retry.timeout": "-1", "errors.retry.delay.max.ms": "5000", "errors.tolerance": "ALL"})

    assert (retry.retry_timeout_ms, retry.max_retry_delay_ms, retry.tolerance) == (-1, 5000, ToleranceType.ALL)


def test_a_bad_tolerance_value_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError) as raised:
        RetryWithToleranceOperator.from_config({"errors.tolerance": "some"})

    assert raised.value.key == "errors.tolerance"
    assert str(raised.value) == ("Invalid value some for configuration errors.tolerance: String must be "
                                 "one of (case insensitive): NONE, ALL")


def test_log_reporter_logs_stage_class_and_coordinates_but_not_content_by_default(
        caplog: pytest.LogCaptureFixture) -> None:
    failed = ProcessingContext(Stage.VALUE_CONVERTER, JsonishConverter, DataError("bad json"), RECORD)

    with caplog.at_level(logging.ERROR, logger="kopycat.runtime.error_reporters"):
        LogReporter("orders-sink", 2, include_messages=False).report(failed)

    [entry] = caplog.records
    assert entry.levelno == logging.ERROR
    assert entry.getMessage() == (
        "Error encountered in task orders-sink-2. Executing stage 'VALUE_CONVERTER' with class "
        f"'{CLASS_NAME}', where consumed record is {{topic='orders', partition=3, offset=42}}. "
        "Caused by: DataError: bad json")
    assert entry.exc_info is None


def test_log_reporter_logs_one_line_with_the_cause_chain_and_the_traceback_only_at_debug(
        caplog: pytest.LogCaptureFixture) -> None:
    try:
        try:
            raise ValueError("Expecting value:\n line 1 column 2")
        except ValueError as exc:
            raise DataError("Converting byte[] to Kafka Connect data failed") from exc
    except DataError as exc:
        failed = ProcessingContext(Stage.VALUE_CONVERTER, JsonishConverter, exc, RECORD)

    with caplog.at_level(logging.ERROR, logger="kopycat.runtime.error_reporters"):
        LogReporter("orders-sink", 2).report(failed)
    [line] = caplog.records
    assert "\n" not in line.getMessage() and line.exc_info is None
    assert line.getMessage().endswith(
        "topic='orders', partition=3, offset=42}. Caused by: DataError: Converting byte[] to Kafka Connect data "
        "failed; caused by ValueError: Expecting value: line 1 column 2")
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="kopycat.runtime.error_reporters"):
        LogReporter("orders-sink", 2).report(failed)
    error, trace = caplog.records
    assert error.levelno == logging.ERROR and trace.levelno == logging.DEBUG
    assert trace.exc_info is not None and trace.exc_info[1] is failed.error
    assert "topic 'orders', partition 3, offset 42" in trace.getMessage()


def test_log_reporter_includes_key_value_and_headers_only_when_asked(caplog: pytest.LogCaptureFixture) -> None:
    failed = ProcessingContext(Stage.VALUE_CONVERTER, JsonishConverter, DataError("bad json"), RECORD)
    source = ProcessingContext(Stage.TRANSFORMATION, JsonishConverter, ValueError("x"), source_record=SourceRecord(
        topic="t", value="secret", source_partition={"table": "a"}, source_offset={"id": 9}))

    with caplog.at_level(logging.ERROR, logger="kopycat.runtime.error_reporters"):
        LogReporter("orders-sink", 2, include_messages=True).report(failed)
        LogReporter("src", 0, include_messages=False).report(source)
        LogReporter("src", 0, include_messages=True).report(source)

    sink_line, source_line, source_content = (r.getMessage() for r in caplog.records)
    assert sink_line.endswith(
        "where consumed record is {topic='orders', partition=3, offset=42, timestamp=1700000000000, "
        "key=b'k1', value=b'{not json', headers=[('trace', b'abc')]}. Caused by: DataError: bad json")
    assert source_line.endswith("where source record is {source_partition={'table': 'a'}, "
                                "source_offset={'id': 9}}. Caused by: ValueError: x")
    assert "secret" not in source_line
    assert "where source record is = SourceRecord(" in source_content and "'secret'" in source_content


def test_build_reporters_follows_the_config() -> None:
    assert build_reporters({}, connector_name="c", task_id=0, bootstrap_servers=None) == []
    [reporter] = build_reporters({"errors.log.enable": "true", "errors.log.include.messages": "true"},
                                 connector_name="c", task_id=1, bootstrap_servers=None)
    assert isinstance(reporter, LogReporter)
    assert (reporter.connector_name, reporter.task_id, reporter.include_messages) == ("c", 1, True)
    with pytest.raises(ConfigError, match="errors.deadletterqueue.topic.name"):
        build_reporters({"errors.deadletterqueue.topic.name": "dlq"}, connector_name="c", task_id=0,
                        bootstrap_servers=None)


def test_dlq_context_headers_carry_kafkas_names_and_utf8_text_values() -> None:
    try:
        raise DataError("bad json: ü")
    except DataError as exc:
        error = exc
    failed = ProcessingContext(Stage.VALUE_CONVERTER, JsonishConverter, error, RECORD)

    headers = dict(dlq_context_headers(failed, "orders-sink", 2))

    trace = headers.pop("__connect.errors.exception.stacktrace")
    assert headers == {
        "__connect.errors.topic": b"orders", "__connect.errors.partition": b"3",
        "__connect.errors.offset": b"42", "__connect.errors.connector.name": b"orders-sink",
        "__connect.errors.task.id": b"2", "__connect.errors.stage": b"VALUE_CONVERTER",
        "__connect.errors.class.name": CLASS_NAME.encode(),
        "__connect.errors.exception.class.name": b"kopycat.api.errors.DataError",
        "__connect.errors.exception.message": "bad json: ü".encode()}
    assert trace is not None and trace.startswith(b"Traceback") and trace.endswith(
        "kopycat.api.errors.DataError: bad json: ü\n".encode())
