"""JsonConverter.to_arrow_array: the columnar path gives the record path's values exactly, or None.

The record path is ``to_connect_data_batch`` then ``kopycat.api.arrow_values.to_arrow_batch``;
every batch here is decoded both ways. The common case must take the columnar path (a test fails
if it silently never does), and every input the record path would read differently, or reject,
must make the columnar path answer None.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import random
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kopycat.api.arrow_values import to_arrow_batch
from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from kopycat.converters.json import JsonConverter
from tests.support.connect_values import ALL_TYPES, PRICE, random_struct

REPO = Path(__file__).parents[3]
def converter(**configs: str) -> JsonConverter:
    result = JsonConverter()
    result.configure({"schemas.enable": "true", **configs}, is_key=False)
    return result


def record_path(values: list[bytes | None]) -> tuple[Schema, pa.StructArray]:
    """The record path's values as the StructArray the columnar path must equal (field metadata included)."""
    decoded = converter().to_connect_data_batch("t", values)
    schema = decoded[0].schema
    assert all(d.schema == schema for d in decoded)
    batch = to_arrow_batch(schema, [d.value for d in decoded])
    return schema, pa.StructArray.from_arrays(batch.columns, fields=list(batch.schema))


def columns(values: list[bytes | None], **configs: str) -> Any:
    return converter(**configs).to_arrow_array("t", values)


def encode(schema: Schema, structs: list[Struct | None]) -> list[bytes | None]:
    return converter().from_connect_data_batch("t", schema, structs)


def test_every_supported_type_decodes_as_columns_equal_to_the_record_paths_batch() -> None:
    rng = random.Random(20261124)
    values = encode(ALL_TYPES, [random_struct(rng) for _ in range(2000)])
    found = columns(values)
    assert found is not None, "the columnar path must take a batch of plain envelopes"
    schema, expected = record_path(values)
    assert found.schema == schema == ALL_TYPES
    assert found.value.type == expected.type
    assert all(a.metadata == b.metadata for a, b in zip(found.value.type, expected.type, strict=True))
    assert found.value.equals(expected)
    assert len(found.value) == 2000


def test_payload_fields_in_another_order_and_unknown_fields_decode_the_same() -> None:
    [plain] = encode(PRICE_ONLY, [price_struct(12345)])
    head = plain[:plain.index(b'"payload":') + len(b'"payload":')]
    reordered = head + b'{"extra":{"nested":[1,2]},"note":null,"price":"MDk="}' + b"}"
    found = columns([plain, reordered])
    assert found is not None
    assert found.value.equals(record_path([plain, reordered])[1])


PRICE_ONLY = (SchemaBuilder.struct().name("test.Price").field("price", PRICE)
              .field("note", Schema.OPTIONAL_STRING_SCHEMA).build())


def price_struct(unscaled: int) -> Struct:
    return Struct(PRICE_ONLY).put("price", Decimal.from_unscaled(unscaled, 2))


def with_good(schema: Schema, payload: bytes) -> list[bytes]:
    """A value of ``schema`` the columnar path takes, then ``payload`` in the same envelope.

    The good value comes first, so the envelope prefix is known before the odd value is met: a
    case then fails only through the check it is about.
    """
    return [*encode(schema, [_sample_struct(schema)]), envelope_of(schema, payload)]


def _sample_struct(schema: Schema) -> Struct:
    sample = Struct(schema)
    for field in schema.fields:
        sample.put(field, _sample(field.schema))
    return sample


def envelope_of(schema: Schema, payload: bytes) -> bytes:
    """``payload`` in the envelope JsonConverter writes for ``schema``: its head, taken from a real encoding."""
    [plain] = encode(schema, [_sample_struct(schema)])
    return plain[:plain.index(b'"payload":') + len(b'"payload":')] + payload + b"}"


def _sample(schema: Schema) -> Any:
    samples = {Date.LOGICAL_NAME: dt.date(2026, 1, 1), Time.LOGICAL_NAME: dt.time(1, 2, 3),
               Timestamp.LOGICAL_NAME: dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
               Decimal.LOGICAL_NAME: decimal.Decimal("0.01")}
    if schema.name in samples:
        return samples[schema.name]
    return {"INT8": 1, "INT16": 1, "INT32": 1, "INT64": 1, "FLOAT32": 1.0, "FLOAT64": 1.0, "BOOLEAN": True,
            "STRING": "s", "BYTES": b"b", "ARRAY": []}[schema.type.name]


def one_field(name: str, schema: Schema) -> Schema:
    return SchemaBuilder.struct().name("test.One").field(name, schema).build()


