"""Asset URIs for data-aware scheduling: what Kopycat tasks read and write.

``kafka://<bootstrap host:port>/<topic>`` is the form of Airflow's apache-kafka provider, so an
export DAG can be scheduled on the topic an import DAG writes::

    schedule=[kafka_asset("127.0.0.1:9092", "shop-orders")]

A copy task and a run's summary task emit the topics they wrote the same way,
:func:`emit_topic_events`: one event per topic on each alias among their outlets (Airflow's
``outlet_events[alias].add``, how a task attaches assets known only at run time).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from airflow.sdk import Asset, AssetAlias, Context

__all__ = ["connector_alias", "emit_topic_events", "kafka_asset"]


def kafka_asset(cluster: str, topic: str) -> Asset:
    """The asset of one topic of one cluster."""
    return Asset(uri=f"kafka://{cluster}/{topic}", name=f"kafka://{cluster}/{topic}")


def connector_alias(connector: str) -> AssetAlias:
    """The alias a connector's copy tasks attach their written topics to."""
    return AssetAlias(f"kopycat:{connector}")


def emit_topic_events(context: Context, outlets: Iterable[object], cluster: Callable[[], str],
                      topics: Iterable[str], extra: Mapping[str, Any]) -> None:
    """An asset event ``kafka://<cluster>/<topic>`` with ``extra`` per topic written, on each
    :class:`AssetAlias` among ``outlets``. ``cluster`` is asked only when there is an event to emit,
    so a task without aliases opens no connection for it."""
    aliases = [outlet for outlet in outlets if isinstance(outlet, AssetAlias)]
    written = sorted(topics)
    if not aliases or not written:
        return
    assets = [kafka_asset(cluster(), topic) for topic in written]
    for alias in aliases:
        for asset in assets:
            context["outlet_events"][alias].add(asset, extra=dict(extra))
