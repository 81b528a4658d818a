"""Source partitions and offsets exactly as Confluent's JDBC source writes them.

``OffsetProtocols``: a table's partition is ``{"protocol": "1", "table": "public.orders"}``
(v1, the unquoted qualified name), read back also from the older v0 ``{"table": "orders"}``;
a query's is ``{"query": "query"}``. Bulk mode still writes v0 partitions with a null offset,
as Confluent's ``BulkTableQuerier`` does. ``TimestampIncrementingOffset.toMap``: ``incrementing``
(a long), ``timestamp`` (epoch ms, ``java.sql.Timestamp.getTime``) and ``timestamp_nanos``
(the fraction of the second in ns, ``getNanos``), each present only when the mode has it::

    {"incrementing": 4711, "timestamp": 1714521600123, "timestamp_nanos": 123456000}
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from kopycat.api.errors import ConnectError

__all__ = [
    "INCREMENTING_FIELD", "QUERY_PARTITION", "TIMESTAMP_FIELD", "TIMESTAMP_NANOS_FIELD", "Instant",
    "offset_map", "partition_v0", "partition_v1", "read_offset",
]

TABLE_NAME_KEY: Final = "table"
QUERY_NAME_KEY: Final = "query"
QUERY_NAME_VALUE: Final = "query"
OFFSET_PROTOCOL_VERSION_KEY: Final = "protocol"
PROTOCOL_VERSION_ONE: Final = "1"
INCREMENTING_FIELD: Final = "incrementing"
TIMESTAMP_FIELD: Final = "timestamp"
TIMESTAMP_NANOS_FIELD: Final = "timestamp_nanos"
QUERY_PARTITION: Final = {QUERY_NAME_KEY: QUERY_NAME_VALUE}

_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_NAIVE: Final = dt.datetime(1970, 1, 1)
_MICRO: Final = dt.timedelta(microseconds=1)


def partition_v1(unquoted_name: str) -> dict[str, str]:
    """``OffsetProtocols.sourcePartitionForProtocolV1``."""
    return {OFFSET_PROTOCOL_VERSION_KEY: PROTOCOL_VERSION_ONE, TABLE_NAME_KEY: unquoted_name}


def partition_v0(table_name: str) -> dict[str, str]:
    """``OffsetProtocols.sourcePartitionForProtocolV0``: the bare table name."""
    return {TABLE_NAME_KEY: table_name}


class Instant(NamedTuple):
    """A ``java.sql.Timestamp`` as offsets store it: epoch ms and the second's fraction in ns."""

    millis: int
    nanos: int

    @classmethod
    def of(cls, value: dt.datetime, zone: dt.tzinfo) -> Instant:
        """A column value; a naive one is in ``zone`` (db.timezone)."""
        if value.tzinfo is not None:
            micros = (value - _EPOCH) // _MICRO
        elif zone is dt.UTC:  # the common case, without building an aware datetime
            micros = (value - _EPOCH_NAIVE) // _MICRO
        else:
            micros = (value.replace(tzinfo=zone) - _EPOCH) // _MICRO
        return cls(micros // 1000, (micros % 1_000_000) * 1000)

    @classmethod
    def from_millis(cls, millis: int) -> Instant:
        return cls(millis, (millis % 1000) * 1_000_000)

    def to_datetime(self) -> dt.datetime:
        """UTC-aware; nanoseconds below a microsecond are dropped (Python's resolution)."""
        micros = (self.millis // 1000) * 1_000_000 + self.nanos // 1000
        return _EPOCH + dt.timedelta(microseconds=micros)


def offset_map(timestamp: Instant | None, incrementing: int | None) -> dict[str, Any]:
    """``TimestampIncrementingOffset.toMap``: only the fields that are set."""
    result: dict[str, Any] = {}
    if incrementing is not None:
        result[INCREMENTING_FIELD] = incrementing
    if timestamp is not None:
        result[TIMESTAMP_FIELD] = timestamp.millis
        result[TIMESTAMP_NANOS_FIELD] = timestamp.nanos
    return result


def read_offset(offset: Mapping[str, Any] | None, where: str) -> tuple[Instant | None, int | None]:
    """``TimestampIncrementingOffset.fromMap``: (timestamp, incrementing), either may be None."""
    if not offset:
        return None, None
    try:
        incrementing = offset.get(INCREMENTING_FIELD)
        millis = offset.get(TIMESTAMP_FIELD)
        nanos = offset.get(TIMESTAMP_NANOS_FIELD)
        timestamp = None
        if millis is not None:
            timestamp = Instant(int(millis), int(nanos)) if nanos is not None else Instant.from_millis(int(millis))
        return timestamp, None if incrementing is None else int(incrementing)
    except (TypeError, ValueError, AttributeError):
        raise ConnectError(f"The stored offset {dict(offset)!r} of {where} is not a JDBC source "
                           f"offset ({{\"incrementing\": n, \"timestamp\": ms, \"timestamp_nanos\": "
                           f"ns}}): fix or delete it with the offsets REST API") from None
