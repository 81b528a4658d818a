"""Reading and resetting a connector's offsets from outside it (KIP-875, ``kopycat offsets``).

Source offsets live in the offset store (a file in standalone mode, else ``connect-offsets``);
sink offsets in the consumer group ``connect-<connector>``. Shapes are KIP-875's REST bodies:
``{"offsets": [{"partition": {...}, "offset": {...}}]}``, sink partitions as
``{"kafka_topic": t, "kafka_partition": p}`` with ``{"kafka_offset": n}``. Like Kafka, change
offsets only while the connector is stopped: a running task would overwrite them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions
from confluent_kafka.admin import AdminClient

from kopycat.kafka import client_config
from kopycat.storage.config import OFFSET_STORAGE_FILE_FILENAME_CONFIG
from kopycat.storage.file_offset_store import FileOffsetStore
from kopycat.storage.kafka_offset_store import KafkaOffsetStore
from kopycat.storage.offset_codec import encode_key
from kopycat.storage.offset_storage import OffsetStorageReaderImpl
from kopycat.storage.offset_store import OffsetBackingStore

__all__ = ["get_offsets", "offset_store_for", "reset_offsets"]


def offset_store_for(worker_props: Mapping[str, Any]) -> OffsetBackingStore:
    """The worker's source offset store: the file if configured, else the Kafka topic."""
    filename = worker_props.get(OFFSET_STORAGE_FILE_FILENAME_CONFIG)
    if filename:
        return FileOffsetStore(str(filename))
    return KafkaOffsetStore.from_config(worker_props)


def _group_offsets(admin: AdminClient, connector: str) -> list[dict[str, Any]]:
    request = [ConsumerGroupTopicPartitions(f"connect-{connector}")]
    result = admin.list_consumer_group_offsets(request)[f"connect-{connector}"].result(30)
    return [{"partition": {"kafka_topic": tp.topic, "kafka_partition": tp.partition},
             "offset": {"kafka_offset": tp.offset}}
            for tp in sorted(result.topic_partitions, key=lambda t: (t.topic, t.partition)) if tp.offset >= 0]


def get_offsets(connector: str, worker_props: Mapping[str, Any]) -> dict[str, Any]:
    """KIP-875's ``GET /connectors/{name}/offsets`` body: source offsets, else the sink group's."""
    with offset_store_for(worker_props) as store:
        partitions = [p for p in store.connector_partitions(connector) if p is not None]
        found = OffsetStorageReaderImpl(store, connector).offsets(partitions)
    offsets = [{"partition": p, "offset": o} for p, o in found if o is not None]
    if not offsets and worker_props.get("bootstrap.servers"):
        offsets = _group_offsets(AdminClient(client_config(worker_props, {}, "admin")), connector)
    return {"offsets": offsets}


def reset_offsets(connector: str, worker_props: Mapping[str, Any]) -> dict[str, Any]:
    """Forget every offset of ``connector`` (tombstones; the sink group is deleted). KIP-875's DELETE."""
    with offset_store_for(worker_props) as store:
        partitions = [p for p in store.connector_partitions(connector) if p is not None]
        store.set({encode_key(connector, p): None for p in partitions}).result(60)
    groups = 0
    if worker_props.get("bootstrap.servers"):
        admin = AdminClient(client_config(worker_props, {}, "admin"))
        try:
            admin.delete_consumer_groups([f"connect-{connector}"])[f"connect-{connector}"].result(30)
            groups = 1
        except Exception:  # noqa: BLE001 - no such group: nothing to reset
            groups = 0
    return {"message": f"The offsets for connector {connector} have been reset successfully "
                       f"({len(partitions)} source partitions, {groups} consumer group)"}
