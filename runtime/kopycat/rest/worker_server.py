"""One node that serves the REST API and runs the connectors: ``kopycat worker worker.properties``.

Kafka's ``connect-distributed`` on one node: the REST API of :mod:`kopycat.rest.server` over the
worker's ``config.storage.topic`` and ``status.storage.topic``, plus a
:class:`~kopycat.runtime.worker.Worker` that runs every stored connector continuously, kept in step
with the config topic by a :class:`~kopycat.runtime.worker_herder.WorkerHerder`. Source offsets
live on ``offset.storage.topic``; sinks' in the consumer group ``connect-<name>``, as everywhere.

One process owns the config store, the status store, the worker and the REST herder: the herder
tells the worker herder of pauses, stops and restarts in-process (it is the ``RunControl``). This
mode is for one node; to spread copies over many machines, let Airflow run the stored connectors
(``dags/kopycat_connectors.py``) beside ``kopycat rest`` instead, and do not run both.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from kopycat.rest.app import create_app
from kopycat.rest.herder import RestHerder
from kopycat.rest.metrics_route import add_metrics_route
from kopycat.rest.server import kafka_cluster_id, run_app
from kopycat.runtime.metrics import ConnectMetrics
from kopycat.runtime.otel_metrics import start_otel_metrics
from kopycat.runtime.standalone import add_plugin_path
from kopycat.runtime.worker import Worker
from kopycat.runtime.worker_herder import WorkerHerder
from kopycat.storage.config_backing_store import ConfigBackingStore, KafkaConfigBackingStore
from kopycat.storage.kafka_offset_store import KafkaOffsetStore
from kopycat.storage.status_backing_store import KafkaStatusBackingStore

__all__ = ["running_worker", "serve_worker"]

log = logging.getLogger(__name__)


def _task_configs_writer(configs: ConfigBackingStore) -> Callable[[str, list[dict[str, str]]], None]:
    """Writes a plan's task configs to the config topic (``GET /connectors/{name}/tasks`` shows them)."""
    def write(name: str, task_configs: list[dict[str, str]]) -> None:
        try:
            configs.put_task_configs(name, task_configs)
        except Exception:  # noqa: BLE001 - deleted meanwhile, or the broker is away: the tasks still run
            log.warning("Could not write the task configs of connector %s", name, exc_info=True)
    return write


@contextmanager
def running_worker(worker_props: Mapping[str, Any], worker_id: str, *, poll_interval_s: float = 1.0,
                   metrics: ConnectMetrics | None = None) -> Iterator[RestHerder]:
    """The stores, the worker and its herder, started; yields the REST herder over them.
    ``metrics`` receives the worker's and its tasks' metrics.

    On exit every task stops (each commits its offsets, statuses say UNASSIGNED), then the stores.
    """
    add_plugin_path(worker_props)
    with KafkaConfigBackingStore.from_config(worker_props) as configs:
        worker = Worker(worker_props, KafkaOffsetStore.from_config(worker_props),
                        status_store=KafkaStatusBackingStore.from_config(worker_props), worker_id=worker_id,
                        task_configs_listener=_task_configs_writer(configs), metrics=metrics)
        with worker:
            herder = WorkerHerder(worker, configs, poll_interval_s=poll_interval_s)
            herder.start()
            try:
                yield RestHerder(configs, worker.status_store, worker_props, worker_id=worker_id,
                                 kafka_cluster_id=kafka_cluster_id(worker_props), run_control=herder,
                                 runner_reports_states=True)
            finally:
                herder.stop()


def serve_worker(worker_props: Mapping[str, Any], host: str = "127.0.0.1", port: int = 8083,
                 token: str | None = None) -> None:
    """Serve the REST API and run the stored connectors until interrupted (Ctrl-C or SIGTERM)."""
    metrics = ConnectMetrics()
    with running_worker(worker_props, worker_id=f"{host}:{port}", metrics=metrics) as herder:
        log.info("Kopycat worker %s:%s runs the connectors stored in the config topic", host, port)
        app = create_app(herder, token=token)
        add_metrics_route(app, metrics)
        otel = start_otel_metrics(metrics)
        run_app(app, host, port, token)
        if otel is not None:
            otel.shutdown()
