"""Avro on the columnar paths against a real broker and registry: the record path's files and bytes.

The storage sink writes the same Parquet files from a topic of Confluent Avro values whether its
records come as columns or (with a no-op transform, which turns columns off) as records; the JDBC
source writes the same Avro keys and values, byte for byte, both ways. Spies prove the first run of
each took the columnar path.
"""

from __future__ import annotations

import decimal
import random
import uuid
from pathlib import Path
from typing import Any

import pytest

from kopycat.converters.avro import AvroConverter
from kopycat.embedded import Kopycat
from kopycat.runtime.bounds import Bounds
from tests.integration.test_columnar_sink import (
    HEADERS,
    NO_OP_TRANSFORM,
    READING,
    READING_V2,
    columnar_rows,
    export,
    produce_messages,
    reading,
    same_files,
)
from tests.integration.test_columnar_source import IN_THIS_PROCESS, ROWS, create_kinds, kinds_rows
from tests.integration.test_jdbc_source import consume
from tests.support.kafka import create_topic
from tests.unit.converters.test_avro_columns import NESTED, nested

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

__all__ = ["columnar_rows"]


def avro_converters(registry: str) -> dict[str, str]:
    """Avro keys and values; subjects by record name, so two topics of one table share ids."""
    out: dict[str, str] = {}
    for side in ("key", "value"):
        out |= {f"{side}.converter": "io.confluent.connect.avro.AvroConverter",
                f"{side}.converter.schema.registry.url": registry,
                f"{side}.converter.{side}.subject.name.strategy": "RecordNameStrategy"}
    return out


