"""File formats of the storage sink: Parquet and JSON lines (Confluent's ``format.class``).

A format turns the records of one file into bytes. A file in progress (:class:`FileContents`)
takes records a batch at a time and converts them right away (Parquet: an Arrow record batch
per put, column by column; JSON: the JsonConverter's batch encoder), so a bad value fails the
put that brought it, naming the record, and memory holds compact columns, not records.
Everything is written when the file is committed: one Parquet file with one row group per
``parquet.row.group.rows`` rows, or the JSON lines in order.

Follows Confluent's ``ParquetFormat`` (values only, the value schema as the file schema,
``parquet.codec``) and ``JsonFormat`` (values through JsonConverter with schemas.enable=false,
one per line). Avro is not offered: it would need fastavro, which Kopycat does not ship.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Final

import pyarrow as pa
import pyarrow.parquet as pq

from kopycat.api.arrow import to_arrow_schema
from kopycat.api.arrow_values import to_arrow_batch
from kopycat.api.data import Schema, Struct, Type
from kopycat.api.errors import ConfigError, DataError
from kopycat.api.records import SinkRecord
from kopycat.converters.json import JsonConverter

__all__ = [
    "FORMAT_CLASSES", "FileContents", "JsonLinesFormat", "ParquetFormat", "RecordFormat",
    "format_from_config",
]

FORMAT_CLASS_CONFIG: Final = "format.class"
PARQUET_CODEC_CONFIG: Final = "parquet.codec"
PARQUET_CODECS: Final = ("none", "snappy", "gzip", "zstd", "lz4", "brotli")
ROW_GROUP_ROWS: Final = 1 << 17


class FileContents(ABC):
    """The records of one file in progress, converted as they come."""

    @abstractmethod
    def add(self, records: Sequence[SinkRecord]) -> None:
        """Append records (all of this file's schema) in offset order."""

    @abstractmethod
    def write_to(self, stream: pa.NativeFile) -> None:
        """Write the whole file."""


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

    def write_to(self, stream: pa.NativeFile) -> None:
        table = pa.Table.from_batches(self.batches, schema=self.arrow_schema)
        compression = None if self.codec == "none" else self.codec
        pq.write_table(table, stream, compression=compression, row_group_size=ROW_GROUP_ROWS)


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


FORMAT_CLASSES: Final[Mapping[str, str]] = {
    "parquet": "parquet", "ParquetFormat": "parquet",
    "io.confluent.connect.s3.format.parquet.ParquetFormat": "parquet",
    "io.confluent.connect.hdfs.parquet.ParquetFormat": "parquet",
    "json": "json", "jsonl": "json", "JsonFormat": "json",
    "io.confluent.connect.s3.format.json.JsonFormat": "json",
    "io.confluent.connect.hdfs.json.JsonFormat": "json",
}
"""Accepted ``format.class`` values: short names and Confluent's class names."""


def format_from_config(values: Mapping[str, Any]) -> RecordFormat:
    """The format ``format.class`` names (validated by the sink's ConfigDef already)."""
    kind = FORMAT_CLASSES.get(str(values[FORMAT_CLASS_CONFIG]))
    if kind == "parquet":
        return ParquetFormat(str(values.get(PARQUET_CODEC_CONFIG, "snappy")).lower())
    if kind == "json":
        return JsonLinesFormat()
    raise ConfigError.for_key(FORMAT_CLASS_CONFIG, values[FORMAT_CLASS_CONFIG],
                              f"is not a format: use one of {', '.join(sorted(FORMAT_CLASSES))} (Avro needs "
                              f"fastavro, which Kopycat does not ship)")
