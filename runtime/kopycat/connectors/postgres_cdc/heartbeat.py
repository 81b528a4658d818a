"""Heartbeats (``heartbeat.interval.ms``): records that carry the offset when no change does.

As Debezium 3.6's ``HeartbeatImpl`` and ``DatabaseHeartbeatImpl``: at most one heartbeat per
interval, checked at each commit and while the stream is idle (Debezium also checks after each
change; Kopycat holds a transaction's changes until its commit); a record on
``<topic.heartbeat.prefix>.<topic.prefix>`` (Kafka partition 0) keyed by
``io.debezium.connector.common.ServerNameKey`` {serverName} with the value
``io.debezium.connector.common.Heartbeat`` {ts_ms: now}, carrying the current offset; then
``heartbeat.action.query`` runs on its own connection. Once Kafka holds a heartbeat, its offset is
stored and the slot confirmed to it, which is how an idle slot's WAL is released.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Final

import psycopg

from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.errors import ConnectError
from kopycat.api.records import SourceRecord
from kopycat.connectors.postgres_cdc.config import CdcSettings
from kopycat.connectors.postgres_cdc.replication import connect

__all__ = ["Heartbeat"]

log = logging.getLogger(__name__)

KEY_SCHEMA: Final = (SchemaBuilder.struct().name("io.debezium.connector.common.ServerNameKey").version(1)
                     .field("serverName", Schema.STRING_SCHEMA).build())
VALUE_SCHEMA: Final = (SchemaBuilder.struct().name("io.debezium.connector.common.Heartbeat").version(1)
                       .field("ts_ms", Schema.INT64_SCHEMA).build())


class Heartbeat:
    """The heartbeat timer of one task and the connection its action query runs on."""

    def __init__(self, settings: CdcSettings, partition: dict[str, Any]) -> None:
        self.settings, self.partition = settings, partition
        self.interval_s = settings.heartbeat_interval_ms / 1000.0
        self.topic = f"{settings.heartbeat_prefix}.{settings.prefix}"
        self.key = Struct.of_values(KEY_SCHEMA, [settings.prefix])
        self.next_beat = time.monotonic() + self.interval_s
        self.conn: psycopg.Connection[Any] | None = None

    @property
    def enabled(self) -> bool:
        return self.interval_s > 0

    def due(self) -> bool:
        return self.enabled and time.monotonic() >= self.next_beat

    def beat(self, offset: dict[str, Any] | None) -> SourceRecord | None:
        """The heartbeat record carrying ``offset`` (None without an offset, as Debezium), then the action query."""
        self.next_beat = time.monotonic() + self.interval_s
        if not offset:
            return None
        record = SourceRecord(source_partition=self.partition, source_offset=dict(offset), topic=self.topic,
                              kafka_partition=0, key_schema=KEY_SCHEMA, key=self.key, value_schema=VALUE_SCHEMA,
                              value=Struct.of_values(VALUE_SCHEMA, [time.time_ns() // 1_000_000]))
        self._action()
        return record

    def _action(self) -> None:
        query = self.settings.heartbeat_query
        if not query:
            return
        if self.conn is None:
            self.conn = connect(self.settings)
        try:
            self.conn.execute(query)
        except psycopg.Error as exc:
            raise ConnectError(f"heartbeat.action.query failed: {str(exc).strip()}; fix the statement "
                               f"({query!r}) or unset heartbeat.action.query") from exc

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
