"""Heartbeats carry the offset: after a due commit, and past idle WAL at the end of a bounded run."""

from __future__ import annotations

from kopycat.connectors.postgres_cdc.change_stream import ChangeStream
from kopycat.connectors.postgres_cdc.config import CdcSettings
from kopycat.connectors.postgres_cdc.heartbeat import Heartbeat
from tests.unit.connectors.postgres_cdc.test_cdc_config import BASE
from tests.unit.connectors.postgres_cdc.test_change_stream import PARTITION, WAL, lookup


def stream_with(interval_ms: str) -> tuple[ChangeStream, Heartbeat]:
    heartbeat = Heartbeat(CdcSettings.parse({**BASE, "heartbeat.interval.ms": interval_ms}), PARTITION)
    return ChangeStream(PARTITION, None, lookup, True, heartbeat=heartbeat), heartbeat


def test_a_bounded_run_ends_with_a_heartbeat_at_its_end_position_once() -> None:
    stream, _ = stream_with("3600000")  # never due during the test: only the final beat
    changes = list(stream.records(WAL))
    assert [r.topic for r in changes] == ["shop.public.items"] * 3
    [beat] = stream.idle(800, final=True)
    assert (beat.topic, beat.kafka_partition, beat.key.get("serverName")) == ("__debezium-heartbeat.shop", 0, "shop")
    assert beat.value.get("ts_ms") > 0
    assert {k: beat.source_offset[k] for k in ("lsn", "lsn_proc", "lsn_commit", "messageType", "txId")} == {
        "lsn": 800, "lsn_proc": 800, "lsn_commit": 800, "messageType": "COMMIT", "txId": 11}
    assert list(stream.idle(800, final=True)) == []  # nothing moved: no second beat
    assert list(stream.records(WAL)) == []  # both transactions committed before 800: not sent again


def test_a_due_heartbeat_follows_the_commit_with_its_offset() -> None:
    stream, heartbeat = stream_with("3600000")
    heartbeat.next_beat = 0.0  # due now
    records = list(stream.records(WAL))
    assert [r.topic for r in records] == ["shop.public.items"] * 2 + ["__debezium-heartbeat.shop"] + [
        "shop.public.items"]  # due once, after the first commit; the next one an hour later
    assert records[2].source_offset == records[1].source_offset == {
        "lsn": 300, "lsn_proc": 300, "lsn_commit": 300, "txId": 10, "ts_usec": 946_684_800_000_000,
        "messageType": "COMMIT"}


def test_no_heartbeat_when_the_interval_is_zero() -> None:
    stream, _ = stream_with("0")
    list(stream.records(WAL))
    assert list(stream.idle(800, final=True)) == []
