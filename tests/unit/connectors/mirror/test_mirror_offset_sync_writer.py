"""OffsetSyncWriter's queues: which syncs are sent at once and which wait for the next commit.

Kafka's ``OffsetSyncWriter.maybeQueueOffsetSyncs`` / ``promoteDelayedOffsetSyncs``: a due sync is
pending at once (and its partition's delayed one dropped), any other copied offset replaces the
partition's delayed sync, and a commit makes the delayed syncs pending, in the order their
partitions were first delayed (LinkedHashMap). The producer is never asked to send here.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from kopycat.connectors.mirror.offset_sync import OffsetSync, OffsetSyncWriter


@pytest.fixture
def writer() -> Iterator[OffsetSyncWriter]:
    # Nothing listens on port 1: the producer is created but never sends (fire_pending is not called).
    writer = OffsetSyncWriter({"bootstrap.servers": "127.0.0.1:1", "log_level": 0}, "syncs", max_offset_lag=100)
    yield writer
    writer.close(0)


def test_the_first_offset_is_pending_at_once_and_later_ones_wait_as_the_latest_per_partition(
        writer: OffsetSyncWriter) -> None:
    orders, users = ("orders", 0), ("users", 3)
    assert writer.maybe_queue(orders, 0, 1000)
    assert writer.pending == {orders: OffsetSync("orders", 0, 0, 1000)}
    writer.pending.clear()
    assert not any([writer.maybe_queue(orders, upstream, 1000 + upstream) for upstream in range(1, 50)])
    assert writer.maybe_queue(users, 7, 7)
    assert not writer.maybe_queue(users, 8, 8)
    assert writer.pending == {users: OffsetSync("users", 3, 7, 7)}

    writer.promote_delayed()
    assert list(writer.pending.items()) == [(users, OffsetSync("users", 3, 8, 8)),
                                            (orders, OffsetSync("orders", 0, 49, 1049))]
    assert writer.delayed == {}


def test_a_due_sync_drops_its_partitions_delayed_one_and_later_offsets_wait_again(
        writer: OffsetSyncWriter) -> None:
    key = ("orders", 0)
    due = [upstream for upstream in range(250) if writer.maybe_queue(key, upstream, upstream + 1000)]
    assert due == [0, 101, 202]  # the first, then every offset.lag.max + 1
    assert writer.pending == {key: OffsetSync("orders", 0, 202, 1202)}  # the newest due one
    assert list(writer.delayed) == [key]  # 203..249 came after it

    assert writer.maybe_queue(key, 260, 1260)  # upstream skipped 250..259: due now
    assert writer.delayed == {}
    assert writer.pending == {key: OffsetSync("orders", 0, 260, 1260)}
    writer.promote_delayed()  # nothing delayed: the pending sync stays as it is
    assert writer.pending == {key: OffsetSync("orders", 0, 260, 1260)}


def _fields(writer: OffsetSyncWriter) -> tuple[object, ...]:
    states = {key: (state.previous_upstream, state.previous_downstream, state.last_sync_downstream)
              for key, state in writer.states.items()}
    return dict(writer.pending), list(writer.delayed), writer.outstanding, states


def test_queue_acknowledged_decides_and_fires_as_maybe_queue_record_by_record() -> None:
    """The batch form against the one-record form (firing each due sync), over runs with skipped
    upstream offsets, a truncated target and more due syncs than may be in flight."""
    rng = random.Random(8)
    config = {"bootstrap.servers": "127.0.0.1:1", "log_level": 0, "message.timeout.ms": 600_000}
    one, batch = OffsetSyncWriter(config, "syncs", 100), OffsetSyncWriter(config, "syncs", 100)
    try:
        upstream = {("orders", 0): 0, ("orders", 1): 500}
        downstream = dict(upstream)
        for _ in range(60):
            key = rng.choice(list(upstream))
            ups, downs = [], []
            for _ in range(rng.randrange(0, 400)):
                upstream[key] += 3 if rng.random() < 0.003 else 1  # compaction skips some
                downstream[key] = downstream[key] + 1 if rng.random() > 0.002 else 0  # rarely truncated
                ups.append(upstream[key])
                downs.append(downstream[key])
            for up, down in zip(ups, downs, strict=True):
                if one.maybe_queue(key, up, down):
                    one.fire_pending()
            batch.queue_acknowledged(key, ups, downs)
            assert _fields(batch) == _fields(one)
            if rng.random() < 0.2:
                one.promote_delayed()
                batch.promote_delayed()
        assert one.outstanding == 10  # nothing is delivered on port 1: the in-flight limit was reached
    finally:
        one.close(0)
        batch.close(0)
