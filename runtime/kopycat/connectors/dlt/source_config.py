"""The dlt source connector's keys, and how its ``dlt.args.<name>`` texts become the function's arguments.

A dlt source is a Python function (``@dlt.source`` or ``@dlt.resource``, or any function returning
one) named as ``dlt.source=package.module:function``. Properties carry text, so each
``dlt.args.<name>`` is converted by the parameter's annotation, as dlt's own config resolution
does for values from ``config.toml``: a parameter that takes ``str`` (alone, in a Union, or as
string Literals) gets the text as it is; any other annotation (``int``, ``List[str]``, ``bool``)
gets the text read as JSON (``dlt.args.table_names=["orders"]``, ``dlt.args.chunk_size=500``); a
parameter without annotation gets JSON when the text parses, the text otherwise. A parameter that
takes a ``dlt.sources.incremental`` gets one made from a JSON object of its arguments
(``dlt.args.incremental={"cursor_path": "modification_date"}``), as dlt's config resolution
makes one from a config section. Secrets take config providers like any key
(``dlt.args.credentials=${file:/secrets:pg}``).
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, Union

from dlt.extract.incremental import Incremental

from kopycat.api import ConfigDef, ConfigError, ConfigType, Importance, Range, ValidString
from kopycat.topic_names import sanitized_topic_name

__all__ = [
    "AIRFLOW_SECRETS_CONFIG", "ARGS_PREFIX", "BATCH_ROWS_CONFIG", "CONFIG", "INCREMENTAL_CONFIG", "RESOURCES_CONFIG",
    "RESTART_INTERVAL_MS_CONFIG", "ROW_ORDER_CONFIG", "SOURCE_CONFIG", "TASK_RESOURCES_CONFIG", "TASK_SOURCE_CONFIG",
    "TOPIC_PREFIX_CONFIG",
    "cursors", "source_arguments", "topic_for",
]

SOURCE_CONFIG: Final = "dlt.source"
ARGS_PREFIX: Final = "dlt.args."
RESOURCES_CONFIG: Final = "dlt.resources"
INCREMENTAL_CONFIG: Final = "dlt.incremental"
ROW_ORDER_CONFIG: Final = "dlt.incremental.row.order"
TOPIC_PREFIX_CONFIG: Final = "topic.prefix"
BATCH_ROWS_CONFIG: Final = "dlt.batch.max.rows"
RESTART_INTERVAL_MS_CONFIG: Final = "dlt.restart.interval.ms"
TASK_RESOURCES_CONFIG: Final = "dlt.task.resources"
TASK_SOURCE_CONFIG: Final = "dlt.task.source"
AIRFLOW_SECRETS_CONFIG: Final = "dlt.airflow.secrets.enable"

CONFIG: Final = ConfigDef().define(
    SOURCE_CONFIG, ConfigType.STRING, importance=Importance.HIGH,
    doc="The dlt source or resource to run, as package.module:function "
        "(dlt.sources.sql_database:sql_database, dlt.sources.rest_api:rest_api_source, or your own "
        "@dlt.source/@dlt.resource function). Its arguments are the keys dlt.args.<parameter>: text for "
        "parameters that take str, JSON for the others (dlt.args.table_names=[\"orders\"]); config "
        "providers resolve secrets in them.",
).define(
    RESOURCES_CONFIG, ConfigType.LIST, default="", importance=Importance.MEDIUM,
    doc="The source's resources to copy. Empty: the resources the source selects itself.",
).define(
    INCREMENTAL_CONFIG, ConfigType.LIST, default="", importance=Importance.MEDIUM,
    doc="Incremental cursors as <resource>:<cursor column> pairs (orders:updated_at), applied as "
        "dlt.sources.incremental hints: a run copies the rows past the last cursor value stored in the "
        "resource's source offset. Resources with their own incremental need none.",
).define(
    ROW_ORDER_CONFIG, ConfigType.STRING, default="", validator=ValidString.in_("", "asc", "desc"),
    importance=Importance.LOW,
    doc="Sort the rows of the dlt.incremental resources by their cursor (dlt's row_order: sql_database adds "
        "ORDER BY): each batch then carries the state after its rows, so a run that fails part way resumes "
        "after the last batch it committed instead of copying the resource again. Empty: the rows' own "
        "order, and a resource's state is stored when it is exhausted. A resource whose own incremental has "
        "a row_order is handled alike.",
).define(
    TOPIC_PREFIX_CONFIG, ConfigType.STRING, default="", importance=Importance.HIGH,
    doc="Each resource is written to the topic <topic.prefix><resource>; characters Kafka does not allow "
        "in a topic name become '_'.",
).define(
    BATCH_ROWS_CONFIG, ConfigType.INT, default=10_000, validator=Range.at_least(1), importance=Importance.LOW,
    doc="Most rows one poll() returns, and most rows of the dicts a resource yields in one columnar batch. "
        "Arrow tables a resource yields are passed on whole.",
).define(
    RESTART_INTERVAL_MS_CONFIG, ConfigType.LONG, default=60_000, validator=Range.at_least(0),
    importance=Importance.LOW,
    doc="In a continuous (standalone) run, how long to wait after the resources were exhausted before "
        "running the source again from the stored state. A bounded run (kopycat run, Airflow) ends when "
        "they are exhausted.",
).define(
    AIRFLOW_SECRETS_CONFIG, ConfigType.BOOLEAN, default=False, importance=Importance.LOW,
    doc="Let dlt look for its config and secrets in Airflow Variables (dlt's providers.enable_airflow_secrets, "
        "the dlt_secrets_toml Variable) where Airflow is installed. Off by default: dlt then imports Airflow and "
        "queries its metastore for every config value it resolves, seconds at every task start, while the "
        "connector's own keys (dlt.args.*, with config providers for secrets) already give the source its "
        "arguments. Process-wide: dlt reads it at its first use in the process (a task's own process with "
        "task.isolation=process); PROVIDERS__ENABLE_AIRFLOW_SECRETS in the environment wins over it.",
).define(
    TASK_RESOURCES_CONFIG, ConfigType.LIST, default="", importance=Importance.LOW,
    doc="The resources one task copies; set by the connector's task_configs.", internal=True,
).define(
    TASK_SOURCE_CONFIG, ConfigType.STRING, default="", importance=Importance.LOW,
    doc="The dlt source's name, whose source-level state a task reads before it loads the source; set by "
        "the connector's task_configs.", internal=True,
)


def topic_for(prefix: str, resource: str) -> str:
    """The topic of a resource's records: ``<prefix><resource>``, with characters Kafka refuses as '_'."""
    return sanitized_topic_name(f"{prefix}{resource}")


