"""Reading REST request bodies as Kafka Connect's Jackson does, refusing what it cannot store.

Kafka's REST layer reads a connector config as ``Map<String, String>`` and a create request as
``CreateConnectorRequest``: numbers and booleans become strings, arrays and objects are a 400.
Python's JSON reader also accepts ``NaN`` and ``Infinity``, which Jackson refuses: they are a
400 here too instead of being stored as ``"nan"``. A config is also refused when its
config-topic record would not fit in one Kafka message, before anything is written.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote

import orjson

from kopycat.rest.errors import ConnectRestError

__all__ = ["check_config_size", "config_strings", "connector_location", "connector_name"]

_PATH_SAFE: Final = "!$&'()*+,;=:@-._~"
"""RFC 3986 ``pchar`` characters left as they are in a ``Location`` path segment."""


def _json_kind(value: Any) -> str:
    return "array" if isinstance(value, list) else "object" if isinstance(value, Mapping) else type(value).__name__


def _json_number(value: float) -> str:
    """How the JSON text spelled a non-finite number."""
    return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"


def _not_finite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def config_strings(config: Any, what: str) -> dict[str, str | None]:
    """A JSON object as Jackson reads ``Map<String, String>``: numbers and booleans become strings."""
    if not isinstance(config, Mapping):
        raise ConnectRestError.bad_request(f"The {what} must be a JSON object of string keys and values, got "
                                           f"{'null' if config is None else type(config).__name__}")
    props: dict[str, str | None] = {}
    for key, value in config.items():
        if isinstance(value, bool):
            props[str(key)] = "true" if value else "false"
        elif _not_finite(value):
            raise ConnectRestError.bad_request(f"Invalid value {_json_number(value)} for configuration {key} in "
                                               f"the {what}: NaN and Infinity are not JSON numbers; send a "
                                               f"string or a finite number")
        elif value is None or isinstance(value, str | int | float):
            props[str(key)] = None if value is None else str(value)
        else:
            raise ConnectRestError.bad_request(f"Invalid value for configuration {key} in the {what}: expected a "
                                               f"string, number, boolean or null, not a JSON {_json_kind(value)}")
    return props


def connector_name(value: Any) -> str:
    """A create request's ``name``: a JSON string (numbers are read as text, as Jackson does).

    An array or object is refused rather than stored as its Python text (``['a']``).
    """
    if value is None:
        return ""
    if isinstance(value, list | Mapping) or _not_finite(value):
        raise ConnectRestError.bad_request(f"The connector name must be a JSON string, got a JSON "
                                           f"{_json_number(value) if _not_finite(value) else _json_kind(value)}")
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).strip()


def connector_location(name: str) -> str:
    """The ``Location`` header of a created connector, percent-encoded as JAX-RS's ``UriBuilder`` does.

    HTTP headers carry Latin-1 only: a name such as ``名前-hs`` must be sent as UTF-8 escapes.
    """
    return "/connectors/" + quote(name, safe=_PATH_SAFE)


def check_config_size(name: str, props: Mapping[str, Any], limit: int) -> None:
    """Refuse a config whose ``connector-<name>`` record (``{"properties": ...}``) exceeds ``limit`` bytes.

    Kafka's ``KafkaConfigBackingStore`` would fail the write with ``RecordTooLargeException``
    after the REST call returned; refusing first keeps the store unchanged and names the limit.
    """
    size = len(orjson.dumps({"properties": props})) + len(f"connector-{name}".encode())
    if size > limit:
        raise ConnectRestError.bad_request(
            f"The configuration of connector {name} is {size} bytes as a config topic record, over the "
            f"{limit}-byte limit on one Kafka message (the worker's max.request.size / message.max.bytes; "
            f"the broker's message.max.bytes must allow it too): move large values out of the config, "
            f"e.g. into a file read through a config provider")
