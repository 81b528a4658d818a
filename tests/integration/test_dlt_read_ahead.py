"""DltSourceTask reads a resource on a thread of its own, ahead of poll(): each batch still carries the state
after exactly its own rows, a failure of the resource fails poll() with it, and stop() leaves no reader.
No broker: the task is driven directly, its offsets from a dict. ``ledger`` (tests.support.dlt_sources)
yields Arrow tables of three ids and counts them, so a test can wait until the reader is ahead."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from kopycat.api import BOUNDED_RUN_CONFIG, ConnectError, RunComplete, SourceRecordBatch
from kopycat.api.task import SourceItem
from kopycat.connectors.dlt import DltSourceConnector
from kopycat.connectors.dlt.source_task import DltSourceTask, state_of
from tests.support.dlt_sources import LEDGER_YIELDED, run_task
from tests.support.singer import TaskContext
from tests.support.source_items import records_of

ROWS = 3  # ids per ledger table, and rows per poll: each poll returns one table's batch
WAIT_S = 120.0


def ledger_props(label: str, tables: int, **extra: str) -> dict[str, str]:
    """The ledger, sorted by id (so each table's batch carries the state after it), one table per poll."""
    return {"dlt.source": "tests.support.dlt_sources:ledger", "dlt.args.label": label,
            "dlt.args.tables": str(tables), "dlt.incremental": "ledger:id", "dlt.incremental.row.order": "asc",
            "dlt.batch.max.rows": str(ROWS), BOUNDED_RUN_CONFIG: "true", **extra}


def started(props: dict[str, str], offsets: dict[Any, Any] | None = None) -> DltSourceTask:
    connector = DltSourceConnector()
    connector.start(props)
    [config] = connector.task_configs(1)
    task = DltSourceTask()
    task.initialize(TaskContext(config, offsets))
    task.start(config)
    return task


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {WAIT_S:.0f} s waiting for {what}"
        time.sleep(0.01)


def readers() -> set[threading.Thread]:
    return {thread for thread in threading.enumerate() if thread.name.startswith("kopycat-dlt-")}


def causes(error: BaseException | None) -> list[type[BaseException]]:
    """The types of ``error``'s chain of causes, outermost first."""
    found = []
    while error is not None:
        found.append(type(error))
        error = error.__cause__ or error.__context__
    return found


def cursor(item: SourceItem) -> int:
    return int(state_of(item.source_offset)["incremental"]["id"]["last_value"])  # type: ignore[index]


def test_each_batch_carries_the_state_after_its_own_rows_while_the_reader_is_tables_ahead() -> None:
    label, tables = uuid.uuid4().hex, 8
    task = started(ledger_props(label, tables))
    polls: list[list[SourceItem]] = []
    try:
        while True:
            # the reader has read at least a table past the one held back: dlt's state is past this poll's rows
            wait_until(lambda: LEDGER_YIELDED.get(label, 0) >= min(tables, len(polls) + 2) or not polls,
                       f"the reader to be ahead of poll {len(polls) + 1}")
            try:
                polls.append(task.poll() or [])
            except RunComplete:
                break
    finally:
        task.stop()
    items = [item for poll in polls for item in poll]
    assert all(isinstance(item, SourceRecordBatch) for item in items)
    ids = [[record.key.get("id") for record in records_of([item])] for item in items]
    assert ids == [list(range(i * ROWS + 1, (i + 1) * ROWS + 1)) for i in range(tables)]  # in order, once each
    assert [cursor(item) for item in items] == [max(batch) for batch in ids]  # the state after exactly its rows

    resumed = {tuple(sorted(items[3].source_partition.items())): items[3].source_offset}
    rest = run_task(started(ledger_props(uuid.uuid4().hex, tables), resumed))
    assert [record.key.get("id") for record in records_of(rest)] == list(range(4 * ROWS + 1, tables * ROWS + 1))


def test_a_failing_resource_fails_poll_with_its_error_after_the_batches_before_it_and_leaves_no_reader() -> None:
    before = readers()
    task = started(ledger_props(uuid.uuid4().hex, 6, **{"dlt.args.fail_after": "2"}))
    items: list[SourceItem] = []
    with pytest.raises(ConnectError, match=r"dlt resource 'ledger' of source 'ledger' failed: .*ledger \w+ broke "
                                           r"after 2 tables") as failure:
        for _ in range(100):
            items += task.poll() or []
    assert ValueError in causes(failure.value)
    # the first table only: the second was held back for the one after it, which never came
    assert [record.key.get("id") for record in records_of(items)] == [1, 2, 3]
    task.stop()
    assert readers() == before


def test_stop_mid_run_ends_the_reader_before_it_returns_and_the_reader_reads_no_further() -> None:
    label, tables = uuid.uuid4().hex, 200
    before = readers()
    task = started(ledger_props(label, tables))
    first = task.poll() or []
    assert [record.key.get("id") for record in records_of(first)] == [1, 2, 3]
    wait_until(lambda: LEDGER_YIELDED[label] >= 3, "the reader to read ahead")
    task.stop()
    assert readers() == before  # joined by stop()
    read = LEDGER_YIELDED[label]
    assert read < 10  # the read-ahead is bounded: the reader waited for room, then saw the stop
    assert task.poll() == []
    assert LEDGER_YIELDED[label] == read


def unsorted_props(label: str, tables: int, **extra: str) -> dict[str, str]:
    """The ledger with its cursor but no row order: its state is safe only at its end."""
    props = ledger_props(label, tables, **extra)
    del props["dlt.incremental.row.order"]
    return props


def test_an_unsorted_resource_hands_over_each_table_but_its_last_row_at_once_and_only_that_row_the_final_state(
        ) -> None:
    task = started(unsorted_props(uuid.uuid4().hex, 4))
    items = run_task(task)
    ids = [[record.key.get("id") for record in records_of([item])] for item in items]
    assert ids == [[1, 2], [3], [4, 5], [6], [7, 8], [9], [10, 11], [12]]  # a table's last row waits for the next
    assert [item.source_offset for item in items[:-1]] == [None] * 7  # the state the run started from: none
    assert cursor(items[-1]) == 12

    resumed = {tuple(sorted(items[-1].source_partition.items())): items[-1].source_offset}
    assert records_of(run_task(started(unsorted_props(uuid.uuid4().hex, 4), resumed))) == []


def test_an_unsorted_resources_first_table_leaves_before_the_next_is_read() -> None:
    task = started(unsorted_props(uuid.uuid4().hex, 4, **{"dlt.args.fail_after": "1", "dlt.batch.max.rows": "2"}))
    first = task.poll() or []  # the resource fails instead of yielding its second table
    assert [record.key.get("id") for record in records_of(first)] == [1, 2]
    assert [item.source_offset for item in first] == [None]
    with pytest.raises(ConnectError, match=r"ledger \w+ broke after 1 tables"):
        task.poll()
    task.stop()
