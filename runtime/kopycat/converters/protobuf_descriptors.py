"""A parsed Protobuf schema as descriptors and Python message classes, in a descriptor pool of its own.

:class:`CompiledProto` turns a :class:`~kopycat.converters.protobuf_schema.ProtoFile` into
``FileDescriptorProto``s (what ``protoc`` would build: map fields as nested ``map_entry`` messages
named ``<Field>Entry``, proto3 ``optional`` fields in synthetic oneofs, type names resolved from
the innermost scope outwards) and adds them to a private ``DescriptorPool``, from which the
``protobuf`` package's ``message_factory`` makes the message classes. Well-known imports resolve
without the registry: ``google/protobuf/timestamp.proto`` and ``wrappers.proto`` (from the
``protobuf`` package), ``google/type/date.proto``, ``google/type/timeofday.proto``,
``confluent/type/decimal.proto`` and ``confluent/meta.proto`` (their messages, written out below).
Other imports are schema references: the registry lists them with the schema (Confluent's
``SchemaReference``: the import path, a subject and a version), and their texts (``.proto`` source
or base64 ``FileDescriptorProto``, with imports of their own) are added to the pool under the
import path first; an import no reference names is a :class:`DataError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2, wrappers_pb2

from kopycat.api.errors import DataError
from kopycat.converters.protobuf_schema import SCALARS, ProtoEnum, ProtoFile, ProtoMessage, parse_proto

__all__ = ["CompiledProto"]

_TYPE_MESSAGE: Final = 11
_TYPE_ENUM: Final = 14
_LABELS: Final = {"optional": 1, "required": 2, "repeated": 3}


_WELL_KNOWN_SOURCES: Final = {
    "google/type/date.proto":
        'syntax = "proto3"; package google.type; message Date { int32 year = 1; int32 month = 2; int32 day = 3; }',
    "google/type/timeofday.proto":
        'syntax = "proto3"; package google.type; '
        'message TimeOfDay { int32 hours = 1; int32 minutes = 2; int32 seconds = 3; int32 nanos = 4; }',
    "confluent/type/decimal.proto":
        'syntax = "proto3"; package confluent.type; '
        'message Decimal { bytes value = 1; uint32 precision = 2; int32 scale = 3; }',
    "confluent/meta.proto":
        'syntax = "proto3"; package confluent; '
        'message Meta { string doc = 1; map<string, string> params = 2; repeated string tags = 3; }',
}
_BUILT_IN: Final = {"google/protobuf/timestamp.proto": timestamp_pb2, "google/protobuf/wrappers.proto": wrappers_pb2}
_MAIN_FILE: Final = "kopycat/registered.proto"


class CompiledProto:
    """A parsed schema turned into descriptors in a pool of its own, with its message classes.

    ``params`` holds each field's Confluent meta params by (message full name, field number), and
    ``proto3_optional`` the fields declared ``optional`` (their oneofs are synthetic), which the
    descriptors of the ``protobuf`` package do not all expose.
    """

    def __init__(self, proto: ProtoFile, references: Callable[[], Mapping[str, str]] | None = None) -> None:
        """``references()`` gives the referenced schemas' texts by import path (asked only when an
        import is not a well-known one)."""
        self.proto = proto
        self.pool = descriptor_pool.DescriptorPool()
        self.params: dict[tuple[str, int], dict[str, str]] = {}
        self.proto3_optional: set[tuple[str, int]] = set()
        self._references = references
        self._sources: Mapping[str, str] | None = None
        self._added: set[str] = set()
        known: dict[str, str] = {}
        for name in proto.imports:
            self._add_dependency(name, known)
        _collect(proto, known)
        main = _file_proto(proto, _MAIN_FILE, known, self)
        try:
            self.pool.Add(main)
            self.file = self.pool.FindFileByName(_MAIN_FILE)
        except (TypeError, KeyError, ValueError) as exc:
            raise DataError(f"Invalid Protobuf schema: {exc}") from None

    def _add_dependency(self, name: str, known: dict[str, str]) -> None:
        if name in self._added:
            return
        self._added.add(name)
        module = _BUILT_IN.get(name)
        if module is not None:
            dependency = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
        elif name in _WELL_KNOWN_SOURCES:
            parsed = parse_proto(_WELL_KNOWN_SOURCES[name])
            _collect(parsed, known)
            dependency = _file_proto(parsed, name, known, None)
        else:
            dependency = self._referenced(name, known)
        for message in dependency.message_type:
            known[f"{dependency.package}.{message.name}"] = "message"
        self.pool.Add(dependency)

    def _referenced(self, name: str, known: dict[str, str]) -> descriptor_pb2.FileDescriptorProto:
        """The descriptor of a referenced schema, after the files it imports itself."""
        if self._sources is None:
            self._sources = self._references() if self._references is not None else {}
        text = self._sources.get(name)
        if text is None:
            raise DataError(f"Protobuf schema imports {name!r}, which none of its schema references names "
                            f"(references: {sorted(self._sources) or 'none'}); register the schema with a "
                            f"reference for that import")
        parsed = parse_proto(text)
        for imported in parsed.imports:
            self._add_dependency(imported, known)
        _collect(parsed, known)
        return _file_proto(parsed, name, known, self)

    def message_name(self, indexes: list[int]) -> str:
        """The full name of the message the message indexes point at (``[0]``: the first one)."""
        messages, names = self.proto.messages, [self.proto.package] if self.proto.package else []
        message = None
        for index in indexes or [0]:
            if index >= len(messages):
                raise DataError(f"Protobuf message indexes {indexes} point at no message of the schema")
            message = messages[index]
            names.append(message.name)
            messages = message.messages
        return ".".join(names)

    def message_class(self, full_name: str) -> Any:
        return message_factory.GetMessageClass(self.pool.FindMessageTypeByName(full_name))


def _collect(proto: ProtoFile, known: dict[str, str]) -> None:
    def walk(scope: str, messages: list[ProtoMessage], enums: list[ProtoEnum]) -> None:
        for enum in enums:
            known[f"{scope}{enum.name}"] = "enum"
        for message in messages:
            known[f"{scope}{message.name}"] = "message"
            walk(f"{scope}{message.name}.", message.messages, message.enums)
    walk(f"{proto.package}." if proto.package else "", proto.messages, proto.enums)


def _resolve(name: str, scope: str, known: dict[str, str]) -> str:
    """A type name as protobuf resolves it: from the innermost scope outwards; a leading dot is absolute."""
    if name.startswith("."):
        return name[1:]
    parts = scope.split(".") if scope else []
    while True:
        candidate = ".".join([*parts, name])
        if candidate in known:
            return candidate
        if not parts:
            raise DataError(f"Protobuf schema uses type {name!r}, which it does not define or import")
        parts.pop()


def _file_proto(proto: ProtoFile, name: str, known: dict[str, str],
                compiled: CompiledProto | None) -> descriptor_pb2.FileDescriptorProto:
    out = descriptor_pb2.FileDescriptorProto(name=name, syntax=proto.syntax if proto.syntax == "proto3" else "proto2",
                                             dependency=proto.imports)
    if proto.package:
        out.package = proto.package
    for message in proto.messages:
        out.message_type.append(_message_proto(message, proto.package or "", known, compiled, proto.syntax == "proto3"))
    for enum in proto.enums:
        out.enum_type.append(_enum_proto(enum))
    return out


def _message_proto(message: ProtoMessage, scope: str, known: dict[str, str], compiled: CompiledProto | None,
                   proto3: bool) -> descriptor_pb2.DescriptorProto:
    full = f"{scope}.{message.name}" if scope else message.name
    out = descriptor_pb2.DescriptorProto(name=message.name)
    for nested in message.messages:
        out.nested_type.append(_message_proto(nested, full, known, compiled, proto3))
    for enum in message.enums:
        out.enum_type.append(_enum_proto(enum))
    oneofs = list(dict.fromkeys(m.oneof for m in message.fields if m.oneof is not None and m.label != "optional"))
    out.oneof_decl.extend(descriptor_pb2.OneofDescriptorProto(name=name) for name in oneofs)
    for member in message.fields:
        field_proto = out.field.add(name=member.name, number=member.number, json_name=_camel(member.name, False))
        if member.key_type is not None:
            entry = out.nested_type.add(name=_camel(member.name, True) + "Entry")
            entry.options.map_entry = True
            _set_type(entry.field.add(name="key", number=1, json_name="key", label=1), member.key_type, full, known)
            _set_type(entry.field.add(name="value", number=2, json_name="value", label=1), member.type, full, known)
            field_proto.label, field_proto.type, field_proto.type_name = 3, _TYPE_MESSAGE, f".{full}.{entry.name}"
            continue
        field_proto.label = _LABELS.get(member.label or "optional", 1)
        _set_type(field_proto, member.type, full, known)
        if member.label == "optional" and proto3:
            if compiled is not None:
                compiled.proto3_optional.add((full, member.number))
            field_proto.proto3_optional = True
            field_proto.oneof_index = len(out.oneof_decl)
            out.oneof_decl.add(name=f"_{member.name}")
        elif member.oneof is not None:
            field_proto.oneof_index = oneofs.index(member.oneof)
        if compiled is not None and member.params:
            compiled.params[(full, member.number)] = member.params
    return out


def _set_type(field_proto: Any, kind: str, scope: str, known: dict[str, str]) -> None:
    if kind in SCALARS:
        field_proto.type = SCALARS[kind]
        return
    full = _resolve(kind, scope, known)
    field_proto.type = _TYPE_ENUM if known[full] == "enum" else _TYPE_MESSAGE
    field_proto.type_name = "." + full


def _enum_proto(enum: ProtoEnum) -> descriptor_pb2.EnumDescriptorProto:
    out = descriptor_pb2.EnumDescriptorProto(name=enum.name)
    for name, number in enum.values:
        out.value.add(name=name, number=number)
    return out


def _camel(name: str, upper: bool) -> str:
    """protoc's camel case of a field name (``by_zip``: ``byZip``, or ``ByZip`` for a map entry)."""
    out, capital = [], upper
    for char in name:
        if char == "_":
            capital = True
        else:
            out.append(char.upper() if capital else char)
            capital = False
    return "".join(out)
