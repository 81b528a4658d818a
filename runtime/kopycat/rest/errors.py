"""REST errors in Kafka Connect's shape: ``{"error_code": <http status>, "message": "..."}``.

Follows Kafka's ``ConnectRestException``, ``BadRequestException`` and ``ConnectExceptionMapper``:
the herder raises :class:`ConnectRestError` with the status it means, and the engine's own
errors map as Kafka maps its exceptions (``NotFoundException`` -> 404, ``AlreadyExistsException``
-> 409). Kopycat answers 400 for a ``ConfigError`` or ``DataError`` (a bad value the user sent),
where Kafka would wrap some of them into a 500; anything else is a 500 naming the failure.
"""

from __future__ import annotations

from typing import Any, Final

from kopycat.api.errors import AlreadyExistsError, ConfigError, DataError, NotFoundError

__all__ = ["BAD_REQUEST", "CONFLICT", "NOT_FOUND", "ConnectRestError", "error_body", "status_for"]

BAD_REQUEST: Final = 400
FORBIDDEN: Final = 403
NOT_FOUND: Final = 404
CONFLICT: Final = 409
INTERNAL_SERVER_ERROR: Final = 500


class ConnectRestError(Exception):
    """A request the herder refuses, with the HTTP status to answer (Kafka's ``ConnectRestException``)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    @classmethod
    def bad_request(cls, message: str) -> ConnectRestError:
        """Kafka's ``BadRequestException``."""
        return cls(BAD_REQUEST, message)

    @classmethod
    def forbidden(cls, message: str) -> ConnectRestError:
        """403, as Kafka's ``ConnectorsResource`` answers when topic tracking is off."""
        return cls(FORBIDDEN, message)

    @classmethod
    def not_found(cls, message: str) -> ConnectRestError:
        """Kafka's ``NotFoundException`` as the REST layer maps it."""
        return cls(NOT_FOUND, message)


def status_for(error: BaseException) -> int:
    """The HTTP status Kafka's ``ConnectExceptionMapper`` would give ``error`` (see module doc)."""
    if isinstance(error, ConnectRestError):
        return error.status
    if isinstance(error, NotFoundError):
        return NOT_FOUND
    if isinstance(error, AlreadyExistsError):
        return CONFLICT
    if isinstance(error, ConfigError | DataError):
        return BAD_REQUEST
    return INTERNAL_SERVER_ERROR


def error_body(status: int, message: str | None) -> dict[str, Any]:
    """Kafka's ``ErrorMessage`` JSON."""
    return {"error_code": status, "message": message}