@pytest.fixture
def avro_columns_spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Rows each successful ``AvroConverter.from_arrow_array`` call encoded."""
    encoded: list[int] = []
    original = AvroConverter.from_arrow_array

    def spy(self: AvroConverter, topic: str, schema: Any, values: Any) -> Any:
        result = original(self, topic, schema, values)
        if result is not None:
            encoded.append(len(result))
        return result
    monkeypatch.setattr(AvroConverter, "from_arrow_array", spy)
    return encoded


def test_the_storage_sink_writes_the_same_files_from_avro_columns_as_from_records(
        bootstrap_servers: str, schema_registry: str, topic_name: str, tmp_path: Path,
        columnar_rows: list[int]) -> None:
    topic = create_topic(bootstrap_servers, topic_name, 2)
    writer = AvroConverter()
    writer.configure({"schema.registry.url": schema_registry}, is_key=False)

    def avro(numbers: range, schema: Any = READING) -> list[tuple[bytes | None, None]]:
        return [(value, None) for value in writer.from_connect_data_batch(
            topic, schema, [reading(n, schema) for n in numbers])]
    messages = {0: [*avro(range(700)), (avro(range(700, 701))[0][0], HEADERS), *avro(range(701, 1200)),
                    (None, None), *avro(range(1201, 1500), READING_V2)],
                1: avro(range(5000, 5900))}
    produce_messages(bootstrap_servers, topic, messages)  # type: ignore[arg-type]
    converters = {"value.converter": "io.confluent.connect.avro.AvroConverter",
                  "value.converter.schema.registry.url": schema_registry}
    as_columns = export(bootstrap_servers, topic, tmp_path / "columns", converters)
    assert sum(columnar_rows) >= 2000, "the storage sink must take most Avro records as columns"
    columnar_rows[:] = []
    as_records = export(bootstrap_servers, topic, tmp_path / "records", {**converters, **NO_OP_TRANSFORM})
    assert columnar_rows == [], "a transform must turn the columnar path off"

    assert as_columns == as_records == 2400
    from_columns = same_files(tmp_path / "columns", tmp_path / "records")
    ids = [n for table in from_columns.values() for n in table.column("id").to_pylist()]
    assert sorted(ids) == [*range(1200), *range(1201, 1500), *range(5000, 5900)]


def test_nested_avro_records_as_columns_give_the_record_paths_files(
        bootstrap_servers: str, schema_registry: str, topic_name: str, tmp_path: Path,
        columnar_rows: list[int]) -> None:
    """Structs, arrays and maps with nulls at every level: the columns reach Parquet as the records do."""
    count = 1_600
    topic = create_topic(bootstrap_servers, topic_name, 2)
    writer = AvroConverter()
    writer.configure({"schema.registry.url": schema_registry}, is_key=False)
    values = writer.from_connect_data_batch(topic, NESTED, [nested(n) for n in range(count)])
    produce_messages(bootstrap_servers, topic, {p: [(value, None) for value in values[p::2]] for p in range(2)})
    converters = {"value.converter": "io.confluent.connect.avro.AvroConverter",
                  "value.converter.schema.registry.url": schema_registry}
    as_columns = export(bootstrap_servers, topic, tmp_path / "columns", converters)
    assert sum(columnar_rows) == count, "nested Avro records must take the columnar path"
    columnar_rows[:] = []
    as_records = export(bootstrap_servers, topic, tmp_path / "records", {**converters, **NO_OP_TRANSFORM})
    assert columnar_rows == [], "a transform must turn the columnar path off"

    assert as_columns == as_records == count
    tables = same_files(tmp_path / "columns", tmp_path / "records")
    rows = sorted((row for table in tables.values() for row in table.to_pylist()), key=lambda r: r["id"])
    assert [row["id"] for row in rows] == list(range(count))
    assert sum(row["item"] is None for row in rows) == count // 5
    assert rows[5]["attrs"] == [("k0", 0), ("k1", None)] and rows[7]["attrs"] is None
    assert rows[5]["lines"] == [("line0", []), ("line1", [
        {"sku": "sku-6", "price": decimal.Decimal("0.42"), "at": None, "size": 6}])]


def test_jdbc_rows_as_avro_columns_give_the_record_paths_bytes(
        bootstrap_servers: str, schema_registry: str, tmp_path: Path, avro_columns_spy: list[int]) -> None:
    url = f"sqlite:///{tmp_path / 'kinds.db'}"
    create_kinds(url, kinds_rows(random.Random(20261127)))
    run = uuid.uuid4().hex[:8]
    worker = {**IN_THIS_PROCESS, "offset.storage.topic": f"offsets-{run}", "offset.storage.replication.factor": "1",
              "offset.storage.partitions": "5", "offset.flush.interval.ms": "500"}
    base = {"connector.class": "kopycat.connectors.jdbc.source_connector.JdbcSourceConnector",
            "connection.url": url, "mode": "incrementing", "incrementing.column.name": "id",
            "table.whitelist": "kinds", "record.key.mode": "primary_key", "batch.max.rows": "700",
            "tasks.max": "1", **avro_converters(schema_registry)}
    bounds = Bounds(idle_ms=2000)
    with Kopycat(bootstrap_servers, worker_props=worker) as kc:
        kc.run_once({**base, "name": f"columns-{run}", "topic.prefix": f"c{run}-"}, bounds, 300)
        assert sum(avro_columns_spy) == 2 * ROWS, "Avro keys and values must take the columnar path"
        kc.run_once({**base, "name": f"records-{run}", "topic.prefix": f"r{run}-", **NO_OP_TRANSFORM}, bounds, 300)
    assert sum(avro_columns_spy) == 2 * ROWS, "a transform must turn columns off"

    from_columns = consume(bootstrap_servers, f"c{run}-kinds")
    from_records = consume(bootstrap_servers, f"r{run}-kinds")
    assert len(from_columns) == ROWS and from_columns == from_records
    reader = AvroConverter()
    reader.configure({"schema.registry.url": schema_registry}, is_key=True)
    assert [reader.to_connect_data("t", key).value.get("id") for key, _ in from_columns] == list(range(1, ROWS + 1))
