"""A task process is forked with what tasks import on their first batch already imported (where installed)."""

from __future__ import annotations

import multiprocessing

from kopycat.runtime.task_process import OPTIONAL_PRELOAD, start_fork_server
from tests.support.loaded_modules import send_loaded


def test_a_child_of_the_fork_server_starts_with_pandas_its_arrow_shim_dlt_and_the_cdc_task_imported() -> None:
    start_fork_server()
    context = multiprocessing.get_context("forkserver")
    ours, theirs = context.Pipe()
    child = context.Process(target=send_loaded, args=(theirs, ["kopycat.runtime.task_process", *OPTIONAL_PRELOAD]))
    child.start()
    theirs.close()
    try:
        assert ours.poll(120), "the child sent nothing in 120 s"
        loaded = ours.recv()
    finally:
        child.join(60)
    assert child.exitcode == 0
    assert loaded == {"kopycat.runtime.task_process": True, "pandas": True, "pyarrow.pandas_compat": True,
                      "dlt.extract": True, "dlt.sources.sql_database": True, "psycopg": True,
                      "kopycat.connectors.postgres_cdc.source_task": True}
