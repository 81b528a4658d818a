"""The Airflow plugin: Kafka Connect's REST API at ``/kopycat`` and a Connectors page in the UI.

``GET http://<airflow>/kopycat/connectors`` answers as ``GET http://<connect>:8083/connectors``
would, so Kafka Connect clients only need the base URL changed. Calls carry an Airflow login
(:mod:`kopycat_plugin.auth`); pause, resume, stop and restart also act on the connector's DAG
(:mod:`kopycat_plugin.airflow_runs`). ``/kopycat/metrics`` serves the copy tasks' Kafka Connect metrics of
each connector DAG's latest run, live for the tasks still copying (:mod:`kopycat_plugin.airflow_figures`),
the figures the page shows.
The Kafka cluster is the ``[kopycat] conn_id`` connection
(``AIRFLOW__KOPYCAT__CONN_ID``, default ``kopycat_default``), as for the operators.

Importing the plugin touches no broker: every Airflow process loads plugins, and only the API
server serves the app, so the stores open at its first request.
"""

from __future__ import annotations

import atexit
import logging
import socket
import threading
from typing import Any, Final

from airflow.plugins_manager import AirflowPlugin
from fastapi import Depends, FastAPI

from kopycat.rest.app import create_app
from kopycat.rest.herder import RestHerder
from kopycat.rest.metrics_route import add_metrics_route
from kopycat.rest.server import kafka_cluster_id
from kopycat.runtime.metrics import ConnectMetrics
from kopycat.storage.config_backing_store import KafkaConfigBackingStore
from kopycat.storage.status_backing_store import KafkaStatusBackingStore
from kopycat_airflow.hooks.kopycat import KopycatHook
from kopycat_plugin.airflow_figures import LatestRunFigures
from kopycat_plugin.airflow_runs import AirflowRunControl
from kopycat_plugin.auth import airflow_dag_access

__all__ = ["URL_PREFIX", "KopycatPlugin", "kopycat_rest_app"]

log = logging.getLogger(__name__)

URL_PREFIX: Final = "/kopycat"


class HerderOnFirstUse:
    """A :class:`RestHerder` whose Kafka stores open at the first call, then stay open.

    Routes only call herder methods, so forwarding attributes is enough. A failed open (broker
    down) is retried at the next call instead of leaving the API server without its plugin.
    """

    def __init__(self, kopycat_conn_id: str) -> None:
        self.kopycat_conn_id = kopycat_conn_id
        self._herder: RestHerder | None = None
        self._lock = threading.Lock()

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.herder(), attribute)

    def herder(self) -> RestHerder:
        with self._lock:
            if self._herder is None:
                self._herder = self._open()
            return self._herder

    def _open(self) -> RestHerder:
        worker_props = KopycatHook(self.kopycat_conn_id).worker_props
        configs = KafkaConfigBackingStore.from_config(worker_props)
        statuses = KafkaStatusBackingStore.from_config(worker_props)
        configs.start()
        try:
            statuses.start()
        except BaseException:
            configs.stop()
            raise
        atexit.register(statuses.stop)
        atexit.register(configs.stop)
        log.info("Kopycat REST API serves the connectors of %s", worker_props.get("bootstrap.servers"))
        return RestHerder(configs, statuses, worker_props, worker_id=f"{socket.gethostname()} (airflow api-server)",
                          kafka_cluster_id=kafka_cluster_id(worker_props), run_control=AirflowRunControl())


def kopycat_rest_app(kopycat_conn_id: str | None = None) -> FastAPI:
    """The REST API as the plugin mounts it: Airflow's auth in front, DAGs behind, the latest runs' figures
    at ``/metrics``."""
    if kopycat_conn_id is None:
        from airflow.configuration import conf

        kopycat_conn_id = conf.get("kopycat", "conn_id", fallback=KopycatHook.default_conn_name)
    herder: Any = HerderOnFirstUse(kopycat_conn_id)
    app = create_app(herder, dependencies=[Depends(airflow_dag_access)])
    metrics = ConnectMetrics()
    metrics.register("airflow-runs", LatestRunFigures(lambda: herder.connectors(),
                                                      lambda name: herder.status_store.get_all_progress(name)))
    add_metrics_route(app, metrics)
    return app


class KopycatPlugin(AirflowPlugin):
    """Mounts the REST API (``fastapi_apps``) and links the Connectors page (``external_views``)."""

    name = "kopycat"
    fastapi_apps = [{"app": kopycat_rest_app(), "url_prefix": URL_PREFIX,
                     "name": "Kopycat: Kafka Connect REST API"}]
    external_views = [{"name": "Kafka connectors", "href": f"{URL_PREFIX}/ui", "destination": "nav",
                       "category": "browse", "url_route": "kopycat-connectors"}]
