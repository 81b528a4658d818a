"""The errors a connector raises and the engine reports, after Kafka Connect's connect/api.

    Exception
     └── ConnectError              any failure in a connector, task, converter or transform
          ├── RetriableError       transient: the engine backs off and retries the call
          ├── DataError            a value does not fit its schema, or bytes do not decode
          │    └── SchemaBuilderError   an impossible schema was asked for
          ├── ConfigError          a configuration key has a bad or missing value
          ├── NotFoundError        a connector, task or plugin that is not there
          └── AlreadyExistsError   a connector that is there already

Kafka Connect names: ConnectException, RetriableException, DataException,
SchemaBuilderException, ConfigException (from clients' common.config), NotFoundException,
AlreadyExistsException. Messages say what was wrong (key, value, field path, topic/partition/
offset) and what to do about it.
"""

from __future__ import annotations


class ConnectError(Exception):
    """A failure in a connector, task, converter or transform (Kafka's ConnectException)."""


class RetriableError(ConnectError):
    """A transient failure: the engine backs off and calls again (RetriableException)."""


class DataError(ConnectError):
    """A value that does not match its schema, or bytes that cannot be decoded (DataException)."""


class SchemaBuilderError(DataError):
    """A schema that cannot be built, such as a default that does not fit (SchemaBuilderException)."""


class ConfigError(ConnectError):
    """A configuration key with a missing or invalid value (Kafka's ConfigException).

    Build it with :meth:`for_key` so every message names the key, the value and the fix.
    """

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key

    @classmethod
    def for_key(cls, key: str, value: object, problem: str) -> ConfigError:
        """An error for one key: ``Invalid value 'x' for configuration k: <problem>``."""
        return cls(f"Invalid value {value!r} for configuration {key}: {problem}", key=key)


class NotFoundError(ConnectError):
    """A connector, task or plugin that does not exist (NotFoundException)."""


class AlreadyExistsError(ConnectError):
    """A connector that exists already (AlreadyExistsException)."""
