"""Worker configuration keys of the offset, config and status stores, named and defaulted as Kafka Connect's.

``offset.storage.topic``/``.partitions``/``.replication.factor``, ``config.storage.*`` and
``status.storage.*`` come from Kafka's ``DistributedConfig``, ``offset.storage.file.filename`` from
``StandaloneConfig``. Kafka leaves the config and status topic names without a default; Kopycat
defaults them to the names Kafka Connect's quickstart uses, as it does ``offset.storage.topic``.
The config topic has no partitions key: it always has exactly one partition
(``KafkaConfigBackingStore`` refuses more). The worker's own definition merges these
(``ConfigDef.merge``), so each key is defined once.
"""

from __future__ import annotations

from typing import Any, Final

from kopycat.api.config import ConfigDef, ConfigType, Importance, LambdaValidator, NonEmptyString
from kopycat.api.errors import ConfigError

__all__ = [
    "CONFIG_STORAGE_REPLICATION_FACTOR_CONFIG", "CONFIG_STORAGE_TOPIC_CONFIG", "CONFIG_STORAGE_TOPIC_DEFAULT",
    "FILE_OFFSET_STORE_CONFIG", "KAFKA_CONFIG_STORE_CONFIG", "KAFKA_OFFSET_STORE_CONFIG", "KAFKA_STATUS_STORE_CONFIG",
    "OFFSET_STORAGE_FILE_FILENAME_CONFIG", "OFFSET_STORAGE_PARTITIONS_CONFIG",
    "OFFSET_STORAGE_REPLICATION_FACTOR_CONFIG", "OFFSET_STORAGE_TOPIC_CONFIG", "OFFSET_STORAGE_TOPIC_DEFAULT",
    "POSITIVE_OR_MINUS_ONE", "STATUS_STORAGE_PARTITIONS_CONFIG", "STATUS_STORAGE_REPLICATION_FACTOR_CONFIG",
    "STATUS_STORAGE_TOPIC_CONFIG", "STATUS_STORAGE_TOPIC_DEFAULT",
]

OFFSET_STORAGE_TOPIC_CONFIG: Final = "offset.storage.topic"
OFFSET_STORAGE_TOPIC_DEFAULT: Final = "connect-offsets"
OFFSET_STORAGE_PARTITIONS_CONFIG: Final = "offset.storage.partitions"
OFFSET_STORAGE_REPLICATION_FACTOR_CONFIG: Final = "offset.storage.replication.factor"
OFFSET_STORAGE_FILE_FILENAME_CONFIG: Final = "offset.storage.file.filename"
CONFIG_STORAGE_TOPIC_CONFIG: Final = "config.storage.topic"
CONFIG_STORAGE_TOPIC_DEFAULT: Final = "connect-configs"
CONFIG_STORAGE_REPLICATION_FACTOR_CONFIG: Final = "config.storage.replication.factor"
STATUS_STORAGE_TOPIC_CONFIG: Final = "status.storage.topic"
STATUS_STORAGE_TOPIC_DEFAULT: Final = "connect-status"
STATUS_STORAGE_PARTITIONS_CONFIG: Final = "status.storage.partitions"
STATUS_STORAGE_REPLICATION_FACTOR_CONFIG: Final = "status.storage.replication.factor"


def _positive_or_minus_one(name: str, value: Any) -> None:
    if value is not None and value != -1 and value < 1:
        raise ConfigError.for_key(name, value, "must be a positive number, or -1 to use the broker's default")


POSITIVE_OR_MINUS_ONE: Final = LambdaValidator(
    _positive_or_minus_one, "Positive number, or -1 to use the broker's default")
"""Kafka's ``PARTITIONS_VALIDATOR`` / ``REPLICATION_FACTOR_VALIDATOR``: > 0, or -1 for the broker default."""

KAFKA_OFFSET_STORE_CONFIG: Final = (
    ConfigDef()
    .define(OFFSET_STORAGE_TOPIC_CONFIG, ConfigType.STRING, default=OFFSET_STORAGE_TOPIC_DEFAULT,
            validator=NonEmptyString(), importance=Importance.HIGH,
            doc="The name of the Kafka topic where source connector offsets are stored. Kafka Connect "
                "workers using the same topic see the same offsets.")
    .define(OFFSET_STORAGE_PARTITIONS_CONFIG, ConfigType.INT, default=25, validator=POSITIVE_OR_MINUS_ONE,
            importance=Importance.LOW,
            doc="The number of partitions used when creating the offset storage topic.")
    .define(OFFSET_STORAGE_REPLICATION_FACTOR_CONFIG, ConfigType.SHORT, default=3,
            validator=POSITIVE_OR_MINUS_ONE, importance=Importance.LOW,
            doc="Replication factor used when creating the offset storage topic; -1 uses the "
                "broker's default.replication.factor.")
)

FILE_OFFSET_STORE_CONFIG: Final = ConfigDef().define(
    OFFSET_STORAGE_FILE_FILENAME_CONFIG, ConfigType.STRING, validator=NonEmptyString(),
    importance=Importance.HIGH, doc="File to store source connector offsets in (standalone mode).")

KAFKA_CONFIG_STORE_CONFIG: Final = (
    ConfigDef()
    .define(CONFIG_STORAGE_TOPIC_CONFIG, ConfigType.STRING, default=CONFIG_STORAGE_TOPIC_DEFAULT,
            validator=NonEmptyString(), importance=Importance.HIGH,
            doc="The name of the Kafka topic where connector configurations are stored. Kafka Connect "
                "workers using the same topic see the same connectors.")
    .define(CONFIG_STORAGE_REPLICATION_FACTOR_CONFIG, ConfigType.SHORT, default=3,
            validator=POSITIVE_OR_MINUS_ONE, importance=Importance.LOW,
            doc="Replication factor used when creating the configuration storage topic; -1 uses the "
                "broker's default.replication.factor.")
)

KAFKA_STATUS_STORE_CONFIG: Final = (
    ConfigDef()
    .define(STATUS_STORAGE_TOPIC_CONFIG, ConfigType.STRING, default=STATUS_STORAGE_TOPIC_DEFAULT,
            validator=NonEmptyString(), importance=Importance.HIGH,
            doc="The name of the Kafka topic where connector and task status are stored.")
    .define(STATUS_STORAGE_PARTITIONS_CONFIG, ConfigType.INT, default=5, validator=POSITIVE_OR_MINUS_ONE,
            importance=Importance.LOW,
            doc="The number of partitions used when creating the status storage topic.")
    .define(STATUS_STORAGE_REPLICATION_FACTOR_CONFIG, ConfigType.SHORT, default=3,
            validator=POSITIVE_OR_MINUS_ONE, importance=Importance.LOW,
            doc="Replication factor used when creating the status storage topic; -1 uses the "
                "broker's default.replication.factor.")
)
