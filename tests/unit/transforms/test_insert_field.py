"""InsertField, after Kafka's InsertFieldTest."""

from __future__ import annotations

import datetime as dt

import pytest

from kopycat.api.data import Schema, SchemaBuilder, Struct, Timestamp
from kopycat.api.errors import ConfigError, DataError
from kopycat.api.records import SinkRecord, SourceRecord
from kopycat.transforms import InsertField

ALL_FIELDS = {
    "topic.field": "topic_field!",
    "partition.field": "partition_field",
    "timestamp.field": "timestamp_field?",
    "static.field": "instance_id",
    "static.value": "my-instance-id",
}
SIMPLE = SchemaBuilder.struct().name("name").version(1).doc("doc").field("magic", Schema.OPTIONAL_INT64_SCHEMA).build()


def configured(cls: type, props: dict) -> InsertField:
    xform = cls()
    xform.configure(props)
    return xform


def test_struct_value_gets_the_configured_fields_and_keeps_name_version_doc():
    # copySchemaAndInsertConfiguredFields
    xform = configured(InsertField.Value, ALL_FIELDS)
    record = SourceRecord(topic="test", kafka_partition=0, value_schema=SIMPLE,
                          value=Struct(SIMPLE).put("magic", 42), timestamp=789)
    out = xform.apply(record)

    expected_schema = (SchemaBuilder.struct().name("name").version(1).doc("doc")
                       .field("magic", Schema.OPTIONAL_INT64_SCHEMA)
                       .field("topic_field", Schema.STRING_SCHEMA)
                       .field("partition_field", Schema.OPTIONAL_INT32_SCHEMA)
                       .field("timestamp_field", Timestamp.builder().optional().build())
                       .field("instance_id", Schema.OPTIONAL_STRING_SCHEMA).build())
    expected = (Struct(expected_schema).put("magic", 42).put("topic_field", "test").put("partition_field", 0)
                .put("timestamp_field", dt.datetime(1970, 1, 1, 0, 0, 0, 789000, tzinfo=dt.timezone.utc))
                .put("instance_id", "my-instance-id"))
    assert out == SourceRecord(topic="test", kafka_partition=0, value_schema=expected_schema,
                               value=expected, timestamp=789)


def test_the_updated_schema_is_cached_per_input_schema():
    # copySchemaAndInsertConfiguredFields: "Exercise caching"
    xform = configured(InsertField.Value, ALL_FIELDS)
    first = xform.apply(SourceRecord(topic="test", kafka_partition=0, value_schema=SIMPLE,
                                     value=Struct(SIMPLE), timestamp=1))
    second = xform.apply(SourceRecord(topic="test", kafka_partition=1, value_schema=SIMPLE,
                                      value=Struct(SIMPLE)))
    assert second.value_schema is first.value_schema
    assert second.value.get("partition_field") == 1
    assert second.value.get("timestamp_field") is None


def test_schemaless_value_gets_raw_metadata_values():
    # schemalessInsertConfiguredFields
    xform = configured(InsertField.Value, ALL_FIELDS)
    out = xform.apply(SourceRecord(topic="test", kafka_partition=0, value={"magic": 42}, timestamp=123))
    assert out.value == {"magic": 42, "topic_field": "test", "partition_field": 0,
                         "timestamp_field": 123, "instance_id": "my-instance-id"}
    assert out.value_schema is None


def test_a_struct_is_required_when_there_is_a_schema():
    # topLevelStructRequired
    xform = configured(InsertField.Value, {"topic.field": "topic_field"})
    with pytest.raises(DataError, match=r"Only Struct objects supported for \[field insertion\]"):
        xform.apply(SourceRecord(topic="", kafka_partition=0, value_schema=Schema.INT32_SCHEMA, value=42))


@pytest.mark.parametrize("schema", [None, SIMPLE], ids=["schemaless", "with-schema"])
def test_a_tombstone_value_is_left_unchanged(schema):
    # insertConfiguredFieldsIntoTombstoneEventWithoutSchemaLeavesValueUnchanged / ...WithSchema...
    xform = configured(InsertField.Value, ALL_FIELDS)
    record = SourceRecord(topic="test", kafka_partition=0, value_schema=schema, value=None)
    assert xform.apply(record) is record


def test_key_fields_are_inserted_into_a_tombstone_events_key():
    # insertKeyFieldsIntoTombstoneEvent
    xform = configured(InsertField.Key, ALL_FIELDS)
    out = xform.apply(SourceRecord(topic="test", kafka_partition=0, key={"magic": 42}))
    assert out == SourceRecord(topic="test", kafka_partition=0, key={
        "magic": 42, "topic_field": "test", "partition_field": 0, "instance_id": "my-instance-id"})


def test_a_null_key_leaves_the_record_unchanged():
    # insertIntoNullKeyLeavesRecordUnchanged
    xform = configured(InsertField.Key, ALL_FIELDS)
    record = SourceRecord(topic="test", kafka_partition=0, value={"magic": 42})
    assert xform.apply(record) is record


@pytest.mark.parametrize(("replace_null_with_default", "expected"), [(False, None), (True, 42)])
def test_unset_optional_field_follows_replace_null_with_default(replace_null_with_default, expected):
    # testUnsetOptionalField
    xform = configured(InsertField.Value, {**ALL_FIELDS, "replace.null.with.default": replace_null_with_default})
    magic = SchemaBuilder.int64().optional().default_value(42).build()
    schema = SchemaBuilder.struct().name("name").version(1).doc("doc").field("magic_with_default", magic).build()
    out = xform.apply(SourceRecord(topic="test", kafka_partition=0, value_schema=schema,
                                   value=Struct(schema).put("magic_with_default", None), timestamp=789))
    assert out.value_schema.field("magic_with_default").schema == magic
    assert out.value.get_without_default("magic_with_default") == expected


def test_offset_field_reads_the_sink_records_kafka_offset():
    xform = configured(InsertField.Value, {"offset.field": "offset!"})
    schema = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).build()
    out = xform.apply(SinkRecord(topic="t", kafka_partition=2, kafka_offset=77, value_schema=schema,
                                 value=Struct(schema).put("id", 1)))
    assert out.value_schema.field("offset").schema == Schema.INT64_SCHEMA
    assert out.value.get("offset") == 77
    assert out.original_kafka_offset == 77


def test_offset_field_on_a_source_record_is_a_data_error():
    xform = configured(InsertField.Value, {"offset.field": "offset"})
    with pytest.raises(DataError, match=r"Only SinkRecord supported for \[field insertion\]"):
        xform.apply(SourceRecord(topic="t", value={"a": 1}))


def test_nothing_to_insert_is_a_config_error():
    with pytest.raises(ConfigError, match="No field insertion configured"):
        InsertField.Value().configure({})


def test_static_field_without_static_value_names_the_key():
    with pytest.raises(ConfigError, match="static.value") as info:
        InsertField.Value().configure({"static.field": "instance_id"})
    assert info.value.key == "static.value"


def test_headers_are_copied_not_shared():
    xform = configured(InsertField.Value, {"topic.field": "t"})
    record = SourceRecord(topic="x", value={})
    record.headers.add("h", 1)
    out = xform.apply(record)
    out.headers.add("h2", 2)
    assert [h.key for h in record.headers] == ["h"]
    assert [h.key for h in out.headers] == ["h", "h2"]
