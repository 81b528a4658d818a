"""Asset URIs for data-aware scheduling: what Kopycat tasks read and write.

``kafka://<bootstrap host:port>/<topic>`` is the form of Airflow's apache-kafka provider, so an
export DAG can be scheduled on the topic an import DAG writes::

    schedule=[kafka_asset("127.0.0.1:9092", "shop-orders")]
"""

from __future__ import annotations

from airflow.sdk import Asset, AssetAlias

__all__ = ["connector_alias", "kafka_asset"]


def kafka_asset(cluster: str, topic: str) -> Asset:
    """The asset of one topic of one cluster."""
    return Asset(uri=f"kafka://{cluster}/{topic}", name=f"kafka://{cluster}/{topic}")


def connector_alias(connector: str) -> AssetAlias:
    """The alias a connector's copy tasks attach their written topics to."""
    return AssetAlias(f"kopycat:{connector}")
