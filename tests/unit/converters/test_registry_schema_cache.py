"""``schemas.cache.config``: how many converted schemas a registry converter keeps, least recently used first out.

A stub registry client answers every id with an Avro ``"string"`` schema and registers any schema;
counting converters record each schema they convert (a writer per Connect schema, a reader per id).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from kopycat.api.data import Schema, SchemaBuilder
from kopycat.converters.avro import AvroConverter
from kopycat.converters.registry_converter import SchemaReader, SchemaWriter


class _StubRegistry:
    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def schema_by_id(self, schema_id: int) -> str:
        return '"string"'

    def register(self, subject: str, schema: str, **_: Any) -> int:
        return self.ids.setdefault(schema, len(self.ids) + 1)

    def version_of(self, subject: str, schema: str, **_: Any) -> Any:
        from kopycat.converters.schema_registry import SchemaRegistryError

        raise SchemaRegistryError("not registered here", 404, 40403)


class _Counting(AvroConverter):
    def __init__(self) -> None:
        super().__init__(client=_StubRegistry())  # type: ignore[arg-type]
        self.built: list[Any] = []

    def new_writer(self, schema: Schema) -> SchemaWriter:
        self.built.append(schema.name)
        return super().new_writer(schema)

    def new_reader(self, text: str, version: Callable[[str], int | None],
                   references: Callable[[], Mapping[str, str]]) -> SchemaReader:
        self.built.append(text)
        return super().new_reader(text, version, references)


def _configured(**extra: str) -> _Counting:
    converter = _Counting()
    converter.configure({"schema.registry.url": "http://127.0.0.1:1", **extra})
    return converter


NAMED = [SchemaBuilder.string().name(f"code.v{i}").build() for i in range(3)]


@pytest.mark.parametrize(("size", "conversions"), [("1000", 3), ("2", 4), ("1", 5), ("0", 5)])
def test_writers_beyond_the_cache_size_are_converted_again(size: str, conversions: int) -> None:
    converter = _configured(**{"schemas.cache.config": size})  # 0 is taken as 1, as Confluent's
    written = [converter.from_connect_data("t", schema, "x") for schema in [*NAMED, NAMED[1], NAMED[0]]]
    assert len(converter.built) == conversions  # with 2: v1 used again before v0, so only v0 is dropped
    assert [int.from_bytes(data[1:5]) for data in written] == [1, 2, 3, 2, 1]  # type: ignore[index]


def test_readers_are_kept_per_id_up_to_the_cache_size_and_the_recently_used_stays() -> None:
    converter = _configured(**{"schemas.cache.config": "2"})
    for schema_id in (1, 2, 1, 3, 1, 2):  # 1 is used again before 3 comes, so 2 is dropped, then 3 for 2
        assert converter.to_connect_data("t", b"\x00\x00\x00\x00" + bytes([schema_id]) + b"\x02a").value == "a"
    assert len(converter.built) == 4
    assert _configured().to_connect_data("t", b"\x00\x00\x00\x00\x01\x02a").value == "a"
