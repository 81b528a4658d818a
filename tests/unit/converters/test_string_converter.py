"""StringConverter, after Kafka's connect/api StringConverterTest."""

from __future__ import annotations

import pytest

from kopycat.api.converter import SchemaAndValue
from kopycat.api.data import Schema
from kopycat.api.errors import ConfigError, DataError
from kopycat.converters.string import StringConverter

TOPIC = "topic"
SAMPLE = "a string"


def converter(**configs: str) -> StringConverter:
    instance = StringConverter()
    instance.configure(configs, is_key=True)
    return instance


def test_strings_are_written_as_utf8() -> None:
    """StringConverterTest.testStringToBytes."""
    assert converter().from_connect_data(TOPIC, Schema.STRING_SCHEMA, SAMPLE) == b"a string"
    assert converter().from_connect_data(TOPIC, Schema.STRING_SCHEMA, "é€") == "é€".encode()


def test_other_values_are_written_as_java_to_string() -> None:
    """StringConverterTest.testNonStringToBytes and testToBytesIgnoresSchema."""
    assert converter().from_connect_data(TOPIC, Schema.BOOLEAN_SCHEMA, True) == b"true"
    assert converter().from_connect_data(TOPIC, None, True) == b"true"
    assert converter().from_connect_data(TOPIC, Schema.FLOAT64_SCHEMA, 1e10) == b"1.0E10"
    assert converter().from_connect_data(TOPIC, Schema.INT64_SCHEMA, 42) == b"42"


def test_null_is_a_tombstone_both_ways() -> None:
    """StringConverterTest.testNullToBytes and testBytesNullToString."""
    assert converter().from_connect_data(TOPIC, Schema.OPTIONAL_STRING_SCHEMA, None) is None
    assert converter().to_connect_data(TOPIC, None) == SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, None)


def test_bytes_read_as_an_optional_string() -> None:
    """StringConverterTest.testBytesToString."""
    assert converter().to_connect_data(TOPIC, b"a string") == SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, SAMPLE)


def test_utf16_is_big_endian_with_a_byte_order_mark_as_in_java() -> None:
    """StringConverterTest.testToBytesNonUtf8Encoding / testBytesToStringNonUtf8Encoding."""
    utf16 = converter(**{"converter.encoding": "UTF-16"})
    java_bytes = b"\xfe\xff" + SAMPLE.encode("utf-16-be")  # SAMPLE.getBytes(StandardCharsets.UTF_16)
    assert utf16.from_connect_data(TOPIC, Schema.STRING_SCHEMA, SAMPLE) == java_bytes
    assert utf16.to_connect_data(TOPIC, java_bytes).value == SAMPLE
    assert utf16.to_connect_data(TOPIC, b"\xff\xfe" + SAMPLE.encode("utf-16-le")).value == SAMPLE
    assert utf16.to_connect_data(TOPIC, SAMPLE.encode("utf-16-be")).value == SAMPLE


def test_other_java_charset_names_are_understood() -> None:
    assert converter(**{"converter.encoding": "ISO-8859-1"}).from_connect_data(TOPIC, None, "é") == b"\xe9"
    assert converter(**{"converter.encoding": "US-ASCII"}).to_connect_data(TOPIC, b"abc").value == "abc"


def test_an_unknown_charset_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"'EBCDIC-42' for configuration converter.encoding"):
        converter(**{"converter.encoding": "EBCDIC-42"})


def test_text_that_does_not_fit_the_charset_is_a_data_error() -> None:
    with pytest.raises(DataError, match="US-ASCII"):
        converter(**{"converter.encoding": "US-ASCII"}).from_connect_data(TOPIC, None, "é")
    with pytest.raises(DataError, match="not UTF-8"):
        converter().to_connect_data(TOPIC, b"\xff")


