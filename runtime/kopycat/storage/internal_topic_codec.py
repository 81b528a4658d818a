"""What the internal topics' records share: the worker's internal JsonConverter and task-id keys.

Kafka Connect writes the offsets, config and status topics' values with an internal
``JsonConverter`` configured ``schemas.enable=false`` (the ``Worker``'s internal converter):
offsets as plain maps and lists, configs and statuses as Structs whose fields come in schema
order. Config and status keys name a task as ``<prefix>-<connector>-<n>``, parsed as Kafka's
``parseTaskId`` does in both ``KafkaConfigBackingStore`` and ``KafkaStatusBackingStore``.
"""

from __future__ import annotations

import re
import threading
from typing import Any, Final

from kopycat.api.data import Schema, Struct
from kopycat.converters.json import JsonConverter

__all__ = ["internal_converter", "parse_task_id", "read_value", "serialize_struct"]

_JAVA_INT: Final = re.compile(r"\+?\d+")  # what Integer.parseInt accepts, '-' aside
_INT_MAX: Final = 2**31 - 1

_local = threading.local()


def internal_converter() -> JsonConverter:
    """A schemaless JsonConverter per thread: converters need not be thread-safe."""
    converter: JsonConverter | None = getattr(_local, "converter", None)
    if converter is None:
        converter = JsonConverter()
        converter.configure({"schemas.enable": "false"}, is_key=False)
        _local.converter = converter
    return converter


def serialize_struct(topic: str, schema: Schema, struct: Struct) -> bytes:
    """A Struct's bytes as the worker's internal JsonConverter (``schemas.enable=false``) writes them."""
    data = internal_converter().from_connect_data(topic, schema, struct)
    assert data is not None  # a Struct is never a tombstone
    return data


def read_value(topic: str, data: bytes) -> Any:
    """What the internal JsonConverter reads from ``data`` (dicts, lists, str, int, ...).

    Raises DataError when the bytes are not JSON.
    """
    return internal_converter().to_connect_data(topic, data).value


def parse_task_id(key: str, prefix_parts: int) -> tuple[str, int] | None:
    """``(connector, task)`` from ``<prefix>-<connector>-<n>``, or None (Kafka's ``parseTaskId``).

    Splits on '-' as Java's ``String.split`` does (trailing empty parts dropped) and keeps the
    parts between the ``prefix_parts`` prefix words and the number: "task-my-conn-3" with 1
    prefix part is ("my-conn", 3).
    """
    parts = key.split("-")
    while parts and not parts[-1]:
        parts.pop()
    if len(parts) < prefix_parts + 2 or not _JAVA_INT.fullmatch(parts[-1]) or int(parts[-1]) > _INT_MAX:
        return None
    return "-".join(parts[prefix_parts:-1]), int(parts[-1])
