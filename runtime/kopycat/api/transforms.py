"""Single message transforms and predicates: the SPI (Kafka Connect's Transformation, Predicate).

A transformation changes one record at a time (rename a field, route to another topic, drop a
record) between a task and Kafka: after poll() for sources, before put() for sinks. Users chain
them with ``transforms=a,b`` and ``transforms.a.type=...`` exactly as in Kafka Connect, and may
guard one with a predicate (``transforms.a.predicate=p``, ``transforms.a.negate=true``).

The engine calls :meth:`Transformation.apply_batch` on hot paths; its default loops over
``apply``, and a transform may override it when it can do a batch's work at once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

from kopycat.api.config import ConfigDef
from kopycat.api.records import ConnectRecord

__all__ = ["Predicate", "Transformation"]

R = TypeVar("R", bound=ConnectRecord)


class Transformation(ABC, Generic[R]):
    """Changes, reroutes or drops one record (Kafka Connect's Transformation).

    ``configure`` is called once with the transform's own keys (prefix stripped); ``apply``
    must not keep state that makes a retried record come out differently.
    """

    @abstractmethod
    def configure(self, configs: Mapping[str, Any]) -> None:
        """Parse the transform's keys with config(); raise ConfigError for bad values."""

    @abstractmethod
    def apply(self, record: R) -> R | None:
        """Return the transformed record (a new one: records are immutable), or None to drop it."""

    def apply_batch(self, records: Sequence[R]) -> list[R]:
        """Transform a batch; dropped records are left out. Override when a batch is cheaper."""
        out = []
        for record in records:
            result = self.apply(record)
            if result is not None:
                out.append(result)
        return out

    @abstractmethod
    def config(self) -> ConfigDef:
        """The transform's configuration definition."""

    def value_field_lineage(self, fields: Sequence[str]) -> dict[str, list[str]] | None:
        """Hook for lineage: given the record value's top-level field names before this transform, the
        names after it, each with the input fields it is made from (``{"customer": ["cust_id"]}``).

        Default None: the transform does not say, and lineage takes the fields as passing unchanged.
        Called once when a run's lineage is reported, never per record.
        """
        return None

    def close(self) -> None:
        """Release resources; called when the task stops."""


class Predicate(ABC, Generic[R]):
    """Decides whether a transformation applies to a record (Kafka Connect's Predicate, KIP-585)."""

    @abstractmethod
    def configure(self, configs: Mapping[str, Any]) -> None:
        """Parse the predicate's keys with config(); raise ConfigError for bad values."""

    @abstractmethod
    def test(self, record: R) -> bool:
        """True when the guarded transformation should apply to `record`."""

    @abstractmethod
    def config(self) -> ConfigDef:
        """The predicate's configuration definition."""

    def close(self) -> None:
        """Release resources; called when the task stops."""
