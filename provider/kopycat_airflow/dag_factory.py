"""One Airflow DAG per connector in the config topic: connectors made through the REST API run on a schedule.

Kafka Connect starts a stored connector on its workers; Kopycat schedules it (DESIGN.md §4).
``dags/kopycat_connectors.py`` calls :func:`connector_dags`, and each connector becomes the DAG
``kopycat_connector_<name>``: plan -> one mapped copy task per task config -> summary, over a
:class:`~kopycat_airflow.connector_config.StoredConnector`, so its config is read from the
topic when the run starts and never lands in the serialized DAG.

- Schedule: the connector's ``kopycat.schedule`` (default every 5 minutes) as a
  ``CronDataIntervalTimetable`` in UTC, so runs have data intervals and backfills copy windows;
  ``none`` leaves only manual runs.
- Target state: a connector that is not STARTED gets a paused DAG at creation, and its runs
  skip while it stays PAUSED or STOPPED (the REST plugin also pauses and unpauses the DAG).
- ``max_active_runs=1``: the runs of one connector share its offsets.

DAG files are parsed every 30 s or so. The config topic is read with a short timeout, and the
last listing read (names, classes, schedules, states: no config values, so no secrets) is kept
in ``$AIRFLOW_HOME/kopycat/connectors.json``: a broker outage keeps the DAGs it cannot list.
"""

from __future__ import annotations

import json
import logging
import os
import re
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

import pendulum
from airflow.sdk import DAG
from airflow.timetables.interval import CronDataIntervalTimetable

from kopycat.api.connector import SourceConnector
from kopycat.plugins import connector_class
from kopycat.runtime.connector_config import CONNECTOR_CLASS_CONFIG, SCHEDULE_CONFIG, SCHEDULE_DEFAULT, SCHEDULE_NONE
from kopycat.storage.config_backing_store import ClusterConfigState, KafkaConfigBackingStore, TargetState
from kopycat_airflow.connector_config import StoredConnector
from kopycat_airflow.hooks.kopycat import KopycatHook
from kopycat_airflow.task_group import connector_task_group

__all__ = ["DAG_ID_PREFIX", "ConnectorListing", "connector_dag", "connector_dag_id", "connector_dags",
           "listings_of", "read_connector_listings"]

log = logging.getLogger(__name__)

DAG_ID_PREFIX: Final = "kopycat_connector_"
START_DATE: Final = pendulum.datetime(2026, 1, 1, tz="UTC")
_NOT_A_KEY_CHAR: Final = re.compile(r"[^\w.-]")
_READ_TIMEOUT_S: Final = 10.0


@dataclass(frozen=True)
class ConnectorListing:
    """What a connector's DAG is built from: no config values, so it may be cached on disk."""

    name: str
    connector_class: str
    schedule: str
    target_state: str

    @property
    def paused(self) -> bool:
        return self.target_state != TargetState.STARTED.name


def connector_dag_id(name: str) -> str:
    """``kopycat_connector_<name>``; names with characters Airflow refuses get them as ``_`` plus a checksum.

    The checksum keeps ``a b`` and ``a_b`` apart: both are legal connector names in Kafka Connect.
    """
    safe = _NOT_A_KEY_CHAR.sub("_", name)
    if safe != name:
        safe = f"{safe}_{zlib.crc32(name.encode()):08x}"
    return DAG_ID_PREFIX + safe


def listings_of(state: ClusterConfigState) -> list[ConnectorListing]:
    """The connectors of a config snapshot, by name."""
    return [ConnectorListing(name, config.get(CONNECTOR_CLASS_CONFIG, ""),
                             config.get(SCHEDULE_CONFIG, SCHEDULE_DEFAULT).strip(),
                             state.target_states.get(name, TargetState.STARTED).name)
            for name, config in sorted(state.connector_configs.items())]


def read_connector_listings(worker_props: Mapping[str, Any], cache: Path | None) -> list[ConnectorListing]:
    """The connectors in the config topic, cached in ``cache``; the cache when the topic cannot be read."""
    try:
        with KafkaConfigBackingStore.from_config(worker_props, timeout_s=_READ_TIMEOUT_S) as store:
            listings = listings_of(store.snapshot())
    except Exception as exc:  # noqa: BLE001 - any failure: keep the DAGs the cache knows
        cached = _read_cache(cache)
        log.warning("Could not read connectors from the config topic at %s (%s); using %d cached listing(s) "
                    "from %s", worker_props.get("bootstrap.servers"), repr(exc), len(cached), cache)
        return cached
    _write_cache(cache, listings)
    return listings


