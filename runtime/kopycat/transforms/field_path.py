"""Field paths into structs and maps, versioned as Kafka's KIP-821.

``field.syntax.version=V1`` (the default) reads a path as one top-level field name;
``V2`` reads ``a.b.c`` as nested fields, with backticks around names that contain dots:
`` `foo.bar`.baz `` is field ``baz`` of field ``foo.bar``. Follows Kafka's
``transforms.field.FieldSyntaxVersion`` and ``SingleFieldPath``.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any, Final

from kopycat.api.config import CaseInsensitiveValidString, ConfigDef, ConfigType, Importance
from kopycat.api.data import Field, Schema, Struct
from kopycat.api.errors import ConfigError
from kopycat.transforms._util import require_map_or_null, require_struct_or_null

__all__ = ["FIELD_SYNTAX_VERSION_CONFIG", "FieldSyntaxVersion", "SingleFieldPath"]

FIELD_SYNTAX_VERSION_CONFIG: Final = "field.syntax.version"
FIELD_SYNTAX_VERSION_DOC: Final = (
    "Defines the version of the syntax to access fields. If set to `V1`, then the field paths are "
    "limited to access the elements at the root level of the struct or map. If set to `V2`, the "
    "syntax will support accessing nested elements. To access nested elements, dotted notation is "
    "used. If dots are already included in the field name, then backtick pairs can be used to wrap "
    "field names containing dots. E.g. to access the subfield `baz` from a field named \"foo.bar\" "
    "in a struct/map the following format can be used to access its elements: \"`foo.bar`.baz\".")


class FieldSyntaxVersion(Enum):
    """How a field path is read (Kafka's ``FieldSyntaxVersion``)."""

    V1 = "V1"
    V2 = "V2"

    @staticmethod
    def append_config_to(config_def: ConfigDef) -> ConfigDef:
        """Add ``field.syntax.version`` to a transform's keys (``appendConfigTo``)."""
        return config_def.define(
            FIELD_SYNTAX_VERSION_CONFIG, ConfigType.STRING, FieldSyntaxVersion.V1.value,
            CaseInsensitiveValidString.in_(*(v.value for v in FieldSyntaxVersion)),
            Importance.HIGH, FIELD_SYNTAX_VERSION_DOC)

    @staticmethod
    def from_config(parsed: Mapping[str, Any]) -> FieldSyntaxVersion:
        """The version a parsed config asks for (``fromConfig``)."""
        text = parsed[FIELD_SYNTAX_VERSION_CONFIG]
        try:
            return FieldSyntaxVersion(text.upper())
        except ValueError:
            raise ConfigError.for_key(FIELD_SYNTAX_VERSION_CONFIG, text,
                                      "Unrecognized field syntax version") from None


class SingleFieldPath:
    """One or more field names leading to a value in a Struct or a dict (Kafka's ``SingleFieldPath``).

    Missing fields along the path give None, as in Kafka; a step through a value that is
    neither a Struct/dict nor None raises DataError.
    """

    __slots__ = ("_last", "_parents", "steps", "version")

    def __init__(self, path: str, version: FieldSyntaxVersion) -> None:
        self.version = version
        self.steps: tuple[str, ...] = (path,) if version is FieldSyntaxVersion.V1 else _parse_v2(path)
        self._parents = self.steps[:-1]
        self._last = self.steps[-1]

    def field_from(self, schema: Schema | None) -> Field | None:
        """The field at this path in a STRUCT schema, or None if a step is missing."""
        if schema is None:
            return None
        current = schema
        for step in self._parents:
            found = current.field(step)
            if found is None:
                return None
            current = found.schema
        return current.field(self._last)

    def value_from_struct(self, struct: Struct | None, with_default: bool = True) -> Any:
        """The value at this path; ``with_default=False`` keeps a null that has a default."""
        current = struct
        if current is None:
            return None
        for step in self._parents:
            if current.schema.field(step) is None:
                return None
            current = require_struct_or_null(current.get(step), "nested field access")
            if current is None:
                return None
        if current.schema.field(self._last) is None:
            return None
        return current.get(self._last) if with_default else current.get_without_default(self._last)

    def value_from_map(self, value: Mapping[str, Any] | None) -> Any:
        """The value at this path in nested dicts, None where a step is missing."""
        current = value
        if current is None:
            return None
        for step in self._parents:
            current = require_map_or_null(current.get(step), "nested field access")
            if current is None:
                return None
        return current.get(self._last)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SingleFieldPath) and self.steps == other.steps

    def __hash__(self) -> int:
        return hash(self.steps)

    def __repr__(self) -> str:
        return f"SingleFieldPath{{version={self.version.value}, path={'.'.join(self.steps)}}}"


def _incomplete(path: str, at: int) -> ConfigError:
    return ConfigError(f"Incomplete backtick pair in path: [{path}], consider adding a backslash "
                       f"before backtick at position {at} to escape it")


def _parse_v2(path: str) -> tuple[str, ...]:
    """Split a V2 path into steps exactly as Kafka's ``buildFieldPathV2``."""
    steps: list[str] = []
    idx, n = 0, len(path)
    while 0 <= idx < n:
        if path[idx] != "`":
            start = idx
            idx = path.find(".", idx)
            if idx >= 0:
                steps.append(path[start:idx])
                idx += 1
            else:
                steps.append(path[start:])
        else:
            backtick_at = idx
            idx += 1
            field: list[str] = []
            start = idx
            while True:
                idx = path.find("`", idx)
                if idx == -1:
                    raise _incomplete(path, backtick_at)
                escaped = path[idx - 1] == "\\"
                if idx >= n - 1:
                    if escaped:
                        raise _incomplete(path, backtick_at)
                    field.append(path[start:idx])
                    steps.append("".join(field))
                    idx += 1
                    break
                if path[idx + 1] != ".":
                    idx += 1
                    continue
                if escaped:
                    field.append(path[start:idx - 1] + "`")
                    idx += 1
                    start = idx
                    continue
                field.append(path[start:idx])
                steps.append("".join(field))
                idx += 2
                break
    if path.endswith("."):
        steps.append("")
    if not steps:
        steps.append(path)
    return tuple(steps)
