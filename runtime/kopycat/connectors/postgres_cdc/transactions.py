"""Transaction metadata (``provide.transaction.metadata=true``): BEGIN/END events and the ``transaction`` block.

As Debezium 3.6's ``TransactionMonitor`` with ``PostgresTransactionMonitor``'s ids, the
``DefaultTransactionStructMaker`` and ``TransactionContext``:

- a BEGIN record on ``<topic.prefix>.<topic.transaction>`` for every streamed transaction (also one whose changes
  are all filtered out: its END then counts 0 events), keyed by
  ``io.debezium.connector.common.TransactionMetadataKey`` {id}, valued by
  ``io.debezium.connector.common.TransactionMetadataValue`` {status, id, event_count,
  data_collections, ts_ms}; ts_ms is the commit time;
- each change event's ``transaction`` block {id, total_order, data_collection_order};
- an END record after the commit with the total and per-table (``<schema>.<table>``) counts, in
  the order Java's ``HashMap`` iterates them (Debezium's ``perTableEventCount``);
- every id is ``<xid>:<lsn of the message>``, so the BEGIN, each change and the END of one
  transaction carry different ids (PostgresTransactionMonitor's ``adjustTxId``);
- offsets inside a transaction carry ``transaction_id`` (the bare xid) and
  ``transaction_data_collection_order_<schema>.<table>``, from which a restarted task continues
  the counts without a second BEGIN, as ``TransactionContext.load`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.records import SourceRecord
from kopycat.connectors.postgres_cdc.events import TRANSACTION_SCHEMA

__all__ = ["TRANSACTION_ID_OFFSET", "TransactionMetadata", "java_hash_map_order"]

TRANSACTION_ID_OFFSET: Final = "transaction_id"
COUNT_OFFSET_PREFIX: Final = "transaction_data_collection_order_"

KEY_SCHEMA: Final = (SchemaBuilder.struct().name("io.debezium.connector.common.TransactionMetadataKey").version(1)
                     .field("id", Schema.STRING_SCHEMA).build())
EVENT_COUNT_SCHEMA: Final = (SchemaBuilder.struct().optional().name("event.collection").version(1)
                             .field("data_collection", Schema.STRING_SCHEMA)
                             .field("event_count", Schema.INT64_SCHEMA).build())
VALUE_SCHEMA: Final = (SchemaBuilder.struct().name("io.debezium.connector.common.TransactionMetadataValue").version(1)
                       .field("status", Schema.STRING_SCHEMA)
                       .field("id", Schema.STRING_SCHEMA)
                       .field("event_count", Schema.OPTIONAL_INT64_SCHEMA)
                       .field("data_collections", SchemaBuilder.array(EVENT_COUNT_SCHEMA).optional().build())
                       .field("ts_ms", Schema.INT64_SCHEMA).build())


class TransactionMetadata:
    """One task's transaction context: the transaction in flight and its per-table event counts."""

    def __init__(self, prefix: str, topic: str, partition: dict[str, Any], stored: Mapping[str, Any] | None) -> None:
        self.topic = f"{prefix}.{topic}"
        self.partition = partition
        stored = stored or {}
        self.xid: str | None = stored.get(TRANSACTION_ID_OFFSET)
        self.counts: dict[str, int] = {key[len(COUNT_OFFSET_PREFIX):]: int(value) for key, value in stored.items()
                                       if key.startswith(COUNT_OFFSET_PREFIX)}

    def begin(self, xid: int, lsn: int, commit_ts_us: int, offset: dict[str, Any]) -> SourceRecord | None:
        """The BEGIN record; None when this transaction was restored from the offsets (no second BEGIN)."""
        if self.xid == str(xid):
            return None
        self.xid, self.counts = str(xid), {}
        return self._record("BEGIN", xid, lsn, commit_ts_us, offset)

    def event(self, collection: str, lsn: int) -> Struct:
        """Count one change of ``collection`` (``<schema>.<table>``): its envelope's transaction block."""
        order = self.counts.get(collection, 0) + 1
        self.counts[collection] = order
        return Struct.of_values(TRANSACTION_SCHEMA, [f"{self.xid}:{lsn}", sum(self.counts.values()), order])

    def store(self, offset: dict[str, Any]) -> dict[str, Any]:
        """``offset`` with the transaction in flight added (``TransactionContext.store``)."""
        if self.xid is not None:
            offset[TRANSACTION_ID_OFFSET] = self.xid
        for collection, count in self.counts.items():
            offset[COUNT_OFFSET_PREFIX + collection] = count
        return offset

    def end(self, xid: int, lsn: int, commit_ts_us: int, offset: dict[str, Any]) -> SourceRecord:
        """The END record with the counts; the context is then empty."""
        record = self._record("END", xid, lsn, commit_ts_us, offset)
        self.xid, self.counts = None, {}
        return record

    def _record(self, status: str, xid: int, lsn: int, commit_ts_us: int, offset: dict[str, Any]) -> SourceRecord:
        tx_id = f"{xid}:{lsn}"
        count: int | None = None
        collections: list[Struct] | None = None
        if status == "END":
            count = sum(self.counts.values())
            collections = [Struct.of_values(EVENT_COUNT_SCHEMA, [name, self.counts[name]])
                           for name in java_hash_map_order(list(self.counts))]
        value = Struct.of_values(VALUE_SCHEMA, [status, tx_id, count, collections, commit_ts_us // 1000])
        return SourceRecord(source_partition=self.partition, source_offset=self.store(offset), topic=self.topic,
                            key_schema=KEY_SCHEMA, key=Struct.of_values(KEY_SCHEMA, [tx_id]),
                            value_schema=VALUE_SCHEMA, value=value)


def java_hash_map_order(keys: list[str]) -> list[str]:
    """``keys`` (in insertion order) in the order a ``java.util.HashMap<String, ?>`` iterates them.

    Buckets in index order, insertion order within a bucket; the table starts at 16 buckets and
    doubles whenever the size passes three quarters of it (a split keeps the relative order).
    """
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2
    return [key for _, _, key in sorted((_spread(_java_string_hash(key)) & (capacity - 1), index, key)
                                        for index, key in enumerate(keys))]


def _java_string_hash(text: str) -> int:
    """``String.hashCode()``: over UTF-16 code units, as a signed 32-bit int (unsigned here)."""
    value = 0
    units = text.encode("utf-16-be")
    for index in range(0, len(units), 2):
        value = (value * 31 + int.from_bytes(units[index:index + 2], "big")) & 0xFFFFFFFF
    return value


def _spread(hash_code: int) -> int:
    """``HashMap.hash``: the high half folded into the low half."""
    return hash_code ^ (hash_code >> 16)
