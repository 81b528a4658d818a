"""Decoding inside the Spark export's ``mapInArrow``: Kafka values to the value struct's columns.

Kopycat's own JsonConverter or AvroConverter decodes them (:mod:`spark_converter`; the columnar
path, else the record path and :func:`kopycat.api.arrow_values.to_arrow_batch`), the same code the
Python storage sink uses, so both movers write identical rows. A time-based export also gets each
record's directory from the Python sink's own :class:`TimeBasedPartitioner` on the Kafka timestamp,
and a windowed one keeps only the records stamped inside the window. Runs in Spark's Python workers; shared with the job
(``include/spark/kafka_to_files.py``) and the tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from kopycat.api.arrow import to_arrow_schema
from kopycat.api.arrow_values import to_arrow_batch
from kopycat.api.data import Schema, Type
from kopycat.api.errors import ConfigError, DataError
from kopycat.connectors.files.partitioner_config import PARTITIONER_CLASS_CONFIG
from kopycat.connectors.files.partitioners import DefaultPartitioner, TimeBasedPartitioner
from kopycat.connectors.files.spark_converter import ExportConverter
from kopycat.connectors.files.spark_export import NULL_VALUES_FAIL, NULL_VALUES_IGNORE, spark_partitioner
from kopycat.connectors.files.timestamp_extractors import RecordTimestampExtractor

__all__ = ["DIR_COLUMN", "OFFSET_COLUMN", "TopicDecoder", "decode_dir", "encode_dir", "spark_arrow_schema"]

DIR_COLUMN: Final = "__kopycat_dir"
"""Hidden column of a time-based export: the record's directory, hex-encoded (Spark's partitionBy
column, so its value needs no escaping in a path); never written into a file."""
OFFSET_COLUMN: Final = "__kopycat_offset"
"""Hidden column of a time-based export: the Kafka offset, so each file's rows are sorted as the
Python sink writes them (offset order); dropped before the write."""


def encode_dir(encoded: str) -> str:
    """An encoded partition as the value of :data:`DIR_COLUMN`: hex, so no character is escaped in a path."""
    return encoded.encode().hex()


def decode_dir(value: str) -> str:
    return bytes.fromhex(value).decode()


# ---------------------------------------------------------------- decoding inside mapInArrow

def spark_arrow_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` as Spark's ``mapInArrow`` accepts it: timestamps in microseconds.

    Spark's ArrowUtils only takes MICROSECOND timestamps; the job writes them back to Parquet
    as TIMESTAMP_MILLIS (``spark.sql.parquet.outputTimestampType``), so files keep
    :func:`~kopycat.api.arrow.to_arrow_schema`'s ``timestamp('ms', 'UTC')``.
    """
    return pa.schema([f.with_type(_spark_type(f.type)) for f in schema], metadata=schema.metadata)


def _spark_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz=t.tz)
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_spark_type(t.field(i).type)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_spark_type(t.key_type)),
                       t.item_field.with_type(_spark_type(t.item_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_spark_type(t.value_type)))
    return t


@dataclass
class _Tally:
    """What one Spark partition (one Kafka partition's range) held, for the driver to name files by."""

    partition: int | None = None
    first: int | None = None
    last: int | None = None
    rows: int = 0
    filtered: int = 0
    dirs: dict[str, list[int]] = field(default_factory=dict)
    """Encoded directory -> [first offset, last offset, rows] of the rows written into it."""

    def wrote(self, encoded: str, first: int, last: int, rows: int) -> None:
        entry = self.dirs.setdefault(encoded, [first, last, 0])
        entry[1], entry[2] = last, entry[2] + rows
        self.rows += rows

    def to_stats(self) -> dict[str, Any]:
        return {"partition": self.partition, "first": self.first, "last": self.last, "rows": self.rows,
                "filtered": self.filtered, "dirs": self.dirs}


