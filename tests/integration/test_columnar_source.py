"""The columnar source path against a real broker: the same messages and offsets as the record path.

Each source runs twice on the same data: once as it runs by default (the batches ``poll`` returns,
encoded a column at a time) and once with a no-op transform, which turns columns off and sends
each batch as its records. Both topics must hold the same keys and values, byte for byte and
in order, and both connectors must store the same offsets. A spy proves the first run took the
columnar path.
"""

from __future__ import annotations

import datetime as dt
import decimal
import random
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
import sqlalchemy as sa

from kopycat.connectors.jdbc.arrow_result import ArrowResult
from kopycat.converters.json import JsonConverter
from kopycat.converters.string import StringConverter
from kopycat.embedded import Kopycat
from kopycat.runtime.bounds import Bounds
from tests.integration.test_columnar_sink import NO_OP_TRANSFORM
from tests.integration.test_jdbc_source import consume, execute, stored_offsets

pytestmark = pytest.mark.timeout(600)

JSON_WITH_SCHEMAS = {"key.converter": "org.apache.kafka.connect.json.JsonConverter",
                     "value.converter": "org.apache.kafka.connect.json.JsonConverter"}
BOUNDS = Bounds(idle_ms=2000)
TEXTS = ["plain", 'quote " and \\ backslash', "tab\tnewline\ncontrol\x01", "é ü ß", "emoji 😀", "", None]
ROWS = 3_000
IN_THIS_PROCESS = {"task.isolation": "thread"}  # the spies count the calls made in this process


@pytest.fixture
def adbc_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Rows each ADBC fetch gave (PostgreSQL tables are read into Arrow without a cursor)."""
    fetched: list[int] = []
    original = ArrowResult.fetchmany

    def spy(self: ArrowResult, max_rows: int) -> Any:
        rows = original(self, max_rows)
        fetched.append(len(rows))
        return rows
    monkeypatch.setattr(ArrowResult, "fetchmany", spy)
    return fetched


@pytest.fixture
def columns_spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Rows each successful ``from_arrow_array`` call encoded (JSON and String converters)."""
    encoded: list[int] = []
    for converter in (JsonConverter, StringConverter):
        original = converter.from_arrow_array

        def spy(self: Any, topic: str, schema: Any, values: Any, original: Any = original) -> Any:
            result = original(self, topic, schema, values)
            if result is not None:
                encoded.append(len(result))
            return result
        monkeypatch.setattr(converter, "from_arrow_array", spy)
    return encoded


def kinds_rows(rng: random.Random) -> list[dict[str, Any]]:
    base = dt.datetime(1969, 12, 31, 23, 0)
    return [{"id": n, "small": rng.randrange(-32768, 32768), "num": rng.randrange(-(1 << 31), 1 << 31),
             "flag": None if n % 11 == 0 else n % 2 == 0, "label": TEXTS[n % len(TEXTS)],
             "amount": None if n % 13 == 0 else decimal.Decimal(rng.randrange(-10**11, 10**11)).scaleb(-2),
             "ratio": rng.choice([0.1, 1e-9, 12345678.9, -2.5, float(n)]),
             "day": None if n % 17 == 0 else dt.date(1950, 1, 1) + dt.timedelta(days=rng.randrange(40000)),
             "at": base + dt.timedelta(microseconds=rng.randrange(-10**12, 10**13))}
            for n in range(1, ROWS + 1)]


def create_kinds(url: str, rows: list[dict[str, Any]]) -> None:
    engine = sa.create_engine(url)
    try:
        table = sa.Table("kinds", sa.MetaData(), sa.Column("id", sa.BigInteger, primary_key=True),
                         sa.Column("small", sa.SmallInteger, nullable=False),
                         sa.Column("num", sa.Integer, nullable=False), sa.Column("flag", sa.Boolean),
                         sa.Column("label", sa.Text), sa.Column("amount", sa.Numeric(12, 2)),
                         sa.Column("ratio", sa.Float(53), nullable=False), sa.Column("day", sa.Date),
                         sa.Column("at", sa.DateTime, nullable=False))
        with engine.begin() as connection:
            table.drop(connection, checkfirst=True)
            table.create(connection)
            connection.execute(table.insert(), rows)
    finally:
        engine.dispose()


