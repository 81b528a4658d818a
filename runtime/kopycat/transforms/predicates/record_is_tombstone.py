"""RecordIsTombstone: true for records with a null value.

Follows Kafka's ``org.apache.kafka.connect.transforms.predicates.RecordIsTombstone`` (KIP-585).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from kopycat.api.config import ConfigDef
from kopycat.api.records import ConnectRecord
from kopycat.api.transforms import Predicate
from kopycat.transforms._util import DeclaredConfig

__all__ = ["RecordIsTombstone"]

R = TypeVar("R", bound=ConnectRecord)


class RecordIsTombstone(DeclaredConfig, Predicate[R]):
    """True when the record's value is null (a delete marker on a compacted topic)."""

    OVERVIEW_DOC: ClassVar[str] = (
        "A predicate which is true for records which are tombstones (i.e. have null value).")
    CONFIG_DEF: ClassVar[ConfigDef] = ConfigDef()

    def configure(self, configs: Mapping[str, Any]) -> None:
        pass

    def test(self, record: R) -> bool:
        return record.value is None

    def __repr__(self) -> str:
        return "RecordIsTombstone{}"
