"""The Singer connector's test helpers: tap-orders as an executable, its rows, and a task context."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kopycat.api.task import OffsetStorageReader, SourceTaskContext

TAP_SCRIPT = Path(__file__).parent / "singer_orders_tap.py"


def tap_executable(directory: Path) -> Path:
    """An executable ``tap-orders`` in ``directory`` running the test tap with this interpreter."""
    path = directory / "tap-orders"
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{TAP_SCRIPT}" "$@"\n')
    path.chmod(0o755)
    return path


def order_rows(ids: Iterable[int]) -> list[dict[str, Any]]:
    """Orders with every kind of field: nullable email (odd ids), a null date (every third), decimals, tags."""
    return [{"id": i, "updated_at": f"2026-01-{i:02d}T10:00:00+00:00",
             "customer": {"name": f"customer {i}", "email": None if i % 2 else f"c{i}@example.com"},
             "amount": round(i * 1.25, 2), "price_exact": f"{i}.123456789",
             "shipped_on": None if i % 3 == 0 else f"2026-02-{i:02d}", "tags": ["a", "b"][: i % 3],
             "note": None if i % 2 else f"note {i}"} for i in ids]


class DictOffsetReader(OffsetStorageReader):
    """Offsets from a dict keyed by the partition's items."""

    def __init__(self, offsets: dict[tuple[tuple[str, Any], ...], dict[str, Any]]) -> None:
        self.stored = offsets

    def offsets(self, partitions: Iterable[Mapping[str, Any]]
                ) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        return [(dict(p), self.stored.get(tuple(sorted(p.items())))) for p in partitions]


class TaskContext(SourceTaskContext):
    """A task context whose offsets the test sets and whose run takes columns or not."""

    def __init__(self, props: Mapping[str, str], offsets: dict[Any, dict[str, Any]] | None = None, *,
                 columns: bool = True) -> None:
        self._props = dict(props)
        self._reader = DictOffsetReader(offsets if offsets is not None else {})
        self.columns = columns

    @property
    def configs(self) -> Mapping[str, str]:
        return self._props

    @property
    def offset_reader(self) -> OffsetStorageReader:
        return self._reader

    @property
    def takes_columns(self) -> bool:
        return self.columns
