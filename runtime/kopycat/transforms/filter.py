"""Filter: drop every record; guard it with a predicate to drop some.

Follows Kafka's ``org.apache.kafka.connect.transforms.Filter`` (KIP-585).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from kopycat.api.config import ConfigDef
from kopycat.api.records import ConnectRecord
from kopycat.api.transforms import Transformation
from kopycat.transforms._util import DeclaredConfig

__all__ = ["Filter"]

R = TypeVar("R", bound=ConnectRecord)


class Filter(DeclaredConfig, Transformation[R]):
    """Drops all records, filtering them from subsequent transformations in the chain.

    Meant for use with a predicate: ``transforms.drop.predicate=isTombstone`` drops
    tombstones, adding ``transforms.drop.negate=true`` keeps only them.
    """

    OVERVIEW_DOC: ClassVar[str] = (
        "Drops all records, filtering them from subsequent transformations in the chain. This is "
        "intended to be used conditionally to filter out records matching (or not matching) a "
        "particular Predicate.")
    CONFIG_DEF: ClassVar[ConfigDef] = ConfigDef()

    def configure(self, configs: Mapping[str, Any]) -> None:
        pass

    def apply(self, record: R) -> R | None:
        return None

    def apply_batch(self, records: Sequence[R]) -> list[R]:
        return []
