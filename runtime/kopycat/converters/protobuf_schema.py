"""Protobuf schemas as the registry holds them: ``.proto`` source, parsed and printed, and descriptors.

A Schema Registry stores a Protobuf schema as ``.proto`` text (Confluent's ``ProtobufSchema``
prints its canonical form; Confluent's Python serializer sends the base64 of a serialized
``FileDescriptorProto``, which is accepted here too). This module holds one small model of a
``.proto`` file (:class:`ProtoFile`, :class:`ProtoMessage`, :class:`ProtoField`, :class:`ProtoEnum`),
a parser for proto2/proto3 source into it and a printer of it in ``ProtobufSchema``'s layout;
:mod:`kopycat.converters.protobuf_descriptors` turns it into message classes.

Field options other than Confluent's ``(confluent.field_meta)`` ``params`` are read and dropped;
``extend``, ``service``, ``option`` and ``reserved`` statements are skipped.
"""

from __future__ import annotations

import ast
import base64
import binascii
import re
from dataclasses import dataclass, field
from typing import Any, Final

from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError

from kopycat.api.errors import DataError

__all__ = ["SCALARS", "ProtoEnum", "ProtoField", "ProtoFile", "ProtoMessage", "from_descriptor", "parse_proto",
           "print_proto"]

SCALARS: Final = {
    "double": 1, "float": 2, "int64": 3, "uint64": 4, "int32": 5, "fixed64": 6, "fixed32": 7, "bool": 8,
    "string": 9, "bytes": 12, "uint32": 13, "sfixed32": 15, "sfixed64": 16, "sint32": 17, "sint64": 18,
}
"""Scalar type names and their ``FieldDescriptorProto.Type`` numbers."""
_SCALAR_NAMES: Final = {number: name for name, number in SCALARS.items()}
_LABELS: Final = ("optional", "required", "repeated")


@dataclass
class ProtoField:
    """One field: ``[label] type name = number``; a map field has ``key_type`` and ``type`` its value."""

    name: str
    number: int
    type: str
    label: str | None = None
    key_type: str | None = None
    params: dict[str, str] = field(default_factory=dict)
    """Confluent's ``(confluent.field_meta).params`` (``connect.type``, ``precision``, ``scale``)."""
    oneof: str | None = None


@dataclass
class ProtoEnum:
    name: str
    values: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class ProtoMessage:
    name: str
    fields: list[ProtoField] = field(default_factory=list)
    messages: list[ProtoMessage] = field(default_factory=list)
    enums: list[ProtoEnum] = field(default_factory=list)


@dataclass
class ProtoFile:
    package: str | None = None
    syntax: str = "proto3"
    imports: list[str] = field(default_factory=list)
    messages: list[ProtoMessage] = field(default_factory=list)
    enums: list[ProtoEnum] = field(default_factory=list)


# ---------------------------------------------------------------------- printing

def print_proto(proto: ProtoFile) -> str:
    """The ``.proto`` source of a file, laid out as Confluent's ``ProtobufSchema.canonicalString``."""
    lines = [f'syntax = "{proto.syntax}";']
    if proto.package:
        lines.append(f"package {proto.package};")
    if proto.imports:
        lines.append("")
        lines.extend(f'import "{name}";' for name in proto.imports)
    for message in proto.messages:
        lines.append("")
        lines.extend(_message_lines(message, ""))
    for enum in proto.enums:
        lines.append("")
        lines.extend(_enum_lines(enum, ""))
    return "\n".join(lines) + "\n"


def _message_lines(message: ProtoMessage, indent: str) -> list[str]:
    inner = indent + "  "
    lines = [f"{indent}message {message.name} {{"]
    oneofs: dict[str, list[ProtoField]] = {}
    for member in message.fields:
        if member.oneof is not None and member.label != "optional":
            if member.oneof not in oneofs:
                oneofs[member.oneof] = []
                lines.append(f"{inner}oneof {member.oneof} {{")
                lines.extend(_field_line(f, inner + "  ") for f in message.fields if f.oneof == member.oneof)
                lines.append(f"{inner}}}")
            continue
        lines.append(_field_line(member, inner))
    for nested in message.messages:
        lines.extend(_message_lines(nested, inner))
    for enum in message.enums:
        lines.extend(_enum_lines(enum, inner))
    lines.append(f"{indent}}}")
    return lines


