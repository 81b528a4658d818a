"""ReplaceField: keep, drop and rename top-level fields.

Follows Kafka's ``org.apache.kafka.connect.transforms.ReplaceField`` (``$Key`` / ``$Value``).
The names Kafka used before 4.0, ``whitelist`` and ``blacklist``, are still read as
``include`` and ``exclude`` (with a warning), so older connector configs keep working.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final, TypeVar

from kopycat.api.config import ConfigDef, ConfigType, Importance, LambdaValidator
from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.errors import ConfigError
from kopycat.api.records import ConnectRecord
from kopycat.api.transforms import Transformation
from kopycat.transforms._util import (
    REPLACE_NULL_WITH_DEFAULT,
    REPLACE_NULL_WITH_DEFAULT_DOC,
    DeclaredConfig,
    SchemaCache,
    Side,
    copy_schema_basics,
    java_split,
    key_value_variants,
    require_map,
    require_struct,
)

__all__ = ["ReplaceField", "parse_rename_mappings"]

logger = logging.getLogger(__name__)
R = TypeVar("R", bound=ConnectRecord)

EXCLUDE: Final = "exclude"
INCLUDE: Final = "include"
RENAMES: Final = "renames"
BLACKLIST: Final = "blacklist"
WHITELIST: Final = "whitelist"
_DEPRECATED: Final = ((INCLUDE, WHITELIST), (EXCLUDE, BLACKLIST))
_PURPOSE: Final = "field replacement"


def parse_rename_mappings(mappings: list[str], key: str = RENAMES) -> dict[str, str]:
    """``old:new`` pairs as a dict; a pair without exactly one colon is a ConfigError."""
    renames: dict[str, str] = {}
    for mapping in mappings:
        parts = java_split(mapping, ":")
        if len(parts) != 2:
            raise ConfigError.for_key(key, mappings, f"Invalid rename mapping: {mapping}")
        renames[parts[0]] = parts[1]
    return renames


def _check_renames(name: str, value: Any) -> None:
    parse_rename_mappings(value or [], name)


class ReplaceField(Side, DeclaredConfig, Transformation[R]):
    """Filter or rename fields.

    A field is kept if it is not in ``exclude`` and ``include`` is empty or names it; kept
    fields are renamed by ``renames``. Struct values get a new schema (cached per input schema)
    with the kept fields in their original order. A null key/value passes through unchanged.
    """

    Key: ClassVar[type[ReplaceField[Any]]]
    Value: ClassVar[type[ReplaceField[Any]]]

    OVERVIEW_DOC: ClassVar[str] = "Filter or rename fields."
    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(EXCLUDE, ConfigType.LIST, [], None, Importance.MEDIUM,
                "Fields to exclude. This takes precedence over the fields to include.")
        .define(INCLUDE, ConfigType.LIST, [], None, Importance.MEDIUM,
                "Fields to include. If specified, only these fields will be used.")
        .define(RENAMES, ConfigType.LIST, [],
                LambdaValidator(_check_renames, "list of colon-delimited pairs, e.g. <code>foo:bar,abc:xyz</code>"),
                Importance.MEDIUM, "Field rename mappings.")
        .define(REPLACE_NULL_WITH_DEFAULT, ConfigType.BOOLEAN, True, None, Importance.MEDIUM,
                REPLACE_NULL_WITH_DEFAULT_DOC)
        .define(BLACKLIST, ConfigType.LIST, None, None, Importance.LOW,
                "Deprecated (removed in Kafka 4.0). Use exclude instead.")
        .define(WHITELIST, ConfigType.LIST, None, None, Importance.LOW,
                "Deprecated (removed in Kafka 4.0). Use include instead."))

    def __init__(self) -> None:
        self.exclude: frozenset[str] = frozenset()
        self.include: frozenset[str] = frozenset()
        self.renames: dict[str, str] = {}
        self.reverse_renames: dict[str, str] = {}
        self.replace_null_with_default = True
        self._schemas = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        for new, old in _DEPRECATED:
            if parsed[old] is None:
                continue
            if new in configs:
                logger.warning("%s is deprecated and ignored because %s is set", old, new)
            else:
                logger.warning("%s is deprecated; use %s instead", old, new)
                parsed[new] = parsed[old]
        self.exclude = frozenset(parsed[EXCLUDE])
        self.include = frozenset(parsed[INCLUDE])
        self.renames = parse_rename_mappings(parsed[RENAMES])
        self.reverse_renames = {new: old for old, new in self.renames.items()}
        self.replace_null_with_default = parsed[REPLACE_NULL_WITH_DEFAULT]
        self._schemas = SchemaCache()

    def filter(self, field_name: str) -> bool:
        """True when the field is kept."""
        return field_name not in self.exclude and (not self.include or field_name in self.include)

    def renamed(self, field_name: str) -> str:
        return self.renames.get(field_name, field_name)

    def value_field_lineage(self, fields: Sequence[str]) -> dict[str, list[str]] | None:
        """The kept value fields under their new names; a key-side ReplaceField leaves the value alone."""
        if self.SIDE != "Value":
            return None
        return {self.renamed(name): [name] for name in fields if self.filter(name)}

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        if value is None:
            return record
        if self.operating_schema(record) is None:
            mapping = require_map(value, _PURPOSE)
            updated = {self.renamed(name): v for name, v in mapping.items() if self.filter(name)}
            return self.updated(record, None, updated)
        struct = require_struct(value, _PURPOSE)
        plan = self._schemas.get(struct.schema)
        if plan is None:
            plan = self._plan(struct.schema)
            self._schemas.put(struct.schema, plan)
        schema, sources = plan
        read = struct.get if self.replace_null_with_default else struct.get_without_default
        return self.updated(record, schema, Struct.of_values(schema, [read(f) for f in sources]))

    def _plan(self, schema: Schema) -> tuple[Schema, tuple[Any, ...]]:
        """The updated schema and, for each of its fields, the input field it is read from."""
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        sources = []
        for field in schema.fields:
            if self.filter(field.name):
                builder.field(self.renamed(field.name), field.schema)
                sources.append(field)
        return builder.build(), tuple(sources)

    def close(self) -> None:
        self._schemas = SchemaCache()


ReplaceField.Key, ReplaceField.Value = key_value_variants(ReplaceField)