@dataclass
class TopicDecoder:
    """Decodes one topic's Kafka values into Arrow batches: the function given to ``mapInArrow``.

    Input batches carry the Kafka source's ``value``, ``partition``, ``offset`` (and, for a
    time-based layout or a window, ``timestamp`` and ``timestampType``) columns of one Spark
    partition (one topic-partition range), in offset order. Values are what ``converter`` reads
    (JsonConverter envelopes by default, or Confluent Avro); every value schema must map to
    ``arrow_schema``, the one the driver found, or a DataError names the record. Null values
    (tombstones) fail, as Confluent's ``behavior.on.null.values=fail``, or are skipped with ``ignore``.

    ``partitioner`` (the sink's partitioner keys, see :func:`spark_partitioner`) makes the layout
    time-based: each row gets :data:`DIR_COLUMN`, its directory as the Python sink's
    ``TimeBasedPartitioner`` prints it for the record's Kafka timestamp, and :data:`OFFSET_COLUMN`.
    ``window`` (``[start_ms, end_ms)``) keeps only the records stamped inside it, as the Python
    sink runner's windowed runs do; the others are counted as ``filtered``, never decoded.

    ``stats`` (a Spark accumulator, or any object with ``add``) receives once per Spark
    partition ``{partition_id: {"partition", "first", "last", "rows", "filtered", "dirs"}}``, with
    ``dirs`` mapping each encoded directory to ``[first offset, last offset, rows]`` of its rows
    (the default layout: ``partition=<n>`` with the first and last offsets read, skipped
    tombstones included, as before): the driver names the committed files from it.
    """

    topic: str
    arrow_schema: pa.Schema
    stats: Any = None
    null_values: str = NULL_VALUES_FAIL
    partitioner: dict[str, str] | None = None
    window: tuple[int, int] | None = None
    converter: ExportConverter = field(default_factory=ExportConverter)
    _checked: dict[int, Schema] = field(default_factory=dict, repr=False)
    _partitioner: TimeBasedPartitioner | None = field(default=None, repr=False)

    def output_schema(self) -> pa.Schema:
        """What the decoder yields: the value columns typed for Spark, plus the hidden ones when time-based."""
        target = spark_arrow_schema(self.arrow_schema)
        if self.partitioner is None:
            return target
        return target.append(pa.field(DIR_COLUMN, pa.string(), nullable=False)).append(
            pa.field(OFFSET_COLUMN, pa.int64(), nullable=False))

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        converter = self.converter.new()
        target = spark_arrow_schema(self.arrow_schema)
        tally = _Tally()
        for batch in batches:
            if batch.num_rows == 0:
                continue
            offsets_read = batch.column("offset")
            tally.partition = batch.column("partition")[0].as_py()
            tally.first = offsets_read[0].as_py() if tally.first is None else tally.first
            tally.last = offsets_read[-1].as_py()
            kept = self._kept(batch, tally)
            if kept.num_rows == 0:
                continue
            offsets = kept.column("offset").to_pylist()
            decoded = self.decode(converter, tally.partition, offsets, kept.column("value").to_pylist())
            decoded = decoded.cast(target) if decoded.schema != target else decoded
            if self.partitioner is None:
                tally.rows += decoded.num_rows
                yield decoded
            else:
                yield self._placed(decoded, kept, offsets, tally)
        if tally.partition is not None and self.partitioner is None and tally.rows:
            tally.dirs[DefaultPartitioner.encode_kafka_partition(tally.partition)] = [
                tally.first, tally.last, tally.rows]
        if self.stats is not None and tally.partition is not None:
            self.stats.add({_partition_id(): tally.to_stats()})

    def _kept(self, batch: pa.RecordBatch, tally: _Tally) -> pa.RecordBatch:
        """The records to decode: those stamped inside the window (the rest counted), minus ignored tombstones.

        Tombstones are dropped before decoding so the decoded rows line up with the kept offsets
        and timestamps (``fail`` leaves them for :meth:`decode` to name).
        """
        if self.window is not None:
            stamps = _millis(batch.column("timestamp"))
            inside = pc.and_(pc.greater_equal(batch.column("timestampType"), 0),
                             pc.and_(pc.greater_equal(stamps, self.window[0]), pc.less(stamps, self.window[1])))
            before = batch.num_rows
            batch = batch.filter(inside)
            tally.filtered += before - batch.num_rows
        if self.null_values == NULL_VALUES_IGNORE and batch.column("value").null_count:
            batch = batch.filter(pc.is_valid(batch.column("value")))
        return batch

    def _placed(self, decoded: pa.RecordBatch, kept: pa.RecordBatch, offsets: list[int],
                tally: _Tally) -> pa.RecordBatch:
        """``decoded`` with each row's directory and offset, counted per directory."""
        dirs = self._directories(kept, offsets, tally.partition)
        hexed = {d: encode_dir(d) for d in set(dirs)}
        if len(hexed) == 1:  # the common case: the whole batch in one bucket
            tally.wrote(dirs[0], offsets[0], offsets[-1], len(dirs))
        else:
            start = 0
            for index in range(1, len(dirs) + 1):  # runs of one directory, in offset order
                if index == len(dirs) or dirs[index] != dirs[start]:
                    tally.wrote(dirs[start], offsets[start], offsets[index - 1], index - start)
                    start = index
        columns = [*decoded.columns, pa.array([hexed[d] for d in dirs], pa.string()), pa.array(offsets, pa.int64())]
        return pa.RecordBatch.from_arrays(columns, schema=self.output_schema())

    def _directories(self, kept: pa.RecordBatch, offsets: list[int], partition: int | None) -> list[str]:
        """Each record's encoded directory, from its Kafka timestamp, by the sink's TimeBasedPartitioner.

        One directory for the whole batch when its earliest and latest timestamps share a bucket
        (buckets are intervals), as ``TimeBasedPartitioner.encode_batch`` does.
        """
        partitioner = self._time_partitioner()
        types = kept.column("timestampType")
        if pc.any(pc.less(types, 0)).as_py():
            at = offsets[pc.index(pc.less(types, 0), True).as_py()]
            raise DataError(f"Cannot partition the record at topic {self.topic} partition {partition} offset {at}: "
                            f"{RecordTimestampExtractor.no_timestamp()}")
        stamps = _millis(kept.column("timestamp"))
        low, high = pc.min_max(stamps).values()
        if partitioner.bucket_start(low.as_py()) == partitioner.bucket_start(high.as_py()):
            return [partitioner.encode_timestamp(low.as_py())] * kept.num_rows
        return [partitioner.encode_timestamp(stamp) for stamp in stamps.to_pylist()]

    def _time_partitioner(self) -> TimeBasedPartitioner:
        """Built in the Python worker from the keys (a partitioner holds caches; keys pickle small)."""
        if self._partitioner is None:
            partitioner = spark_partitioner(self.partitioner or {})
            if partitioner is None:
                raise ConfigError.for_key(PARTITIONER_CLASS_CONFIG, (self.partitioner or {}).get(
                    PARTITIONER_CLASS_CONFIG), "the decoder places records in time buckets only")
            self._partitioner = partitioner
        return self._partitioner

    def decode(self, converter: Any, partition: int, offsets: Sequence[int],
               values: Sequence[bytes | None]) -> pa.RecordBatch:
        """One batch of raw values to an Arrow batch of :attr:`arrow_schema` (rows in order).

        Plain envelopes of one schema take the converter's columnar path, as they do in the Python
        sink; anything else (tombstones, mixed schemas, odd values) the record path, which names them.
        """
        columns = converter.to_arrow_array(self.topic, values)
        if columns is not None:
            self._check(columns.schema, partition, offsets[0])
            return pa.RecordBatch.from_arrays(columns.value.flatten(), schema=self.arrow_schema)
        try:
            results = converter.to_connect_data_batch(self.topic, values)
        except DataError:  # again record by record, to name the bad one
            results = [self._decode_one(converter, partition, o, v) for o, v in zip(offsets, values, strict=True)]
        runs: list[tuple[Schema, list[Any]]] = []  # consecutive values sharing a schema
        for offset, (schema, value) in zip(offsets, results, strict=True):
            if value is None:
                if self.null_values == NULL_VALUES_IGNORE:
                    continue
                raise DataError(f"{self._at(partition, offset)} has a null value (a tombstone); a Parquet "
                                f"row needs a value: run the job with --behavior-on-null-values ignore "
                                f"to skip them")
            if not runs or runs[-1][0] is not schema:
                runs.append((self._check(schema, partition, offset), []))
            runs[-1][1].append(value)
        batches = [to_arrow_batch(schema, structs, self.arrow_schema) for schema, structs in runs]
        if len(batches) == 1:
            return batches[0]
        table = pa.Table.from_batches(batches, schema=self.arrow_schema).combine_chunks()
        return table.to_batches()[0] if table.num_rows else pa.RecordBatch.from_pylist([], schema=self.arrow_schema)

    def _decode_one(self, converter: Any, partition: int, offset: int, value: bytes | None) -> Any:
        try:
            return converter.to_connect_data(self.topic, value)
        except DataError as exc:
            raise DataError(f"{self._at(partition, offset)} is not {self.converter.expected}: {exc}") from exc

    def _check(self, schema: Schema | None, partition: int, offset: int) -> Schema:
        """``schema`` when its columns are :attr:`arrow_schema`'s, else a DataError naming the record."""
        if schema is not None and id(schema) in self._checked:
            return self._checked[id(schema)]
        if schema is None or schema.type is not Type.STRUCT:
            what = "no schema" if schema is None else f"a {schema.type.name} schema"
            raise DataError(f"{self._at(partition, offset)} has {what}; Parquet columns come from a STRUCT "
                            f"value schema: produce values with {self.converter.produce_with}")
        found = to_arrow_schema(schema)
        if not found.equals(self.arrow_schema, check_metadata=False):
            raise DataError(f"{self._at(partition, offset)} has columns ({_columns(found)}) but the "
                            f"export's (from the first record) are ({_columns(self.arrow_schema)}); a file "
                            f"holds one schema: export the ranges before and after the change separately")
        self._checked[id(schema)] = schema
        return schema

    def _at(self, partition: int, offset: int) -> str:
        return f"Record {self.topic}[{partition}]@{offset}"


def _columns(schema: pa.Schema) -> str:
    return ", ".join(f"{f.name} {f.type}{'' if f.nullable else ' not null'}" for f in schema)


def _millis(timestamps: pa.Array) -> pa.Array:
    """Epoch ms of Spark's Kafka ``timestamp`` column (microseconds; Kafka's are whole ms)."""
    return pc.divide(pc.cast(timestamps, pa.int64()), 1000)


def _partition_id() -> int:
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.partitionId() if context is not None else 0


