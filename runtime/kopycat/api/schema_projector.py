"""Project a value from one schema onto a compatible one (Kafka's ``org.apache.kafka.connect.data.SchemaProjector``).

A sink that keeps one schema per file (Confluent's storage sinks with ``schema.compatibility``
BACKWARD, FORWARD or FULL) writes a record of another schema version into the open file by
projecting its value onto the file's schema::

    SchemaProjector.project(v1_schema, v1_struct, v2_schema)  # a Struct of v2_schema

Kafka's rules, in order, at every level:

- the types must be equal, or numeric and promotable along INT8 -> INT16 -> INT32 -> INT64 ->
  FLOAT32 -> FLOAT64 (never back); names and parameters must be equal, so a logical type only
  projects onto the same logical type (Decimal onto Decimal of the same scale);
- an optional source onto a required target needs the target's default (it replaces null);
- struct fields match by name: a target field missing from the source takes its default, or
  null when it is optional, else the projection fails; source fields the target lacks are dropped;
- arrays and maps project element by element (keys too).

Failures raise :class:`~kopycat.api.errors.DataError` (Kafka's ``SchemaProjectorException`` is a
``DataException``) whose message names the field path, e.g. ``field order.lines[].price``.

Speed (beyond Kafka, which walks both schemas for every value): the walk is done once per pair
of schemas and kept as a function (a *projection*), so a sink projecting a stream of old-version
records pays only for the values. Nested projections are worked out at the first non-null value,
so a null nested value never fails, as in Kafka.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Final

from kopycat.api.data import Schema, Struct, Type
from kopycat.api.errors import DataError

__all__ = ["SchemaProjector"]

_NUMERIC: Final = (Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32, Type.FLOAT64)
_RANK: Final = {t: rank for rank, t in enumerate(_NUMERIC)}
_FLOATS: Final = (Type.FLOAT32, Type.FLOAT64)


class SchemaProjector:
    """Kafka's ``SchemaProjector``: stateless, one static entry point."""

    @staticmethod
    def project(source_schema: Schema, record: Any, target_schema: Schema) -> Any:
        """``record`` (a value of ``source_schema``) as a value of ``target_schema``.

        Returns the value itself where nothing changes (same primitive type, logical values,
        containers of such), new containers otherwise (a :class:`Struct` of ``target_schema``).
        Raises :class:`DataError` naming the field path when the schemas are not compatible.
        """
        return _projection(source_schema, target_schema, "")(record)


_Projection = Callable[[Any], Any]


def _same(value: Any) -> Any:
    return value


def _is_promotable(source: Type, target: Type) -> bool:
    """True when a ``source`` value may be widened to ``target`` (equal numeric types included)."""
    return source in _RANK and target in _RANK and _RANK[source] <= _RANK[target]


@functools.lru_cache(maxsize=1024)
def _projection(source: Schema, target: Schema, path: str) -> _Projection:
    """How values of ``source`` become values of ``target`` (Kafka's ``project``), worked out once per pair."""
    _check_maybe_compatible(source, target, path)
    inner = _required_projection(source, target, path)
    if source.optional and not target.optional:
        if target.default is None:
            raise DataError(f"Cannot project {_where(path)}: the source schema is optional but the target schema "
                            f"is required and has no default value to stand for null")
        default = target.default
        return lambda value: default if value is None else inner(value)
    if inner is _same:
        return _same
    return lambda value: None if value is None else inner(value)


def _check_maybe_compatible(source: Schema, target: Schema, path: str) -> None:
    if source.type is not target.type and not _is_promotable(source.type, target.type):
        raise DataError(f"Cannot project {_where(path)}: schema type mismatch, source type {source.type.name} and "
                        f"target type {target.type.name}")
    if source.name != target.name:
        raise DataError(f"Cannot project {_where(path)}: schema name mismatch, source name {source.name} and "
                        f"target name {target.name}")
    if source.parameters != target.parameters:
        raise DataError(f"Cannot project {_where(path)}: schema parameters not equal, source parameters "
                        f"{_params(source)} and target parameters {_params(target)}")


