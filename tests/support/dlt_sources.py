"""The dlt connector's test sources: a SQLite orders table, a paginated JSON API on a local port,
``numbers``, a hand-written resource that keeps its place in ``dlt.current.resource_state()``,
``counting``, a source that counts its runs in ``dlt.current.source_state()``, ``csv_orders``,
a ``filesystem | read_csv`` pipe made by a factory function, as a user names one in a DAG folder,
and ``ledger``, Arrow tables of ids that tells how many it has yielded (how far ahead of poll()
the task's reader is) and can fail after some.

:class:`PagedApi` serves ``GET /items?since=<n>`` as pages of three items newer than ``since``,
each page linking the next (``{"items": [...], "next": <url or null>}``), the shape dlt's
``rest_api`` source reads with a ``json_link`` paginator and an incremental query parameter.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import dlt
import pyarrow as pa
from dlt.extract import DltResource
from dlt.sources.filesystem import filesystem, read_csv

from kopycat.api import RunComplete, SourceTask
from kopycat.api.task import SourceItem

PAGE_SIZE = 3


def create_orders(database: str, ids: Iterable[int]) -> None:
    """Create (if needed) the SQLite ``orders`` table and insert orders ``ids``; updated_at grows with the id."""
    with sqlite3.connect(database) as connection:
        connection.execute("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, updated_at TIMESTAMP NOT NULL,"
                           " amount NUMERIC(10, 2), note TEXT)")
        connection.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)", order_rows(ids))


def order_rows(ids: Iterable[int]) -> list[tuple[Any, ...]]:
    """(id, updated_at, amount, note) rows: a null note for odd ids."""
    return [(i, f"2026-01-01 10:{i:02d}:00", f"{i * 1.25:.2f}", None if i % 2 else f"note {i}") for i in ids]


def run_task(task: SourceTask, max_polls: int = 500) -> list[SourceItem]:
    """Every item a started bounded task returns until RunComplete; the task is stopped after."""
    items: list[SourceItem] = []
    try:
        for _ in range(max_polls):
            try:
                items.extend(task.poll() or [])
            except RunComplete:
                return items
        raise AssertionError("the run did not complete")
    finally:
        task.stop()


class PagedApi:
    """A JSON API on 127.0.0.1 serving ``items`` by pages; ``requests`` lists the query of each call."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.requests: list[dict[str, list[str]]] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                body = api.page(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
                """Quiet: the test's output is the assertions'."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def add(self, ids: Iterable[int]) -> None:
        self.items += [{"id": i, "updated_at": i * 10, "name": f"item {i}", "tags": ["a", "b"][: i % 3]} for i in ids]

    def page(self, path: str) -> bytes:
        query = parse_qs(urlparse(path).query)
        self.requests.append(query)
        since = int(query.get("since", ["0"])[0])
        page = int(query.get("page", ["0"])[0])
        newer = [item for item in self.items if item["updated_at"] > since]
        chunk = newer[page * PAGE_SIZE:(page + 1) * PAGE_SIZE]
        more = (page + 1) * PAGE_SIZE < len(newer)
        return json.dumps({"items": chunk,
                           "next": f"{self.url}items?since={since}&page={page + 1}" if more else None}).encode()

    def rest_api_config(self) -> dict[str, Any]:
        """dlt's rest_api_source config for this API: json_link pages, ``since`` from the cursor ``updated_at``."""
        return {"client": {"base_url": self.url, "paginator": {"type": "json_link", "next_url_path": "next"}},
                "resources": [{"name": "items", "primary_key": "id", "endpoint": {
                    "path": "items", "data_selector": "items",
                    "params": {"since": {"type": "incremental", "cursor_path": "updated_at", "initial_value": 0}}}}]}

    def __enter__(self) -> PagedApi:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@dlt.resource(name="numbers", primary_key="n")
def numbers(count: int, label: str, step: int = 1) -> Iterator[list[dict[str, Any]]]:
    """``count`` numbers after the last one a run returned, kept in the resource's own state (no cursor hint)."""
    state = dlt.current.resource_state()
    start = int(state.get("last", 0))
    for n in range(start + step, start + step * count + 1, step):
        state["last"] = n
        yield [{"n": n, "label": label}]


@dlt.source(name="counter")
def counting(rows: int = 3) -> DltResource:
    """A source that counts its runs in its source-level state; ``ticks`` yields ``rows`` rows keyed by run."""
    state = dlt.current.source_state()
    state["runs"] = int(state.get("runs", 0)) + 1
    run = state["runs"]

    @dlt.resource(primary_key="id")
    def ticks() -> Iterator[dict[str, Any]]:
        for index in range(rows):
            yield {"id": run * 100 + index, "run": run}

    return ticks


def csv_orders(bucket_url: str, file_glob: str = "*.csv") -> DltResource:
    """The CSV files' rows as one resource, ``orders``: files new since the last run only (an incremental
    on their modification_date). A pipe is no function to name in ``dlt.source``; this factory is."""
    files = filesystem(bucket_url=bucket_url, file_glob=file_glob,
                       incremental=dlt.sources.incremental("modification_date"))
    return (files | read_csv()).with_name("orders")


LEDGER_YIELDED: dict[str, int] = {}
"""How many tables each ``ledger`` run (by its ``label``) has yielded so far."""


@dlt.resource(name="ledger", primary_key="id")
def ledger(label: str, tables: int, rows: int = 3, fail_after: int = -1) -> Iterator[pa.Table]:
    """``tables`` Arrow tables of ``rows`` ids each, ids growing from 1; after ``fail_after`` tables (when
    it is not -1) a ValueError instead of the next."""
    LEDGER_YIELDED[label] = 0
    for index in range(tables):
        if index == fail_after:
            raise ValueError(f"ledger {label} broke after {index} tables")
        LEDGER_YIELDED[label] = index + 1
        yield pa.table({"id": pa.array(range(index * rows + 1, (index + 1) * rows + 1), pa.int64())})