DEFAULTED = SchemaBuilder.string().optional().default_value("unknown").build()
FALLBACKS: dict[str, Callable[[], list[bytes | None]]] = {
    "a null payload": lambda: with_good(PRICE_ONLY, b"null"),
    "a tombstone": lambda: [*with_good(PRICE_ONLY, b'{"price":"AQ=="}'), None],
    "a required field missing": lambda: with_good(PRICE_ONLY, b'{"note":"x"}'),
    "a null where the default applies": lambda: with_good(one_field("s", DEFAULTED), b'{"s":null}'),
    "INT8 out of range": lambda: with_good(one_field("n", Schema.INT8_SCHEMA), b'{"n":128}'),
    "INT32 out of range": lambda: with_good(one_field("n", Schema.INT32_SCHEMA), b'{"n":2147483648}'),
    "a float in an integer": lambda: with_good(one_field("n", Schema.INT64_SCHEMA), b'{"n":1.0}'),
    "an integer beyond 64 bits": lambda: with_good(one_field("n", Schema.INT64_SCHEMA),
                                                      b'{"n":9223372036854775808}'),
    "a bare NaN token": lambda: with_good(one_field("x", Schema.FLOAT64_SCHEMA), b'{"x":NaN}'),
    "a quoted NaN": lambda: with_good(one_field("x", Schema.FLOAT64_SCHEMA), b'{"x":"NaN"}'),
    "a negative zero integer": lambda: with_good(one_field("x", Schema.FLOAT64_SCHEMA), b'{"x":-0}'),
    "a negative zero integer in FLOAT32": lambda: with_good(one_field("x", Schema.FLOAT32_SCHEMA), b'{"x":-0}'),
    "leading zeros": lambda: with_good(one_field("n", Schema.INT64_SCHEMA), b'{"n":007}'),
    "a number in a string": lambda: with_good(one_field("s", Schema.STRING_SCHEMA), b'{"s":5}'),
    "a number in a boolean": lambda: with_good(one_field("b", Schema.BOOLEAN_SCHEMA), b'{"b":1}'),
    "bytes that are not base64": lambda: with_good(one_field("b", Schema.BYTES_SCHEMA), b'{"b":"no base64!"}'),
    "decimal bytes of zero length": lambda: with_good(PRICE_ONLY, b'{"price":""}'),
    "a decimal beyond its precision": lambda: [
        *encode(PRICE_ONLY, [price_struct(1)]), encode(PRICE_ONLY, [price_struct(1)])[0].replace(
            b'"AQ=="', b'"AlQL5AA="')],  # 10,000,000,000 unscaled: 11 digits in Decimal(10, 2)
    "a NUMERIC decimal": lambda: with_good(PRICE_ONLY, b'{"price":1.5}'),
    "a date after year 9999": lambda: with_good(one_field("d", Date.SCHEMA), b'{"d":2932897}'),
    "a time past midnight": lambda: with_good(one_field("t", Time.SCHEMA), b'{"t":86400000}'),
    "a timestamp before year 1": lambda: with_good(one_field("t", Timestamp.SCHEMA),
                                                      b'{"t":-62135596800001}'),
    "a lone surrogate": lambda: with_good(one_field("s", Schema.STRING_SCHEMA), b'{"s":"\\ud800"}'),
    "bytes that are not UTF-8": lambda: with_good(one_field("s", Schema.STRING_SCHEMA), b'{"s":"\xff"}'),
    "a payload over two lines": lambda: with_good(PRICE_ONLY, b'{"price":\n"AQ=="}'),
    "two objects as one payload": lambda: with_good(PRICE_ONLY, b'{"price":"AQ=="} {"price":"Ag=="}'),
    "a key after the payload": lambda: with_good(PRICE_ONLY, b'{"price":"AQ=="},"more":1'),
    "a duplicate key": lambda: with_good(PRICE_ONLY, b'{"price":"AQ==","price":"Ag=="}'),
    "another schema in the batch": lambda: [*encode(PRICE_ONLY, [price_struct(1)]),
                                            envelope_of(one_field("n", Schema.INT64_SCHEMA), b'{"n":1}')],
    "a spaced envelope": lambda: [
        *encode(PRICE_ONLY, [price_struct(1)]), encode(PRICE_ONLY, [price_struct(1)])[0].replace(
            b'"payload":', b'"payload": ')],
    "a nested struct": lambda: encode(NESTED, [Struct(NESTED).put("inner", Struct(PRICE_ONLY).put(
        "price", Decimal.from_unscaled(1, 2)))]),
    "an array": lambda: with_good(one_field("a", SchemaBuilder.array(Schema.INT32_SCHEMA).build()),
                                     b'{"a":[1,2]}'),
    "not an envelope": lambda: [*encode(PRICE_ONLY, [price_struct(1)]), b'{"price":"AQ=="}'],
    "an unclosed envelope": lambda: [*encode(PRICE_ONLY, [price_struct(1)]),
                                     encode(PRICE_ONLY, [price_struct(1)])[0][:-1]],
    "an envelope closed twice": lambda: [*encode(PRICE_ONLY, [price_struct(1)]),
                                         encode(PRICE_ONLY, [price_struct(1)])[0] + b"}"],
    "an empty payload": lambda: with_good(PRICE_ONLY, b""),
    "a payload's tail alone": lambda: [*encode(PRICE_ONLY, [price_struct(1)]), b'"price":"AQ=="}}'],
    "an envelope left open after its payload": lambda: [*encode(PRICE_ONLY, [price_struct(1)]),
                                                        encode(PRICE_ONLY, [price_struct(1)])[0][:-1] + b" "],
    "a payload opening no object": lambda: with_good(PRICE_ONLY, b'"{\"price\":\"AQ==\"}"'),
    "the envelope's head alone": lambda: [*encode(PRICE_ONLY, [price_struct(1)]), envelope_of(PRICE_ONLY, b"")[:-1]],
}
NESTED = SchemaBuilder.struct().name("test.Nested").field("inner", PRICE_ONLY).build()


