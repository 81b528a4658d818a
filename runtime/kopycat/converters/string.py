"""StringConverter: values as text in a configurable character set (Kafka's ``StringConverter``).

``converter.encoding`` takes Java charset names (``UTF-8`` default, ``UTF8``, ``UTF-16``,
``ISO-8859-1``, ...). Java's ``UTF-16`` is honoured as Java means it: big-endian with a byte order
mark when writing, the mark (or big-endian) when reading. Non-string values are written as Java's
``toString`` would for the same Connect value (``true``, ``1.0E10``). Reads give
``SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, text)``.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from kopycat.api.config import ConfigDef, ConfigType, Importance, Width
from kopycat.api.converter import SchemaAndValue
from kopycat.api.data import Schema
from kopycat.api.errors import ConfigError, DataError
from kopycat.converters.headers_as_data import HeadersAsData
from kopycat.java_numbers import java_double

__all__ = ["StringConverter"]

ENCODING_CONFIG: Final = "converter.encoding"
CONFIG: Final = ConfigDef().define(
    ENCODING_CONFIG, ConfigType.STRING, default="UTF-8", importance=Importance.HIGH,
    doc="The name of the Java character set to use for encoding strings as byte arrays.",
    width=Width.MEDIUM, display_name="Encoding")

_UTF16_BOMS: Final = (codecs.BOM_UTF16_BE, codecs.BOM_UTF16_LE)


def _java_string(value: Any) -> str:
    """What Java's ``toString`` prints for the Connect value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    return str(value)


def _is_utf16(name: str) -> bool:
    """Java's UTF-16 (a BOM on write, either order on read), which Python's codec does not match."""
    return name.upper().replace("_", "-") == "UTF-16"


def _codec(name: str) -> tuple[Callable[[str], bytes], Callable[[bytes], str]]:
    """Encode and decode functions for a Java charset name."""
    if _is_utf16(name):
        def encode_utf16(text: str) -> bytes:
            return codecs.BOM_UTF16_BE + text.encode("utf-16-be") if text else b""

        def decode_utf16(data: bytes) -> str:
            return data.decode("utf-16" if data[:2] in _UTF16_BOMS else "utf-16-be")
        return encode_utf16, decode_utf16
    try:
        python_name = codecs.lookup(name).name
    except LookupError:
        raise ConfigError.for_key(ENCODING_CONFIG, name, "not a known character set") from None
    return (lambda text: text.encode(python_name)), (lambda data: data.decode(python_name))




def _all_utf8(values: Sequence[bytes]) -> bool:
    try:
        for value in values:
            value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class StringConverter(HeadersAsData):
    """Text in a configurable character set; None passes through as a tombstone both ways."""

    CONFIG = CONFIG
    arrow_decode_off_the_gil = False  # the decode joins the bytes under the GIL: see Converter

    def __init__(self) -> None:
        self.configure({}, is_key=False)

    def config(self) -> ConfigDef:
        return CONFIG

    def configure(self, configs: Mapping[str, Any], is_key: bool = False) -> None:
        """Read ``converter.encoding``; an unknown charset raises ConfigError naming it."""
        self.encoding: str = CONFIG.parse(configs)[ENCODING_CONFIG]
        self._encode, self._decode = _codec(self.encoding)
        self._charset = None if _is_utf16(self.encoding) else codecs.lookup(self.encoding).name

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any,
                          headers: Any = None) -> bytes | None:
        """The value's text (Java ``toString``) in the configured charset; None gives None."""
        if value is None:
            return None
        try:
            return self._encode(value if value.__class__ is str else _java_string(value))
        except UnicodeError as exc:
            raise DataError(f"Failed to serialize to a string in {self.encoding}: {exc}") from None

    def from_connect_data_batch(self, topic: str, schema: Schema | None,
                                values: Sequence[Any]) -> list[bytes | None]:
        """Text values encoded inline (no call per value); anything else value by value."""
        charset = self._charset
        if charset is not None:
            try:
                return [None if value is None else value.encode(charset) for value in values]
            except (AttributeError, UnicodeError):  # a non-str value (Java toString) or a bad character
                pass
        convert = self.from_connect_data
        return [convert(topic, schema, value) for value in values]

    def to_connect_data_batch(self, topic: str, values: Sequence[bytes | None]) -> list[SchemaAndValue]:
        """One comprehension for the batch; a bad value is found (and named) one by one."""
        schema, decode, charset, new = Schema.OPTIONAL_STRING_SCHEMA, self._decode, self._charset, tuple.__new__
        try:
            if charset is not None:  # bytes.decode inline: no function frame per value
                return [new(SchemaAndValue, (schema, None if value is None else value.decode(charset)))
                        for value in values]
            return [SchemaAndValue(schema, None if value is None else decode(value)) for value in values]
        except UnicodeError:
            return [self.to_connect_data(topic, value) for value in values]

    def to_arrow_array(self, topic: str, values: Sequence[bytes | None]) -> SchemaAndValue | None:
        """UTF-8 texts as one ``pyarrow.StringArray`` over the joined bytes, no Python string per value.

        Only for ``converter.encoding=UTF-8`` and no null; the bytes must decode as the record
        path decodes them (all ASCII, or each value valid UTF-8 to Python's codec), else None.
        """
        if self._charset != "utf-8" or not values or None in values:
            return None
        data = b"".join(values)  # type: ignore[arg-type]  # no None, checked above
        if not data.isascii() and not _all_utf8(values):  # type: ignore[arg-type]
            return None
        import pyarrow as pa  # only where columns are asked for

        from kopycat.arrow_buffers import variable_array

        texts = variable_array(pa.string(), data, map(len, values), len(values))  # type: ignore[arg-type]
        return None if texts is None else SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, texts)

    def from_arrow_array(self, topic: str, schema: Schema, values: Any) -> Any | None:
        """A StringArray's own UTF-8 bytes (no copy), for ``converter.encoding=UTF-8``; else None.

        Arrow strings are valid UTF-8, exactly what ``str.encode`` writes for the same texts. A
        string array has a binary array's layout, so it is viewed as one (no compute kernel: this
        runs once per polled batch, on a source's hot path).
        """
        import pyarrow as pa  # only where columns are asked for

        if self._charset != "utf-8" or not pa.types.is_string(values.type) or values.null_count:
            return None
        return values.view(pa.binary())

    def to_connect_data(self, topic: str, value: bytes | None, headers: Any = None) -> SchemaAndValue:
        """``SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, text)``; None gives a None value."""
        if value is None:
            return SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, None)
        try:
            return SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, self._decode(value))
        except UnicodeError as exc:
            raise DataError(f"Failed to deserialize string: bytes are not {self.encoding}: {exc}") from None
