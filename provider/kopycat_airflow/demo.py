"""The README's demo: a shop database imported into Kafka and exported to a reporting DB by DAGs.

On embedded defaults, in a temp directory: a real single-node Kafka broker, a SQLite shop
database, a throwaway Airflow (its own home and metadata DB). It runs ``kopycat_shop_import``
(JDBC source, mapped copy tasks), changes the shop (new orders, updated customers), runs the
import again (only the changes move), then ``kopycat_shop_export`` (JDBC sink, exactly once),
and checks the reporting tables hold every source row. Each DAG run is ``dag.test()``.

The DAGs are not part of the installed package (they read ``include/`` beside them): the demo runs
them from the folder :func:`demo_dags_folder` finds.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from kopycat.api.errors import ConnectError
from kopycat.dev.kafka_broker import LocalKafkaBroker
from kopycat.dev.shop_db import SHOP_TABLES, add_orders, row_counts, seed_shop, touch_customers
from kopycat_airflow.local import DagRunResult, LocalAirflow

__all__ = ["DAGS_FOLDER_ENV", "demo_dags_folder", "lake_ids", "pipeline_matches", "run_demo"]

DAGS_FOLDER_ENV = "KOPYCAT_DAGS_FOLDER"
"""Environment variable naming the folder of the demo's DAGs (a checkout's ``dags/``)."""

DEMO_DAGS = ("kopycat_shop_import.py", "kopycat_shop_export.py")

_CHECKOUT_DAGS = Path(__file__).resolve().parents[2] / "dags"
"""Where the DAGs are when this module runs from a source checkout (provider/kopycat_airflow/)."""


def demo_dags_folder(dags_folder: Path | str | None = None) -> Path:
    """The folder of the demo's DAGs: ``dags_folder``, else ``$KOPYCAT_DAGS_FOLDER``, else the
    ``dags/`` of the checkout this module runs from. A folder without the demo's DAGs is a
    ConnectError that says where to point."""
    given = dags_folder or os.environ.get(DAGS_FOLDER_ENV)
    folder = Path(given) if given else _CHECKOUT_DAGS
    missing = [name for name in DEMO_DAGS if not (folder / name).is_file()]
    if missing:
        where = (f"{folder} (given)" if given else
                 f"{folder} (no {DAGS_FOLDER_ENV} set, and Kopycat does not run from a source checkout)")
        raise ConnectError(f"The demo's DAGs ({', '.join(missing)}) are not in {where}: set "
                           f"{DAGS_FOLDER_ENV} to the dags/ folder of a Kopycat checkout")
    return folder


def run_demo(orders: int = 5_000, dags_folder: Path | str | None = None) -> int:
    """Run the pipeline, print what moved; 0 when the reporting DB matches the shop.

    :param orders: orders seeded in the shop database.
    :param dags_folder: the folder of the demo's DAGs (see :func:`demo_dags_folder`).
    """
    dags = demo_dags_folder(dags_folder)
    with tempfile.TemporaryDirectory(prefix="kopycat-demo-") as tmp:
        shop_url, reporting_url = f"sqlite:///{tmp}/shop.db", f"sqlite:///{tmp}/reporting.db"
        lake = Path(tmp) / "lake"
        shop = seed_shop(shop_url, orders=orders)
        _say(f"Seeded {shop_url}: {_counts(row_counts(shop_url))}")
        _say("Starting a single-node Apache Kafka broker (KRaft) on 127.0.0.1 ...")
        with LocalKafkaBroker(name="demo-kafka") as broker:
            airflow = LocalAirflow(Path(tmp) / "airflow", dags, env={
                "KOPYCAT_BOOTSTRAP_SERVERS": broker.bootstrap_servers,
                "KOPYCAT_SHOP_DB_URL": shop_url, "KOPYCAT_REPORTING_DB_URL": reporting_url,
                "KOPYCAT_LAKE_URL": f"file://{lake}"})
            _say(f"  broker at {broker.bootstrap_servers}; creating Airflow's metadata DB ...")
            airflow.migrate()
            with airflow.serve() as served:  # one dag.test process for the three runs: Airflow starts once
                _show(_timed(served, "kopycat_shop_import"))
                new_orders = add_orders(shop, 250)
                touch_customers(shop, [1, 2, 3])
                _say(f"Shop changed: {len(new_orders)} new orders, 3 customers updated")
                _show(_timed(served, "kopycat_shop_import"))
                _show(_timed(served, "kopycat_shop_export"))
        source, copied = row_counts(shop_url), row_counts(reporting_url)
        lake_orders = lake_ids(lake, "shop_orders")
        _say(f"Shop:      {_counts(source)}\nReporting: {_counts(copied)}\n"
             f"Lake:      {len(lake_orders):,} order records in {_file_count(lake)} Parquet files under {lake}")
        ok = pipeline_matches(shop_url, reporting_url, lake)
        _say(("Every row arrived exactly once." if ok else "MISMATCH between shop, reporting DB and lake.") + "\n"
             "Open the same DAGs in the Airflow UI: `AIRFLOW__CORE__DAGS_FOLDER=$PWD/dags "
             ".venv/bin/airflow standalone`, with `.venv/bin/kopycat dev kafka` running and "
             "KOPYCAT_BOOTSTRAP_SERVERS set to the address it prints.")
        shop.dispose()
        return 0 if ok else 1


def pipeline_matches(shop_url: str, reporting_url: str, lake: Path) -> bool:
    """The demo's check ("Every row arrived exactly once"): the reporting DB has as many rows as the
    shop in each table, and the lake holds every order id once (orders are only inserted)."""
    source = row_counts(shop_url)
    return (source == row_counts(reporting_url)
            and sorted(lake_ids(lake, "shop_orders")) == list(range(1, source["orders"] + 1)))


def lake_ids(lake: Path, topic: str) -> list[int]:
    """The ``id`` of every record version in the lake's committed Parquet files of ``topic`` (temp files
    under ``+tmp`` are not committed), in no particular order."""
    import pyarrow.parquet as pq

    files = [path for path in (lake / "topics" / topic).rglob("*.parquet") if "+tmp" not in path.parts]
    return [i for path in files for i in pq.read_table(path, columns=["id"]).column("id").to_pylist()]


def _file_count(lake: Path) -> int:
    return sum(1 for path in lake.rglob("*.parquet") if "+tmp" not in path.parts)


def _timed(airflow: LocalAirflow, dag_id: str) -> tuple[str, DagRunResult, float]:
    _say(f"Running DAG {dag_id} (dag.test) ...")
    started = time.monotonic()
    result = airflow.run_dag(dag_id)
    return dag_id, result, time.monotonic() - started


def _show(run: tuple[str, DagRunResult, float]) -> None:
    dag_id, result, seconds = run
    _say(f"  {dag_id}: {result['state']} in {seconds:.0f} s")
    for task in result.tasks("copy"):
        summary: dict[str, Any] = task["result"] or {}
        group = task["task_id"].rsplit(".", 1)[0] + "." if "." in task["task_id"] else ""
        _say(f"    {group}copy[{task['label']}]: {task['state']}, {summary.get('records', 0):,} records"
             f"{_offsets(summary)}")
    if result["state"] != "success":
        _say(f"  log: {result.get('log')}")


def _offsets(summary: dict[str, Any]) -> str:
    offsets = summary.get("offsets") or {}
    if not offsets:
        return ""
    shown = [f"{name}: {item.get('before')} -> {item.get('after')}" for name, item in list(offsets.items())[:3]]
    return "; offsets " + "; ".join(shown) + (" ..." if len(offsets) > 3 else "")


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{table} {counts.get(table, 0):,}" for table in SHOP_TABLES)


def _say(text: str) -> None:
    print(text, flush=True)  # noqa: T201 - the demo talks to the terminal


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(run_demo())
