"""byte_count: bytes of a produced batch's values, read from the offsets buffer; connect_idempotent.

Checked against Arrow's own length kernel on the shapes converters hand the runner: sliced
arrays (a file's batches are slices of a chunk), nulls, large binary, UTF-8 strings viewed as binary,
empty.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from confluent_kafka import Producer

from kopycat.idempotent_producer import connect_idempotent
from kopycat.runtime.source_produce import byte_count

ARRAYS = {
    "binary": pa.array([b"ab", b"cde", b"f"]),
    "with nulls": pa.array([b"ab", None, b"cdef", None]),
    "sliced": pa.array([b"ab", b"cde", b"fghi", b"j"]).slice(1, 2),
    "sliced to the end": pa.array([b"ab", b"cde", b"fghi"]).slice(2),
    "large binary sliced": pa.array([b"ab", b"cde", b"fghi"], pa.large_binary()).slice(1),
    "utf-8 strings viewed as binary": pa.array(["é€", "x", "𝄞"]).view(pa.binary()).slice(1),
    "all empty values": pa.array([b"", b""]),
}


@pytest.mark.parametrize("values", ARRAYS.values(), ids=ARRAYS.keys())
def test_byte_count_equals_the_sum_of_value_lengths(values: pa.Array) -> None:
    assert byte_count(values) == (pc.sum(pc.binary_length(values)).as_py() or 0)


def test_byte_count_of_an_empty_array_is_zero() -> None:
    assert byte_count(pa.array([], pa.binary())) == 0
    assert byte_count(pa.array([b"abc"]).slice(1)) == 0


class _Metadata:
    def __init__(self, orig_broker_id: int) -> None:
        self.orig_broker_id = orig_broker_id


class _AnsweringProducer:
    """Answers metadata requests from the given brokers in turn (-1: the bootstrap connection)."""

    def __init__(self, *answered_by: int) -> None:
        self.answers = list(answered_by)
        self.requests = 0

    def list_topics(self, timeout: float) -> _Metadata:
        self.requests += 1
        return _Metadata(self.answers.pop(0))


def test_connect_idempotent_asks_again_until_a_broker_known_by_its_id_answers() -> None:
    producer = _AnsweringProducer(-1, -1, 1, 1)
    connect_idempotent(producer, "Task c-0")  # type: ignore[arg-type]
    assert producer.requests == 3


def test_connect_idempotent_asks_once_when_a_broker_answers_at_once() -> None:
    producer = _AnsweringProducer(2)
    connect_idempotent(producer, "Task c-0")  # type: ignore[arg-type]
    assert producer.requests == 1


def test_connect_idempotent_leaves_an_unreachable_cluster_to_the_producers_own_retries() -> None:
    producer = Producer({"bootstrap.servers": "127.0.0.1:1", "enable.idempotence": True, "log_level": 0})
    connect_idempotent(producer, "Task c-0", timeout_s=0.5)  # returns instead of raising
    producer.produce("t", b"queued")
    assert producer.flush(0) >= 1  # the record waits in the producer's queue, as it did without the call
