"""File formats of the storage sink: Parquet, JSON lines and Avro (Confluent's ``format.class``).

A format turns the records of one file into bytes. A file in progress (:class:`FileContents`)
takes records a batch at a time and converts them right away (Parquet: an Arrow record batch
per put, column by column, or the engine's own batch when it hands over columns; JSON: the
JsonConverter's batch encoder; Avro: fastavro's encoder
into the file's compressed blocks), so a bad value fails the put that brought it, naming the
record, and memory holds compact columns or bytes, not records. Everything is written when the
file is committed: one Parquet file with one row group per ``parquet.row.group.rows`` rows (a
dictionary for the columns whose values repeat, see :mod:`~kopycat.connectors.files.parquet_dictionary`), the
JSON lines in order, or the Avro container file.

Follows Confluent's ``ParquetFormat`` (values only, the value schema as the file schema,
``parquet.codec``), ``JsonFormat`` (values through JsonConverter with schemas.enable=false,
one per line) and ``AvroFormat`` (values only, the value schema through ``AvroData`` as the
file schema, ``avro.codec``; see :mod:`~kopycat.converters.avro_data`).
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

import pyarrow as pa
import pyarrow.parquet as pq
from fastavro import parse_schema, schemaless_writer
from fastavro.read import HEADER_SCHEMA, MAGIC, SYNC_SIZE
from fastavro.write import Writer as AvroWriter

from kopycat.api.arrow import to_arrow_schema
from kopycat.api.arrow_values import to_arrow_batch
from kopycat.api.data import Schema, Struct, Type
from kopycat.api.errors import ConfigError, DataError
from kopycat.api.record_batch import SinkRecordBatch
from kopycat.api.records import SinkRecord
from kopycat.connectors.files.parquet_dictionary import dictionary_columns
from kopycat.converters.avro_data import AvroSchema, avro_values_converter, to_avro_schema
from kopycat.converters.json import JsonConverter

__all__ = [
    "FORMAT_CLASSES", "AvroFormat", "FileContents", "JsonLinesFormat", "ParquetFormat", "RecordFormat",
    "format_from_config",
]

FORMAT_CLASS_CONFIG: Final = "format.class"
PARQUET_CODEC_CONFIG: Final = "parquet.codec"
PARQUET_CODECS: Final = ("none", "snappy", "gzip", "zstd", "lz4", "brotli")
ROW_GROUP_ROWS: Final = 1 << 17
AVRO_CODEC_CONFIG: Final = "avro.codec"
AVRO_CODECS: Final = ("null", "deflate", "snappy", "bzip2")
"""Confluent's ``AVRO_SUPPORTED_CODECS`` (names of Avro's ``CodecFactory``); the default is null."""
AVRO_SYNC_INTERVAL: Final = 64_000
"""Block size Avro's ``DataFileWriter`` aims at (``DataFileConstants.DEFAULT_SYNC_INTERVAL``)."""
AVRO_SCHEMA_CACHE_SIZE: Final = 1000
"""Avro schemas kept per process, as Confluent's ``schema.cache.size`` default."""


class FileContents(ABC):
    """The records of one file in progress, converted as they come."""

    @abstractmethod
    def add(self, records: Sequence[SinkRecord]) -> None:
        """Append records (all of this file's schema) in offset order."""

    @abstractmethod
    def write_to(self, stream: pa.NativeFile) -> None:
        """Write the whole file."""

    def add_columns(self, batch: SinkRecordBatch) -> None:
        """Append a batch of records as Arrow columns (all of this file's schema), in offset order."""
        raise DataError(f"{type(self).__name__} takes records, not columns")


class RecordFormat(ABC):
    """One ``format.class``: a file extension and how a file's contents are built."""

    extension: str

    @abstractmethod
    def new_file(self, schema: Schema | None) -> FileContents:
        """Contents for records of ``schema`` (None: schemaless values)."""


class ParquetFormat(RecordFormat):
    """Values as Parquet rows: one column per field of the value's STRUCT schema."""

    extension = "parquet"

    def __init__(self, codec: str = "snappy") -> None:
        self.codec = codec

    def new_file(self, schema: Schema | None) -> FileContents:
        return _ParquetContents(schema, self.codec)


