"""Builds a runner for one task config: the one place worker and connector props meet.

Kafka's ``Worker.buildWorkerTask`` is the model: converters (connector's over worker's),
the transformation chain, error handling and the Kafka clients' configs are made here, so the
standalone worker, the embedded API and the Airflow operators run tasks identically.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from kopycat.api.bounded import BOUNDED_RUN_CONFIG
from kopycat.api.config import parse_type
from kopycat.api.connector import ConnectorTransactionBoundaries, ExactlyOnceSupport, SourceConnector
from kopycat.api.errors import ConfigError, ConnectError
from kopycat.api.records import TopicPartition
from kopycat.api.task import SinkTask, SourceTask
from kopycat.kafka import (
    SINK_CONSUMER_DEFAULTS,
    SOURCE_PRODUCER_DEFAULTS,
    SOURCE_PRODUCER_FORCED,
    client_config,
    consumer_group_id,
)
from kopycat.plugins import connector_class
from kopycat.runtime.bounds import Bounds
from kopycat.runtime.config_transformer import resolve_connector_config, resolve_task_configs, resolve_worker_config
from kopycat.runtime.connector_config import (
    AT_MOST_ONCE,
    CONNECTOR_CLASS_CONFIG,
    DELIVERY_GUARANTEE_CONFIG,
    EXACTLY_ONCE_SUPPORT_CONFIG,
    HEADER_CONVERTER_CONFIG,
    KEY_CONVERTER_CONFIG,
    SINK_CONNECTOR_CONFIG,
    TOPICS_CONFIG,
    TOPICS_REGEX_CONFIG,
    TRANSACTION_BOUNDARY_CONFIG,
    TRANSACTION_BOUNDARY_INTERVAL_CONFIG,
    VALUE_CONVERTER_CONFIG,
    at_most_once,
)
from kopycat.runtime.error_reporters import build_reporters
from kopycat.runtime.errors import RetryWithToleranceOperator
from kopycat.runtime.exactly_once_source_runner import ExactlyOnceSourceTaskRunner, fence_zombies
from kopycat.runtime.planning import task_class_of
from kopycat.runtime.sink_runner import SinkTaskRunner
from kopycat.runtime.source_runner import SourceTaskRunner
from kopycat.runtime.task_parts import TaskId, TaskParts
from kopycat.runtime.topic_creation import TopicCreator, topic_creation_groups
from kopycat.runtime.worker_config import (
    BOOTSTRAP_SERVERS_CONFIG,
    EXACTLY_ONCE_SOURCE_SUPPORT_CONFIG,
    GROUP_ID_CONFIG,
    OFFSET_COMMIT_INTERVAL_MS_CONFIG,
    OFFSET_COMMIT_TIMEOUT_MS_CONFIG,
    TOPIC_CREATION_ENABLE_CONFIG,
    WORKER_CONFIG,
    converters_for,
)
from kopycat.storage.connector_offset_backing_store import ConnectorOffsetBackingStore
from kopycat.storage.kafka_offset_store import KafkaOffsetStore
from kopycat.storage.offset_backing_store import OffsetBackingStore
from kopycat.transforms.chain import TransformationChain

__all__ = [
    "build_sink_runner", "build_source_runner", "build_task_parts", "build_task_runner", "check_task_parts",
    "exactly_once_enabled",
    "fence_source_tasks", "sink_consumer_config", "with_converter_defaults",
]

_DLQ_PREFIX = "errors.deadletterqueue."
_CONVERTER_KEYS = (KEY_CONVERTER_CONFIG, VALUE_CONVERTER_CONFIG, HEADER_CONVERTER_CONFIG)


def build_task_parts(task_id: TaskId, connector_props: Mapping[str, Any], worker_props: Mapping[str, Any],
                     *, sink: bool) -> TaskParts:
    """Converters, transformations and error handling for one task of this connector."""
    key_converter, value_converter, header_converter = converters_for(
        worker_props, with_converter_defaults(connector_props))
    transforms = TransformationChain.from_props(connector_props)
    error_props = connector_props if sink else {k: v for k, v in connector_props.items()
                                                  if not k.startswith(_DLQ_PREFIX)}
    servers = WORKER_CONFIG.parse(worker_props)[BOOTSTRAP_SERVERS_CONFIG]
    reporters = build_reporters(error_props, connector_name=task_id.connector, task_id=task_id.task,
                                bootstrap_servers=",".join(servers),
                                producer_overrides=client_config({}, connector_props, "producer"))
    retry = RetryWithToleranceOperator.from_config(connector_props, reporters)
    return TaskParts(key_converter, value_converter, header_converter, transforms, retry)


def check_task_parts(connector_props: Mapping[str, Any], worker_props: Mapping[str, Any] | None = None) -> None:
    """Build, then close, the parts every task of this connector builds before it copies.

    Converters with their ``*.converter.*`` keys, transformations and error handling (not the
    dead letter queue, which needs the cluster): ``kopycat validate`` calls this so a config it
    accepts is one a run accepts. Raises ConfigError naming the key, as the run would.
    """
    worker = worker_props or {}
    key_converter, value_converter, header_converter = converters_for(worker, with_converter_defaults(connector_props))
    parts = TaskParts(key_converter, value_converter, header_converter, TransformationChain.from_props(connector_props),
                      RetryWithToleranceOperator.from_config(connector_props))
    parts.close()


def with_converter_defaults(connector_props: Mapping[str, Any]) -> Mapping[str, Any]:
    """``connector_props`` plus the converters the connector's own ``config()`` defaults to.

    A connector that copies bytes (MirrorSourceConnector: ByteArrayConverter, as the MM2 driver
    sets) declares ``key.converter``/``value.converter``/``header.converter`` with a default in
    its ConfigDef; those apply when the user set none, before the worker's converters.
    """
    name = connector_props.get(CONNECTOR_CLASS_CONFIG)
    if not name:
        return connector_props
    own = connector_class(name)().config().keys
    defaults = {key: own[key].default for key in _CONVERTER_KEYS
                if key in own and own[key].default and not connector_props.get(key)}
    return {**connector_props, **defaults} if defaults else connector_props


def exactly_once_enabled(worker_props: Mapping[str, Any], connector_props: Mapping[str, Any]) -> bool:
    """Whether this source connector runs with transactions; ConfigError if it must but cannot.

    As Kafka: the worker's ``exactly.once.source.support=enabled`` turns transactions on for
    every source connector; a connector with ``exactly.once.support=required`` refuses to run
    on a worker without it.
    """
    worker = str(WORKER_CONFIG.parse(worker_props)[EXACTLY_ONCE_SOURCE_SUPPORT_CONFIG]).lower() == "enabled"
    required = str(connector_props.get(EXACTLY_ONCE_SUPPORT_CONFIG, "requested")).lower() == "required"
    if required and not worker:
        raise ConfigError(f"{EXACTLY_ONCE_SUPPORT_CONFIG}=required, but the worker has "
                          f"{EXACTLY_ONCE_SOURCE_SUPPORT_CONFIG}=disabled: set "
                          f"{EXACTLY_ONCE_SOURCE_SUPPORT_CONFIG}=enabled in the worker config, or "
                          f"{EXACTLY_ONCE_SUPPORT_CONFIG}=requested", key=EXACTLY_ONCE_SUPPORT_CONFIG)
    if required:
        _check_exactly_once_support(connector_props)
    return worker


def _check_exactly_once_support(connector_props: Mapping[str, Any]) -> None:
    """``exactly.once.support=required`` asks the connector first, as Kafka's herder validation does
    (``AbstractHerder.validateExactlyOnceSupport``): unknown or UNSUPPORTED is refused."""
    props = {str(k): str(v) for k, v in connector_props.items() if v is not None}
    connector = connector_class(props.get(CONNECTOR_CLASS_CONFIG, ""))()
    support = connector.exactly_once_support(props) if isinstance(connector, SourceConnector) else None
    if support is ExactlyOnceSupport.SUPPORTED:
        return
    reason = ("does not support exactly-once delivery guarantees with the provided configuration"
              if support is ExactlyOnceSupport.UNSUPPORTED else
              "does not say whether it supports exactly-once delivery (no exactly_once_support answer)")
    raise ConfigError(f"{EXACTLY_ONCE_SUPPORT_CONFIG}=required, but connector {props.get(CONNECTOR_CLASS_CONFIG)} "
                      f"{reason}: fix its configuration (its docs say how; a MirrorSourceConnector needs "
                      f"consumer.isolation.level=read_committed), or set {EXACTLY_ONCE_SUPPORT_CONFIG}=requested",
                      key=EXACTLY_ONCE_SUPPORT_CONFIG)


def _check_transaction_boundaries(connector_props: Mapping[str, Any], parts: TaskParts) -> None:
    """``transaction.boundary=connector`` asks the connector first, as Kafka's herder validation does."""
    props = {str(k): str(v) for k, v in connector_props.items() if v is not None}
    connector = connector_class(props.get(CONNECTOR_CLASS_CONFIG, ""))()
    answer = (connector.can_define_transaction_boundaries(props) if isinstance(connector, SourceConnector)
              else None)
    if answer is ConnectorTransactionBoundaries.SUPPORTED:
        return
    parts.close()
    raise ConfigError(f"{TRANSACTION_BOUNDARY_CONFIG}=connector, but connector {props.get(CONNECTOR_CLASS_CONFIG)} "
                      f"does not define transaction boundaries with this configuration "
                      f"(can_define_transaction_boundaries is not SUPPORTED): use {TRANSACTION_BOUNDARY_CONFIG}="
                      f"poll or interval", key=TRANSACTION_BOUNDARY_CONFIG)


