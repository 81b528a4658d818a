"""The dlt source a connector config names: imported, called with its arguments, its resources chosen.

``dlt.source=package.module:function`` names a ``@dlt.source`` (a ``DltSource`` of resources), a
``@dlt.resource`` (one ``DltResource``) or any function returning either; a resource is wrapped
in a source of its own name, so the task handles both alike. Every mistake (a module that does
not import, a missing function, an argument the function does not take or dlt cannot resolve)
is a :class:`~kopycat.api.ConfigError` naming the key, its value and the fix, raised by the
connector's ``start()`` before any task runs.

dlt is not safe to call from several threads of one process: where Airflow is installed, its
config resolution swaps ``sys.stdout``/``sys.stderr`` for buffers (``contextlib.redirect_stdout``
around Airflow ``Variable`` lookups), and two threads doing it at once leave the process writing
to a buffer for good. So every call into dlt (loading a source, taking a resource's next items)
holds :data:`DLT_LOCK`: tasks of one process (``kopycat run`` with ``tasks.max`` > 1) take turns.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

import dlt
from dlt.common.configuration.container import Container
from dlt.common.configuration.exceptions import ConfigFieldMissingException
from dlt.common.pipeline import StateInjectableContext
from dlt.extract import DltResource, DltSource

from kopycat.api import ConfigError, ConnectError
from kopycat.connectors.dlt.source_config import (
    AIRFLOW_SECRETS_CONFIG,
    ARGS_PREFIX,
    INCREMENTAL_CONFIG,
    RESOURCES_CONFIG,
    ROW_ORDER_CONFIG,
    SOURCE_CONFIG,
    cursors,
    source_arguments,
)

__all__ = ["DLT_LOCK", "load_source", "source_function"]

DLT_LOCK = threading.RLock()
"""Held around every call into dlt: its config resolution redirects the process's stdout and stderr."""

AIRFLOW_SECRETS_ENV = "PROVIDERS__ENABLE_AIRFLOW_SECRETS"
"""dlt's switch for its Airflow Variable config provider (``ConfigProvidersConfiguration``), read from
the environment once, when dlt first resolves config in the process: set from
``dlt.airflow.secrets.enable`` before that, unless the environment sets it."""


def source_function(path: str) -> Callable[..., Any]:
    """The function ``package.module:function`` names."""
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise ConfigError(f"{SOURCE_CONFIG}={path!r} is not package.module:function; write it as "
                          f"dlt.sources.sql_database:sql_database", key=SOURCE_CONFIG)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"{SOURCE_CONFIG}={path!r}: module {module_name!r} could not be imported ({exc}); "
                          f"install the package that has it or correct the module path", key=SOURCE_CONFIG) from exc
    function = getattr(module, attribute, None)
    if not callable(function):
        found = sorted(name for name in dir(module) if not name.startswith("_") and callable(getattr(module, name)))
        raise ConfigError(f"{SOURCE_CONFIG}={path!r}: module {module_name!r} has no function {attribute!r}; "
                          f"its functions: {', '.join(found[:30])}", key=SOURCE_CONFIG)
    return function  # type: ignore[no-any-return]


def load_source(config: Mapping[str, Any], props: Mapping[str, Any],
                state: dict[str, Any] | None = None) -> DltSource:
    """The configured source with ``dlt.resources`` selected and ``dlt.incremental`` applied.

    ``state`` is dlt's state dict (``{"sources": {<name>: ...}}``) injected while the function
    runs, as ``Pipeline.extract`` injects the pipeline's: a ``@dlt.source`` body may read and
    write ``dlt.current.source_state()``. None: a throwaway one (the connector only plans).
    """
    with DLT_LOCK:
        os.environ.setdefault(AIRFLOW_SECRETS_ENV, "true" if config[AIRFLOW_SECRETS_CONFIG] else "false")
        with Container().injectable_context(StateInjectableContext(state={} if state is None else state)):
            return _load(config, props)


def _load(config: Mapping[str, Any], props: Mapping[str, Any]) -> DltSource:
    path = str(config[SOURCE_CONFIG])
    function = source_function(path)
    arguments = source_arguments(function, props)
    source = _as_source(path, _call(path, function, arguments))
    wanted = list(config[RESOURCES_CONFIG])
    if wanted:
        missing = [name for name in wanted if name not in source.resources]
        if missing:
            raise ConfigError(f"{RESOURCES_CONFIG}={','.join(wanted)}: {path} has no resources {missing}; its "
                              f"resources: {', '.join(source.resources)}", key=RESOURCES_CONFIG)
        source = source.with_resources(*wanted)
    for resource, cursor in cursors(list(config[INCREMENTAL_CONFIG])).items():
        if resource not in source.resources:
            raise ConfigError(f"{INCREMENTAL_CONFIG}: {path} has no resource {resource!r}; its resources: "
                              f"{', '.join(source.resources)}", key=INCREMENTAL_CONFIG)
        order = str(config[ROW_ORDER_CONFIG]) or None
        source.resources[resource].apply_hints(incremental=dlt.sources.incremental(cursor, row_order=order))
    return source


def _call(path: str, function: Callable[..., Any], arguments: dict[str, Any]) -> Any:
    """The function's result; argument mistakes as ConfigErrors naming the ``dlt.args`` keys."""
    try:
        return function(**arguments)
    except ConfigFieldMissingException as exc:
        fields = ", ".join(f"{ARGS_PREFIX}{field}" for field in exc.fields)
        raise ConfigError(f"{SOURCE_CONFIG}={path}: dlt could not resolve its arguments {exc.fields}; give "
                          f"them as {fields} (or in dlt's own config: environment, secrets.toml)",
                          key=SOURCE_CONFIG) from exc
    except TypeError as exc:
        given = ", ".join(f"{ARGS_PREFIX}{name}" for name in arguments) or "none"
        raise ConfigError(f"{SOURCE_CONFIG}={path} does not take the arguments given ({given}): {exc}; check "
                          f"the {ARGS_PREFIX}* keys against its signature", key=SOURCE_CONFIG) from exc
    except ConfigError:
        raise
    except Exception as exc:
        raise ConnectError(f"{SOURCE_CONFIG}={path} failed when called with {sorted(arguments)}: "
                           f"{type(exc).__name__}: {exc}") from exc


def _as_source(path: str, made: Any) -> DltSource:
    if isinstance(made, DltSource):
        return made
    if isinstance(made, DltResource):
        return DltSource(dlt.Schema(made.name), made.section or made.name, [made])
    raise ConfigError(f"{SOURCE_CONFIG}={path} returned a {type(made).__name__}, not a dlt source or resource; "
                      f"name a @dlt.source or @dlt.resource function", key=SOURCE_CONFIG)
