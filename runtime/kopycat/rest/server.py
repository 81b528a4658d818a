"""Running the REST API on its own: ``kopycat rest worker.properties`` (Kafka's ``RestServer``).

Connector configs and statuses live on the Kafka topics named by the worker properties
(``config.storage.topic``, ``status.storage.topic``, as Kafka Connect's distributed worker), so
Airflow runs and this server see the same connectors. The server binds 127.0.0.1 unless told
otherwise: Kafka Connect's API has no authentication of its own, and neither has this one
without a bearer token.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from fastapi import FastAPI

from kopycat.kafka import client_config
from kopycat.rest.app import create_app
from kopycat.rest.herder import RestHerder
from kopycat.rest.metrics_route import add_metrics_route
from kopycat.runtime.metrics import ConnectMetrics
from kopycat.runtime.otel_metrics import start_otel_metrics
from kopycat.runtime.worker_metrics import WORKER_GROUP, worker_groups
from kopycat.storage.config_backing_store import KafkaConfigBackingStore
from kopycat.storage.status_backing_store import KafkaStatusBackingStore

__all__ = ["kafka_cluster_id", "run_app", "serve"]

log = logging.getLogger(__name__)


def kafka_cluster_id(worker_props: Mapping[str, Any], timeout_s: float = 10.0) -> str | None:
    """The Kafka cluster's id for ``GET /``, or None (logged) when the cluster does not answer."""
    try:
        admin = AdminClient(client_config(worker_props, {}, "admin"))
        return admin.describe_cluster(request_timeout=timeout_s).result(timeout_s).cluster_id  # type: ignore[no-any-return]
    except (KafkaException, TimeoutError) as exc:
        log.warning("Could not read the Kafka cluster id from %s: %s", worker_props.get("bootstrap.servers"), exc)
        return None


def serve(worker_props: Mapping[str, Any], host: str = "127.0.0.1", port: int = 8083,
          token: str | None = None) -> None:
    """Serve the REST API until interrupted, over Kafka stores built from ``worker_props``.

    Blocks; uvicorn stops on Ctrl-C or SIGTERM, then the stores are closed.
    """
    with KafkaConfigBackingStore.from_config(worker_props) as configs, \
            KafkaStatusBackingStore.from_config(worker_props) as statuses:
        herder = RestHerder(configs, statuses, worker_props, worker_id=f"{host}:{port}",
                            kafka_cluster_id=kafka_cluster_id(worker_props))
        metrics = ConnectMetrics()
        metrics.register(WORKER_GROUP, worker_groups(statuses))
        app = create_app(herder, token=token)
        add_metrics_route(app, metrics)
        otel = start_otel_metrics(metrics)
        run_app(app, host, port, token)
        if otel is not None:
            otel.shutdown()


def run_app(app: FastAPI, host: str, port: int, token: str | None) -> None:
    """Serve ``app`` with uvicorn until Ctrl-C or SIGTERM."""
    import uvicorn

    log.info("Kopycat REST API on http://%s:%s (bearer token %s)", host, port, "required" if token else "not required")
    uvicorn.run(app, host=host, port=port, log_level="info")
