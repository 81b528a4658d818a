"""A PostgreSQL query's result read straight into Arrow (ADBC), for the source's columnar path.

Fetching rows through a DB-API cursor makes a Python object of every value (a ``Decimal``, a
``datetime``) that the columnar path then turns back into buffers: most of the source's time per
row. The Arrow project's ADBC PostgreSQL driver reads the result with PostgreSQL's binary ``COPY``
into Arrow batches in C++, so a row costs no Python at all. It is used where it gives exactly the
columns the record path would build (:func:`arrow_readable`): a reflected table (not ``query``
mode) whose columns are integers, floats, booleans, texts, bytes, dates, timestamps in UTC and
decimals; everything else keeps the SQLAlchemy cursor.

:class:`ArrowResult` looks like the cursor result to the querier: ``fetchmany`` gives the rows as
:class:`ArrowRows` (the offset logic reads a column or the last row; no Python object per value
otherwise) and keeps them as Arrow in ``batch``; :func:`adopt_columns` turns those into the
schema's Arrow types (timestamps to the floor of milliseconds, decimal text parsed exactly). A
batch that does not adopt (a NaN decimal, an unexpected type) goes to the record path as Python
rows (``ArrowRows.all()``), whose values the mapping's converters read as they read the cursor's.

The statement runs on its own ADBC connection (autocommit: one statement, one snapshot), opened
per run of the query and closed when the result is exhausted.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.sql.expression import Executable

from kopycat.api.arrow import PRECISION_PARAMETER, to_arrow_type
from kopycat.api.data import Date, Decimal, Schema, Timestamp, Type
from kopycat.connectors.jdbc.source_columns import values_and_keys
from kopycat.connectors.jdbc.source_schema import RowMapping, to_bytes, to_decimal

__all__ = ["ArrowResult", "ArrowRows", "adopt_columns", "arrow_readable", "column_values", "connection_lost",
           "literal_sql"]

log = logging.getLogger(__name__)

BATCH_BYTES: Final = 1 << 20
"""ADBC's batch size hint: about 10,000 rows of 100 bytes per batch from the driver."""

_PLAIN: Final = frozenset({Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32, Type.FLOAT64,
                           Type.BOOLEAN, Type.STRING, Type.BYTES})
_TIMESTAMP_MS: Final = pa.timestamp("ms", tz="UTC")


def _adbc() -> Any:
    """The ADBC PostgreSQL driver, or None where it is not installed (``kopycat[postgres]`` has it)."""
    try:
        import adbc_driver_manager
        import adbc_driver_postgresql
    except ImportError:
        return None
    return adbc_driver_postgresql, adbc_driver_manager


def arrow_readable(connection: Connection, mapping: RowMapping | None) -> bool:
    """Whether a table with this mapping can be read by ADBC into exactly the record path's columns."""
    if mapping is None or connection.dialect.name != "postgresql" or _adbc() is None:
        return False
    converters = dict(mapping.converters)
    for index, field in enumerate(mapping.schema.fields):
        if not _readable(field.schema, converters.get(index)):
            return False
    return bool(mapping.schema.fields)


def _readable(schema: Schema, convert: Any) -> bool:
    if schema.name == Decimal.LOGICAL_NAME:
        precision = int((schema.parameters or {}).get(PRECISION_PARAMETER, "0"))
        return convert is to_decimal and 0 < precision <= 38 and 0 <= Decimal.scale(schema) <= precision
    if schema.name in (Timestamp.LOGICAL_NAME, Date.LOGICAL_NAME):
        return convert is None  # a converter here means naive timestamps in a db.timezone other than UTC
    if schema.name is not None or schema.type not in _PLAIN:
        return False
    return convert is None or (schema.type is Type.BYTES and convert is to_bytes)


def literal_sql(statement: Executable, params: dict[str, Any] | None, connection: Connection) -> str:
    """The statement with its parameters written in: COPY, which ADBC reads with, takes no binds."""
    bound = statement.params(**params) if params else statement  # type: ignore[attr-defined]
    return str(bound.compile(dialect=connection.dialect, compile_kwargs={"literal_binds": True}))


