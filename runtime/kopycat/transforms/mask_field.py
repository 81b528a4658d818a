"""MaskField: replace field values with their type's empty value or a fixed replacement.

Follows Kafka's ``org.apache.kafka.connect.transforms.MaskField`` (``$Key`` / ``$Value``).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import functools
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Final, TypeVar

from kopycat.api.config import ConfigDef, ConfigType, Importance, NonEmptyString
from kopycat.api.data import Date, Decimal, Schema, Struct, Time, Timestamp, Type, validate_value
from kopycat.api.errors import DataError
from kopycat.api.records import ConnectRecord
from kopycat.api.transforms import Transformation
from kopycat.java_numbers import f32
from kopycat.transforms._java import parse_java_double, wrap
from kopycat.transforms._util import (
    REPLACE_NULL_WITH_DEFAULT,
    REPLACE_NULL_WITH_DEFAULT_DOC,
    DeclaredConfig,
    NonEmptyList,
    Side,
    key_value_variants,
    require_map,
    require_struct,
)

__all__ = ["MaskField"]

R = TypeVar("R", bound=ConnectRecord)

FIELDS: Final = "fields"
REPLACEMENT: Final = "replacement"
_PURPOSE: Final = "mask fields"
_EPOCH: Final = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_INT_BITS: Final = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}


def _to_number(text: str, type_name: str) -> decimal.Decimal:
    """The replacement as a number (Kafka's ``Values.convertTo*`` of a string)."""
    try:
        number = decimal.Decimal(text.strip())
    except decimal.InvalidOperation:
        number = decimal.Decimal("NaN")
    if not number.is_finite():
        raise DataError(f"Unable to convert {text} (class java.lang.String) to {type_name}")
    return number


def _int_replacement(bits: int) -> Callable[[str], int]:
    """Whole part, keeping the low ``bits`` as Java's ``(byte) asLong(...)`` does."""
    return lambda text: wrap(int(_to_number(text, f"INT{bits}")), bits)


def _float_replacement(single: bool) -> Callable[[str], float]:
    def convert(text: str) -> float:
        try:
            number = parse_java_double(text)
        except ValueError:
            number = float(_to_number(text, "FLOAT32" if single else "FLOAT64"))
        return f32(number) if single else number
    return convert


def _decimal_replacement(text: str) -> decimal.Decimal:
    """``new BigDecimal(text)``."""
    try:
        number = decimal.Decimal(text)
    except decimal.InvalidOperation:
        raise DataError(f"Unable to convert {text} (class java.lang.String) to number") from None
    if not number.is_finite() or text != text.strip():
        raise DataError(f"Unable to convert {text} (class java.lang.String) to number")
    return number


@functools.lru_cache(maxsize=256)
def _masking_for_schema(schema: Schema) -> tuple[Any, Callable[[str], Any] | None, str]:
    """The empty value, the replacement parser (None: no replacement allowed) and a type name."""
    logical = {Decimal.LOGICAL_NAME: (decimal.Decimal(0), _decimal_replacement),
               Date.LOGICAL_NAME: (_dt.date(1970, 1, 1), None),
               Time.LOGICAL_NAME: (_dt.time(0), None),
               Timestamp.LOGICAL_NAME: (_EPOCH, None)}.get(schema.name or "")
    if logical is not None:
        return logical[0], logical[1], str(schema.name)
    kind = schema.type
    if kind in _INT_BITS:
        return 0, _int_replacement(_INT_BITS[kind]), kind.name
    if kind in (Type.FLOAT32, Type.FLOAT64):
        return 0.0, _float_replacement(kind is Type.FLOAT32), kind.name
    if kind is Type.STRING:
        return "", str, kind.name
    if kind is Type.BOOLEAN:
        return False, None, kind.name
    if kind is Type.ARRAY:
        return [], None, kind.name
    if kind is Type.MAP:
        return {}, None, kind.name
    return None, None, kind.name  # BYTES, STRUCT: no empty value in Kafka either


def _masking_for_value(value: Any) -> tuple[Any, Callable[[str], Any] | None, str]:
    """As :func:`_masking_for_schema`, from a schemaless value's Python class (Java's class)."""
    if isinstance(value, bool):
        return False, None, "bool"
    if isinstance(value, int):
        return 0, _int_replacement(64), "int"
    if isinstance(value, float):
        return 0.0, _float_replacement(False), "float"
    if isinstance(value, str):
        return "", str, "str"
    if isinstance(value, decimal.Decimal):
        return decimal.Decimal(0), _decimal_replacement, "Decimal"
    if isinstance(value, _dt.datetime):
        return _EPOCH, None, "datetime"
    if isinstance(value, _dt.date):
        return _dt.date(1970, 1, 1), None, "date"
    if isinstance(value, _dt.time):
        return _dt.time(0), None, "time"
    if isinstance(value, list | tuple):
        return [], None, type(value).__name__
    if isinstance(value, Mapping):
        return {}, None, type(value).__name__
    return None, None, type(value).__name__


class MaskField(Side, DeclaredConfig, Transformation[R]):
    """Mask fields with a valid null value for their type (0, false, "", empty list, epoch, ...).

    With ``replacement`` set, numeric, Decimal and string fields get it instead (converted to
    the field's type); other types cannot take a replacement and raise DataError. Fields named
    but absent are set to null in dicts and ignored in Structs, as in Kafka. Like Kafka, a null
    key/value (a tombstone) is an error: guard the transform with ``RecordIsTombstone``.
    """

    Key: ClassVar[type[MaskField[Any]]]
    Value: ClassVar[type[MaskField[Any]]]

    OVERVIEW_DOC: ClassVar[str] = (
        "Mask specified fields with a valid null value for the field type (i.e. 0, false, empty "
        "string, and so on). For numeric and string fields, an optional replacement value can be "
        "specified that is converted to the correct type.")
    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(FIELDS, ConfigType.LIST, validator=NonEmptyList(), importance=Importance.HIGH,
                doc="Names of fields to mask.")
        .define(REPLACEMENT, ConfigType.STRING, None, NonEmptyString(), Importance.LOW,
                "Custom value replacement, that will be applied to all 'fields' values (numeric "
                "or non-empty string values only).")
        .define(REPLACE_NULL_WITH_DEFAULT, ConfigType.BOOLEAN, True, None, Importance.MEDIUM,
                REPLACE_NULL_WITH_DEFAULT_DOC))

    def __init__(self) -> None:
        self.masked_fields: tuple[str, ...] = ()
        self.replacement: str | None = None
        self.replace_null_with_default = True

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        self.masked_fields = tuple(dict.fromkeys(parsed[FIELDS]))
        self.replacement = parsed[REPLACEMENT]
        self.replace_null_with_default = parsed[REPLACE_NULL_WITH_DEFAULT]

    def _masked(self, value: Any, masking: tuple[Any, Callable[[str], Any] | None, str], field: str) -> Any:
        if value is None:
            return None
        empty, convert, type_name = masking
        if self.replacement is None:
            if empty is None:
                raise DataError(f"Cannot mask field {field}: no empty value for type {type_name}")
            return empty.copy() if isinstance(empty, list | dict) else empty
        if convert is None:
            raise DataError(f"Cannot mask field {field} of type {type_name} with custom replacement.")
        try:
            return convert(self.replacement)
        except DataError as exc:
            raise DataError(f"Cannot mask field {field} with replacement: {exc}") from None

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        if self.operating_schema(record) is None:
            mapping = require_map(value, _PURPOSE)
            updated = dict(mapping)
            for name in self.masked_fields:
                original = mapping.get(name)
                updated[name] = self._masked(original, _masking_for_value(original), name)
            return self.updated(record, None, updated)
        struct = require_struct(value, _PURPOSE)
        schema = struct.schema
        read = struct.get if self.replace_null_with_default else struct.get_without_default
        values = []
        for field in schema.fields:
            original = read(field)
            if field.name in self.masked_fields and original is not None:
                original = self._masked(original, _masking_for_schema(field.schema), field.name)
                validate_value(field.schema, original, field.name)
            values.append(original)
        return self.updated(record, schema, Struct.of_values(schema, values))

    def close(self) -> None:
        pass


MaskField.Key, MaskField.Value = key_value_variants(MaskField)
