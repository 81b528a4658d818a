"""A source connector's own ``offsets.storage.topic`` (KIP-618), on a real broker.

As Kafka's ``ConnectorOffsetBackingStore``: offsets are written to the connector's topic first
(and copied to the worker's, best effort), read from it first, and a connector that only has
offsets in the worker's topic from before it got its own topic resumes from those.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kopycat.runtime.offsets_admin import get_offsets
from kopycat.runtime.run_once import run_connector_once
from kopycat.storage.kafka_offset_store import KafkaOffsetStore
from kopycat.storage.offset_codec import encode_key, encode_value
from tests.support.kafka import consume_all, consume_records

pytestmark = pytest.mark.integration

STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"


def _append(path: Path, start: int, count: int) -> int:
    with path.open("a") as out:
        out.writelines(f"line-{i}\n" for i in range(start, start + count))
    return path.stat().st_size


def _connector(name: str, path: Path, topic: str, offsets_topic: str | None = None) -> dict[str, str]:
    props = {"name": name, "connector.class": "FileStreamSource", "file": str(path), "topic": topic,
             "key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}
    return {**props, "offsets.storage.topic": offsets_topic} if offsets_topic else props


def _positions(bootstrap: str, offsets_topic: str, name: str) -> list[int]:
    """Every position record of connector ``name`` in ``offsets_topic``, in the order written."""
    return [json.loads(record.value())["position"] for record in consume_records(bootstrap, offsets_topic)
            if record.key() and json.loads(record.key())[0] == name and record.value() is not None]


def _run(props: dict[str, str], worker: dict[str, str]) -> int:
    [summary] = run_connector_once(props, worker)
    assert summary.error is None, summary.error
    return summary.records


def test_a_connector_with_its_own_offsets_topic_writes_and_resumes_from_it(
        tmp_path: Path, worker: dict[str, str], topic_name: str, bootstrap_servers: str) -> None:
    path, name, own = tmp_path / "in.txt", f"{topic_name}-own", f"{topic_name}-my-offsets"
    first_size = _append(path, 0, 100)
    props = _connector(name, path, topic_name, own)

    assert _run(props, worker) == 100
    assert _positions(bootstrap_servers, own, name)[-1] == first_size
    # Kafka copies the connector's offsets to the worker's topic too (secondary, best effort).
    assert _positions(bootstrap_servers, worker["offset.storage.topic"], name)[-1] == first_size
    # A stale value in the worker's topic is not read: the connector's own topic wins.
    with KafkaOffsetStore.from_config(worker) as worker_store:
        worker_store.set({encode_key(name, {"filename": str(path)}): encode_value({"position": 0})}).result(30)
    full_size = _append(path, 100, 50)

    assert _run(props, worker) == 50
    assert [v.decode() for v in consume_all(bootstrap_servers, topic_name)] == [f"line-{i}" for i in range(150)]
    assert _positions(bootstrap_servers, own, name)[-1] == full_size
    assert get_offsets(name, worker, sink=False, connector_props=props)["offsets"] == [
        {"partition": {"filename": str(path)}, "offset": {"position": full_size}}]


def test_a_connector_given_its_own_topic_later_resumes_from_the_worker_topic(
        tmp_path: Path, worker: dict[str, str], topic_name: str, bootstrap_servers: str) -> None:
    path, name, own = tmp_path / "in.txt", f"{topic_name}-moved", f"{topic_name}-my-offsets"
    first_size = _append(path, 0, 80)
    assert _run(_connector(name, path, topic_name), worker) == 80
    assert _positions(bootstrap_servers, worker["offset.storage.topic"], name) == [first_size]
    full_size = _append(path, 80, 20)

    assert _run(_connector(name, path, topic_name, own), worker) == 20
    assert [v.decode() for v in consume_all(bootstrap_servers, topic_name)] == [f"line-{i}" for i in range(100)]
    assert _positions(bootstrap_servers, own, name) == [full_size]


def test_an_exactly_once_connector_writes_its_offsets_to_its_own_topic_in_its_transactions(
        tmp_path: Path, worker: dict[str, str], topic_name: str, bootstrap_servers: str) -> None:
    path, name, own = tmp_path / "in.txt", f"{topic_name}-eos", f"{topic_name}-my-offsets"
    worker = {**worker, "exactly.once.source.support": "enabled"}
    first_size = _append(path, 0, 60)
    props = _connector(name, path, topic_name, own)

    assert _run(props, worker) == 60
    full_size = _append(path, 60, 40)
    assert _run(props, worker) == 40

    assert [v.decode() for v in consume_all(bootstrap_servers, topic_name, committed_only=True)] == [
        f"line-{i}" for i in range(100)]
    assert _positions(bootstrap_servers, own, name) == [first_size, full_size]
