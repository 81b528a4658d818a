"""TimestampConverter, with the vectors of Kafka's TimestampConverterTest (1970-01-02 00:00:01 UTC)."""

from __future__ import annotations

import datetime as dt

import pytest

from kopycat.api.data import Date, Schema, SchemaBuilder, Struct, Time, Timestamp
from kopycat.api.errors import ConfigError, DataError
from kopycat.api.records import SourceRecord
from kopycat.transforms import TimestampConverter

FORMAT = "yyyy MM dd HH mm ss SSS z"
DATE_PLUS_TIME = dt.datetime(1970, 1, 2, 0, 0, 1, tzinfo=dt.UTC)
DATE_PLUS_TIME_STRING = "1970 01 02 00 00 01 000 UTC"
DATE_PLUS_TIME_UNIX = 86401000
DATE = dt.date(1970, 1, 2)
TIME = dt.time(0, 0, 1)


def converter(cls=TimestampConverter.Value, **configs):
    xform = cls()
    xform.configure(configs)
    return xform


def convert(value, schema=None, **configs):
    out = converter(**configs).apply(SourceRecord(topic="t", value_schema=schema, value=value))
    return out.value_schema, out.value


@pytest.mark.parametrize(("target", "expected"), [
    ("Timestamp", DATE_PLUS_TIME), ("Date", DATE), ("Time", TIME), ("unix", DATE_PLUS_TIME_UNIX),
    ("string", DATE_PLUS_TIME_STRING),
])
def test_schemaless_timestamps_convert_to_every_target(target, expected):
    # testSchemalessIdentity / testSchemalessTimestampToDate / ...ToTime / ...ToUnix / ...ToString
    for source in (DATE_PLUS_TIME, DATE_PLUS_TIME_UNIX, DATE_PLUS_TIME_STRING):
        assert convert(source, **{"target.type": target, "format": FORMAT}) == (None, expected)


@pytest.mark.parametrize(("source_schema", "source", "target", "schema", "expected"), [
    (Timestamp.SCHEMA, DATE_PLUS_TIME, "Date", Date.SCHEMA, DATE),
    (Timestamp.SCHEMA, DATE_PLUS_TIME, "Time", Time.SCHEMA, TIME),
    (Timestamp.SCHEMA, DATE_PLUS_TIME, "unix", Schema.INT64_SCHEMA, DATE_PLUS_TIME_UNIX),
    (Schema.INT64_SCHEMA, DATE_PLUS_TIME_UNIX, "Timestamp", Timestamp.SCHEMA, DATE_PLUS_TIME),
    (Schema.STRING_SCHEMA, DATE_PLUS_TIME_STRING, "Timestamp", Timestamp.SCHEMA, DATE_PLUS_TIME),
    (Date.SCHEMA, DATE, "string", Schema.STRING_SCHEMA, "1970 01 02 00 00 00 000 UTC"),
    (Time.SCHEMA, TIME, "unix", Schema.INT64_SCHEMA, 1000),
    (Timestamp.builder().optional().build(), None, "string", Schema.OPTIONAL_STRING_SCHEMA, None),
])
def test_whole_values_with_schemas_take_the_target_schema(source_schema, source, target, schema, expected):
    # testWithSchemaTimestampToDate / ...ToTime / ...ToUnix / testWithSchemaUnixToTimestamp /
    # testWithSchemaStringToTimestamp / testWithSchemaNullValueToString
    assert convert(source, source_schema, **{"target.type": target, "format": FORMAT}) == (schema, expected)


@pytest.mark.parametrize(("precision", "unix"), [
    ("seconds", 86401), ("milliseconds", 86401000), ("microseconds", 86401000000),
    ("nanoseconds", 86401000000000),
])
def test_unix_precision_applies_both_ways(precision, unix):
    # testSchemalessUnixAccuracyToTimestamp... / testWithSchemaTimestampToUnixAccuracy...
    assert convert(DATE_PLUS_TIME, **{"target.type": "unix", "unix.precision": precision}) == (None, unix)
    assert convert(unix, **{"target.type": "Timestamp", "unix.precision": precision}) == (None, DATE_PLUS_TIME)


def test_sub_millisecond_inputs_truncate_toward_zero_as_javas_time_unit():
    assert convert(-1500, **{"target.type": "Timestamp", "unix.precision": "milliseconds"})[1] \
        == dt.datetime(1969, 12, 31, 23, 59, 58, 500000, tzinfo=dt.UTC)
    assert convert(86401000999, **{"target.type": "unix", "unix.precision": "microseconds"}) == (None, 86401000000)
    ts = convert(86401000999, **{"target.type": "Timestamp", "unix.precision": "microseconds"})[1]
    assert ts == DATE_PLUS_TIME
    assert convert(dt.datetime(1969, 12, 31, 23, 59, 58, 500000, tzinfo=dt.UTC),
                   **{"target.type": "unix", "unix.precision": "seconds"}) == (None, -1)