class _ParquetContents(FileContents):
    def __init__(self, schema: Schema | None, codec: str) -> None:
        if schema is None or schema.type is not Type.STRUCT:
            what = "no schema" if schema is None else f"a {schema.type.name} schema"
            raise DataError(f"Parquet needs record values with a STRUCT schema, got {what}: use a converter "
                            f"that carries schemas (JsonConverter with value.converter.schemas.enable=true) "
                            f"or format.class=json")
        self.schema = schema
        self.arrow_schema = to_arrow_schema(schema)
        self.codec = codec
        self.batches: list[pa.RecordBatch] = []

    def add(self, records: Sequence[SinkRecord]) -> None:
        structs: list[Struct] = [record.value for record in records]
        try:
            self.batches.append(to_arrow_batch(self.schema, structs, self.arrow_schema))
        except DataError as exc:
            first, last = records[0], records[-1]
            raise DataError(f"Records {first.topic}-{first.kafka_partition} offsets {first.kafka_offset}.."
                            f"{last.kafka_offset} do not fit their Parquet schema: {exc}") from exc

    def add_columns(self, batch: SinkRecordBatch) -> None:
        """The batch's struct values, column by column: the converter built them for this Arrow schema."""
        self.batches.append(pa.RecordBatch.from_arrays(batch.values.flatten(), schema=self.arrow_schema))

    def write_to(self, stream: pa.NativeFile) -> None:
        table = pa.Table.from_batches(self.batches, schema=self.arrow_schema)
        compression = None if self.codec == "none" else self.codec
        pq.write_table(table, stream, compression=compression, row_group_size=ROW_GROUP_ROWS,
                       use_dictionary=dictionary_columns(table))


class JsonLinesFormat(RecordFormat):
    """Values as JSON, one per line, written by Kafka Connect's JsonConverter without schemas."""

    extension = "json"

    def __init__(self) -> None:
        self.converter = JsonConverter()
        self.converter.configure({"schemas.enable": "false"}, is_key=False)

    def new_file(self, schema: Schema | None) -> FileContents:
        return _JsonLinesContents(self.converter, schema)


class _JsonLinesContents(FileContents):
    def __init__(self, converter: JsonConverter, schema: Schema | None) -> None:
        self.converter = converter
        self.schema = schema
        self.chunks: list[bytes] = []

    def add(self, records: Sequence[SinkRecord]) -> None:
        topic = records[0].topic
        encoded = self.converter.from_connect_data_batch(topic, self.schema, [r.value for r in records])
        self.chunks.append(b"\n".join(b"null" if line is None else line for line in encoded) + b"\n")

    def write_to(self, stream: pa.NativeFile) -> None:
        for chunk in self.chunks:
            stream.write(chunk)


class AvroFormat(RecordFormat):
    """Values as an Avro container file (Confluent's ``AvroFormat`` / ``AvroRecordWriterProvider``).

    The file schema is ``AvroData.fromConnectSchema`` of the value schema (any type; a struct is
    a record); blocks are compressed with ``avro.codec``. Values without a schema are refused:
    Avro files need one, as Confluent's format does.
    """

    extension = "avro"

    def __init__(self, codec: str = "null") -> None:
        self.codec = codec

    def new_file(self, schema: Schema | None) -> FileContents:
        if schema is None:
            return _SchemalessAvro()
        return _AvroContents(schema, self.codec)


@dataclass(frozen=True)
class _AvroSchemas:
    """What one Connect value schema needs to become Avro files."""

    header: bytes
    """The ``avro.schema`` text Confluent writes: Avro's compact ``Schema.toString``."""
    encoding: AvroSchema
    """The same schema as fastavro parses it (see :func:`~kopycat.converters.avro_data.to_avro_schema`)."""
    convert: Callable[[Sequence[Any]], list[Any]]


@lru_cache(maxsize=AVRO_SCHEMA_CACHE_SIZE)
def _compiled(schema: Schema) -> _AvroSchemas:
    header = json.dumps(to_avro_schema(schema), separators=(",", ":"), ensure_ascii=False).encode()
    encoding = to_avro_schema(schema, null_namespace="kopycat.nonamespace")
    try:
        parse_schema(encoding)
    except Exception as exc:  # fastavro raises several classes (SchemaParseException, UnknownType, ...)
        raise DataError(f"The Avro schema of value schema {schema!r} cannot be written: {exc}") from exc
    return _AvroSchemas(header, encoding, avro_values_converter(schema))