def _required_projection(source: Schema, target: Schema, path: str) -> _Projection:
    """The projection of non-null values (Kafka's ``projectRequiredSchema``)."""
    if target.type is Type.STRUCT:
        return _struct_projection(source, target, path)
    if target.type is Type.ARRAY:
        return _array_projection(source, target, path)
    if target.type is Type.MAP:
        return _map_projection(source, target, path)
    if source.type is target.type:
        return _same
    to_float = target.type in _FLOATS

    def promote(value: Any) -> Any:
        """Widen a number as Java's ``Number.xxxValue()`` does; ints stay ints, floats become floats."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise DataError(f"Cannot project {_where(path)}: expected a number to promote to {target.type.name}, "
                            f"got {type(value).__name__}")
        return float(value) if to_float else value
    return promote


def _lazy(build: Callable[[], _Projection]) -> _Projection:
    """A projection worked out at its first value: a null nested value must not fail (Kafka's order)."""
    built: _Projection | None = None

    def project(value: Any) -> Any:
        nonlocal built
        if built is None:
            built = build()
        return built(value)
    return project


def _struct_projection(source: Schema, target: Schema, path: str) -> _Projection:
    """Field by field by name; built with :meth:`Struct.of_values`, as every value was projected to fit."""
    def fields() -> list[tuple[int | None, Any, _Projection]]:
        """(source index or None, the source field's default, projection) per target field."""
        plan: list[tuple[int | None, Any, _Projection]] = []
        for field in target.fields:
            field_path = _join(path, field.name)
            source_field = source.field(field.name)
            if source_field is not None:
                plan.append((source_field.index, source_field.schema.default,
                             _projection(source_field.schema, field.schema, field_path)))
            elif field.schema.default is not None or field.schema.optional:
                plan.append((None, None, _constant(field.schema.default)))
            else:
                raise DataError(f"Cannot project {_where(field_path)}: the field is required, has no default "
                                f"value and is missing from the source schema {_describe(source)}")
        return plan

    def build() -> _Projection:
        plan = fields()

        def project(struct: Any) -> Struct:
            if not isinstance(struct, Struct) or (struct.schema is not source and struct.schema != source):
                raise DataError(f"Cannot project {_where(path)}: expected a Struct of the source schema "
                                f"{_describe(source)}, got {type(struct).__name__}")
            values = struct.values()
            return Struct.of_values(target, [
                project_field(None if index is None else _or_default(values[index], default))
                for index, default, project_field in plan])
        return project
    return _lazy(build)


def _constant(value: Any) -> _Projection:
    """The projection of a field the source lacks: always its default (or null)."""
    return lambda _: value


def _or_default(value: Any, default: Any) -> Any:
    """What ``Struct.get`` answers: the value, or its schema's default when unset."""
    return default if value is None else value


def _array_projection(source: Schema, target: Schema, path: str) -> _Projection:
    def build() -> _Projection:
        element = _projection(source.value_schema, target.value_schema, f"{path or 'value'}[]")
        return _same if element is _same else lambda values: [element(v) for v in values]
    return _lazy(build)


def _map_projection(source: Schema, target: Schema, path: str) -> _Projection:
    def build() -> _Projection:
        key = _projection(source.key_schema, target.key_schema, f"{path or 'value'}.<key>")
        value = _projection(source.value_schema, target.value_schema, f"{path or 'value'}[]")
        if key is _same and value is _same:
            return _same
        return lambda mapping: {key(k): value(v) for k, v in mapping.items()}
    return _lazy(build)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _where(path: str) -> str:
    return f"field {path}" if path else "the value"


def _params(schema: Schema) -> str:
    return "none" if schema.parameters is None else str(dict(schema.parameters))


def _describe(schema: Schema) -> str:
    return f"{schema.name or 'struct'}" + ("" if schema.version is None else f" version {schema.version}")
