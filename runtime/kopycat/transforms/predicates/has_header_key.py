"""HasHeaderKey: true for records with at least one header of a given name.

Follows Kafka's ``org.apache.kafka.connect.transforms.predicates.HasHeaderKey`` (KIP-585).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final, TypeVar

from kopycat.api.config import ConfigDef, ConfigType, Importance, NonEmptyString
from kopycat.api.records import ConnectRecord
from kopycat.api.transforms import Predicate
from kopycat.transforms._util import DeclaredConfig

__all__ = ["HasHeaderKey"]

R = TypeVar("R", bound=ConnectRecord)

NAME: Final = "name"


class HasHeaderKey(DeclaredConfig, Predicate[R]):
    """True when the record has a header called ``name`` (any value, even null)."""

    OVERVIEW_DOC: ClassVar[str] = (
        "A predicate which is true for records with at least one header with the configured name.")
    CONFIG_DEF: ClassVar[ConfigDef] = ConfigDef().define(
        NAME, ConfigType.STRING, validator=NonEmptyString(), importance=Importance.MEDIUM,
        doc="The header name.")

    def __init__(self) -> None:
        self.name: str | None = None

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.name = self.CONFIG_DEF.parse(configs)[NAME]

    def test(self, record: R) -> bool:
        name = self.name
        return any(header.key == name for header in record.headers)

    def __repr__(self) -> str:
        return f"HasHeaderKey{{name='{self.name}'}}"