class _AvroContents(FileContents):
    """An Avro container file in memory: fastavro encodes and compresses the blocks.

    fastavro writes its own header (its parsed schema, spaced JSON); at commit it is replaced by
    one holding Confluent's schema text, with the same codec and sync marker.
    """

    def __init__(self, schema: Schema, codec: str) -> None:
        self.schemas = _compiled(schema)
        self.convert = self.schemas.convert
        self.codec = codec
        self.sync = os.urandom(SYNC_SIZE)
        self.buffer = io.BytesIO()
        self.writer = AvroWriter(self.buffer, self.schemas.encoding, codec=codec,
                                 sync_interval=AVRO_SYNC_INTERVAL, sync_marker=self.sync)
        self.header_size = self.buffer.tell()
        self.failed: str | None = None

    def add(self, records: Sequence[SinkRecord]) -> None:
        if self.failed is not None:
            raise DataError(f"An earlier put broke this Avro file: {self.failed}")
        try:
            for value in self.convert([record.value for record in records]):
                self.writer.write(value)
        except (DataError, TypeError, ValueError, OverflowError, KeyError, AttributeError) as exc:
            first, last = records[0], records[-1]
            # The encoder may hold half a record: the file is lost, and says so if used again.
            self.failed = (f"Records {first.topic}-{first.kafka_partition} offsets {first.kafka_offset}.."
                           f"{last.kafka_offset} do not fit their Avro schema: {type(exc).__name__}: {exc}")
            raise DataError(self.failed) from exc

    def write_to(self, stream: pa.NativeFile) -> None:
        if self.failed is not None:
            raise DataError(f"An earlier put broke this Avro file: {self.failed}")
        self.writer.flush()
        header = io.BytesIO()
        meta = {"avro.schema": self.schemas.header, "avro.codec": self.codec.encode()}
        schemaless_writer(header, HEADER_SCHEMA, {"magic": MAGIC, "meta": meta, "sync": self.sync})
        stream.write(header.getvalue())
        stream.write(self.buffer.getbuffer()[self.header_size:])


class _SchemalessAvro(FileContents):
    """Records without a value schema: refused on arrival, naming them and the fix."""

    def add(self, records: Sequence[SinkRecord]) -> None:
        first = records[0]
        raise DataError(f"Record {first.topic}-{first.kafka_partition} offset {first.kafka_offset} has no value "
                        f"schema, and Avro files need one: use a converter that carries schemas (JsonConverter "
                        f"with value.converter.schemas.enable=true) or format.class=json")

    def write_to(self, stream: pa.NativeFile) -> None:
        raise DataError("An Avro file needs a value schema")


def _snappy_available() -> bool:
    """fastavro compresses snappy blocks with cramjam or python-snappy, neither of which Kopycat requires."""
    return any(importlib.util.find_spec(module) is not None for module in ("cramjam", "snappy"))


def _avro_format(values: Mapping[str, Any]) -> AvroFormat:
    codec = str(values.get(AVRO_CODEC_CONFIG) or "null").lower()
    if codec not in AVRO_CODECS:
        raise ConfigError.for_key(AVRO_CODEC_CONFIG, values[AVRO_CODEC_CONFIG],
                                  f"is not an Avro codec: use one of {', '.join(AVRO_CODECS)}")
    if codec == "snappy" and not _snappy_available():
        raise ConfigError.for_key(AVRO_CODEC_CONFIG, values[AVRO_CODEC_CONFIG],
                                  "needs python-snappy (or cramjam), which is not installed: install it "
                                  "(pip install python-snappy) or use avro.codec=deflate")
    return AvroFormat(codec)


FORMAT_CLASSES: Final[Mapping[str, str]] = {
    "parquet": "parquet", "ParquetFormat": "parquet",
    "io.confluent.connect.s3.format.parquet.ParquetFormat": "parquet",
    "io.confluent.connect.hdfs.parquet.ParquetFormat": "parquet",
    "json": "json", "jsonl": "json", "JsonFormat": "json",
    "io.confluent.connect.s3.format.json.JsonFormat": "json",
    "io.confluent.connect.hdfs.json.JsonFormat": "json",
    "avro": "avro", "AvroFormat": "avro",
    "io.confluent.connect.s3.format.avro.AvroFormat": "avro",
    "io.confluent.connect.hdfs.avro.AvroFormat": "avro",
}
"""Accepted ``format.class`` values: short names and Confluent's class names."""


def format_from_config(values: Mapping[str, Any]) -> RecordFormat:
    """The format ``format.class`` names (validated by the sink's ConfigDef already)."""
    kind = FORMAT_CLASSES.get(str(values[FORMAT_CLASS_CONFIG]))
    if kind == "parquet":
        return ParquetFormat(str(values.get(PARQUET_CODEC_CONFIG, "snappy")).lower())
    if kind == "json":
        return JsonLinesFormat()
    if kind == "avro":
        return _avro_format(values)
    raise ConfigError.for_key(FORMAT_CLASS_CONFIG, values[FORMAT_CLASS_CONFIG],
                              f"is not a format: use one of {', '.join(sorted(FORMAT_CLASSES))}")
