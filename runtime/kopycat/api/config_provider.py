"""The config provider SPI (KIP-297): where ``${provider:[path:]key}`` placeholders get their values.

Kafka keeps ``ConfigProvider`` and ``ConfigData`` in clients (``org.apache.kafka.common.config``),
a public API that plug-in authors write against, apart from the runtime. Kopycat keeps them in
its public SPI package for the same reason: a provider for a secrets manager (Vault, AWS Secrets
Manager, Airflow's connections: :mod:`kopycat_airflow.config_provider`) is written by people who
do not touch the engine. It is not re-exported from :mod:`kopycat.api`, because connectors never
use it: the worker resolves placeholders before a connector or task sees its config.

A worker declares providers in its properties, as Kafka's ``WorkerConfig`` does::

    config.providers=file,env
    config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider
    config.providers.file.param.allowed.paths=/etc/kopycat/secrets
    config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider

and any worker or connector value may then hold ``${file:/etc/kopycat/secrets/db.properties:password}``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Set
from dataclasses import dataclass, field

__all__ = ["ConfigData", "ConfigProvider"]


@dataclass(frozen=True)
class ConfigData:
    """What a provider found at one path: key -> value, and how long the values stay valid.

    ``ttl_ms`` (Kafka's ``ConfigData.ttl``) is None when the values do not expire. Keys that
    were asked for but are absent are simply missing from ``data``: the placeholder then stays.
    """

    data: Mapping[str, str] = field(default_factory=dict)
    ttl_ms: int | None = None


class ConfigProvider(ABC):
    """Looks values up for ``${name:[path:]key}`` placeholders (Kafka's ``ConfigProvider``).

    The worker makes one instance per ``config.providers`` name, calls :meth:`configure` with its
    ``config.providers.<name>.param.*`` keys (prefix removed), then :meth:`get` for each path with
    every key asked for there, and :meth:`close` when done. Calls come from one thread at a time.
    """

    def configure(self, params: Mapping[str, str]) -> None:  # noqa: B027 - an optional hook with a default body
        """Take the provider's parameters; raise ConfigError naming the parameter if one is wrong.

        Besides the user's parameters the worker passes ``provider.name``, the provider's name in
        ``config.providers``, so messages can name the keys to change.
        """

    @abstractmethod
    def get(self, path: str, keys: Set[str]) -> ConfigData:
        """The values of ``keys`` at ``path`` (``""`` when the placeholder names no path).

        Leave unknown keys out of the result (the placeholder is then kept, as in Kafka). Raise
        ConfigError when the path cannot be read or is refused, with the message saying the fix;
        never put a value in an error message or a log line.
        """

    def close(self) -> None:  # noqa: B027 - an optional hook with a default body
        """Release what :meth:`configure` opened. Default: nothing."""
