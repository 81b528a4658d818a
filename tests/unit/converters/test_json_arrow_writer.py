"""JsonConverter.from_arrow_array: a column's bytes equal the record path's, byte for byte, or None.

The columns are random structs through ``kopycat.api.arrow_values.to_arrow_batch``; the record
path is ``from_connect_data_batch`` over the values those columns hold, read back with
``from_arrow_array`` (as the runner's fallback reads a SourceRecordBatch). Both ways, every case.
"""

from __future__ import annotations

import decimal
import random
import subprocess
import sys
from typing import Any

import pyarrow as pa
import pyarrow.ipc
import pytest

from kopycat.api.arrow import to_arrow_type
from kopycat.api.arrow_values import from_arrow_array, to_arrow_batch
from kopycat.api.data import Decimal, Schema, SchemaBuilder, Struct
from kopycat.converters.json import JsonConverter
from tests.support.connect_values import ALL_TYPES, TEXTS, random_struct


def converter(**configs: str) -> JsonConverter:
    result = JsonConverter()
    result.configure({"schemas.enable": "true", **configs}, is_key=False)
    return result


def struct_array(schema: Schema, structs: list[Struct]) -> pa.StructArray:
    return to_arrow_batch(schema, structs).to_struct_array()


def both_ways(schema: Schema, structs: list[Struct], **configs: str) -> tuple[list[bytes | None], Any]:
    """The record path's bytes for the values the columns hold (what ``SourceRecordBatch.records()``
    hands it), and the columnar path's."""
    array = struct_array(schema, structs)
    records = converter(**configs).from_connect_data_batch("t", schema, from_arrow_array(schema, array))
    return records, converter(**configs).from_arrow_array("t", schema, array)


@pytest.mark.parametrize("configs", [{}, {"schemas.enable": "false"}, {"decimal.format": "NUMERIC"},
                                     {"replace.null.with.default": "false"}])
def test_every_flat_type_encodes_as_columns_to_the_record_paths_bytes(configs: dict[str, str]) -> None:
    rng = random.Random(20261124)
    records, columns = both_ways(ALL_TYPES, [random_struct(rng) for _ in range(2000)], **configs)
    assert columns is not None, "the columnar path must take flat structs"
    assert pa.types.is_binary(columns.type)
    assert columns.to_pylist() == records


def test_strings_with_every_escape_and_decimals_of_every_length_encode_identically() -> None:
    cents = Decimal.builder(2).optional().build()  # decimal128(38, 2); every unscaled value fits 64 bits
    schema = SchemaBuilder.struct().field("text", Schema.OPTIONAL_STRING_SCHEMA).field("cents", cents).build()
    edges = [0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32769, (1 << 23), -(1 << 23) - 1,
             (1 << 31), (1 << 39), (1 << 47) + 5, (1 << 55) - 1, -(1 << 55), (1 << 63) - 1, -(1 << 63) + 1]
    texts = [*TEXTS, "\x00\x1f\x7f", 'a"b', "back\\slash", "\U0010ffff", "ok", None]
    structs = []
    for index, unscaled in enumerate(edges * 3):
        struct = Struct(schema)
        struct.put("text", texts[index % len(texts)])
        struct.put("cents", None if index % 7 == 6 else decimal.Decimal(unscaled).scaleb(-2))
        structs.append(struct)
    records, columns = both_ways(schema, structs)
    assert columns is not None
    assert columns.to_pylist() == records


def test_a_null_default_and_a_wide_decimal_take_their_record_path_texts() -> None:
    schema = (SchemaBuilder.struct()
              .field("n", SchemaBuilder.int32().optional().default_value(7).build())
              .field("wide", Decimal.builder(0).optional().build())  # decimal128(38, 0): beyond 64 bits
              .build())
    structs = []
    for n, wide in [(None, decimal.Decimal(10) ** 30), (3, None), (None, decimal.Decimal(-5))]:
        struct = Struct(schema)
        struct.put("n", n)
        struct.put("wide", wide)
        structs.append(struct)
    for configs in ({}, {"replace.null.with.default": "false"}):
        records, columns = both_ways(schema, structs, **configs)
        assert columns is not None and columns.to_pylist() == records
    assert b'"n":7' in records[0] or b'"n":null' in records[0]