def _field_line(member: ProtoField, indent: str) -> str:
    kind = f"map<{member.key_type}, {member.type}>" if member.key_type else member.type
    label = f"{member.label} " if member.label and not member.key_type else ""
    line = f"{indent}{label}{kind} {member.name} = {member.number}"
    if member.params:
        entries = ",\n".join(f'{indent}    {{\n{indent}      key: "{key}",\n{indent}      value: "{value}"\n'
                             f'{indent}    }}' for key, value in member.params.items())
        line += f" [(confluent.field_meta) = {{\n{indent}  params: [\n{entries}\n{indent}  ]\n{indent}}}]"
    return line + ";"


def _enum_lines(enum: ProtoEnum, indent: str) -> list[str]:
    return [f"{indent}enum {enum.name} {{", *(f"{indent}  {name} = {number};" for name, number in enum.values),
            f"{indent}}}"]


# ---------------------------------------------------------------------- parsing

_TOKEN: Final = re.compile(r"""\s+|//[^\n]*|/\*.*?\*/|(?P<tok>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|"""
                           r"""[-+]?(?:0[xX][0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+)|"""
                           r"""\.?[A-Za-z_][\w.]*|[{}\[\]()<>=;,:.-])""", re.S)


def _tokens(text: str) -> list[str]:
    out, position = [], 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise DataError(f"Invalid Protobuf schema: unexpected {text[position:position + 20]!r}")
        if match.group("tok") is not None:
            out.append(match.group("tok"))
        position = match.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.at = 0

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def next(self) -> str:
        token = self.peek()
        if token is None:
            raise DataError("Invalid Protobuf schema: unexpected end")
        self.at += 1
        return token

    def expect(self, token: str) -> None:
        found = self.next()
        if found != token:
            raise DataError(f"Invalid Protobuf schema: expected {token!r}, found {found!r}")

    def file(self) -> ProtoFile:
        proto = ProtoFile(syntax="proto2")
        while self.peek() is not None:
            token = self.next()
            if token in ("syntax", "edition"):
                self.expect("=")
                proto.syntax = _unquote(self.next())
                self.expect(";")
            elif token == "package":
                proto.package = self.next()
                self.expect(";")
            elif token == "import":
                name = self.next()
                proto.imports.append(_unquote(self.next() if name in ("public", "weak") else name))
                self.expect(";")
            elif token == "message":
                proto.messages.append(self.message())
            elif token == "enum":
                proto.enums.append(self.enum())
            elif token != ";":
                self.skip_statement()
        return proto

    def skip_statement(self) -> None:
        """Skip to the end of a statement: a ``;`` at depth 0 or a closed ``{...}`` block."""
        depth = 0
        while True:
            token = self.next()
            if token == "{":
                depth += 1
            elif token == "}":
                depth -= 1
                if depth == 0:
                    return
            elif token == ";" and depth == 0:
                return

    def message(self) -> ProtoMessage:
        message = ProtoMessage(self.next())
        self.expect("{")
        self.body(message, None)
        return message

    def body(self, message: ProtoMessage, oneof: str | None) -> None:
        while (token := self.next()) != "}":
            if token == "message":
                message.messages.append(self.message())
            elif token == "enum":
                message.enums.append(self.enum())
            elif token == "oneof":
                name = self.next()
                self.expect("{")
                self.body(message, name)
            elif token in ("option", "reserved", "extensions", "extend"):
                self.skip_statement()
            elif token == "map":
                self.expect("<")
                key = self.next()
                self.expect(",")
                value = self.next()
                self.expect(">")
                message.fields.append(self.field(value, None, oneof, key))
            elif token in _LABELS:
                message.fields.append(self.field(self.next(), token, oneof))
            elif token != ";":
                message.fields.append(self.field(token, None, oneof))

    def field(self, kind: str, label: str | None, oneof: str | None, key: str | None = None) -> ProtoField:
        name = self.next()
        self.expect("=")
        member = ProtoField(name, int(self.next(), 0), kind, label, key, oneof=oneof)
        if self.peek() == "[":
            self.next()
            self.options(member)
        self.expect(";")
        return member

    def options(self, member: ProtoField) -> None:
        """``[name = value, ...]``: Confluent's field meta kept, anything else read and dropped."""
        while True:
            name = ""
            while (token := self.next()) != "=":
                name += token
            value = self.value()
            if name.lstrip(".").startswith(("(confluent.field_meta)", "(.confluent.field_meta)")):
                meta = value if name.endswith(")") else {name.rpartition(".")[2]: value}
                _take_meta(member, meta)
            if self.next() == "]":
                return

    def value(self) -> Any:
        """A constant, a ``[...]`` list or a ``{...}`` text-format message (as a dict of lists)."""
        token = self.next()
        if token == "[":
            items = []
            while self.peek() != "]":
                items.append(self.value())
                if self.peek() == ",":
                    self.next()
            self.next()
            return items
        if token != "{":
            return _unquote(token)
        out: dict[str, list[Any]] = {}
        while (key := self.next()) != "}":
            if key in (",", ";"):
                continue
            if self.peek() == ":":
                self.next()
            item = self.value()
            out.setdefault(key, []).extend(item if isinstance(item, list) else [item])
        return out

    def enum(self) -> ProtoEnum:
        enum = ProtoEnum(self.next())
        self.expect("{")
        while (token := self.next()) != "}":
            if token in ("option", "reserved"):
                self.skip_statement()
            elif token != ";":
                self.expect("=")
                enum.values.append((token, int(self.next(), 0)))
                if self.peek() == "[":
                    while self.next() != "]":
                        pass
                self.expect(";")
        return enum


