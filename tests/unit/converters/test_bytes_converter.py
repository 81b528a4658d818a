"""ByteArrayConverter, after Kafka's connect/runtime ByteArrayConverterTest."""

from __future__ import annotations

import pytest

from kopycat.api.converter import SchemaAndValue
from kopycat.api.data import Schema
from kopycat.api.errors import DataError
from kopycat.converters.bytes import ByteArrayConverter

TOPIC = "topic"
SAMPLE = b"sample bytes"


def test_bytes_pass_through_unchanged() -> None:
    """ByteArrayConverterTest.testFromConnect and testFromConnectSchemaless."""
    converter = ByteArrayConverter()
    assert converter.from_connect_data(TOPIC, Schema.BYTES_SCHEMA, SAMPLE) == SAMPLE
    assert converter.from_connect_data(TOPIC, None, SAMPLE) == SAMPLE
    assert converter.from_connect_data(TOPIC, None, bytearray(SAMPLE)) == SAMPLE
    assert converter.from_connect_data(TOPIC, None, memoryview(SAMPLE)) == SAMPLE


def test_a_schema_other_than_bytes_is_rejected() -> None:
    """ByteArrayConverterTest.testFromConnectBadSchema."""
    with pytest.raises(DataError, match="Invalid schema type for ByteArrayConverter: INT32"):
        ByteArrayConverter().from_connect_data(TOPIC, Schema.INT32_SCHEMA, SAMPLE)


def test_a_value_that_is_not_bytes_is_rejected() -> None:
    """ByteArrayConverterTest.testFromConnectInvalidValue."""
    with pytest.raises(DataError, match="not compatible with objects of type int"):
        ByteArrayConverter().from_connect_data(TOPIC, Schema.BYTES_SCHEMA, 12)


def test_null_is_a_tombstone_both_ways() -> None:
    """ByteArrayConverterTest.testFromConnectNull and testToConnectNull."""
    converter = ByteArrayConverter()
    assert converter.from_connect_data(TOPIC, Schema.OPTIONAL_BYTES_SCHEMA, None) is None
    assert converter.to_connect_data(TOPIC, None) == SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, None)


def test_bytes_read_as_optional_bytes() -> None:
    """ByteArrayConverterTest.testToConnect."""
    assert ByteArrayConverter().to_connect_data(TOPIC, SAMPLE) == SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, SAMPLE)


def test_batches_equal_single_records() -> None:
    converter = ByteArrayConverter()
    values: list[object] = [SAMPLE, None, bytearray(b"x")]
    assert converter.from_connect_data_batch(TOPIC, None, values) == [SAMPLE, None, b"x"]
    assert converter.from_connect_data_batch(TOPIC, Schema.BYTES_SCHEMA, [SAMPLE, None]) == [SAMPLE, None]
    with pytest.raises(DataError):
        converter.from_connect_data_batch(TOPIC, Schema.STRING_SCHEMA, [SAMPLE])
    assert converter.to_connect_data_batch(TOPIC, [SAMPLE, None]) == [
        SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, SAMPLE), SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, None)]


def test_header_methods_delegate_to_the_data_methods() -> None:
    converter = ByteArrayConverter()
    assert converter.from_connect_header(TOPIC, "h", Schema.BYTES_SCHEMA, SAMPLE) == SAMPLE
    assert converter.to_connect_header(TOPIC, "h", SAMPLE).value == SAMPLE
