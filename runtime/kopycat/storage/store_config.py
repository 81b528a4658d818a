"""Worker configuration keys of the config and status stores, named and defaulted as Kafka Connect's.

``config.storage.*`` and ``status.storage.*`` come from Kafka's ``DistributedConfig``, where the
topic names have no default; Kopycat defaults them to the names Kafka Connect's quickstart uses,
as it does ``offset.storage.topic`` (:mod:`kopycat.storage.config`). The config topic has no
partitions key: it always has exactly one partition (``KafkaConfigBackingStore`` refuses more).
The worker's own definition merges these (``ConfigDef.merge``), so each key is defined once.
"""

from __future__ import annotations

from typing import Final

from kopycat.api.config import ConfigDef, ConfigType, Importance, NonEmptyString
from kopycat.storage.config import _POSITIVE_OR_MINUS_ONE

__all__ = [
    "CONFIG_STORAGE_REPLICATION_FACTOR_CONFIG", "CONFIG_STORAGE_TOPIC_CONFIG", "CONFIG_STORAGE_TOPIC_DEFAULT",
    "KAFKA_CONFIG_STORE_CONFIG", "KAFKA_STATUS_STORE_CONFIG", "STATUS_STORAGE_PARTITIONS_CONFIG",
    "STATUS_STORAGE_REPLICATION_FACTOR_CONFIG", "STATUS_STORAGE_TOPIC_CONFIG", "STATUS_STORAGE_TOPIC_DEFAULT",
]

CONFIG_STORAGE_TOPIC_CONFIG: Final = "config.storage.topic"
CONFIG_STORAGE_TOPIC_DEFAULT: Final = "connect-configs"
CONFIG_STORAGE_REPLICATION_FACTOR_CONFIG: Final = "config.storage.replication.factor"
STATUS_STORAGE_TOPIC_CONFIG: Final = "status.storage.topic"
STATUS_STORAGE_TOPIC_DEFAULT: Final = "connect-status"
STATUS_STORAGE_PARTITIONS_CONFIG: Final = "status.storage.partitions"
STATUS_STORAGE_REPLICATION_FACTOR_CONFIG: Final = "status.storage.replication.factor"

KAFKA_CONFIG_STORE_CONFIG: Final = (
    ConfigDef()
    .define(CONFIG_STORAGE_TOPIC_CONFIG, ConfigType.STRING, default=CONFIG_STORAGE_TOPIC_DEFAULT,
            validator=NonEmptyString(), importance=Importance.HIGH,
            doc="The name of the Kafka topic where connector configurations are stored. Kafka Connect "
                "workers using the same topic see the same connectors.")
    .define(CONFIG_STORAGE_REPLICATION_FACTOR_CONFIG, ConfigType.SHORT, default=3,
            validator=_POSITIVE_OR_MINUS_ONE, importance=Importance.LOW,
            doc="Replication factor used when creating the configuration storage topic; -1 uses the "
                "broker's default.replication.factor.")
)

KAFKA_STATUS_STORE_CONFIG: Final = (
    ConfigDef()
    .define(STATUS_STORAGE_TOPIC_CONFIG, ConfigType.STRING, default=STATUS_STORAGE_TOPIC_DEFAULT,
            validator=NonEmptyString(), importance=Importance.HIGH,
            doc="The name of the Kafka topic where connector and task status are stored.")
    .define(STATUS_STORAGE_PARTITIONS_CONFIG, ConfigType.INT, default=5, validator=_POSITIVE_OR_MINUS_ONE,
            importance=Importance.LOW,
            doc="The number of partitions used when creating the status storage topic.")
    .define(STATUS_STORAGE_REPLICATION_FACTOR_CONFIG, ConfigType.SHORT, default=3,
            validator=_POSITIVE_OR_MINUS_ONE, importance=Importance.LOW,
            doc="Replication factor used when creating the status storage topic; -1 uses the "
                "broker's default.replication.factor.")
)
