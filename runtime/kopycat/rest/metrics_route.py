"""``GET /metrics`` on a REST app: Kafka Connect's metrics in Prometheus text format.

``kopycat worker`` exports its worker's registry (every running task's groups and the worker's);
``kopycat rest`` runs no task, so it exports the worker groups of the connectors its status store
knows. Names: :mod:`kopycat.runtime.prometheus_metrics`.
"""

from __future__ import annotations

from fastapi import FastAPI, Response

from kopycat.runtime.metrics import ConnectMetrics
from kopycat.runtime.prometheus_metrics import CONTENT_TYPE, prometheus_text

__all__ = ["add_metrics_route"]


def add_metrics_route(app: FastAPI, metrics: ConnectMetrics) -> None:
    """Serve ``metrics`` at ``GET /metrics`` (behind the app's bearer token, when it has one)."""
    @app.get("/metrics", summary="Kafka Connect's metrics in Prometheus text format", include_in_schema=False)
    def scrape() -> Response:
        return Response(prometheus_text(metrics), media_type=CONTENT_TYPE)
