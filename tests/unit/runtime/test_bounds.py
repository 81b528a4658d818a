"""Bounds of a windowed (backfill) sink run: a start needs an end, no earlier, and no planned end offsets."""

from __future__ import annotations

import pytest

from kopycat.api.errors import ConfigError
from kopycat.api.records import TopicPartition
from kopycat.runtime.bounds import Bounds


def test_a_window_start_makes_a_bounded_windowed_run() -> None:
    bounds = Bounds(window_start_ms=1_000, window_end_ms=2_000)
    assert bounds.windowed and bounds.bounded
    assert not Bounds(window_end_ms=2_000).windowed and not Bounds().windowed


def test_an_empty_window_is_allowed() -> None:
    assert Bounds(window_start_ms=5, window_end_ms=5).windowed


@pytest.mark.parametrize(("kwargs", "key"), [
    ({"window_start_ms": -1, "window_end_ms": 10}, "window_start_ms"),
    ({"window_start_ms": 10}, "window_start_ms"),
    ({"window_start_ms": 10, "window_end_ms": 9}, "window_end_ms"),
    ({"window_start_ms": 0, "window_end_ms": 9, "end_offsets": {TopicPartition("t", 0): 3}}, "end_offsets"),
], ids=["negative-start", "start-without-end", "end-before-start", "start-with-end-offsets"])
def test_a_bad_window_names_its_key(kwargs: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Bounds(**kwargs)  # type: ignore[arg-type]
    assert raised.value.key == key and key in str(raised.value)
