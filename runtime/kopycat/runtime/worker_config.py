"""Worker configuration: the keys of a Kafka Connect ``worker.properties``.

Follows Kafka's ``WorkerConfig`` and ``StandaloneConfig`` (same names, defaults and meaning), so
a standalone worker file written for Kafka Connect runs unchanged. Client settings pass through
with their prefixes (``producer.*``, ``consumer.*``, ``admin.*``; see :mod:`kopycat.kafka`), and
converter settings with theirs (``key.converter.schemas.enable=false``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kopycat.api.config import (
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigType,
    Importance,
    LambdaValidator,
    NonEmptyString,
    Range,
)
from kopycat.api.converter import Converter, HeaderConverter
from kopycat.client_security import CLIENT_SECURITY_CONFIG
from kopycat.plugins import converter_class, header_converter_class, new_converter, new_header_converter
from kopycat.runtime.lineage_config import OPENLINEAGE_CONFIG
from kopycat.storage.worker_storage_config import FILE_OFFSET_STORE_CONFIG, KAFKA_OFFSET_STORE_CONFIG

__all__ = [
    "BOOTSTRAP_SERVERS_CONFIG", "EXACTLY_ONCE_SOURCE_SUPPORT_CONFIG", "GROUP_ID_CONFIG",
    "OFFSET_COMMIT_INTERVAL_MS_CONFIG", "OFFSET_COMMIT_TIMEOUT_MS_CONFIG", "STANDALONE_CONFIG",
    "TASK_ISOLATION_CONFIG", "TASK_ISOLATION_PROCESS", "TASK_ISOLATION_THREAD",
    "TASK_SHUTDOWN_GRACEFUL_TIMEOUT_MS_CONFIG", "TOPIC_TRACKING_ALLOW_RESET_CONFIG", "TOPIC_TRACKING_ENABLE_CONFIG",
    "WORKER_CONFIG", "converters_for",
]

BOOTSTRAP_SERVERS_CONFIG: Final = "bootstrap.servers"
GROUP_ID_CONFIG: Final = "group.id"
KEY_CONVERTER_CLASS_CONFIG: Final = "key.converter"
VALUE_CONVERTER_CLASS_CONFIG: Final = "value.converter"
HEADER_CONVERTER_CLASS_CONFIG: Final = "header.converter"
OFFSET_COMMIT_INTERVAL_MS_CONFIG: Final = "offset.flush.interval.ms"
OFFSET_COMMIT_TIMEOUT_MS_CONFIG: Final = "offset.flush.timeout.ms"
TASK_SHUTDOWN_GRACEFUL_TIMEOUT_MS_CONFIG: Final = "task.shutdown.graceful.timeout.ms"
TASK_ISOLATION_CONFIG: Final = "task.isolation"
TASK_ISOLATION_PROCESS: Final = "process"
TASK_ISOLATION_THREAD: Final = "thread"
EXACTLY_ONCE_SOURCE_SUPPORT_CONFIG: Final = "exactly.once.source.support"
TOPIC_CREATION_ENABLE_CONFIG: Final = "topic.creation.enable"
TOPIC_TRACKING_ENABLE_CONFIG: Final = "topic.tracking.enable"
TOPIC_TRACKING_ALLOW_RESET_CONFIG: Final = "topic.tracking.allow.reset"
PLUGIN_PATH_CONFIG: Final = "plugin.path"
METRICS_PORT_CONFIG: Final = "metrics.port"
JSON_CONVERTER: Final = "org.apache.kafka.connect.json.JsonConverter"

_CONVERTER: Final = LambdaValidator(lambda name, value: converter_class(value, name), "A converter class")
_HEADER_CONVERTER: Final = LambdaValidator(lambda name, value: header_converter_class(value, name),
                                           "A header converter class")

WORKER_CONFIG: Final = (
    ConfigDef()
    .define(BOOTSTRAP_SERVERS_CONFIG, ConfigType.LIST, "localhost:9092", importance=Importance.HIGH,
            doc="host:port pairs of the Kafka cluster the worker's clients connect to first.")
    .define(GROUP_ID_CONFIG, ConfigType.STRING, "kopycat", NonEmptyString(), Importance.MEDIUM,
            doc="Names this worker group; exactly-once source tasks use the transactional id "
                "<group.id>-<connector>-<task>.")
    .define(KEY_CONVERTER_CLASS_CONFIG, ConfigType.STRING, JSON_CONVERTER, _CONVERTER, Importance.HIGH,
            doc="Converter class for record keys; the format Kafka sees. Settings go under "
                "key.converter.*, e.g. key.converter.schemas.enable=false.")
    .define(VALUE_CONVERTER_CLASS_CONFIG, ConfigType.STRING, JSON_CONVERTER, _CONVERTER, Importance.HIGH,
            doc="Converter class for record values, configured under value.converter.*.")
    .define(HEADER_CONVERTER_CLASS_CONFIG, ConfigType.STRING,
            "org.apache.kafka.connect.storage.StringConverter", _HEADER_CONVERTER, Importance.LOW,
            doc="Converter class for header values, configured under header.converter.*.")
    .define(OFFSET_COMMIT_INTERVAL_MS_CONFIG, ConfigType.LONG, 60_000, Range(min=0), Importance.LOW,
            doc="Interval at which to try committing offsets for tasks.")
    .define(OFFSET_COMMIT_TIMEOUT_MS_CONFIG, ConfigType.LONG, 5_000, Range(min=0), Importance.LOW,
            doc="Milliseconds to wait for records to be acknowledged and offsets written before "
                "cancelling a commit and retrying it at the next interval.")
    .define(TASK_SHUTDOWN_GRACEFUL_TIMEOUT_MS_CONFIG, ConfigType.LONG, 5_000, Range(min=0),
            Importance.LOW, doc="How long to wait for tasks to shut down gracefully.")
    .define(TASK_ISOLATION_CONFIG, ConfigType.STRING, TASK_ISOLATION_PROCESS,
            CaseInsensitiveValidString([TASK_ISOLATION_PROCESS, TASK_ISOLATION_THREAD]), Importance.MEDIUM,
            doc="Kopycat's own key: where `kopycat standalone`, `kopycat worker` and the embedded worker run "
                "each task. 'process' (the default) runs every task config in a child process (forked from a server "
                "process that imported the runtime, multiprocessing's 'forkserver'), so tasks.max > 1 uses more "
                "than one core; the child reports its status, "
                "metrics and summary to the worker and reads and writes offsets through it. 'thread' runs "
                "every task as a thread of the worker's process, sharing one interpreter lock: cheaper to "
                "start (no interpreter per task), and needed by task classes the child cannot import (defined "
                "in __main__ or in a function). Exactly-once source tasks always run as threads: their "
                "transactions write the offsets topic with the task's own producer.")
    .define(EXACTLY_ONCE_SOURCE_SUPPORT_CONFIG, ConfigType.STRING, "disabled",
            CaseInsensitiveValidString(["disabled", "enabled"]), Importance.HIGH,
            doc="'enabled' runs every source task with transactions: records and their offsets are "
                "committed together (KIP-618); needs the Kafka offset store.")
    .define(TOPIC_CREATION_ENABLE_CONFIG, ConfigType.BOOLEAN, True, importance=Importance.LOW,
            doc="Whether source connectors may create their topics with topic.creation.* keys.")
    .define(TOPIC_TRACKING_ENABLE_CONFIG, ConfigType.BOOLEAN, True, importance=Importance.LOW,
            doc="Record the topics each connector uses in the status topic (KIP-558), listed by "
                "GET /connectors/{name}/topics.")
    .define(TOPIC_TRACKING_ALLOW_RESET_CONFIG, ConfigType.BOOLEAN, True, importance=Importance.LOW,
            doc="Allow PUT /connectors/{name}/topics/reset to clear a connector's recorded topics.")
    .define(PLUGIN_PATH_CONFIG, ConfigType.LIST, [], importance=Importance.LOW,
            doc="Directories added to the Python import path, where connector modules can be found "
                "(Kafka's plugin.path holds jars instead).")
    .define(METRICS_PORT_CONFIG, ConfigType.INT, 0, Range(min=0, max=65535), Importance.LOW,
            doc="Kopycat's own key: a port on 127.0.0.1 where `kopycat standalone` serves /metrics in "
                "Prometheus text format, named as Kafka Connect's JMX exporter names them; 0 (the "
                "default) serves none. `kopycat rest` and `kopycat worker` serve /metrics on their REST port.")
    .merge(CLIENT_SECURITY_CONFIG)
    .merge(OPENLINEAGE_CONFIG)
)
"""Kafka's ``WorkerConfig`` keys that Kopycat uses."""

