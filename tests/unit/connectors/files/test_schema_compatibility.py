"""schema.compatibility in the storage sink: which schema changes roll a file and which are projected.

Follows Confluent's StorageSchemaCompatibility (kafka-connect-storage-common) driving Kafka's
SchemaProjector. The task runs as in test_file_sink_task.py: a real FileSinkTask on a file://
store under tmp_path, files read back with pyarrow.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.errors import DataError
from kopycat.api.records import SinkRecord, TopicPartition
from kopycat.connectors.files.committed_files import parse_committed_name
from kopycat.connectors.files.file_sink import FileSinkTask
from kopycat.runtime.sink_task_context import WorkerSinkTaskContext

TP0 = TopicPartition("orders", 0)
BASE_MS = 1_795_000_000_000


def order_schema(version: int | None, channel: Schema | None = None, name: str = "order") -> Schema:
    builder = SchemaBuilder.struct().name(name)
    if version is not None:
        builder.version(version)
    builder.field("id", Schema.INT64_SCHEMA).field("region", Schema.STRING_SCHEMA)
    if channel is not None:
        builder.field("channel", channel)
    return builder.build()


V1 = order_schema(1)
V2 = order_schema(2, SchemaBuilder.string().optional().default_value("web").build())
"""v2 adds an optional field with a default: BACKWARD (and FORWARD) compatible with v1."""
V3_REQUIRED = order_schema(3, Schema.STRING_SCHEMA)
"""v3 adds a required field without default: v1 values cannot be projected onto it."""


def value(schema: Schema, offset: int) -> Struct:
    struct = Struct(schema).put("id", offset).put("region", "eu")
    if schema.field("channel") is not None:
        struct.put("channel", "app")
    return struct


def record(offset: int, schema: Schema | None) -> SinkRecord:
    payload: Any = value(schema, offset) if schema is not None else {"id": offset}
    return SinkRecord(topic="orders", kafka_partition=0, key_schema=Schema.STRING_SCHEMA, key=f"k{offset}",
                      value_schema=schema, value=payload, kafka_offset=offset, timestamp=BASE_MS + offset)


def stream(*schemas: Schema | None) -> list[SinkRecord]:
    return [record(offset, schema) for offset, schema in enumerate(schemas)]


def run(tmp_path: Path, compatibility: str, records: Sequence[SinkRecord], **props: str) -> None:
    """One bounded run: put everything, then pre_commit commits every open file."""
    config = {"name": "files", "topics": "orders", "store.url": f"file://{tmp_path}/store",
              "schema.compatibility": compatibility, "kopycat.run.bounded": "true", **props}
    task = FileSinkTask(background_commits=False)  # reads the store right after put()
    task.initialize(WorkerSinkTaskContext(config))
    task.start(config)
    task.open([TP0])
    task.put(list(records))
    assert task.pre_commit({TP0: len(records)}) == {TP0: len(records)}


def files(tmp_path: Path, extension: str = "parquet") -> list[Path]:
    """Committed files in offset order."""
    found = [p for p in (tmp_path / "store").rglob(f"*.{extension}") if "+tmp" not in p.parts]
    return sorted(found, key=lambda p: parse_committed_name(p.name).start_offset)  # type: ignore[union-attr]


def ranges(tmp_path: Path) -> list[tuple[int, int]]:
    names = [parse_committed_name(p.name) for p in files(tmp_path)]
    return [(n.start_offset, n.end_offset) for n in names if n is not None]


def rows(path: Path) -> list[dict[str, Any]]:
    return pq.read_table(path).to_pylist()


def assert_every_offset_once(tmp_path: Path, count: int) -> None:
    ids = [row["id"] for path in files(tmp_path) for row in rows(path)]
    assert sorted(ids) == list(range(count)) and len(ids) == count


def test_none_rolls_a_file_at_every_schema_change(tmp_path: Path) -> None:
    run(tmp_path, "NONE", stream(V1, V1, V2, V1, V2))
    assert ranges(tmp_path) == [(0, 1), (2, 2), (3, 3), (4, 4)]
    assert_every_offset_once(tmp_path, 5)


@pytest.mark.parametrize("compatibility", ["BACKWARD", "FULL", "backward"])
def test_backward_rolls_on_a_newer_version_and_projects_older_records_into_it(tmp_path: Path,
                                                                            compatibility: str) -> None:
    run(tmp_path, compatibility, stream(V1, V1, V2, V1, V2))
    assert ranges(tmp_path) == [(0, 1), (2, 4)]
    first, second = files(tmp_path)
    assert pq.read_schema(first).names == ["id", "region"]
    assert pq.read_schema(second).names == ["id", "region", "channel"]
    assert rows(second) == [{"id": 2, "region": "eu", "channel": "app"},
                            {"id": 3, "region": "eu", "channel": "web"},  # v1, projected: the default
                            {"id": 4, "region": "eu", "channel": "app"}]
    assert_every_offset_once(tmp_path, 5)


def test_forward_projects_newer_records_into_the_older_file(tmp_path: Path) -> None:
    run(tmp_path, "FORWARD", stream(V1, V1, V2, V1, V2))
    assert ranges(tmp_path) == [(0, 4)]
    (only,) = files(tmp_path)
    assert rows(only) == [{"id": n, "region": "eu"} for n in range(5)]  # v2's channel is dropped
    assert_every_offset_once(tmp_path, 5)


@pytest.mark.parametrize("compatibility", ["FORWARD", "forward"])
def test_forward_rolls_on_an_older_version(tmp_path: Path, compatibility: str) -> None:
    run(tmp_path, compatibility, stream(V2, V1, V2))
    assert ranges(tmp_path) == [(0, 0), (1, 2)]
    first, second = files(tmp_path)
    assert rows(first) == [{"id": 0, "region": "eu", "channel": "app"}]
    assert rows(second) == [{"id": 1, "region": "eu"}, {"id": 2, "region": "eu"}]


def test_json_files_hold_projected_values_in_the_files_schema(tmp_path: Path) -> None:
    run(tmp_path, "BACKWARD", stream(V2, V1), **{"format.class": "json"})
    (only,) = files(tmp_path, "json")
    assert [json.loads(line) for line in only.read_bytes().splitlines()] == [
        {"id": 0, "region": "eu", "channel": "app"}, {"id": 1, "region": "eu", "channel": "web"}]


def test_a_schema_of_another_name_rolls_instead_of_projecting(tmp_path: Path) -> None:
    customer = order_schema(1, name="customer")
    run(tmp_path, "BACKWARD", stream(V2, customer, V2))
    assert ranges(tmp_path) == [(0, 0), (1, 1), (2, 2)]


@pytest.mark.parametrize("compatibility", ["BACKWARD", "FORWARD", "FULL"])
def test_schemas_without_a_version_fail_naming_the_record_and_the_fix(tmp_path: Path, compatibility: str) -> None:
    with pytest.raises(DataError, match=rf"Record orders-0 offset 1 \(key 'k1'\) has a value schema without a "
                                        rf"version \(Schema\{{order:STRUCT\}}\), but schema.compatibility="
                                        rf"{compatibility} .*give the value schemas versions.*"
                                        rf"or set schema.compatibility=NONE"):
        run(tmp_path, compatibility, stream(V1, order_schema(None)))
    assert files(tmp_path) == []


def test_schemaless_values_fail_under_backward(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"offset 0 \(key 'k0'\) has no value schema, but schema.compatibility="
                                        r"BACKWARD"):
        run(tmp_path, "BACKWARD", stream(None), **{"format.class": "json"})


def test_an_older_record_that_cannot_be_projected_fails_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"Record orders-0 offset 1 \(key 'k1'\) of value schema order version 1 "
                                        r"cannot go into its open file of value schema order version 3 under "
                                        r"schema.compatibility=BACKWARD: Cannot project field channel: the field "
                                        r"is required"):
        run(tmp_path, "BACKWARD", stream(V3_REQUIRED, V1))