@pytest.fixture(params=["postgresql", "sqlite"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'kinds.db'}"
    return str(request.getfixturevalue("postgres_url"))


def test_jdbc_rows_as_columns_give_the_record_paths_messages_and_offsets(
        bootstrap_servers: str, database_url: str, columns_spy: list[int], adbc_reads: list[int]) -> None:
    create_kinds(database_url, kinds_rows(random.Random(20261124)))
    run = uuid.uuid4().hex[:8]
    offsets_topic = f"offsets-{run}"
    worker = {**IN_THIS_PROCESS, "offset.storage.topic": offsets_topic, "offset.storage.replication.factor": "1",
              "offset.storage.partitions": "5", "offset.flush.interval.ms": "500"}
    base = {"connector.class": "kopycat.connectors.jdbc.source_connector.JdbcSourceConnector",
            "connection.url": database_url, "mode": "incrementing", "incrementing.column.name": "id",
            "table.whitelist": "kinds", "record.key.mode": "primary_key", "batch.max.rows": "700",
            "tasks.max": "1", **JSON_WITH_SCHEMAS}
    with Kopycat(bootstrap_servers, worker_props=worker) as kc:
        columns = kc.run_once({**base, "name": f"columns-{run}", "topic.prefix": f"c{run}-"}, BOUNDS, 300)
        assert sum(columns_spy) == 2 * ROWS, "keys and values must take the columnar path"
        records = kc.run_once({**base, "name": f"records-{run}", "topic.prefix": f"r{run}-", **NO_OP_TRANSFORM},
                              BOUNDS, 300)
    assert sum(columns_spy) == 2 * ROWS, "a transform must turn columns off"
    assert sum(adbc_reads) == (ROWS if database_url.startswith("postgresql") else 0)
    assert [s.records for s in columns if s] == [s.records for s in records if s] == [ROWS]

    from_columns = consume(bootstrap_servers, f"c{run}-kinds")
    from_records = consume(bootstrap_servers, f"r{run}-kinds")
    assert len(from_columns) == ROWS and from_columns == from_records
    assert [orjson.loads(key)["payload"]["id"] for key, _ in from_columns] == list(range(1, ROWS + 1))
    stored = stored_offsets(bootstrap_servers, offsets_topic, f"columns-{run}")
    assert list(stored.values()) == list(stored_offsets(bootstrap_servers, offsets_topic, f"records-{run}").values())
    assert list(stored.values()) == [{"incrementing": ROWS}]


def test_file_lines_as_columns_give_the_record_paths_messages_and_offsets(
        bootstrap_servers: str, tmp_path: Path, columns_spy: list[int]) -> None:
    path = tmp_path / "app.log"
    lines = [f"line {n} {TEXTS[n % (len(TEXTS) - 1)].replace(chr(10), ' ')}".encode() for n in range(20_000)]
    path.write_bytes(b"\n".join(lines) + b"\r\nbad \xff byte\r\nlast\n")
    run = uuid.uuid4().hex[:8]
    offsets_topic = f"offsets-{run}"
    worker = {**IN_THIS_PROCESS, "offset.storage.topic": offsets_topic, "offset.storage.replication.factor": "1",
              "offset.storage.partitions": "5", "offset.flush.interval.ms": "500"}
    base = {"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": str(path),
            "batch.size": "3000", "tasks.max": "1",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter"}
    with Kopycat(bootstrap_servers, worker_props=worker) as kc:
        kc.run_once({**base, "name": f"columns-{run}", "topic": f"c{run}"}, BOUNDS, 300)
        assert sum(columns_spy) == len(lines) + 2
        kc.run_once({**base, "name": f"records-{run}", "topic": f"r{run}", **NO_OP_TRANSFORM}, BOUNDS, 300)
    assert sum(columns_spy) == len(lines) + 2
    from_columns, from_records = consume(bootstrap_servers, f"c{run}"), consume(bootstrap_servers, f"r{run}")
    assert len(from_columns) == len(lines) + 2 and from_columns == from_records
    assert from_columns[-2:] == [(None, "bad \ufffd byte".encode()), (None, b"last")]
    stored = stored_offsets(bootstrap_servers, offsets_topic, f"columns-{run}")
    assert list(stored.values()) == list(stored_offsets(bootstrap_servers, offsets_topic, f"records-{run}").values())
    assert list(stored.values()) == [{"position": path.stat().st_size}]


def bulk_both_ways(bootstrap: str, url: str, table: str, bounds: Bounds, extra: dict[str, str] | None = None
                   ) -> tuple[str, list[Any], list[Any]]:
    """One bulk copy of ``table`` by columns (topic prefix ``c<run>-``) and one by records (``r<run>-``):
    the run id and each run's summaries."""
    run = uuid.uuid4().hex[:8]
    base = {"connector.class": "kopycat.connectors.jdbc.source_connector.JdbcSourceConnector",
            "connection.url": url, "mode": "bulk", "table.whitelist": table, "tasks.max": "1",
            **JSON_WITH_SCHEMAS, **(extra or {})}
    worker = {**IN_THIS_PROCESS, "offset.storage.topic": f"offsets-{run}", "offset.storage.replication.factor": "1"}
    with Kopycat(bootstrap, worker_props=worker) as kc:
        columns = kc.run_once({**base, "name": f"columns-{run}", "topic.prefix": f"c{run}-"}, bounds, 120)
        records = kc.run_once({**base, "name": f"records-{run}", "topic.prefix": f"r{run}-", **NO_OP_TRANSFORM},
                              bounds, 120)
    return run, columns, records


def test_rows_arrow_cannot_hold_take_the_record_path_and_its_error_handling(
        bootstrap_servers: str, postgres_url: str, columns_spy: list[int], adbc_reads: list[int]) -> None:
    """A NaN in a NUMERIC(12, 2) column is read by ADBC but has no Decimal bytes: the batch goes to
    the record path, which skips that row under errors.tolerance=all, exactly as without columns."""
    execute(postgres_url, "CREATE TABLE prices (id BIGINT PRIMARY KEY, amount NUMERIC(12, 2))",
            "INSERT INTO prices VALUES (1, 1.5), (2, 'NaN'), (3, -2.25), (4, NULL)")
    run, columns, records = bulk_both_ways(bootstrap_servers, postgres_url, "prices", Bounds(max_records=3),
                                           {"errors.tolerance": "all"})
    assert sum(adbc_reads) == 4 and columns_spy == [], "ADBC read the rows; the NaN kept them off columns"
    assert [(s.records, s.skipped) for s in columns if s] == [(s.records, s.skipped) for s in records if s] == [(3, 1)]
    from_columns = consume(bootstrap_servers, f"c{run}-prices")
    assert from_columns == consume(bootstrap_servers, f"r{run}-prices")
    assert [orjson.loads(value)["payload"]["id"] for _, value in from_columns if value] == [1, 3, 4]


def test_a_query_adbc_cannot_run_fails_as_a_database_error_naming_the_statement(postgres_url: str) -> None:
    """ADBC's errors reach the task as SQLAlchemy's, which it reports (or retries, for a lost connection)."""
    url = sa.make_url(postgres_url).set(drivername="postgresql").render_as_string(hide_password=False)
    with pytest.raises(sa.exc.DBAPIError, match="no_such_table"):
        ArrowResult(url, "SELECT * FROM no_such_table")


@pytest.mark.parametrize("source", ["file", "jdbc"])
def test_a_full_producer_queue_holds_a_batch_back_until_there_is_room(
        bootstrap_servers: str, tmp_path: Path, columns_spy: list[int], source: str) -> None:
    """librdkafka's queue holds 10 messages here: the columnar produce loops (stamped file lines;
    unkeyed, unstamped JDBC rows) wait for room, serving delivery reports, instead of dropping or
    failing; every record arrives once, in order."""
    run = uuid.uuid4().hex[:8]
    if source == "file":
        path = tmp_path / "many.log"
        path.write_text("".join(f"line {n}\n" for n in range(5_000)))
        props = {"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": str(path),
                 "topic": f"q{run}", "value.converter": "org.apache.kafka.connect.storage.StringConverter"}
        topic, expected = f"q{run}", [f"line {n}".encode() for n in range(5_000)]
    else:
        url = f"sqlite:///{tmp_path / 'many.db'}"
        engine = sa.create_engine(url)
        with engine.begin() as connection:
            connection.execute(sa.text("CREATE TABLE many (id INTEGER PRIMARY KEY)"))
            connection.execute(sa.text("INSERT INTO many VALUES (:id)"), [{"id": n} for n in range(5_000)])
        engine.dispose()
        props = {"connector.class": "kopycat.connectors.jdbc.source_connector.JdbcSourceConnector",
                 "connection.url": url, "mode": "incrementing", "incrementing.column.name": "id",
                 "topic.prefix": f"q{run}-", "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                 "value.converter.schemas.enable": "false"}
        topic, expected = f"q{run}-many", [b'{"id":%d}' % n for n in range(5_000)]
    worker = {**IN_THIS_PROCESS, "offset.storage.topic": f"offsets-{run}", "offset.storage.replication.factor": "1",
              "producer.queue.buffering.max.messages": "10", "producer.linger.ms": "0"}
    with Kopycat(bootstrap_servers, worker_props=worker) as kc:
        [summary] = kc.run_once({"name": f"full-{run}", "tasks.max": "1", **props}, BOUNDS, 300)
    assert summary is not None and summary.records == 5_000 and sum(columns_spy) == 5_000
    assert [value for _, value in consume(bootstrap_servers, topic)] == expected


def test_an_infinite_timestamp_fails_the_columns_as_it_fails_the_cursor(
        bootstrap_servers: str, postgres_url: str, adbc_reads: list[int]) -> None:
    """ADBC decodes PostgreSQL's 'infinity' into a wrapped-around number; the columns must not carry
    it. Both paths fail the task naming the table, and neither produces the batch."""
    execute(postgres_url, "CREATE TABLE stamps (id BIGINT PRIMARY KEY, at TIMESTAMP)",
            "INSERT INTO stamps VALUES (1, '2024-01-01'), (2, 'infinity')")
    _, columns, records = bulk_both_ways(bootstrap_servers, postgres_url, "stamps", BOUNDS)
    assert sum(adbc_reads) == 2
    for summary in (*columns, *records):
        assert summary is not None and summary.records == 0
        assert summary.error is not None and "Reading public.stamps failed" in summary.error