def cursors(pairs: list[str]) -> dict[str, str]:
    """``dlt.incremental``'s ``resource:cursor`` pairs as a dict."""
    found: dict[str, str] = {}
    for pair in pairs:
        resource, _, cursor = pair.partition(":")
        if not resource.strip() or not cursor.strip():
            raise ConfigError(f"{INCREMENTAL_CONFIG}: {pair!r} is not <resource>:<cursor column>; write it as "
                              f"orders:updated_at", key=INCREMENTAL_CONFIG)
        found[resource.strip()] = cursor.strip()
    return found


def source_arguments(function: Callable[..., Any], props: Mapping[str, Any]) -> dict[str, Any]:
    """The ``dlt.args.<name>`` keys as keyword arguments of ``function``, typed by its annotations."""
    given = {key[len(ARGS_PREFIX):]: str(value) for key, value in props.items() if key.startswith(ARGS_PREFIX)}
    parameters = _parameters(function)
    takes_any = "**" in parameters
    arguments: dict[str, Any] = {}
    for name, text in given.items():
        if name not in parameters and not takes_any:
            known = ", ".join(sorted(p for p in parameters if p != "**"))
            raise ConfigError(f"{ARGS_PREFIX}{name}={text!r}: {props[SOURCE_CONFIG]} has no parameter {name!r}; "
                              f"its parameters are: {known}", key=f"{ARGS_PREFIX}{name}")
        arguments[name] = _typed(name, text, parameters.get(name, typing.Any))
    return arguments


def _parameters(function: Callable[..., Any]) -> dict[str, Any]:
    """Parameter name -> annotation (``Any`` when none); ``"**"`` present when it takes any keyword."""
    import inspect

    signature = inspect.signature(function)
    try:
        hints = typing.get_type_hints(inspect.unwrap(function))
    except Exception:  # noqa: BLE001 - unresolvable annotations: fall back to the signature's
        hints = {}
    found: dict[str, Any] = {}
    for parameter in signature.parameters.values():
        if parameter.kind is parameter.VAR_KEYWORD:
            found["**"] = typing.Any
        elif parameter.kind is not parameter.VAR_POSITIONAL:
            annotation = hints.get(parameter.name, parameter.annotation)
            found[parameter.name] = typing.Any if annotation is parameter.empty else annotation
    return found


def _typed(name: str, text: str, annotation: Any) -> Any:
    takes_text = _takes_text(annotation)
    if takes_text:
        return text
    try:
        value = json.loads(text)
    except ValueError as exc:
        if takes_text is None:
            return text
        raise ConfigError(f"{ARGS_PREFIX}{name}={text!r} is not JSON, and parameter {name!r} takes {annotation}; "
                          f"give a JSON value (a number, true/false, a list such as [\"a\", \"b\"])",
                          key=f"{ARGS_PREFIX}{name}") from exc
    return _incremental(name, value) if isinstance(value, dict) and _takes_incremental(annotation) else value


def _incremental(name: str, arguments: dict[str, Any]) -> Incremental[Any]:
    """``dlt.sources.incremental(**arguments)``; a ConfigError naming the key when they do not fit."""
    try:
        return Incremental(**arguments)
    except TypeError as exc:
        raise ConfigError(f"{ARGS_PREFIX}{name}={json.dumps(arguments)}: not arguments of dlt.sources.incremental "
                          f"({exc}); give them as {{\"cursor_path\": \"modification_date\"}}",
                          key=f"{ARGS_PREFIX}{name}") from exc


def _takes_incremental(annotation: Any) -> bool:
    """True when ``annotation`` is ``dlt.sources.incremental`` (alone, parametrized or in a Union)."""
    if isinstance(annotation, type) and issubclass(annotation, Incremental):
        return True
    if typing.get_origin(annotation) in (Union, types.UnionType):
        return any(_takes_incremental(option) for option in typing.get_args(annotation))
    origin = typing.get_origin(annotation)
    return isinstance(origin, type) and issubclass(origin, Incremental)


def _takes_text(annotation: Any) -> bool | None:
    """True when ``annotation`` accepts a str, False when it does not, None when it does not say."""
    if annotation is typing.Any or isinstance(annotation, str | typing.TypeVar):
        return None
    if annotation is str:
        return True
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return all(isinstance(option, str) for option in typing.get_args(annotation))
    if origin is Union or origin is types.UnionType:
        return any(_takes_text(option) for option in typing.get_args(annotation))
    return False
