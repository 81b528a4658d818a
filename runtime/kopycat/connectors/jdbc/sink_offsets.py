"""Exactly-once for the JDBC sink: consumed offsets live in the destination database.

Table ``kopycat_offsets(connector, topic, partition, offset)``, primary key
(connector, topic, partition); ``offset`` is the *next* offset to consume (last written + 1),
as a consumer group stores it. How the task uses it:

- ``put(records)`` writes the rows and the next offsets of the partitions it touched in ONE
  database transaction: either both are there or neither;
- ``open(partitions)`` reads the table and calls ``context.offset({tp: next_offset})``, so the
  engine starts each partition after the last committed row, whatever the consumer group says;
- ``pre_commit`` returns those offsets, so the group ``connect-<name>`` shows the real lag.

A crash after the database commit but before the group commit leaves the group behind; on
restart the seek from this table wins, so nothing is written twice. A crash before the database
commit rolls the rows back with their offsets, so nothing is lost. Even ``insert.mode=insert``
without a key is therefore exactly-once.

Confluent's ``JdbcSinkTask`` is at-least-once: it commits the consumer group after its writes
and, after a crash, re-writes what followed the last group commit; only idempotent writes
(``upsert`` with a key) hide the duplicates there. Offsets set through the REST API (KIP-875)
must be written here too: :meth:`JdbcSinkConnector.alter_offsets` does that.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from kopycat.api.records import TopicPartition
from kopycat.connectors.jdbc.sink_plan import upsert_statement

__all__ = ["OFFSETS_TABLE", "OffsetsTable"]

OFFSETS_TABLE: Final = "kopycat_offsets"


class OffsetsTable:
    """Reads and writes one connector's rows of ``kopycat_offsets`` through a caller's connection.

    Thread-safe: holds no state besides the table definition.
    """

    def __init__(self, connector: str, schema: str | None = None) -> None:
        self.connector = connector
        self.table = sa.Table(
            OFFSETS_TABLE, sa.MetaData(),
            sa.Column("connector", sa.String(255), primary_key=True, quote=True),
            sa.Column("topic", sa.String(255), primary_key=True, quote=True),
            sa.Column("partition", sa.Integer, primary_key=True, autoincrement=False, quote=True),
            sa.Column("offset", sa.BigInteger, nullable=False, quote=True),
            schema=schema)
        self._upsert: dict[str, sa.Executable] = {}

    def ensure(self, conn: Connection) -> None:
        """Create the table when missing (idempotent)."""
        self.table.create(conn, checkfirst=True)

    def read(self, conn: Connection, partitions: Collection[TopicPartition] | None = None
             ) -> dict[TopicPartition, int]:
        """The stored next offsets of this connector, for ``partitions`` (all when None)."""
        c = self.table.c
        rows = conn.execute(sa.select(c.topic, c.partition, c.offset).where(c.connector == self.connector))
        found = {TopicPartition(topic, partition): offset for topic, partition, offset in rows}
        if partitions is None:
            return found
        wanted = {TopicPartition(*tp) for tp in partitions}
        return {tp: offset for tp, offset in found.items() if tp in wanted}

    def write(self, conn: Connection, offsets: Mapping[TopicPartition, int]) -> None:
        """Store next offsets (one executemany), in the caller's transaction."""
        if not offsets:
            return
        rows = [{"connector": self.connector, "topic": tp.topic, "partition": tp.partition, "offset": offset}
                for tp, offset in offsets.items()]
        dialect = conn.dialect.name
        if dialect in ("postgresql", "sqlite", "mysql", "mariadb"):
            statement = self._upsert.get(dialect)
            if statement is None:
                statement = self._upsert[dialect] = upsert_statement(
                    self.table, ["connector", "topic", "partition"], ["offset"], dialect)
            conn.execute(statement, rows)
            return
        c = self.table.c
        for row in rows:  # other databases: update, insert when there was nothing to update
            updated = conn.execute(sa.update(self.table).where(
                c.connector == row["connector"], c.topic == row["topic"], c.partition == row["partition"]
            ).values(offset=row["offset"]))
            if updated.rowcount == 0:
                conn.execute(sa.insert(self.table), [row])

    def delete(self, conn: Connection, partitions: Collection[TopicPartition]) -> None:
        """Forget stored offsets (KIP-875 reset): the group's offsets apply again."""
        c = self.table.c
        for tp in partitions:
            conn.execute(sa.delete(self.table).where(
                c.connector == self.connector, c.topic == tp.topic, c.partition == tp.partition))