def test_a_null_in_a_required_field_takes_the_record_path() -> None:
    required = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).build()
    nulls = pa.StructArray.from_arrays([pa.array([1, None], pa.int64())], fields=[pa.field("id", pa.int64())])
    assert converter().from_arrow_array("t", required, nulls) is None


def test_a_nested_struct_and_a_null_value_encode_as_the_record_path_writes_them() -> None:
    """Nested fields (:mod:`tests.unit.converters.test_json_nested_columns` generates them) and a
    null top-level value of an optional schema, written ``null`` as the record path writes it."""
    required = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).build()
    nested = SchemaBuilder.struct().field("inner", required).build()
    assert converter().from_arrow_array("t", nested, pa.nulls(0, to_arrow_type(nested))).to_pylist() == []
    nullable = SchemaBuilder.struct().optional().field("id", Schema.INT64_SCHEMA).build()
    values = pa.StructArray.from_arrays([pa.array([1, 2], pa.int64())], fields=[pa.field("id", pa.int64())],
                                        mask=pa.array([False, True]))
    records = converter().from_connect_data_batch("t", nullable, from_arrow_array(nullable, values))
    assert converter().from_arrow_array("t", nullable, values).to_pylist() == records
    assert records[1].endswith(b'"payload":null}')


def test_a_top_level_string_column_is_an_envelope_per_text() -> None:
    texts = pa.array(["plain", 'quote "', "😀"], pa.string())
    expected = converter().from_connect_data_batch("t", Schema.STRING_SCHEMA, texts.to_pylist())
    assert converter().from_arrow_array("t", Schema.STRING_SCHEMA, texts).to_pylist() == expected


def test_columns_read_back_as_the_structs_they_were_made_of() -> None:
    rng = random.Random(7)
    structs = [random_struct(rng) for _ in range(300)]
    back = from_arrow_array(ALL_TYPES, struct_array(ALL_TYPES, structs))
    assert converter().from_connect_data_batch("t", ALL_TYPES, back) == \
        converter().from_connect_data_batch("t", ALL_TYPES, structs)


def test_encoding_columns_does_not_import_pandas(tmp_path: Any) -> None:
    """``pa.array`` and ``pa.scalar`` of Python values import pandas (half a second); a fresh process
    reads columns from an IPC file and encodes them without."""
    structs = [random_struct(random.Random(1)) for _ in range(50)]
    path = tmp_path / "columns.arrow"
    batch = to_arrow_batch(ALL_TYPES, structs)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, batch.schema) as writer:
        writer.write_batch(batch)
    script = ("import sys\n"
              "import pyarrow as pa\n"
              "from tests.support.connect_values import ALL_TYPES\n"
              "from kopycat.converters.json import JsonConverter\n"
              f"array = pa.ipc.open_file({str(path)!r}).get_batch(0).to_struct_array()\n"
              "assert JsonConverter().from_arrow_array('t', ALL_TYPES, array) is not None\n"
              "print('pandas' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_names_that_are_not_connect_logical_types_are_written_by_their_type_as_columns() -> None:
    """Debezium's semantic types (a name on an INT64, INT32 or STRING) take the kernels' path, with
    nulls written as null or the field's default."""
    micros = SchemaBuilder.int64().name("io.debezium.time.MicroTimestamp").version(1).optional().build()
    days = SchemaBuilder.int32().name("io.debezium.time.Date").version(1).build()
    enum = (SchemaBuilder.string().name("io.debezium.data.Enum").version(1).parameter("allowed", "true,false")
            .default_value("false").optional().build())
    uuid = SchemaBuilder.string().name("io.debezium.data.Uuid").version(1).build()
    schema = SchemaBuilder.struct().field("at", micros).field("day", days).field("snapshot", enum) \
        .field("id", uuid).build()
    structs = [Struct.of_values(schema, [None if i % 5 == 0 else (i - 50) * 1_000_003, i - 40,
                                         None if i % 3 else ["true", "false"][i % 2], f"{i:08d}-\"x\""])
               for i in range(100)]
    for configs in ({}, {"replace.null.with.default": "false"}):
        records, columns = both_ways(schema, structs, **configs)
        assert columns is not None and columns.to_pylist() == records
