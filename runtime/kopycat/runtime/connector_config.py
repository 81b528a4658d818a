"""The keys every connector config has, as Kafka Connect's ``ConnectorConfig``,
``SourceConnectorConfig`` and ``SinkConnectorConfig`` define them.

A connector's full definition is these common keys, the transformation and predicate keys of
its aliases (``transforms.<alias>.*``, see :func:`kopycat.transforms.chain.enrich`) and the
connector's own ``config()``. The same definition validates ``kopycat validate``, the REST
``PUT /connector-plugins/{plugin}/config/validate`` and the Airflow operators' arguments.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from kopycat.api.config import (
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigType,
    Importance,
    LambdaValidator,
    NonEmptyStringWithoutControlChars,
    Range,
    Width,
)
from kopycat.api.connector import Connector, SinkConnector
from kopycat.api.errors import ConfigError
from kopycat.plugins import connector_class, converter_class, header_converter_class, plugin_class_name
from kopycat.runtime.config_transformer import resolve_connector_config, with_placeholders
from kopycat.runtime.errors import DLQ_TOPIC_NAME_CONFIG, ERRORS_CONFIG, SINK_ERRORS_CONFIG
from kopycat.topic_names import topic_name_problem
from kopycat.transforms.chain import TRANSFORMS_CONFIG_DEF, enrich

__all__ = [
    "AT_LEAST_ONCE", "AT_MOST_ONCE", "COMMON_GROUP", "CONNECTOR_CLASS_CONFIG", "CONNECTOR_CONFIG",
    "DELIVERY_GUARANTEE_CONFIG", "EXACTLY_ONCE_SUPPORT_CONFIG", "HEADER_CONVERTER_CONFIG", "KEY_CONVERTER_CONFIG",
    "NAME_CONFIG", "OFFSETS_STORAGE_TOPIC_CONFIG", "SCHEDULE_CONFIG", "SCHEDULE_DEFAULT", "SCHEDULE_NONE",
    "SINK_CONNECTOR_CONFIG", "SOURCE_CONNECTOR_CONFIG", "TASKS_MAX_CONFIG", "TASKS_MAX_ENFORCE_CONFIG",
    "TOPICS_CONFIG", "TOPICS_REGEX_CONFIG", "TRANSACTION_BOUNDARY_CONFIG", "TRANSACTION_BOUNDARY_INTERVAL_CONFIG",
    "VALUE_CONVERTER_CONFIG", "at_most_once", "check_schedule", "connector_definition", "parse_connector_config",
    "sink_topics", "validate_connector_config",
]

COMMON_GROUP: Final = "Common"
NAME_CONFIG: Final = "name"
CONNECTOR_CLASS_CONFIG: Final = "connector.class"
TASKS_MAX_CONFIG: Final = "tasks.max"
TASKS_MAX_ENFORCE_CONFIG: Final = "tasks.max.enforce"
KEY_CONVERTER_CONFIG: Final = "key.converter"
VALUE_CONVERTER_CONFIG: Final = "value.converter"
HEADER_CONVERTER_CONFIG: Final = "header.converter"
EXACTLY_ONCE_SUPPORT_CONFIG: Final = "exactly.once.support"
TRANSACTION_BOUNDARY_CONFIG: Final = "transaction.boundary"
TRANSACTION_BOUNDARY_INTERVAL_CONFIG: Final = "transaction.boundary.interval.ms"
OFFSETS_STORAGE_TOPIC_CONFIG: Final = "offsets.storage.topic"
TOPIC_CREATION_GROUPS_CONFIG: Final = "topic.creation.groups"
TOPICS_CONFIG: Final = "topics"
TOPICS_REGEX_CONFIG: Final = "topics.regex"
SCHEDULE_CONFIG: Final = "kopycat.schedule"
DELIVERY_GUARANTEE_CONFIG: Final = "delivery.guarantee"
AT_LEAST_ONCE, AT_MOST_ONCE = "at_least_once", "at_most_once"
SCHEDULE_DEFAULT: Final = "*/5 * * * *"
SCHEDULE_NONE: Final = "none"
_CRON_PRESETS: Final = frozenset({"@hourly", "@daily", "@weekly", "@monthly", "@quarterly", "@yearly"})
_CRON_FIELD: Final = re.compile(r"[0-9A-Za-z*/,?#LW-]+")

_CONVERTER: Final = LambdaValidator(
    lambda name, value: value is None or converter_class(value, name),
    "A converter class: Kafka's name (org.apache.kafka.connect.json.JsonConverter), its simple name "
    "or a Python import path")


def at_most_once(connector_props: Mapping[str, Any]) -> bool:
    """Whether the connector asks for at-most-once delivery; ConfigError naming a bad value."""
    key = CONNECTOR_CONFIG.keys[DELIVERY_GUARANTEE_CONFIG]
    return str(ConfigDef().define_key(key).parse(connector_props)[key.name]).lower() == AT_MOST_ONCE


def check_schedule(name: str, value: Any) -> None:
    """A cron expression of 5 fields, an Airflow preset (``@hourly``...) or ``none`` (manual runs only).

    Checked when the connector is stored (REST ``POST /connectors``, ``kopycat validate``), so a
    typo is a 400 naming the key rather than a connector DAG that silently never appears.
    """
    text = str(value).strip()
    if text == SCHEDULE_NONE or text in _CRON_PRESETS:
        return
    fields = text.split()
    if len(fields) != 5 or not all(_CRON_FIELD.fullmatch(f) for f in fields):
        raise ConfigError.for_key(name, value, f"expected a cron expression of 5 fields (minute hour day month "
                                               f"weekday, e.g. '{SCHEDULE_DEFAULT}'), one of "
                                               f"{', '.join(sorted(_CRON_PRESETS))}, or '{SCHEDULE_NONE}'")


_SCHEDULE: Final = LambdaValidator(check_schedule, "A cron expression, an @preset or 'none'")
_HEADER_CONVERTER: Final = LambdaValidator(
    lambda name, value: value is None or header_converter_class(value, name), "A header converter class")

CONNECTOR_CONFIG: Final = (
    ConfigDef()
    .define(NAME_CONFIG, ConfigType.STRING, validator=NonEmptyStringWithoutControlChars(),
            importance=Importance.HIGH, group=COMMON_GROUP, order_in_group=1, width=Width.MEDIUM,
            display_name="Connector name",
            doc="Globally unique name to use for this connector; it names its offsets, consumer "
                "group (connect-<name>) and transactional ids.")
    .define(CONNECTOR_CLASS_CONFIG, ConfigType.STRING, importance=Importance.HIGH, group=COMMON_GROUP,
            order_in_group=2, width=Width.LONG, display_name="Connector class",
            doc="Name or alias of the class for this connector: Kafka's class name "
                "(org.apache.kafka.connect.file.FileStreamSourceConnector), its simple name "
                "(FileStreamSource) or a Python import path.")
    .define(TASKS_MAX_CONFIG, ConfigType.INT, 1, Range(min=1), Importance.HIGH, group=COMMON_GROUP,
            order_in_group=4, width=Width.SHORT, display_name="Tasks max",
            doc="Maximum number of tasks to use for this connector: mapped Airflow task instances "
                "or standalone worker threads.")
    .define(TASKS_MAX_ENFORCE_CONFIG, ConfigType.BOOLEAN, True, importance=Importance.LOW,
            group=COMMON_GROUP, order_in_group=5, width=Width.SHORT, display_name="Enforce tasks max",
            doc="(Deprecated in Kafka) Whether to fail a connector that returns more task "
                "configs than tasks.max instead of running them all.")
    .define(KEY_CONVERTER_CONFIG, ConfigType.STRING, None, _CONVERTER, importance=Importance.LOW,
            group=COMMON_GROUP, order_in_group=6, width=Width.SHORT, display_name="Key converter class",
            doc="Converter class for record keys; overrides the worker's key.converter.")
    .define(VALUE_CONVERTER_CONFIG, ConfigType.STRING, None, _CONVERTER, importance=Importance.LOW,
            group=COMMON_GROUP, order_in_group=8, width=Width.SHORT, display_name="Value converter class",
            doc="Converter class for record values; overrides the worker's value.converter.")
    .define(HEADER_CONVERTER_CONFIG, ConfigType.STRING, None, _HEADER_CONVERTER, importance=Importance.LOW,
            group=COMMON_GROUP, order_in_group=10, width=Width.SHORT, display_name="Header converter class",
            doc="Converter class for header values; overrides the worker's header.converter.")
    .define(SCHEDULE_CONFIG, ConfigType.STRING, SCHEDULE_DEFAULT, _SCHEDULE, importance=Importance.MEDIUM,
            group=COMMON_GROUP, order_in_group=20, display_name="Airflow schedule",
            doc="(Kopycat) When Airflow runs a connector stored through the REST API (dags/kopycat_connectors.py): "
                "a cron expression whose intervals are the runs' data intervals, an Airflow preset such as "
                "@hourly, or 'none' for runs triggered by hand only. Kafka Connect ignores the key.")
    .define(DELIVERY_GUARANTEE_CONFIG, ConfigType.STRING, AT_LEAST_ONCE,
            CaseInsensitiveValidString([AT_LEAST_ONCE, AT_MOST_ONCE]), Importance.MEDIUM, group=COMMON_GROUP,
            order_in_group=21, display_name="Delivery guarantee",
            doc="(Kopycat) at_least_once: a crash re-sends the records since the last commit, never loses "
                "one. at_most_once, for data where a repeat is worse than a gap: a source stores the "
                "offsets of each poll() batch before producing it, a sink commits its consumer group "
                "past each batch before put(), so a crash loses the batches in flight and never repeats "
                "one. Exactly-once sources (exactly.once.source.support=enabled) need at_least_once.")
    .merge(TRANSFORMS_CONFIG_DEF)
    .merge(ERRORS_CONFIG)
)
"""Keys of every connector (Kafka's ``ConnectorConfig.configDef()``), groups in Kafka's order: Common,
Transforms, Predicates, Error Handling. The keys of each configured alias are added by ``enrich``."""

SOURCE_CONNECTOR_CONFIG: Final = CONNECTOR_CONFIG.merge(
    ConfigDef()
    .define(TOPIC_CREATION_GROUPS_CONFIG, ConfigType.LIST, [], importance=Importance.LOW,
            group="Topic Creation", order_in_group=1, width=Width.LONG, display_name="Topic Creation Groups",
            doc="Groups of configurations for topics created by source connectors, besides the "
                "'default' group (topic.creation.<group>.include/exclude/partitions/...).")
    .define(EXACTLY_ONCE_SUPPORT_CONFIG, ConfigType.STRING, "requested",
            CaseInsensitiveValidString(["requested", "required"]), Importance.MEDIUM,
            group="Exactly Once Support", order_in_group=2, width=Width.SHORT, display_name="Exactly once support",
            doc="With 'required', the connector must state it supports exactly-once and the worker "
                "must have exactly.once.source.support=enabled, or the connector fails to start.")
    .define(TRANSACTION_BOUNDARY_CONFIG, ConfigType.STRING, "poll",
            CaseInsensitiveValidString(["poll", "interval", "connector"]), Importance.MEDIUM,
            group="Exactly Once Support", order_in_group=3, width=Width.SHORT, display_name="Transaction Boundary",
            doc="With exactly-once: 'poll' commits one transaction per poll() batch, 'interval' "
                "every transaction.boundary.interval.ms, 'connector' where the task says.")
    .define(TRANSACTION_BOUNDARY_INTERVAL_CONFIG, ConfigType.LONG, None, None,
            Importance.LOW, group="Exactly Once Support", order_in_group=4, width=Width.SHORT,
            display_name="Transaction boundary interval",
            doc="With transaction.boundary=interval: how often to commit; defaults to the "
                "worker's offset.flush.interval.ms.")
    .define(OFFSETS_STORAGE_TOPIC_CONFIG, ConfigType.STRING, None, importance=Importance.LOW,
            group="offsets.topic", order_in_group=1, width=Width.LONG,  # Kafka's group name
            display_name="Offsets topic",
            doc="A separate offsets topic for this connector (Kafka's per-connector offsets "
                "topic); the worker's offset.storage.topic by default.")
)
"""Kafka's ``SourceConnectorConfig``; ``topic.creation.<group>.*`` keys are read by topic_creation."""


def _topics_given(props: Mapping[str, Any]) -> None:
    topics = str(props.get(TOPICS_CONFIG) or "").strip()
    regex = str(props.get(TOPICS_REGEX_CONFIG) or "").strip()
    if topics and regex:
        raise ConfigError(f"{TOPICS_CONFIG} and {TOPICS_REGEX_CONFIG} are mutually exclusive options, "
                          f"but both are set ({topics!r}, {regex!r}); keep one", key=TOPICS_CONFIG)
    if not topics and not regex:
        raise ConfigError(f"Must configure one of {TOPICS_CONFIG} or {TOPICS_REGEX_CONFIG}: the topics "
                          f"this sink consumes", key=TOPICS_CONFIG)
    for topic in (t.strip() for t in topics.split(",") if t.strip()):
        problem = topic_name_problem(topic)
        if problem:
            raise ConfigError.for_key(TOPICS_CONFIG, topics, f"{problem}; name existing topics, comma-separated")
    _topics_pattern(regex)
    dead_letter_topic = str(props.get(DLQ_TOPIC_NAME_CONFIG) or "").strip()
    problem = topic_name_problem(dead_letter_topic) if dead_letter_topic else None
    if problem:
        raise ConfigError.for_key(DLQ_TOPIC_NAME_CONFIG, dead_letter_topic,
                                  f"{problem}; name a legal topic, or leave it blank for no dead letter queue")


def _sink_topics_errors(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(key, message) for a validation: Kafka's ``SinkConnectorConfig.validate`` texts on both keys when
    ``topics`` and ``topics.regex`` are both set or both missing, else what :func:`_topics_given` refuses."""
    topics = str(props.get(TOPICS_CONFIG) or "").strip()
    regex = str(props.get(TOPICS_REGEX_CONFIG) or "").strip()
    message = None
    if topics and regex:
        message = f"{TOPICS_CONFIG} and {TOPICS_REGEX_CONFIG} are mutually exclusive options, but both are set."
    elif not topics and not regex:
        message = f"Must configure one of {TOPICS_CONFIG} or {TOPICS_REGEX_CONFIG}"
    if message is not None:
        return [(TOPICS_CONFIG, message), (TOPICS_REGEX_CONFIG, message)]
    try:
        _topics_given(props)
    except ConfigError as exc:
        return [(exc.key or TOPICS_CONFIG, str(exc))]
    return []


def _topics_pattern(pattern: str) -> re.Pattern[str] | None:
    """``topics.regex`` compiled; ConfigError naming it when it is no regular expression.

    Checked with the other sink keys, so ``kopycat validate`` and the REST validate endpoint refuse
    what a run would refuse when it lists the topics the pattern matches.
    """
    if not pattern:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError.for_key(TOPICS_REGEX_CONFIG, pattern, f"not a valid regular expression ({exc})") \
            from None


SINK_CONNECTOR_CONFIG: Final = CONNECTOR_CONFIG.merge(
    ConfigDef()
    .define(TOPICS_CONFIG, ConfigType.LIST, [], importance=Importance.HIGH, group=COMMON_GROUP,
            order_in_group=4, width=Width.LONG, display_name="Topics",
            doc="List of topics to consume, separated by commas.")
    .define(TOPICS_REGEX_CONFIG, ConfigType.STRING, "", importance=Importance.HIGH, group=COMMON_GROUP,
            order_in_group=4, width=Width.LONG, display_name="Topics regex",
            doc="Regular expression giving topics to consume (matched as the whole name).")
).merge(SINK_ERRORS_CONFIG)
"""Kafka's ``SinkConnectorConfig``."""


def connector_definition(props: Mapping[str, Any], connector: Connector | None = None) -> ConfigDef:
    """The full definition of this connector config: common keys, transforms and predicates, then the
    connector's own (the order of Kafka's validate response: ``AbstractHerder`` appends the
    connector's results after the enriched common ones).

    Raises ConfigError when ``connector.class`` names no connector.
    """
    if connector is None:
        if not props.get(CONNECTOR_CLASS_CONFIG):
            raise ConfigError(f"{CONNECTOR_CLASS_CONFIG} is missing: give the connector's class, e.g. "
                              f"{CONNECTOR_CLASS_CONFIG}=FileStreamSource", key=CONNECTOR_CLASS_CONFIG)
        connector = connector_class(props[CONNECTOR_CLASS_CONFIG])()
    base = SINK_CONNECTOR_CONFIG if isinstance(connector, SinkConnector) else SOURCE_CONNECTOR_CONFIG
    own = ConfigDef()
    for key in connector.config().keys.values():
        if key.name not in base:  # a connector may redeclare a common key (e.g. topics); ours wins
            own.define_key(key)
    return enrich(base, props, require_full_config=False).merge(own)


def validate_connector_config(props: Mapping[str, Any], worker_props: Mapping[str, Any] | None = None
                              ) -> dict[str, Any]:
    """Kafka Connect's validate response for ``props``: every key, errors collected, none raised.

    Cross-key checks (``topics`` xor ``topics.regex``; the connector's own ``validate``) add
    their messages to the key they name, as ``AbstractHerder.validateConnectorConfig`` does.
    As there, placeholders are resolved first with ``worker_props``' config providers; the
    response shows the placeholders, never what they resolved to.
    """
    [resolved] = resolve_connector_config(worker_props or {}, props)
    if resolved != dict(props):
        return with_placeholders(validate_connector_config(resolved), props, resolved)
    connector = connector_class(props.get(CONNECTOR_CLASS_CONFIG, ""))()
    definition = connector_definition(props, connector)
    response = definition.validate_response(plugin_class_name(type(connector)), props)
    by_name = {entry["value"]["name"]: entry["value"] for entry in response["configs"]}
    extra: list[tuple[str, str]] = []
    if isinstance(connector, SinkConnector):
        extra += _sink_topics_errors(props)
    for value in connector.validate(props):
        for message in value.errors:
            if message not in by_name.get(value.name, {}).get("errors", []):
                extra.append((value.name, message))
    for name, message in extra:
        if name in by_name:
            by_name[name]["errors"].append(message)
            response["error_count"] += 1
    return response


def parse_connector_config(props: Mapping[str, Any], connector: Connector) -> dict[str, Any]:
    """Parsed values of every key; ConfigError (naming key, value and fix) at the first problem."""
    definition = connector_definition(props, connector)
    values = definition.parse(props)
    if isinstance(connector, SinkConnector):
        _topics_given(props)
    return values


_INTERNAL_TOPICS: Final = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


def sink_topics(props: Mapping[str, Any], existing: Iterable[str]) -> list[str]:
    """A sink's input: its ``topics`` as listed (existing or not), then the ``existing`` topics
    ``topics.regex`` matches whole, sorted, internal topics left out (as Kafka's consumer subscribes).

    Shared by the plan (end offsets) and the lag measure, so both see the same input.
    """
    topics = [t.strip() for t in str(props.get(TOPICS_CONFIG) or "").split(",") if t.strip()]
    regex = _topics_pattern(str(props.get(TOPICS_REGEX_CONFIG) or "").strip())
    if regex is not None:
        topics += sorted(t for t in set(existing) - _INTERNAL_TOPICS if regex.fullmatch(t) and t not in topics)
    return topics