@pytest.mark.parametrize(("token", "negative"), [(b"-0", False), (b"-0.0", True), (b"0", False)])
def test_a_zero_keeps_the_sign_the_record_path_and_jackson_give_it(token: bytes, negative: bool) -> None:
    """``-0`` is the integer zero (0.0), ``-0.0`` the negative float zero: Parquet keeps the sign."""
    values = [envelope_of(one_field("x", Schema.FLOAT64_SCHEMA), b'{"x":' + token + b"}")]
    found = columns(values)
    decoded = found.value if found is not None else record_path(values)[1]
    assert math.copysign(1.0, decoded.field("x")[0].as_py()) == (-1.0 if negative else 1.0)


@pytest.mark.parametrize("case", sorted(FALLBACKS))
def test_input_the_record_path_reads_otherwise_or_rejects_takes_the_record_path(case: str) -> None:
    values = FALLBACKS[case]()
    assert columns(values) is None
    if case not in UNSUPPORTED_SCHEMAS:
        assert columns(values[:1]) is not None, "the batch's first value alone must take the columnar path"


UNSUPPORTED_SCHEMAS = {"a nested struct", "an array"}


def test_each_fallback_case_is_a_plain_batch_once_the_odd_value_is_fixed() -> None:
    """The fallback cases are built on envelopes the columnar path does take (else they prove nothing)."""
    assert columns([envelope_of(PRICE_ONLY, b'{"price":"AQ=="}')]) is not None
    for name, schema in (("n", Schema.INT8_SCHEMA), ("x", Schema.FLOAT64_SCHEMA), ("s", Schema.STRING_SCHEMA),
                         ("b", Schema.BYTES_SCHEMA), ("d", Date.SCHEMA), ("t", Time.SCHEMA)):
        payload = {"n": b'{"n":127}', "x": b'{"x":1.5}', "s": b'{"s":"ok"}', "b": b'{"b":"AQ=="}',
                   "d": b'{"d":2932896}', "t": b'{"t":86399999}'}[name]
        values = [envelope_of(one_field(name, schema), payload)]
        found = columns(values)
        assert found is not None, name
        assert found.value.equals(record_path(values)[1])


def test_the_columnar_path_does_not_import_pandas() -> None:
    """pyarrow imports pandas (half a second) when it converts a Python list: the path builds buffers."""
    code = ("import sys, random\n"
            "from tests.unit.converters.test_json_arrow import ALL_TYPES, columns, encode, random_struct\n"
            "rng = random.Random(1)\n"
            "assert columns(encode(ALL_TYPES, [random_struct(rng) for _ in range(200)])) is not None\n"
            "print('pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert done.stdout.strip() == "False"


def test_without_schemas_there_are_no_columns() -> None:
    assert columns([b'{"price":"AQ=="}'], **{"schemas.enable": "false"}) is None


def test_a_line_longer_than_two_reader_blocks_still_decodes_as_columns() -> None:
    schema = one_field("s", Schema.STRING_SCHEMA)
    values = encode(schema, [Struct(schema).put("s", text) for text in ("short", "x" * (33 << 20), "short")])
    found = columns(values)
    assert found is not None, "a 33 MB line (over two blocks) needs a block of its own size, not the record path"
    assert found.value.equals(record_path(values)[1])


def test_two_threads_decoding_batches_of_two_schemas_at_once_get_each_batchs_own_columns() -> None:
    """The sink runner converts two batches at once on its helper threads (Converter.to_arrow_array):
    one converter learning and reordering its envelope prefixes from both must still decode each
    batch as a converter of its own does."""
    rng = random.Random(20261125)
    other = SchemaBuilder.struct().name("test.Other").field("id", Schema.INT64_SCHEMA).build()
    batches = [encode(ALL_TYPES, [random_struct(rng) for _ in range(200)]),
               encode(other, [Struct(other).put("id", n) for n in range(300)])]
    expected = [columns(values).value for values in batches]
    for _ in range(20):  # each round a fresh converter: the prefixes are learned while both threads read them
        shared, wrong = converter(), []
        barrier = threading.Barrier(2)

        def decode(first: int, shared: JsonConverter, barrier: threading.Barrier, wrong: list[int]) -> None:
            barrier.wait(10)
            for n in range(40):
                index = (first + n) % 2
                found = shared.to_arrow_array("t", batches[index])
                if found is None or not found.value.equals(expected[index]):
                    wrong.append(index)

        threads = [threading.Thread(target=decode, args=(first, shared, barrier, wrong)) for first in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert wrong == []
