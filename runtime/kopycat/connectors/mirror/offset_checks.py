"""The checks MM2's connectors make on offsets altered through the REST API (KIP-875).

Kafka's ``MirrorUtils.validateSourcePartitionString``, ``validateSourcePartitionPartition`` and
``validateSourceOffset``, shared by the source, checkpoint and heartbeat connectors: each names
the string keys of its source partitions and whether they carry a ``partition`` number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kopycat.api.errors import ConfigError

__all__ = ["check_altered_offsets"]

_INT32_MAX = 2**31 - 1


def check_altered_offsets(offsets: Mapping[Any, Mapping[str, Any] | None], string_keys: Sequence[str], *,
                          with_partition: bool) -> bool:
    """Raise ConfigError naming the partition, key and value of the first malformed entry; True otherwise.

    Tombstones (``None`` offsets, a reset) are always allowed.
    """
    shape = ", ".join([*(f'"{key}": <{key}>' for key in string_keys), *(['"partition": <n>'] if with_partition
                                                                          else [])])
    for partition, offset in offsets.items():
        if offset is None:
            continue
        if not isinstance(partition, Mapping):
            raise ConfigError(f"Source partition {partition!r} is not a map: use {{{shape}}}")
        for key in string_keys:
            if not isinstance(partition.get(key), str):
                raise ConfigError(f"Source partition {dict(partition)} has an invalid or missing {key!r} key, "
                                  f"which must be a string")
        if with_partition:
            number = partition.get("partition")
            if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= _INT32_MAX:
                raise ConfigError(f"Source partition {dict(partition)} has an invalid value {number!r} for the "
                                  f"'partition' key, which must be a non-negative integer")
        value = offset.get("offset")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"Source offset {dict(offset)} for source partition {dict(partition)} has an "
                              f"invalid value {value!r} for the 'offset' key, which must be a non-negative integer")
    return True