def build_source_runner(task_id: TaskId, task_class: type[SourceTask], task_props: Mapping[str, str],
                        connector_props: Mapping[str, Any], worker_props: Mapping[str, Any],
                        offset_store: OffsetBackingStore, bounds: Bounds | None = None) -> SourceTaskRunner:
    """A runner for one source task config; exactly-once when the worker enables it.

    A bounded run tells the task so (:mod:`kopycat.api.bounded`), as for sinks: a source that
    can see its input's end (the mirror's high watermarks) then stops there. Config placeholders
    (``${file:...}``) are resolved here, just before the task and its clients are made.
    """
    worker_props, connector_props, task_props = resolve_task_configs(worker_props, connector_props, task_props)
    worker = WORKER_CONFIG.parse(worker_props)
    if bounds is not None and bounds.bounded:
        task_props = {**task_props, BOUNDED_RUN_CONFIG: "true"}
    producer_config = source_producer_config(worker_props, connector_props, f"kopycat-{task_id}")
    creator = None
    groups = topic_creation_groups(connector_props) if worker[TOPIC_CREATION_ENABLE_CONFIG] else None
    if groups:
        creator = TopicCreator(client_config(worker_props, connector_props, "admin"), groups)
    parts = build_task_parts(task_id, connector_props, worker_props, sink=False)
    common: dict[str, Any] = {
        "producer_config": producer_config,
        "offset_flush_interval_ms": worker[OFFSET_COMMIT_INTERVAL_MS_CONFIG],
        "offset_flush_timeout_ms": worker[OFFSET_COMMIT_TIMEOUT_MS_CONFIG],
        "bounds": bounds, "topic_creator": creator,
    }
    task = task_class()
    once_at_most = at_most_once(connector_props)
    if not exactly_once_enabled(worker_props, connector_props):
        return SourceTaskRunner(task_id, task, task_props, parts, offset_store=offset_store,
                                at_most_once=once_at_most, **common)
    if once_at_most:
        parts.close()
        raise ConfigError(f"{DELIVERY_GUARANTEE_CONFIG}={AT_MOST_ONCE}, but the worker has "
                          f"{EXACTLY_ONCE_SOURCE_SUPPORT_CONFIG}=enabled, which writes every record exactly once: "
                          f"remove {DELIVERY_GUARANTEE_CONFIG} from the connector, or run it on a worker without "
                          f"exactly-once support", key=DELIVERY_GUARANTEE_CONFIG)
    if isinstance(offset_store, ConnectorOffsetBackingStore):  # transactions write the connector's primary topic
        offset_store = offset_store.primary_store
    if not isinstance(offset_store, KafkaOffsetStore):
        parts.close()
        raise ConfigError(f"{EXACTLY_ONCE_SOURCE_SUPPORT_CONFIG}=enabled needs offsets on a Kafka topic "
                          f"(offset.storage.topic), not a {type(offset_store).__name__}",
                          key=EXACTLY_ONCE_SOURCE_SUPPORT_CONFIG)
    boundary = str(connector_props.get(TRANSACTION_BOUNDARY_CONFIG, "poll"))
    if boundary.lower() == "connector":
        _check_transaction_boundaries(connector_props, parts)
    interval = connector_props.get(TRANSACTION_BOUNDARY_INTERVAL_CONFIG)
    return ExactlyOnceSourceTaskRunner(
        task_id, task, task_props, parts, offset_store=offset_store, group_id=worker[GROUP_ID_CONFIG],
        transaction_boundary=boundary,
        transaction_interval_ms=int(interval) if interval not in (None, "") else None, **common)


