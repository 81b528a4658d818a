"""The collector switches runners share: process-wide, so nesting and threads must restore them."""

from __future__ import annotations

import gc
import threading

from kopycat.gc_pause import gc_paused, young_collections_deferred


def test_deferred_young_collections_raise_the_threshold_until_the_last_runner_leaves() -> None:
    before = gc.get_threshold()
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, tuple[int, ...]] = {}

    def second_runner() -> None:
        first_in.wait(10)
        with young_collections_deferred(80_000):
            second_in.set()
            first_out.wait(10)
            seen["after the first left"] = gc.get_threshold()

    thread = threading.Thread(target=second_runner)
    thread.start()
    with young_collections_deferred(60_000):
        first_in.set()
        second_in.wait(10)
        seen["both in"] = gc.get_threshold()
    first_out.set()
    thread.join(10)

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
