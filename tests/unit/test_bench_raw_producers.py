"""The raw producer anchors wait for room when librdkafka's local queue is full: every record once, in order."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import bench_file_pipeline as pipeline
from bench import bench_raw_kafka as raw


class _FullEveryThird:
    """A producer whose local queue is full at every third produce until the next poll serves it."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes, bytes | None]] = []
        self.calls = 0
        self.full = False

    def produce(self, topic: str, value: bytes, key: bytes | None = None) -> None:
        self.calls += 1
        if self.full or self.calls % 3 == 0:
            self.full = True
            raise BufferError("Local: Queue full")
        self.sent.append((topic, value, key))

    def poll(self, timeout: float = 0) -> int:
        self.full = False
        return 0

    def flush(self, timeout: float = 0) -> int:
        return 0


@pytest.fixture
def producer(monkeypatch: pytest.MonkeyPatch) -> _FullEveryThird:
    fake = _FullEveryThird()
    monkeypatch.setattr(raw, "ready_producer", lambda bootstrap, topic: fake)
    monkeypatch.setattr(pipeline, "ready_producer", lambda bootstrap, topic: fake)
    return fake


def test_produce_records_sends_each_record_once_in_order_through_a_full_queue(producer: _FullEveryThird) -> None:
    records = [(b"k%d" % i, b"v%d" % i) for i in range(10)]

    measure = raw.produce_records("unused:9092", "orders", records)

    assert measure.count == 10
    assert producer.sent == [("orders", value, key) for key, value in records]


def test_produce_records_calls_its_ready_hook_once_before_the_first_record(producer: _FullEveryThird) -> None:
    sent_when_ready: list[int] = []

    measure = raw.produce_records("unused:9092", "orders", [(None, b"v%d" % i) for i in range(4)],
                                  ready=lambda: sent_when_ready.append(producer.calls))

    assert sent_when_ready == [0]
    assert measure.count == 4 and [value for _, value, _ in producer.sent] == [b"v%d" % i for i in range(4)]


def test_the_line_producer_sends_each_line_once_in_order_through_a_full_queue(
        producer: _FullEveryThird, tmp_path: Path) -> None:
    path = tmp_path / "lines.txt"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(7)))

    pipeline.raw_produce_lines("unused:9092", "lines", path, 7)

    assert producer.sent == [("lines", b"line %d" % i, None) for i in range(7)]
