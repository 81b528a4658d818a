"""A small shop database for the demo and the Airflow tests: customers, products, orders.

Every table has an integer primary key ``id`` and an ``updated_at`` timestamp, so the JDBC source
can copy it in ``timestamp+incrementing`` mode; ``add_orders`` and ``touch_customers`` make the
inserts and updates a second scheduled run must pick up (and nothing else).
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

from sqlalchemy import (
    Column,
    DateTime,
    Engine,
    ForeignKey,
    Integer,
    MetaData,
    Numeric,
    String,
    Table,
    create_engine,
    func,
    insert,
    select,
    update,
)

__all__ = ["SHOP_TABLES", "add_orders", "row_counts", "seed_shop", "shop_metadata", "touch_customers"]

SHOP_TABLES = ("customers", "products", "orders")

_FIRST = ("Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Radia", "Leslie")
_LAST = ("Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson", "Perlman", "Lamport")
_PRODUCTS = ("kettle", "teapot", "mug", "saucer", "tea tin", "strainer", "cosy", "tray")


def shop_metadata() -> MetaData:
    metadata = MetaData()
    Table("customers", metadata, Column("id", Integer, primary_key=True), Column("name", String(100), nullable=False),
          Column("email", String(200), nullable=False), Column("updated_at", DateTime, nullable=False))
    Table("products", metadata, Column("id", Integer, primary_key=True), Column("name", String(100), nullable=False),
          Column("price", Numeric(10, 2), nullable=False), Column("updated_at", DateTime, nullable=False))
    Table("orders", metadata, Column("id", Integer, primary_key=True),
          Column("customer_id", Integer, ForeignKey("customers.id"), nullable=False),
          Column("product_id", Integer, ForeignKey("products.id"), nullable=False),
          Column("quantity", Integer, nullable=False), Column("total", Numeric(12, 2), nullable=False),
          Column("updated_at", DateTime, nullable=False))
    return metadata


def seed_shop(url: str, customers: int = 200, orders: int = 2_000, *, now: dt.datetime | None = None,
              seed: int = 7) -> Engine:
    """Create the tables at ``url`` and fill them; timestamps spread over the day before ``now``."""
    engine = create_engine(url)
    metadata = shop_metadata()
    metadata.create_all(engine)
    now = now or dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)
    rng = random.Random(seed)
    with engine.begin() as conn:
        conn.execute(insert(metadata.tables["customers"]), [
            {"id": i, "name": f"{rng.choice(_FIRST)} {rng.choice(_LAST)}", "email": f"customer{i}@example.com",
             "updated_at": now - dt.timedelta(hours=24) + dt.timedelta(seconds=i)} for i in range(1, customers + 1)])
        conn.execute(insert(metadata.tables["products"]), [
            {"id": i, "name": name, "price": Decimal(rng.randint(300, 4_000)) / 100,
             "updated_at": now - dt.timedelta(hours=24)} for i, name in enumerate(_PRODUCTS, start=1)])
    add_orders(engine, orders, now=now, seed=seed, spread=dt.timedelta(hours=23))
    return engine


def add_orders(engine: Engine, count: int, *, now: dt.datetime | None = None, seed: int = 11,
               spread: dt.timedelta = dt.timedelta(minutes=1)) -> list[int]:
    """Insert ``count`` orders with ``updated_at`` in ``(now - spread, now]``, never before the latest
    order's, so stamps grow with ids as a live application's do (timestamp+incrementing mode, as
    Confluent's, skips a new row stamped before what it already copied); their ids."""
    now = now or dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)
    rng = random.Random(seed)
    metadata = shop_metadata()
    orders, products, customers = (metadata.tables[t] for t in ("orders", "products", "customers"))
    with engine.begin() as conn:
        first = (conn.execute(select(func.max(orders.c.id))).scalar() or 0) + 1
        latest = conn.execute(select(func.max(orders.c.updated_at))).scalar()
        if latest is not None and now - spread < latest:
            now = max(now, latest)
            spread = now - latest
        prices = dict(conn.execute(select(products.c.id, products.c.price)).all())
        customer_count = conn.execute(select(func.count()).select_from(customers)).scalar() or 1
        rows = []
        for offset, order_id in enumerate(range(first, first + count)):
            product, quantity = rng.randint(1, len(prices)), rng.randint(1, 5)
            at = now - spread + spread * (offset + 1) / count
            rows.append({"id": order_id, "customer_id": rng.randint(1, customer_count), "product_id": product,
                         "quantity": quantity, "total": prices[product] * quantity,
                         "updated_at": at.replace(microsecond=0)})
        if rows:
            conn.execute(insert(orders), rows)
    return [row["id"] for row in rows]


def touch_customers(engine: Engine, ids: list[int], *, now: dt.datetime | None = None) -> None:
    """Update these customers' emails and ``updated_at`` (a change the next run must copy)."""
    now = now or dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)
    customers = shop_metadata().tables["customers"]
    with engine.begin() as conn:
        for customer_id in ids:
            conn.execute(update(customers).where(customers.c.id == customer_id)
                         .values(email=f"customer{customer_id}+new@example.com", updated_at=now))


def row_counts(url: str, tables: tuple[str, ...] = SHOP_TABLES) -> dict[str, int]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            metadata = MetaData()
            metadata.reflect(conn, only=list(tables))
            return {t: conn.execute(select(func.count()).select_from(metadata.tables[t])).scalar() or 0
                    for t in tables}
    finally:
        engine.dispose()