class ArrowResult:
    """A running ADBC query; ``fetchmany`` as a cursor result's, with the rows as Arrow in ``batch``.

    (Reading ahead in a thread was tried: on two cores shared with the broker and the database it
    gained nothing, the machine being CPU-bound.)
    """

    def __init__(self, url: str, sql: str) -> None:
        driver, manager = _adbc()
        self.sql = sql
        self.batch: pa.RecordBatch | None = None
        self._pending: list[pa.RecordBatch] = []
        self._done = False
        self._errors = manager.Error
        with self._translated():
            self._database = driver.connect(url)
            self._connection = manager.AdbcConnection(self._database)
            self._statement = manager.AdbcStatement(self._connection)
            self._statement.set_options(**{driver.StatementOptions.BATCH_SIZE_HINT_BYTES.value: str(BATCH_BYTES)})
            self._statement.set_sql_query(sql)
            stream, _ = self._statement.execute_query()
            self._reader = pa.RecordBatchReader.from_stream(stream)

    def fetchmany(self, max_rows: int) -> ArrowRows | list[Any]:
        """The next ``max_rows`` rows (fewer at the end); [] at the end."""
        batch = self._take(max_rows)
        self.batch = batch
        return [] if batch is None else ArrowRows(batch, self.sql)

    def _take(self, max_rows: int) -> pa.RecordBatch | None:
        taken, count = [], 0
        while count < max_rows:
            if not self._pending:
                if self._done:
                    break
                with self._translated():
                    try:
                        self._pending.append(self._reader.read_next_batch())
                    except StopIteration:
                        self._done = True
                        break
            batch = self._pending.pop(0)
            need = max_rows - count
            if batch.num_rows > need:
                self._pending.insert(0, batch.slice(need))
                batch = batch.slice(0, need)
            taken.append(batch)
            count += batch.num_rows
        if not taken:
            return None
        return taken[0] if len(taken) == 1 else pa.concat_batches(taken)

    def close(self) -> None:
        for part in ("_reader", "_statement", "_connection", "_database"):
            resource = getattr(self, part, None)
            if resource is not None:
                try:
                    resource.close()
                except Exception:  # noqa: BLE001 - closing after a failure must not hide it
                    log.debug("Closing the ADBC %s failed", part.strip("_"), exc_info=True)

    def _translated(self) -> Any:
        return _Translated(self.sql, self._errors)


class ArrowRows(Sequence[tuple[Any, ...]]):
    """Fetched rows kept as Arrow: a row is made only when asked for (the offset logic reads the
    last one), a column as a list (:meth:`column`), every row by :meth:`all` (the record path)."""

    def __init__(self, batch: pa.RecordBatch, sql: str = "") -> None:
        self.batch = batch
        self.sql = sql

    def __len__(self) -> int:
        return int(self.batch.num_rows)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return self.all()[index]
        return tuple(column[index].as_py() for column in self.batch.columns)

    def column(self, index: int) -> list[Any]:
        return self.batch.column(index).to_pylist()  # type: ignore[no-any-return]

    def all(self) -> list[tuple[Any, ...]]:
        """Every row as Python values; a value Python cannot hold (PostgreSQL's infinity) fails as
        the cursor's driver fails on it, as a database error naming the statement."""
        try:
            return list(zip(*(column.to_pylist() for column in self.batch.columns), strict=True))
        except (ValueError, OverflowError) as exc:
            raise DBAPIError(self.sql, None, exc) from exc  # type: ignore[arg-type]


def column_values(rows: Sequence[Sequence[Any]], index: int) -> list[Any]:
    """One column of fetched rows (cursor tuples or :class:`ArrowRows`) as a list."""
    if isinstance(rows, ArrowRows):
        return rows.column(index)
    return [row[index] for row in rows]


_CONNECTION_LOST: Final = re.compile(
    r"server closed the connection|terminating connection|no connection to the server|"
    r"could not receive data from server|could not send data to server|connection to server .* failed")