def test_header_methods_delegate_to_the_data_methods() -> None:
    """StringConverterTest.testStringHeaderValueToBytes and testNullHeaderValueToBytes."""
    assert converter().from_connect_header(TOPIC, "hdr", Schema.STRING_SCHEMA, SAMPLE) == b"a string"
    assert converter().from_connect_header(TOPIC, "hdr", Schema.OPTIONAL_STRING_SCHEMA, None) is None
    assert converter().to_connect_header(TOPIC, "hdr", b"x").value == "x"


def test_batches_equal_single_records() -> None:
    values = ["a", None, True, 1.5]
    instance = converter()
    assert instance.from_connect_data_batch(TOPIC, None, values) == [b"a", None, b"true", b"1.5"]
    assert instance.to_connect_data_batch(TOPIC, [b"a", None]) == [
        SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, "a"), SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, None)]


@pytest.mark.parametrize("encoding", ["UTF-8", "ISO-8859-1", "UTF-16"])
def test_batches_in_any_charset_equal_single_records_and_name_a_bad_character(encoding: str) -> None:
    instance = converter(**{"converter.encoding": encoding})
    values = ["caf\u00e9", None, "", "plain", 7, False]
    assert instance.from_connect_data_batch(TOPIC, None, values) == [
        instance.from_connect_data(TOPIC, None, v) for v in values]
    data = [instance.from_connect_data(TOPIC, None, v) for v in values]
    assert instance.to_connect_data_batch(TOPIC, data) == [instance.to_connect_data(TOPIC, d) for d in data]
    if encoding == "ISO-8859-1":
        with pytest.raises(DataError, match="ISO-8859-1"):
            instance.from_connect_data_batch(TOPIC, None, ["ok", "\u65e5"])


TEXTS = [b"plain", "z\u00e9ro \U0001F600".encode(), b"", b"with\ttab and \x00", "\u2028".encode(), b"x" * 300]


def test_utf8_batches_decode_as_one_arrow_string_array_equal_to_the_record_path() -> None:
    converter = StringConverter()
    found = converter.to_arrow_array("t", TEXTS)
    assert found is not None and found.schema == Schema.OPTIONAL_STRING_SCHEMA
    assert found.value.to_pylist() == [v.value for v in converter.to_connect_data_batch("t", TEXTS)]
    ascii_only = converter.to_arrow_array("t", [b"a", b"bc"])
    assert ascii_only is not None and ascii_only.value.to_pylist() == ["a", "bc"]


@pytest.mark.parametrize("values", [
    [b"ok", None],                                     # a tombstone: the record path keeps it
    [b"ok", b"\xff not UTF-8"],                        # the record path fails, naming it
    [b"ok", "\ud800".encode("utf-8", "surrogatepass")],  # an encoded surrogate: not UTF-8 to Python
    [b"\xc3", b"\xa9"],                                # valid only when joined
    [],
])
def test_what_the_record_path_reads_otherwise_or_rejects_has_no_arrow_array(values: list[bytes | None]) -> None:
    assert StringConverter().to_arrow_array("t", values) is None


def test_other_charsets_have_no_arrow_array() -> None:
    converter = StringConverter()
    converter.configure({"converter.encoding": "ISO-8859-1"})
    assert converter.to_arrow_array("t", [b"plain"]) is None


def test_arrow_strings_encode_as_binary_equal_to_the_record_path_also_when_sliced() -> None:
    import pyarrow as pa

    converter = StringConverter()
    converter.configure({}, is_key=False)
    texts = pa.array(["skip", "é€", "", "𝄞 plain"]).slice(1)
    encoded = converter.from_arrow_array("t", Schema.STRING_SCHEMA, texts)
    assert encoded.type == pa.binary()
    assert encoded.to_pylist() == [converter.from_connect_data("t", Schema.STRING_SCHEMA, text)
                                   for text in texts.to_pylist()]
    assert converter.from_arrow_array("t", Schema.STRING_SCHEMA, pa.array(["a", None])) is None
