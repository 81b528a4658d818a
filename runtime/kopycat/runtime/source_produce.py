"""Handing converted records to the producer: one by one, or a whole encoded column at a time.

Follows the Java producer's ``send`` in Kafka Connect's ``AbstractWorkerSourceTask.sendRecords``,
including its blocking for room: a full local queue makes ``produce`` wait, serving delivery
reports, for up to ``max.block.ms``, instead of failing the task.

Records go to ``Producer.produce`` as positional arguments: confluent-kafka parses keywords
through a slower path, and the producing side is a large share of a source task's time.
Used on the runner's thread only.
"""

from __future__ import annotations

import time
from collections import deque
from itertools import repeat
from operator import length_hint
from typing import Any

from confluent_kafka import Producer

from kopycat.api.errors import ConnectError
from kopycat.runtime.task_parts import TaskId

__all__ = ["MAX_BLOCK_S", "PARTITION_ANY", "TIMESTAMP_NOW", "byte_count", "produce_all", "produce_when_room"]

MAX_BLOCK_S = 60.0  # the Java producer's max.block.ms
PARTITION_ANY = -1  # librdkafka's RD_KAFKA_PARTITION_UA: the partitioner chooses
TIMESTAMP_NOW = 0   # confluent-kafka's "no timestamp given": the producer stamps the record


def byte_count(values: Any) -> int:
    """Bytes in a binary Arrow array's values: the span its offsets cover (a null spans none).

    Read from the offsets buffer, two numbers per batch, instead of a length kernel and a sum
    over every value: this runs once per produced batch.
    """
    import numpy as np
    import pyarrow as pa  # only runs that take batches need pyarrow

    if not len(values):
        return 0
    large = pa.types.is_large_binary(values.type) or pa.types.is_large_string(values.type)
    offsets = np.frombuffer(values.buffers()[1], np.int64 if large else np.int32)
    return int(offsets[values.offset + len(values)] - offsets[values.offset])


def produce_when_room(producer: Producer, args: tuple[Any, ...], task_id: TaskId) -> None:
    """The local queue is full: serve delivery reports until it takes the record, for up to
    the Java producer's max.block.ms (the clock is read only on this slow path)."""
    deadline = time.monotonic() + MAX_BLOCK_S
    while True:
        producer.poll(0.05)
        try:
            producer.produce(*args)
            return
        except BufferError:
            if time.monotonic() > deadline:
                raise ConnectError(f"Task {task_id}: the producer queue stayed full for "
                                   f"{MAX_BLOCK_S:.0f} s; is Kafka reachable?") from None


def produce_all(producer: Producer, task_id: TaskId, topic: str, values: list[bytes | None],
                keys: list[bytes | None] | None = None, *rest: Any) -> None:
    """``produce(topic, value[, key, *rest])`` for every value, iterated by ``map`` in C: no Python
    frame per record. Without keys only two arguments are passed, since defaults the caller does
    not need still cost their parsing. A full queue stops the map; the value it stopped at is
    found from the iterator's remaining length, waits for room, and the map goes on."""
    send, remaining = producer.produce, iter(values)
    key_iter = iter(keys) if keys is not None else None
    more = [key_iter, *map(repeat, rest)] if key_iter is not None else []
    while True:
        try:
            deque(map(send, repeat(topic), remaining, *more), 0)
            return
        except BufferError:
            index = len(values) - length_hint(remaining) - 1
            args = (topic, values[index]) if keys is None else (topic, values[index], keys[index], *rest)
            produce_when_room(producer, args, task_id)