"""libpq's words for a connection that ended mid-result (``pg_terminate_backend``, a restarted server)."""


def connection_lost(error: BaseException) -> bool:
    """Whether ``error``, raised by pyarrow's reader of an ADBC result (an ``OSError`` carrying libpq's
    message), says the connection ended: worth reading again on a new one, unlike an error of the query."""
    return isinstance(error, OSError) and _CONNECTION_LOST.search(str(error)) is not None


class _Translated:
    """ADBC's errors as SQLAlchemy's, which the task already retries (OperationalError) or reports.

    A failure while the result streams comes through pyarrow's reader as an ``OSError`` carrying libpq's
    message: a lost connection is an OperationalError too (the next poll reads again on a new connection),
    anything else stays what it is.
    """

    def __init__(self, sql: str, errors: type[Exception]) -> None:
        self.sql, self.errors = sql, errors

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, error: BaseException | None, traceback: Any) -> None:
        if error is not None and connection_lost(error):
            raise OperationalError(self.sql, None, error) from error  # type: ignore[arg-type]
        if error is None or not isinstance(error, self.errors):
            return
        lost = type(error).__name__ == "OperationalError"
        raise (OperationalError if lost else DBAPIError)(self.sql, None, error) from error  # type: ignore[arg-type]


def adopt_columns(mapping: RowMapping, batch: pa.RecordBatch) -> tuple[pa.StructArray, pa.StructArray | None] | None:
    """The ADBC columns in the schema's Arrow types; None where one does not convert exactly."""
    arrays = []
    for field, column in zip(mapping.schema.fields, batch.columns, strict=True):
        adopted = _adopt(field.schema, column)
        if adopted is None:
            return None
        arrays.append(adopted)
    return values_and_keys(mapping, arrays)


def _adopt(schema: Schema, column: pa.Array) -> pa.Array | None:
    target = to_arrow_type(schema)
    if column.null_count and not schema.optional:
        return None  # the record path reports the missing value
    if schema.name in (Timestamp.LOGICAL_NAME, Date.LOGICAL_NAME) and not _in_python_range(column):
        return None  # PostgreSQL's infinity and dates beyond year 9999: the cursor's driver refuses them
    if schema.name == Timestamp.LOGICAL_NAME:
        return _millis(column) if pa.types.is_timestamp(column.type) and column.type.unit == "us" else None
    if schema.name == Decimal.LOGICAL_NAME:
        texts = column.storage if isinstance(column, pa.ExtensionArray) else column
        try:
            return pc.cast(texts, target) if pa.types.is_string(texts.type) else None
        except pa.ArrowInvalid:
            return None  # NaN, infinite, or beyond the column's precision: the record path reports it
    return column if column.type == target else None


_MICROS_RANGE: Final = (-62_135_596_800_000_000, 253_402_300_799_999_999)  # years 1 to 9999, as datetime holds
_DAYS_RANGE: Final = (-719_162, 2_932_896)


def _in_python_range(column: pa.Array) -> bool:
    """Every timestamp (µs) or date within years 1 to 9999: what the record path's datetimes hold."""
    if pa.types.is_timestamp(column.type):
        low, high = _MICROS_RANGE
        values = pc.min_max(column.view(pa.int64()))  # the stored integers, no cast kernel
    elif pa.types.is_date32(column.type):
        low, high = _DAYS_RANGE
        values = pc.min_max(column.view(pa.int32()))
    else:
        return False
    least, most = values["min"].as_py(), values["max"].as_py()
    return least is None or (low <= least and most <= high)


def _millis(column: pa.Array) -> pa.Array:
    """Microseconds to milliseconds, floored as ``Timestamp.from_logical`` (timestamptz is UTC)."""
    count, offset = len(column), column.offset
    micros = np.frombuffer(column.buffers()[1], np.int64, count + offset)
    return pa.Array.from_buffers(_TIMESTAMP_MS, count, [column.buffers()[0], pa.py_buffer(micros // 1000)],
                                 offset=offset)
