"""The connector SPI: what a connector author writes against (like Kafka's connect/api).

Small and stable on purpose. The engine (kopycat.runtime) imports this package; this package
never imports the engine.
"""

from __future__ import annotations

from kopycat.api.errors import (
    AlreadyExistsError,
    ConfigError,
    ConnectError,
    DataError,
    NotFoundError,
    RetriableError,
    SchemaBuilderError,
)

__all__ = [
    "AlreadyExistsError",
    "ConfigError",
    "ConnectError",
    "DataError",
    "NotFoundError",
    "RetriableError",
    "SchemaBuilderError",
]
