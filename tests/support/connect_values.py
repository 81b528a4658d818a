"""A struct schema of every flat Connect type and random values of it, for columnar-vs-record tests."""

from __future__ import annotations

import datetime as dt
import decimal
import random
from typing import Any

from kopycat.api.arrow import PRECISION_PARAMETER
from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp

PRICE = Decimal.builder(2).parameter(PRECISION_PARAMETER, "10").build()
WIDE = Decimal.builder(4).optional().build()  # no precision parameter: decimal128(38, 4)
ALL_TYPES = (SchemaBuilder.struct().name("test.AllTypes").version(3)
             .field("i8", Schema.INT8_SCHEMA).field("i16", Schema.OPTIONAL_INT16_SCHEMA)
             .field("i32", Schema.INT32_SCHEMA).field("i64", Schema.OPTIONAL_INT64_SCHEMA)
             .field("f32", Schema.FLOAT32_SCHEMA).field("f64", Schema.OPTIONAL_FLOAT64_SCHEMA)
             .field("flag", Schema.OPTIONAL_BOOLEAN_SCHEMA).field("text", Schema.OPTIONAL_STRING_SCHEMA)
             .field("blob", Schema.OPTIONAL_BYTES_SCHEMA).field("price", PRICE).field("wide", WIDE)
             .field("cents", Decimal.builder(2).parameter(PRECISION_PARAMETER, "12").optional().build())
             .field("day", Date.builder().optional().build()).field("at", Time.SCHEMA)
             .field("ts", Timestamp.builder().optional().build())
             .build())
TEXTS = ("", "plain", "quote \" and \\ backslash", "tab\tnewline\ncontrol\x01", "é ü ß", "emoji 😀 non-BMP",
         "\u2028 line separator", "</script>")


def random_struct(rng: random.Random) -> Struct:
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.2 else value

    ms = rng.randrange(-62135596800000, 253402300800000)
    values = {
        "i8": rng.choice([-128, 127, 0, rng.randrange(-128, 128)]),
        "i16": maybe(rng.randrange(-32768, 32768)),
        "i32": rng.choice([-(1 << 31), (1 << 31) - 1, rng.randrange(-(1 << 31), 1 << 31)]),
        "i64": maybe(rng.choice([-(1 << 63), (1 << 63) - 1, rng.randrange(-(1 << 63), 1 << 63)])),
        "f32": rng.choice([0.0, -0.0, 1.5, 3.4028234663852886e38, 1.401298464324817e-45, rng.uniform(-1e6, 1e6)]),
        "f64": maybe(rng.choice([5e-324, 1.7976931348623157e308, -0.0, 0.1, rng.uniform(-1e300, 1e300),
                                 float(rng.randrange(1 << 60))])),
        "flag": maybe(rng.random() < 0.5),
        "text": maybe(rng.choice(TEXTS)),
        "blob": maybe(rng.randbytes(rng.randrange(0, 12))),
        "price": Decimal.from_unscaled(
            rng.choice([0, -1, 10**10 - 1, -(10**10 - 1), rng.randrange(-10**10 + 1, 10**10)]), 2),
        "wide": maybe(decimal.Decimal(rng.randrange(-10**38 + 1, 10**38)).scaleb(-4)),
        "cents": maybe(Decimal.from_unscaled(rng.randrange(-10**12 + 1, 10**12), 2)),
        "day": maybe(dt.date(1970, 1, 1) + dt.timedelta(days=rng.randrange(-719162, 2932897))),
        "at": (dt.datetime(2000, 1, 1) + dt.timedelta(milliseconds=rng.randrange(86_400_000))).time(),
        "ts": maybe(dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms)),
    }
    struct = Struct(ALL_TYPES)
    for name, value in values.items():
        struct.put(name, value)
    return struct