STANDALONE_CONFIG: Final = WORKER_CONFIG.merge(FILE_OFFSET_STORE_CONFIG)
"""Kafka's ``StandaloneConfig``: the worker keys plus ``offset.storage.file.filename``."""

KAFKA_STORE_WORKER_CONFIG: Final = WORKER_CONFIG.merge(KAFKA_OFFSET_STORE_CONFIG)
"""A worker that keeps offsets on the ``connect-offsets`` topic (Airflow runs, exactly-once)."""


def converters_for(worker_props: Mapping[str, Any], connector_props: Mapping[str, Any]
                   ) -> tuple[Converter, Converter, HeaderConverter]:
    """The key, value and header converters of a task, configured as Kafka's ``Worker`` does.

    A connector's ``key.converter`` replaces the worker's, and then only the connector's
    ``key.converter.*`` keys configure it; otherwise the worker's class and keys are used.
    """
    def pick(key: str) -> tuple[str, dict[str, Any]]:
        source = connector_props if connector_props.get(key) else worker_props
        name = source.get(key) or WORKER_CONFIG.keys[key].default
        prefix = key + "."
        return name, {k[len(prefix):]: v for k, v in source.items() if k.startswith(prefix)}

    key_name, key_configs = pick(KEY_CONVERTER_CLASS_CONFIG)
    value_name, value_configs = pick(VALUE_CONVERTER_CLASS_CONFIG)
    header_name, header_configs = pick(HEADER_CONVERTER_CLASS_CONFIG)
    return (new_converter(KEY_CONVERTER_CLASS_CONFIG, key_name, key_configs, is_key=True),
            new_converter(VALUE_CONVERTER_CLASS_CONFIG, value_name, value_configs, is_key=False),
            new_header_converter(HEADER_CONVERTER_CLASS_CONFIG, header_name, header_configs))