def _take_meta(member: ProtoField, meta: Any) -> None:
    if not isinstance(meta, dict):
        return
    entries = meta.get("params", ())
    for entry in entries if isinstance(entries, list) else [entries]:
        if isinstance(entry, dict) and entry.get("key") and entry.get("value"):
            member.params[str(entry["key"][0])] = str(entry["value"][0])


def _unquote(token: str) -> str:
    """A string literal's text (C-style escapes, as protobuf's tokenizer reads them); other tokens as they are."""
    if len(token) >= 2 and token[0] == token[-1] and token[0] in "\"'":
        try:
            return str(ast.literal_eval(token))
        except (ValueError, SyntaxError):
            return token[1:-1]
    return token


def parse_proto(text: str) -> ProtoFile:
    """The model of a registered Protobuf schema: ``.proto`` source, or the base64 of a serialized
    ``FileDescriptorProto`` (what Confluent's Python serializer registers)."""
    stripped = text.strip()
    if stripped and " " not in stripped and "{" not in stripped:
        try:
            proto = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(stripped, validate=True))
        except (binascii.Error, ValueError, DecodeError):
            proto = None
        if proto is not None and (proto.message_type or proto.enum_type):
            return from_descriptor(proto)
    return _Parser(text).file()


def from_descriptor(proto: descriptor_pb2.FileDescriptorProto) -> ProtoFile:
    """The model of a ``FileDescriptorProto`` (field options are not kept)."""
    return ProtoFile(proto.package or None, proto.syntax or "proto2", list(proto.dependency),
                     [_message_from(m) for m in proto.message_type], [_enum_from(e) for e in proto.enum_type])


def _message_from(proto: descriptor_pb2.DescriptorProto) -> ProtoMessage:
    entries = {m.name: m for m in proto.nested_type if m.options.map_entry}
    message = ProtoMessage(proto.name, messages=[_message_from(m) for m in proto.nested_type
                                                 if not m.options.map_entry],
                           enums=[_enum_from(e) for e in proto.enum_type])
    for member in proto.field:
        kind = _SCALAR_NAMES.get(member.type) or member.type_name
        label = {3: "repeated", 2: "required"}.get(member.label)
        oneof = proto.oneof_decl[member.oneof_index].name if member.HasField("oneof_index") else None
        if member.proto3_optional:
            label, oneof = "optional", None
        entry = entries.get(member.type_name.rpartition(".")[2]) if label == "repeated" else None
        if entry is not None:
            key, value = entry.field
            message.fields.append(ProtoField(member.name, member.number, _SCALAR_NAMES.get(value.type)
                                             or value.type_name, None, _SCALAR_NAMES[key.type]))
        else:
            message.fields.append(ProtoField(member.name, member.number, kind, label, oneof=oneof))
    return message


def _enum_from(proto: descriptor_pb2.EnumDescriptorProto) -> ProtoEnum:
    return ProtoEnum(proto.name, [(v.name, v.number) for v in proto.value])