def source_producer_config(worker_props: Mapping[str, Any], connector_props: Mapping[str, Any],
                           client_id: str | None = None) -> dict[str, Any]:
    """A source task's producer: the worker's ``producer.*`` and the connector's overrides on
    Kopycat's defaults, with the settings its delivery guarantees need forced."""
    defaults = dict(SOURCE_PRODUCER_DEFAULTS)
    if client_id is not None:
        defaults["client.id"] = client_id
    return client_config(worker_props, connector_props, "producer", defaults=defaults, forced=SOURCE_PRODUCER_FORCED)


def fence_source_tasks(connector_props: Mapping[str, Any], worker_props: Mapping[str, Any], tasks: int) -> None:
    """Before a run of an exactly-once source: fence its tasks' earlier transactions (see
    :func:`kopycat.runtime.exactly_once_source_runner.fence_zombies`); nothing otherwise.

    Raises ConfigError, as a task would, when exactly-once is required but impossible.
    """
    if tasks <= 0 or not exactly_once_enabled(worker_props, connector_props):
        return
    worker_props = resolve_worker_config(worker_props)
    [connector_props] = resolve_connector_config(worker_props, connector_props)
    producer_config = source_producer_config(worker_props, connector_props)
    fence_zombies(producer_config, WORKER_CONFIG.parse(worker_props)[GROUP_ID_CONFIG],
                  str(connector_props.get("name", "")), tasks)


