"""tap-orders: a small Singer tap built with Meltano's singer-sdk, for the Singer connector's tests.

Reads the ``orders`` table of a SQLite file a page at a time (keyset pagination on
``updated_at, id``, ``page_size`` rows a query), incrementally on the replication key
``updated_at``: a run started with the state of an earlier one returns only rows updated strictly
after its bookmark (the tests give every row its own ``updated_at``).
Its schema has what a connector must map: a required key, a date-time replication key, a nested
object with a nullable field, a decimal as ``multipleOf`` and one as ``singer.decimal``, a
nullable date and an array. ``fail_after`` makes it crash after that many rows (a non-zero exit
with a message on stderr). Run it as ``python singer_orders_tap.py --config config.json``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any

from singer_sdk import Stream, Tap
from singer_sdk import typing as th

SCHEMA_SQL = """CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, updated_at TEXT NOT NULL,
    customer_name TEXT, customer_email TEXT, amount TEXT, price_exact TEXT, shipped_on TEXT, tags TEXT, note TEXT)"""


def insert_orders(database: str, rows: Iterable[Mapping[str, Any]]) -> None:
    """Add rows as the tap reads them back (``customer`` nested, ``tags`` a list)."""
    with sqlite3.connect(database) as connection:
        connection.execute(SCHEMA_SQL)
        connection.executemany(
            "INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(row["id"], row["updated_at"], row["customer"]["name"], row["customer"]["email"], str(row["amount"]),
              row["price_exact"], row["shipped_on"], json.dumps(row["tags"]), row["note"]) for row in rows])


class OrdersStream(Stream):
    """The orders table, oldest change first, a page per query."""

    name = "orders"
    primary_keys = ("id",)
    replication_key = "updated_at"
    is_sorted = True
    STATE_MSG_FREQUENCY = 3
    schema = th.PropertiesList(
        th.Property("id", th.IntegerType, required=True),
        th.Property("updated_at", th.DateTimeType, required=True),
        th.Property("customer", th.ObjectType(
            th.Property("name", th.StringType, required=True),
            th.Property("email", th.StringType),
        )),
        th.Property("amount", th.DecimalType(multiple_of=0.01)),  # type: ignore[arg-type]
        th.Property("price_exact", th.SingerDecimalType),
        th.Property("shipped_on", th.DateType),
        th.Property("tags", th.ArrayType(th.StringType)),
        th.Property("note", th.StringType),
    ).to_dict()

    def get_records(self, context: Mapping[str, Any] | None) -> Iterable[dict[str, Any]]:
        start = self.get_starting_replication_key_value(context)
        after = ("", -1) if start is None else (start, 2**62)  # strictly after the bookmark
        page_size, fail_after = int(self.config["page_size"]), self.config.get("fail_after")
        sent = 0
        with sqlite3.connect(self.config["database"]) as connection:
            connection.execute(SCHEMA_SQL)
            while True:
                page = connection.execute(
                    "SELECT * FROM orders WHERE updated_at > ? OR (updated_at = ? AND id > ?) "
                    "ORDER BY updated_at, id LIMIT ?", (after[0], after[0], after[1], page_size)).fetchall()
                if not page:
                    return
                for row in page:
                    if fail_after is not None and sent >= int(fail_after):
                        raise RuntimeError(f"tap-orders: the source went away after {sent} rows")
                    yield _record(row)
                    sent += 1
                after = (page[-1][1], page[-1][0])


def _record(row: tuple[Any, ...]) -> dict[str, Any]:
    id_, updated_at, name, email, amount, price_exact, shipped_on, tags, note = row
    return {"id": id_, "updated_at": updated_at, "customer": {"name": name, "email": email},
            "amount": float(amount), "price_exact": price_exact, "shipped_on": shipped_on,
            "tags": json.loads(tags), "note": note}


class TapOrders(Tap):
    """Settings: the SQLite file, the page size, and when to crash (tests of a failing tap)."""

    name = "tap-orders"
    config_jsonschema = th.PropertiesList(
        th.Property("database", th.StringType, required=True),
        th.Property("page_size", th.IntegerType, default=2),
        th.Property("fail_after", th.IntegerType),
    ).to_dict()

    def discover_streams(self) -> list[Stream]:
        return [OrdersStream(self)]


if __name__ == "__main__":
    TapOrders.cli()