def connector_dag(listing: ConnectorListing, *, kopycat_conn_id: str = KopycatHook.default_conn_name,
                  **group_kwargs: Any) -> DAG:
    """The DAG of one stored connector (see the module doc); ``group_kwargs`` go to :func:`connector_task_group`."""
    schedule = None
    if listing.schedule != SCHEDULE_NONE:
        schedule = CronDataIntervalTimetable(listing.schedule, timezone="UTC")
        schedule.validate()  # the constructor takes "61 * * * *"; the scheduler would choke on it later
    with DAG(
        dag_id=connector_dag_id(listing.name),
        schedule=schedule,
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,
        is_paused_upon_creation=listing.paused,
        tags=["kopycat", "connector", _kind(listing.connector_class)],
        doc_md=_doc(listing),
    ) as dag:
        connector_task_group(StoredConnector(listing.name), group_id=_NOT_A_KEY_CHAR.sub("_", listing.name),
                             kopycat_conn_id=kopycat_conn_id, **group_kwargs)
    return dag


def connector_dags(kopycat_conn_id: str = KopycatHook.default_conn_name, *, cache: Path | None = None,
                   listings: Iterable[ConnectorListing] | None = None, **group_kwargs: Any) -> dict[str, DAG]:
    """A DAG per stored connector, by DAG id. One bad connector is logged and skipped, not fatal to the rest.

    :param kopycat_conn_id: the Kafka cluster whose config topic holds the connectors.
    :param cache: where the last listing is kept (default ``$AIRFLOW_HOME/kopycat/connectors.json``).
    :param listings: the connectors, instead of reading the topic (tests, custom sources).
    """
    if listings is None:
        listings = read_connector_listings(KopycatHook(kopycat_conn_id).worker_props, cache or _default_cache())
    dags = {}
    for listing in listings:
        try:
            dag = connector_dag(listing, kopycat_conn_id=kopycat_conn_id, **group_kwargs)
        except Exception as exc:  # noqa: BLE001 - e.g. a schedule stored before it was validated
            log.error("No DAG for connector %s (%s=%r): %s", listing.name, SCHEDULE_CONFIG, listing.schedule, exc)
            continue
        dags[dag.dag_id] = dag
    return dags


def _kind(class_name: str) -> str:
    try:
        return "source" if issubclass(connector_class(class_name), SourceConnector) else "sink"
    except Exception:  # noqa: BLE001 - an unknown class: the plan task will say why
        return "unknown"


def _doc(listing: ConnectorListing) -> str:
    return (f"Connector **{listing.name}** (`{listing.connector_class}`), stored in the config topic.\n\n"
            f"Schedule `{SCHEDULE_CONFIG}={listing.schedule}`. Manage it with the Kafka Connect REST API: "
            f"`PUT /connectors/{listing.name}/config` (next run), `PUT /connectors/{listing.name}/pause|resume|stop`, "
            f"`GET /connectors/{listing.name}/status`, `GET|PATCH|DELETE /connectors/{listing.name}/offsets`.")


def _default_cache() -> Path:
    return Path(os.environ.get("AIRFLOW_HOME", Path.home() / "airflow")) / "kopycat" / "connectors.json"


def _read_cache(cache: Path | None) -> list[ConnectorListing]:
    if cache is None or not cache.exists():
        return []
    try:
        return [ConnectorListing(**item) for item in json.loads(cache.read_text())]
    except (ValueError, TypeError) as exc:
        log.warning("Ignoring the unreadable connector cache %s: %s", cache, exc)
        return []


def _write_cache(cache: Path | None, listings: list[ConnectorListing]) -> None:
    if cache is None:
        return
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        temp = cache.with_suffix(".tmp")
        temp.write_text(json.dumps([asdict(item) for item in listings]))
        temp.replace(cache)
    except OSError as exc:
        log.warning("Could not cache the connector listing in %s: %s", cache, exc)
