"""DropHeaders: remove headers by name.

Follows Kafka's ``org.apache.kafka.connect.transforms.DropHeaders``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final, TypeVar

from kopycat.api.config import ConfigDef, ConfigType, Importance
from kopycat.api.records import ConnectRecord, Headers
from kopycat.api.transforms import Transformation
from kopycat.transforms._util import DeclaredConfig, NonEmptyList

__all__ = ["DropHeaders"]

R = TypeVar("R", bound=ConnectRecord)

HEADERS_FIELD: Final = "headers"


class DropHeaders(DeclaredConfig, Transformation[R]):
    """Remove every header whose key is one of ``headers``; the others keep their order."""

    OVERVIEW_DOC: ClassVar[str] = "Removes one or more headers from each record."
    CONFIG_DEF: ClassVar[ConfigDef] = ConfigDef().define(
        HEADERS_FIELD, ConfigType.LIST, validator=NonEmptyList(), importance=Importance.HIGH,
        doc="The name of the headers to be removed.")

    def __init__(self) -> None:
        self.headers: frozenset[str] = frozenset()

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.headers = frozenset(self.CONFIG_DEF.parse(configs)[HEADERS_FIELD])

    def apply(self, record: R) -> R:
        dropped = self.headers
        kept = Headers([header for header in record.headers if header.key not in dropped])
        updated: R = record.new_record(headers=kept)
        return updated

    def apply_batch(self, records: Sequence[R]) -> list[R]:
        apply = self.apply
        return [apply(record) for record in records]
