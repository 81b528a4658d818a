"""The interpreter settings runners share: process-wide, so nesting and threads must restore them."""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TypeVar

import pytest

from kopycat.interpreter_settings import gc_paused, longer_switch_interval, young_collections_deferred

T = TypeVar("T")
V = TypeVar("V")


def two_overlapping_runners(held: Callable[[T], AbstractContextManager[None]], first: T, second: T,
                            read: Callable[[], V]) -> dict[str, V]:
    """The setting as ``read`` sees it while two runner threads overlap, and once the first left.

    The first enters ``held(first)``, then the second ``held(second)``; the first leaves while the
    second is still in.
    """
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, V] = {}

    def second_runner() -> None:
        first_in.wait(10)
        with held(second):
            second_in.set()
            first_out.wait(10)
            seen["after the first left"] = read()

    thread = threading.Thread(target=second_runner)
    thread.start()
    with held(first):
        first_in.set()
        second_in.wait(10)
        seen["both in"] = read()
    first_out.set()
    thread.join(10)
    return seen


def test_deferred_young_collections_raise_the_threshold_until_the_last_runner_leaves() -> None:
    before = gc.get_threshold()
    seen = two_overlapping_runners(young_collections_deferred, 60_000, 80_000, gc.get_threshold)

    assert seen["both in"] == (60_000, *before[1:])  # the first runner's threshold holds for both
    assert seen["after the first left"] == (60_000, *before[1:])
    assert gc.get_threshold() == before


def test_a_lower_threshold_never_lowers_the_collectors_own() -> None:
    before = gc.get_threshold()
    with young_collections_deferred(1):
        assert gc.get_threshold() == before
    assert gc.get_threshold() == before


def test_gc_paused_re_enables_only_what_it_disabled() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_longer_switch_interval_holds_until_the_last_runner_leaves() -> None:
    before = sys.getswitchinterval()
    seen = two_overlapping_runners(longer_switch_interval, 0.03, 0.05, sys.getswitchinterval)

    assert seen["both in"] == pytest.approx(0.03)  # the first runner's interval holds for both
    assert seen["after the first left"] == pytest.approx(0.03)
    assert sys.getswitchinterval() == before


def test_a_shorter_switch_interval_never_shortens_the_interpreters_own() -> None:
    before = sys.getswitchinterval()
    with longer_switch_interval(before / 10):
        assert sys.getswitchinterval() == before
    assert sys.getswitchinterval() == before


def test_a_setting_is_restored_when_the_block_raises() -> None:
    before = sys.getswitchinterval(), gc.get_threshold()
    with pytest.raises(RuntimeError), longer_switch_interval(0.04), young_collections_deferred(70_000):
        assert (sys.getswitchinterval(), gc.get_threshold()[0]) == (pytest.approx(0.04), 70_000)
        raise RuntimeError("the run failed")
    assert (sys.getswitchinterval(), gc.get_threshold()) == before
