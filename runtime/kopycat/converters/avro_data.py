"""Connect schemas as Avro schemas and Connect values as fastavro's, as Confluent's ``AvroData`` maps them.

The one Connect -> Avro mapping of Kopycat: the storage sink's Avro files and the Schema Registry
converter (:mod:`kopycat.converters.avro`) both use it; :mod:`kopycat.converters.avro_to_connect`
maps back. Follows ``io.confluent.connect.avro.AvroData.fromConnectSchema`` / ``fromConnectData``
with the defaults Confluent's storage sinks run it with (``connect.meta.data=true``, no enhanced
schema support, names not scrubbed: ``scrub=True`` scrubs them as ``scrub.invalid.names`` does, by
:mod:`kopycat.converters.scrub_names`), so an Avro file of ours carries the schema theirs would::

    INT8, INT16        "int" with "connect.type": "int8" / "int16"
    INT32, INT64       "int", "long"          FLOAT32, FLOAT64   "float", "double"
    BOOLEAN, STRING    "boolean", "string"    BYTES              "bytes"
    ARRAY              {"type": "array", "items": ...}
    MAP, string keys   {"type": "map", "values": ...}
    MAP, other keys    array of records ``MapEntry`` (namespace io.confluent.connect.avro) {key, value}
    STRUCT             record named by the schema's name (``a.b.C``: namespace a.b, name C); unnamed:
                       ConnectDefault, ConnectDefault2, ... in namespace io.confluent.connect.avro
    Decimal            bytes, logicalType decimal, scale, precision (``connect.decimal.precision``, else 64)
    Date, Time         int, logicalType date / time-millis
    Timestamp          long, logicalType timestamp-millis
    optional           ["null", T] (field default null); with a default: [T, "null"]

Every non-union type carries ``connect.doc``, ``connect.version``, ``connect.parameters``,
``connect.default`` and ``connect.name`` when the Connect schema has them. The JSON is what Avro's
``Schema.toString`` prints: a named type is defined once and referred to by name afterwards, and a
record's ``namespace`` is written only where it differs from the enclosing one.

Values: :func:`avro_values_converter` compiles a schema once into a function that turns a batch of
Connect values into what fastavro writes (records as dicts, logical values as their Connect
encodings: Decimal as unscaled two's complement bytes, Date as days, Time and Timestamp as ms),
a column at a time for structs. Not covered: Confluent's Avro-only round-trip schemas (unions named
``io.confluent.connect.avro.Union``, enums, fixed), which Kopycat's converters do not produce.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kopycat.api.arrow_values import struct_dict
from kopycat.api.data import LOGICAL_TYPES, Date, Decimal, Schema, Struct, Time, Timestamp, Type
from kopycat.api.errors import DataError
from kopycat.converters.scrub_names import scrub_full_name, scrub_name

__all__ = ["AvroSchema", "avro_values_converter", "default_json", "to_avro_schema"]

AvroSchema = dict[str, Any] | list[Any] | str
"""An Avro schema as parsed JSON: a type name, a union (list) or an object."""

NAMESPACE: Final = "io.confluent.connect.avro"
DEFAULT_SCHEMA_NAME: Final = "ConnectDefault"
MAP_ENTRY_TYPE_NAME: Final = "MapEntry"
KEY_FIELD: Final = "key"
VALUE_FIELD: Final = "value"
CONNECT_NAME_PROP: Final = "connect.name"
CONNECT_DOC_PROP: Final = "connect.doc"
CONNECT_VERSION_PROP: Final = "connect.version"
CONNECT_DEFAULT_VALUE_PROP: Final = "connect.default"
CONNECT_PARAMETERS_PROP: Final = "connect.parameters"
CONNECT_TYPE_PROP: Final = "connect.type"
CONNECT_INTERNAL_TYPE_NAME: Final = "connect.internal.type"
AVRO_RECORD_DOC_PROP: Final = NAMESPACE + ".record.doc"
AVRO_FIELD_DOC_PREFIX_PROP: Final = NAMESPACE + ".field.doc."
AVRO_FIELD_DEFAULT_FLAG_PROP: Final = NAMESPACE + ".field.default"
CONNECT_AVRO_DECIMAL_PRECISION_PROP: Final = "connect.decimal.precision"
CONNECT_AVRO_DECIMAL_PRECISION_DEFAULT: Final = 64
AVRO_TYPE_ENUM: Final = NAMESPACE + ".Enum"
AVRO_ENUM_DOC_PREFIX_PROP: Final = NAMESPACE + ".enum.doc."
AVRO_ENUM_DEFAULT_PREFIX_PROP: Final = NAMESPACE + ".enum.default."

_PRIMITIVES: Final = {
    Type.INT8: "int", Type.INT16: "int", Type.INT32: "int", Type.INT64: "long", Type.FLOAT32: "float",
    Type.FLOAT64: "double", Type.BOOLEAN: "boolean", Type.STRING: "string", Type.BYTES: "bytes",
}
_LOGICAL_AVRO: Final = {Date.LOGICAL_NAME: "date", Time.LOGICAL_NAME: "time-millis",
                        Timestamp.LOGICAL_NAME: "timestamp-millis"}


def to_avro_schema(schema: Schema, null_namespace: str | None = None, *, connect_meta_data: bool = True,
                   enhanced: bool = False, scrub: bool = False) -> AvroSchema:
    """The Avro schema of a Connect schema (``AvroData.fromConnectSchema``), as JSON-ready objects.

    ``connect_meta_data=False`` (the converters' ``connect.meta.data``) leaves out the ``connect.doc``,
    ``connect.version``, ``connect.parameters``, ``connect.default``, ``connect.name`` and
    ``connect.type`` properties. ``enhanced`` (``enhanced.avro.schema.support``) writes a STRING
    carrying ``io.confluent.connect.avro.Enum`` parameters (an Avro enum read back) as that enum.
    ``scrub`` (``scrub.invalid.names``) makes field and type names valid Avro names
    (:func:`~kopycat.converters.scrub_names.scrub_name`); ``connect.name`` keeps the Connect name.

    ``null_namespace`` puts names without a namespace into that one. Avro's Java parser finds a
    reference to such a name from inside a namespace (``Names.get`` falls back to the null
    namespace) but fastavro does not, so the schema fastavro encodes with uses a namespace there
    while the file's header keeps Confluent's form; the binary encoding does not depend on names.
    Raises :class:`DataError` when two different Connect schemas would define one Avro name, which
    Avro's ``Schema.toString`` refuses too ("Can't redefine").
    """
    return _Builder(null_namespace=null_namespace, connect_meta_data=connect_meta_data,
                    enhanced=enhanced, scrub=scrub).build(schema)


def _non_optional(schema: Schema) -> Schema:
    """``AvroData.nonOptional``: the same schema, required (its default kept)."""
    if not schema.optional:
        return schema
    fields = schema.fields if schema.type is Type.STRUCT else None
    key = schema.key_schema if schema.type is Type.MAP else None
    value = schema.value_schema if schema.type in (Type.MAP, Type.ARRAY) else None
    return Schema(schema.type, False, schema.default, schema.name, schema.version, schema.doc,
                  schema.parameters, fields, key, value)


def _split_name(full_name: str, null_namespace: str | None = None) -> tuple[str | None, str]:
    space, _, name = full_name.rpartition(".")
    return space or null_namespace, name


def _is_string_keyed(schema: Schema) -> bool:
    key = schema.key_schema
    return key.type is Type.STRING and not key.optional


@dataclass
class _Builder:
    """One ``fromConnectSchema`` call: named types defined so far, unnamed records counted."""

    named: dict[Any, str] = field(default_factory=dict)
    """Full Avro name of each named type built, by what defines it (a struct schema, a map entry)."""
    owners: dict[str, Any] = field(default_factory=dict)
    """What defined each full name (the inverse of ``named``)."""
    unnamed: int = 0
    space: str | None = None
    """The namespace names are relative to at this point of the JSON (Avro's ``Names.space``)."""
    null_namespace: str | None = None
    connect_meta_data: bool = True
    enhanced: bool = False
    """``enhanced.avro.schema.support``: STRINGs that were Avro enums become enums again."""
    scrub: bool = False
    """``scrub.invalid.names``: field and type names made valid Avro names."""

    def _split(self, full_name: str) -> tuple[str | None, str]:
        """A Connect full name as Avro's namespace and name (``AvroData.splitName``), scrubbed when asked."""
        return _split_name(scrub_full_name(full_name) if self.scrub else full_name, self.null_namespace)

    def build(self, schema: Schema, ignore_optional: bool = False) -> AvroSchema:
        if schema.type is Type.STRUCT and schema.optional:  # the union holds the record; no properties
            return ["null", self.build(_non_optional(schema), ignore_optional=True)]
        base = self._base(schema)
        if isinstance(base, dict):
            self._metadata(schema, base)
            if len(base) == 1:
                base = base["type"]
        return base if ignore_optional else _maybe_optional(schema, base)

    def _base(self, schema: Schema) -> AvroSchema:
        if self.enhanced and schema.type is Type.STRING and AVRO_TYPE_ENUM in (schema.parameters or {}):
            return self._enum(schema)
        if schema.type in _PRIMITIVES:
            out: dict[str, Any] = {"type": _PRIMITIVES[schema.type]}
            if schema.name == Decimal.LOGICAL_NAME:
                out["scale"] = Decimal.scale(schema)
                out["precision"] = _decimal_precision(schema)
            return out
        if schema.type is Type.ARRAY:
            return {"type": "array", "items": self.build(schema.value_schema)}
        if schema.type is Type.MAP:
            if _is_string_keyed(schema):
                return {"type": "map", "values": self.build(schema.value_schema)}
            return {"type": "array", "items": self._map_entry(schema)}
        return self._record(schema)

    def _reference(self, identity: Any) -> str | None:
        """The name of a type built already, as Avro refers to it from here (short in its own namespace)."""
        known = self.named.get(identity)
        if known is None:
            return None
        space, name = _split_name(known)
        return name if space is None or space == self.space else known

    def _define(self, identity: Any, space: str | None, name: str) -> None:
        """Note a named type before its JSON is written; a name may be defined once."""
        full = f"{space}.{name}" if space else name
        if full in self.owners:
            raise DataError(f"Avro needs one definition per name, but two different Connect schemas map to "
                            f"the Avro type {full}: rename one of the structs (or maps) in the value schema")
        self.named[identity] = full
        self.owners[full] = identity

    def _record(self, schema: Schema) -> AvroSchema:
        identity = ("struct", schema)
        reference = self._reference(identity)
        if reference is not None:
            return reference
        if schema.name is None:
            self.unnamed += 1
            space, name = NAMESPACE, DEFAULT_SCHEMA_NAME + (str(self.unnamed) if self.unnamed > 1 else "")
        else:
            space, name = self._split(schema.name)
        params = schema.parameters or {}
        fields = [(scrub_name(f.name) if self.scrub else f.name, f.schema,
                   params.get(AVRO_FIELD_DOC_PREFIX_PROP + f.name)) for f in schema.fields]
        self._define(identity, space, name)
        return self._record_json(space, name, params.get(AVRO_RECORD_DOC_PROP), fields, {})

    def _enum(self, schema: Schema) -> AvroSchema:
        """A STRING read from an Avro enum, written back as that enum (enhanced schema support)."""
        params = schema.parameters or {}
        identity = ("enum", params[AVRO_TYPE_ENUM])
        reference = self._reference(identity)
        if reference is not None:
            return reference
        space, name = self._split(params[AVRO_TYPE_ENUM])
        short = _split_name(schema.name)[1] if schema.name else DEFAULT_SCHEMA_NAME
        self._define(identity, space, name)
        out: dict[str, Any] = {"type": "enum", "name": name}
        if space is not None and space != self.space:
            out["namespace"] = space
        if params.get(AVRO_ENUM_DOC_PREFIX_PROP + short) is not None:
            out["doc"] = params[AVRO_ENUM_DOC_PREFIX_PROP + short]
        out["symbols"] = [k[len(AVRO_TYPE_ENUM) + 1:] for k in params if k.startswith(AVRO_TYPE_ENUM + ".")]
        if params.get(AVRO_ENUM_DEFAULT_PREFIX_PROP + short) is not None:
            out["default"] = params[AVRO_ENUM_DEFAULT_PREFIX_PROP + short]
        return out

    def _map_entry(self, schema: Schema) -> AvroSchema:
        """The record of a map with non-string keys (``MapEntry``, or the map's name)."""
        identity = ("map", schema.name, schema.key_schema, schema.value_schema)
        reference = self._reference(identity)
        if reference is not None:
            return reference
        if schema.name is None:
            space, name, props = NAMESPACE, MAP_ENTRY_TYPE_NAME, {}
        else:
            space, name = self._split(schema.name)
            props = {CONNECT_INTERNAL_TYPE_NAME: MAP_ENTRY_TYPE_NAME}
        fields = [(KEY_FIELD, schema.key_schema, None), (VALUE_FIELD, schema.value_schema, None)]
        self._define(identity, space, name)
        return self._record_json(space, name, None, fields, props)

    def _record_json(self, space: str | None, name: str, doc: str | None,
                     fields: Sequence[tuple[str, Schema, str | None]], props: Mapping[str, Any]) -> dict[str, Any]:
        """A record as ``RecordSchema.toJson`` writes it: type, name, namespace, doc, fields, props."""
        out: dict[str, Any] = {"type": "record", "name": name}
        if space is not None and space != self.space:
            out["namespace"] = space
        elif space is None and self.space is not None:
            out["namespace"] = ""  # null within non-null, as Avro writes it
        if doc is not None:
            out["doc"] = doc
        saved, self.space = self.space, space
        try:
            out["fields"] = [self._field(*member) for member in fields]
        finally:
            self.space = saved
        out.update(props)
        return out

    def _field(self, name: str, schema: Schema, doc: str | None) -> dict[str, Any]:
        """``addAvroRecordField``: optional fields default to null; a Connect default becomes the Avro one."""
        out: dict[str, Any] = {"name": name, "type": self.build(schema)}
        if doc is not None:
            out["doc"] = doc
        if schema.default is not None:
            if not (schema.type is Type.STRUCT and schema.optional) and _valid_default(schema, schema.default):
                out["default"] = default_json(schema, schema.default, scrub=self.scrub)
        elif schema.optional:
            out["default"] = None
        return out

    def _metadata(self, schema: Schema, out: dict[str, Any]) -> None:
        """The ``connect.*`` properties, logical type and ``avro*`` parameters, in Avro's order."""
        params = schema.parameters or {}
        if self.connect_meta_data:
            if schema.doc is not None:
                out[CONNECT_DOC_PROP] = schema.doc
            if schema.version is not None:
                out[CONNECT_VERSION_PROP] = schema.version
            shown = {k: v for k, v in params.items() if k != AVRO_FIELD_DEFAULT_FLAG_PROP}
            if shown:
                out[CONNECT_PARAMETERS_PROP] = shown
            if schema.default is not None and AVRO_FIELD_DEFAULT_FLAG_PROP not in params:
                out[CONNECT_DEFAULT_VALUE_PROP] = default_json(schema, schema.default, scrub=self.scrub)
            if schema.name is not None:
                out[CONNECT_NAME_PROP] = schema.name
            if schema.type in (Type.INT8, Type.INT16):
                out[CONNECT_TYPE_PROP] = schema.type.value
        if schema.name == Decimal.LOGICAL_NAME:
            scale, precision = out["scale"], out["precision"]
            if 0 <= scale <= precision:  # else Confluent falls back to a legacy form Avro readers ignore
                out["logicalType"] = "decimal"
        elif schema.name in _LOGICAL_AVRO:
            out["logicalType"] = _LOGICAL_AVRO[schema.name]
        out.update((k, v) for k, v in params.items() if k.startswith("avro"))


def _decimal_precision(schema: Schema) -> int:
    text = (schema.parameters or {}).get(CONNECT_AVRO_DECIMAL_PRECISION_PROP)
    return CONNECT_AVRO_DECIMAL_PRECISION_DEFAULT if text is None else int(text)


def _maybe_optional(schema: Schema, base: AvroSchema) -> AvroSchema:
    """``maybeMakeOptional``: null first, unless a default must match the first branch."""
    if not schema.optional:
        return base
    return [base, "null"] if schema.default is not None else ["null", base]


def _valid_default(schema: Schema, value: Any) -> bool:
    """Whether Avro's ``Schema.isValidDefault`` accepts :func:`default_json` of ``value``.

    Confluent adds a field's default through Avro's ``Schema.Field`` constructor, which refuses an
    invalid one (AvroData logs "Ignoring invalid default for field" and adds the field without it;
    ``connect.default`` still carries it). The JSON of a map of non-string keys is an array of
    ``[key, value]`` pairs, not of ``MapEntry`` records, so only an empty one is valid; a null is
    valid only where the union's first branch is null (optional, no default).
    """
    if value is None:
        return schema.optional and schema.default is None
    if schema.type is Type.MAP:
        if not _is_string_keyed(schema):
            return not value
        return all(_valid_default(schema.value_schema, v) for v in value.values())
    if schema.type is Type.ARRAY:
        return all(_valid_default(schema.value_schema, v) for v in value)
    if schema.type is Type.STRUCT:
        return all(_valid_default(f.schema, value.get(f)) for f in schema.fields)
    return True


def default_json(schema: Schema, value: Any, *, scrub: bool = False) -> Any:
    """A Connect default as Avro JSON (``defaultValueFromConnect``): bytes as ISO-8859-1 text; struct
    field names scrubbed with ``scrub``."""
    if value is None:
        return None
    logical = LOGICAL_TYPES.get(schema.name) if schema.name else None
    if logical is not None:
        value = logical.from_logical(schema, value)
    if schema.type is Type.BYTES:
        return bytes(value).decode("latin-1")
    if schema.type is Type.ARRAY:
        return [default_json(schema.value_schema, v, scrub=scrub) for v in value]
    if schema.type is Type.MAP:
        if _is_string_keyed(schema):
            return {k: default_json(schema.value_schema, v, scrub=scrub) for k, v in value.items()}
        return [[default_json(schema.key_schema, k, scrub=scrub), default_json(schema.value_schema, v, scrub=scrub)]
                for k, v in value.items()]
    if schema.type is Type.STRUCT:
        return {scrub_name(f.name) if scrub else f.name: default_json(f.schema, value.get(f), scrub=scrub)
                for f in schema.fields}
    if schema.type in (Type.FLOAT32, Type.FLOAT64):
        return float(value)
    return value


# ---------------------------------------------------------------------------------------------- values

_Convert = Callable[[Any], Any]


def avro_values_converter(schema: Schema, *, scrub: bool = False) -> Callable[[Sequence[Any]], list[Any]]:
    """Compile ``schema`` once into a batch conversion of its values (``AvroData.fromConnectData``).

    Unset struct fields take their schema's default (``Struct.get``); a top-level struct batch is
    converted column by column and only the columns that need it are touched. ``scrub`` keys
    records by their scrubbed field names, as :func:`to_avro_schema` with ``scrub`` names them.
    """
    if schema.type is Type.STRUCT:
        return _struct_batch(schema, scrub)
    convert = _converter(schema, scrub)
    if convert is None:
        return list
    return lambda values: [None if v is None else convert(v) for v in values]


def _field_name(name: str, scrub: bool) -> str:
    return scrub_name(name) if scrub else name


def _struct_batch(schema: Schema, scrub: bool) -> Callable[[Sequence[Any]], list[Any]]:
    names = [_field_name(f.name, scrub) for f in schema.fields]
    columns_plan = [(f.schema.default, _converter(f.schema, scrub)) for f in schema.fields]

    def convert(structs: Sequence[Struct]) -> list[dict[str, Any]]:
        rows = [struct.values() for struct in structs]
        columns = list(zip(*rows, strict=True)) if rows else []
        converted = [_column(column, default, plain) for column, (default, plain) in zip(columns, columns_plan,
                                                                                           strict=True)]
        return [dict(zip(names, row, strict=True)) for row in zip(*converted, strict=True)]
    return convert


def _column(column: Sequence[Any], default: Any, plain: _Convert | None) -> Sequence[Any]:
    if default is not None:
        column = [default if v is None else v for v in column]
    if plain is None:
        return column
    return [None if v is None else plain(v) for v in column]


def _converter(schema: Schema, scrub: bool) -> _Convert | None:
    """How one non-null value of ``schema`` becomes fastavro's; None when it is written as is."""
    logical = LOGICAL_TYPES.get(schema.name) if schema.name else None
    if logical is not None:
        from_logical = logical.from_logical
        return lambda value: from_logical(schema, value)
    if schema.type is Type.BYTES:
        return lambda value: value if type(value) is bytes else bytes(value)
    if schema.type is Type.ARRAY:
        element = _converter(schema.value_schema, scrub)
        return None if element is None else lambda values: [None if v is None else element(v) for v in values]
    if schema.type is Type.MAP:
        return _map_converter(schema, scrub)
    if schema.type is Type.STRUCT:
        fields = [(_field_name(f.name, scrub), f.index, f.schema.default, _converter(f.schema, scrub))
                  for f in schema.fields]
        return lambda struct: struct_dict(struct, fields)
    return None


def _map_converter(schema: Schema, scrub: bool) -> _Convert:
    value = _converter(schema.value_schema, scrub) or _same
    if _is_string_keyed(schema):
        return lambda mapping: {k: None if v is None else value(v) for k, v in mapping.items()}
    key = _converter(schema.key_schema, scrub) or _same
    return lambda mapping: [{KEY_FIELD: None if k is None else key(k), VALUE_FIELD: None if v is None else value(v)}
                            for k, v in mapping.items()]


def _same(value: Any) -> Any:
    return value