def test_a_field_of_a_struct_or_dict_converts_and_the_rest_stays():
    # testWithSchemaFieldConversion / testSchemalessFieldConversion
    schema = SchemaBuilder.struct().field("ts", Schema.INT64_SCHEMA).field("other", Schema.STRING_SCHEMA).build()
    value = Struct(schema).put("ts", DATE_PLUS_TIME_UNIX).put("other", "test")
    out_schema, out = convert(value, schema, field="ts", **{"target.type": "Timestamp"})
    assert out_schema.field("ts").schema == Timestamp.SCHEMA
    assert out_schema.field("other").schema == Schema.STRING_SCHEMA
    assert (out.get("ts"), out.get("other")) == (DATE_PLUS_TIME, "test")
    assert convert({"ts": DATE_PLUS_TIME_UNIX, "other": "x"}, field="ts", **{"target.type": "Date"}) \
        == (None, {"ts": DATE, "other": "x"})
    assert convert({"other": "x"}, field="ts", **{"target.type": "Date"}) == (None, {"other": "x", "ts": None})
    key_out = converter(TimestampConverter.Key, **{"target.type": "unix"}).apply(
        SourceRecord(topic="t", key=DATE_PLUS_TIME, value="v"))
    assert (key_out.key, key_out.value) == (DATE_PLUS_TIME_UNIX, "v")


def test_optional_struct_fields_and_null_structs():
    # testWithSchemaNullFieldConversion / testWithSchemaNullValueConversion
    schema = SchemaBuilder.struct().field("ts", Schema.OPTIONAL_INT64_SCHEMA).optional().build()
    out_schema, out = convert(Struct(schema), schema, field="ts", **{"target.type": "Timestamp"})
    assert out_schema.field("ts").schema == Timestamp.builder().optional().build()
    assert out.get("ts") is None
    assert convert(None, schema, field="ts", **{"target.type": "Timestamp"})[1] is None


def test_bad_configs_name_the_key_the_value_and_the_fix():
    # testConfigNoTargetType / testConfigInvalidTargetType / testConfigMissingFormat / testConfigInvalidFormat
    with pytest.raises(ConfigError, match="target.type"):
        converter()
    with pytest.raises(ConfigError, match="target.type"):
        converter(**{"target.type": "invalid"})
    with pytest.raises(ConfigError, match="requires format option to be specified"):
        converter(**{"target.type": "string"})
    with pytest.raises(ConfigError, match="unix.precision"):
        converter(**{"target.type": "unix", "unix.precision": "hours"})
    with pytest.raises(ConfigError) as bad:
        converter(**{"target.type": "string", "format": "YYYY-ww"})
    assert "format" in str(bad.value) and "YYYY-ww" in str(bad.value) and "quote literal text" in str(bad.value)
    with pytest.raises(ConfigError, match="bad-format"):
        converter(**{"target.type": "string", "format": "bad-format"})


def test_bad_values_are_data_errors():
    with pytest.raises(DataError, match=r"value \(2017-01-01\) does not match pattern"):
        convert("2017-01-01", **{"target.type": "unix", "format": "dd/MM/yyyy"})
    with pytest.raises(DataError, match="does not support float objects"):
        convert(1.5, **{"target.type": "unix"})
    with pytest.raises(DataError, match="known timestamp type"):
        convert(1, Schema.INT32_SCHEMA, **{"target.type": "unix"})


@pytest.mark.parametrize(("pattern", "text", "millis"), [
    ("yyyyMMddHHmmss", "19700102000001", 86401000),
    ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "1970-01-02T01:00:01.000+01:00", 86401000),
    ("dd MMM yyyy hh:mm:ss a", "02 Jan 1970 12:00:01 AM", 86401000),
    ("EEE, d MMM yyyy HH:mm:ss Z", "Fri, 2 Jan 1970 00:00:01 +0000", 86401000),
    ("yyyy-MM-dd", "1970-01-02 trailing text", 86400000),
    ("yyyy-MM-dd", "1970-13-02", 365 * 86400000 + 86400000),  # lenient: month 13 is next January
])
def test_simple_date_format_patterns_parse_as_java_reads_them(pattern, text, millis):
    assert convert(text, **{"target.type": "unix", "format": pattern}) == (None, millis)