def build_sink_runner(task_id: TaskId, task_class: type[SinkTask], task_props: Mapping[str, str],
                      connector_props: Mapping[str, Any], worker_props: Mapping[str, Any],
                      bounds: Bounds | None = None,
                      assignment: Collection[TopicPartition] | None = None) -> SinkTaskRunner:
    """A runner for one sink task config: subscribed to topics/topics.regex, or to ``assignment``.

    A run to planned end offsets must be given its ``assignment`` (its share:
    :mod:`kopycat.runtime.sink_assignment`): taking every planned partition would have each of a
    connector's tasks copy them all. A bounded run tells the task so (:mod:`kopycat.api.bounded`):
    sinks that hold records back between commits then write them at the run's commits instead of
    leaving the tail behind. Config placeholders are resolved here, just before the task and its
    consumer are made.
    """
    if assignment is None and bounds is not None and bounds.end_offsets is not None:
        raise ValueError(f"Sink task {task_id} runs to end offsets for {len(bounds.end_offsets)} partition(s) but "
                         "its assignment is None: pass the task's share of them as assignment= (from "
                         "kopycat.runtime.sink_assignment.split_bounded_run, or split_partitions); every "
                         "planned partition would have each task copy every record")
    worker_props, connector_props, task_props = resolve_task_configs(worker_props, connector_props, task_props)
    worker = WORKER_CONFIG.parse(worker_props)
    if bounds is not None and bounds.bounded:
        task_props = {**task_props, BOUNDED_RUN_CONFIG: "true"}
    topics = SINK_CONNECTOR_CONFIG.keys[TOPICS_CONFIG]
    listed = parse_type(TOPICS_CONFIG, connector_props.get(TOPICS_CONFIG, ""), topics.type) or []
    parts = build_task_parts(task_id, connector_props, worker_props, sink=True)
    return SinkTaskRunner(
        task_id, task_class(), task_props, parts,
        consumer_config=sink_consumer_config(task_id, worker_props, connector_props),
        topics=[t.strip() for t in listed if t.strip()],
        topics_regex=str(connector_props.get(TOPICS_REGEX_CONFIG) or "").strip(),
        assignment=assignment, offset_commit_interval_ms=worker[OFFSET_COMMIT_INTERVAL_MS_CONFIG],
        offset_commit_timeout_ms=worker[OFFSET_COMMIT_TIMEOUT_MS_CONFIG], bounds=bounds,
        at_most_once=at_most_once(connector_props))


def sink_consumer_config(task_id: TaskId, worker_props: Mapping[str, Any],
                         connector_props: Mapping[str, Any]) -> dict[str, Any]:
    """The sink consumer: group ``connect-<connector>`` (Kafka's name, or the connector's
    ``consumer.override.group.id``), manual commits only."""
    return client_config(worker_props, connector_props, "consumer",
                         defaults={**SINK_CONSUMER_DEFAULTS, "client.id": f"kopycat-{task_id}"},
                         forced={"group.id": consumer_group_id(task_id.connector, connector_props),
                                 "enable.auto.commit": False,
                                 "enable.auto.offset.store": False})



def build_task_runner(task_id: TaskId, task_props: Mapping[str, str], connector_props: Mapping[str, Any],
                      worker_props: Mapping[str, Any], offset_store: OffsetBackingStore,
                      bounds: Bounds | None = None,
                      assignment: Collection[TopicPartition] | None = None) -> SourceTaskRunner | SinkTaskRunner:
    """A runner for one task config of either kind (Kafka's ``Worker.buildWorkerTask``): the worker's
    task threads and its task processes build through here, so both run a task identically.

    ``assignment``: a sink task's partitions in a bounded run (its share:
    :mod:`kopycat.runtime.sink_assignment`), required with planned end offsets; None subscribes to the
    sink's topics."""
    task_class = task_class_of(task_props, connector_props)
    if issubclass(task_class, SourceTask):
        return build_source_runner(task_id, task_class, dict(task_props), connector_props, worker_props,
                                   offset_store, bounds)
    if issubclass(task_class, SinkTask):
        return build_sink_runner(task_id, task_class, dict(task_props), connector_props, worker_props, bounds,
                                 assignment)
    raise ConnectError(f"Task class {task_class.__qualname__} of connector {task_id.connector} is neither a "
                       f"SourceTask nor a SinkTask")
