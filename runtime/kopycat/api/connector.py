"""Connectors: split a copy job into task configs (Kafka Connect's connect/api connector).

A connector does not copy data itself. The engine starts it with the user's configuration, asks
``task_configs(max_tasks)`` how to split the job, and runs one task per config: a mapped task
instance under Airflow, a thread in the standalone worker. It may watch the outside system
(new tables, new topics) and ask for a new split with
``context.request_task_reconfiguration()``.

Lifecycle: ``initialize(context)`` -> ``start(props)`` -> ``task_configs(n)`` (any number of
times) -> ``stop()``. All calls come from one engine thread, except that ``stop`` may come from
another while the connector's own monitoring threads run.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any

from kopycat import __version__
from kopycat.api.config import ConfigDef, ConfigValue

if TYPE_CHECKING:
    from kopycat.api.task import OffsetStorageReader, SinkTask, SourceTask, Task

__all__ = [
    "Connector", "ConnectorContext", "ConnectorTransactionBoundaries", "ExactlyOnceSupport",
    "SinkConnector", "SinkConnectorContext", "SourceConnector", "SourceConnectorContext",
]


class ConnectorContext(ABC):
    """What the engine offers a running connector (Kafka Connect's ConnectorContext)."""

    @abstractmethod
    def request_task_reconfiguration(self) -> None:
        """Ask the engine to call task_configs() again and restart the tasks with the result.

        Call it when the outside system changed shape (a new table, new topic-partitions).
        Under Airflow the next plan picks the change up; the standalone worker restarts tasks.
        """

    @abstractmethod
    def raise_error(self, error: Exception) -> None:
        """Fail the connector from one of its own background threads (Kafka's raiseError)."""


class SourceConnectorContext(ConnectorContext):
    """A source connector's context: it can read the offsets its tasks committed."""

    @property
    @abstractmethod
    def offset_storage_reader(self) -> OffsetStorageReader:
        """The committed source offsets of this connector (e.g. to plan windows or splits)."""


class SinkConnectorContext(ConnectorContext):
    """A sink connector's context (Kafka Connect's SinkConnectorContext)."""


class Connector(ABC):
    """The base of every connector (Kafka Connect's Connector).

    Subclass :class:`SourceConnector` or :class:`SinkConnector`, declare the configuration
    once in ``config()`` (the same ConfigDef serves validation, the REST API, the Airflow
    operators and the docs), and split the job in ``task_configs``.
    """

    _context: ConnectorContext | None = None

    def initialize(self, context: ConnectorContext) -> None:
        """Called by the engine once, before start()."""
        self._context = context

    @property
    def context(self) -> ConnectorContext:
        if self._context is None:
            raise RuntimeError(f"{type(self).__name__} used before initialize(context)")
        return self._context

    def version(self) -> str:
        """The connector's version, shown by the REST API and `kopycat plugins`."""
        return __version__

    @abstractmethod
    def start(self, props: Mapping[str, str]) -> None:
        """Start with the user's configuration; parse it with config() and keep what is needed.

        Raise ConfigError for a bad value (the message names the key, the value and the fix).
        """

    def reconfigure(self, props: Mapping[str, str]) -> None:
        """Apply a new configuration; by default stop() then start(props), as Kafka does."""
        self.stop()
        self.start(props)

    @abstractmethod
    def task_class(self) -> type[Task]:
        """The Task class that runs this connector's task configs."""

    @abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """Split the job into at most max_tasks task configurations.

        Each config must let one task run without talking to the others; give each source
        partition (table, file, topic-partition) to exactly one task so its offset has one writer.
        """

    @abstractmethod
    def stop(self) -> None:
        """Stop; release what start() acquired. May be called from another thread."""

    @abstractmethod
    def config(self) -> ConfigDef:
        """The connector's configuration definition (keys, types, defaults, validators, docs)."""

    def validate(self, props: Mapping[str, str]) -> list[ConfigValue]:
        """Check a configuration without starting; one ConfigValue per key, errors collected.

        Override to add checks across keys (call super() first), as Kafka's Connector.validate.
        """
        return self.config().validate(props)


class ExactlyOnceSupport(Enum):
    """Whether a source connector can run with exactly.once.support=required (KIP-618)."""

    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class ConnectorTransactionBoundaries(Enum):
    """Whether a source connector can define its own transaction boundaries (KIP-618)."""

    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class SourceConnector(Connector):
    """A connector whose tasks read an outside system and write Kafka (Kafka's SourceConnector)."""

    @abstractmethod
    def task_class(self) -> type[SourceTask]: ...

    def exactly_once_support(self, props: Mapping[str, str]) -> ExactlyOnceSupport | None:
        """Whether this configuration can be copied exactly once; None means unknown."""
        return None

    def can_define_transaction_boundaries(
            self, props: Mapping[str, str]) -> ConnectorTransactionBoundaries:
        """Whether tasks may commit or abort transactions through their TransactionContext."""
        return ConnectorTransactionBoundaries.UNSUPPORTED

    def alter_offsets(self, props: Mapping[str, str],
                      offsets: Mapping[Any, Mapping[str, Any] | None]) -> bool:
        """Accept or refuse offsets set through the REST API (KIP-875).

        ``offsets`` maps a source partition (as a frozen JSON string or dict) to the new offset,
        None to reset. Return True when the connector checked them, False to accept them unseen
        (the default, as Kafka); raise ConfigError to refuse them with a reason.
        """
        return False


class SinkConnector(Connector):
    """A connector whose tasks read Kafka and write an outside system (Kafka's SinkConnector)."""

    TOPICS_CONFIG = "topics"
    TOPICS_REGEX_CONFIG = "topics.regex"

    @abstractmethod
    def task_class(self) -> type[SinkTask]: ...

    def alter_offsets(self, props: Mapping[str, str], offsets: Mapping[Any, int | None]) -> bool:
        """Accept or refuse consumer offsets set through the REST API (KIP-875).

        ``offsets`` maps a TopicPartition to the next offset to consume, None to reset. A sink
        that keeps offsets in its destination (exactly-once) must apply them there and return True.
        """
        return False
