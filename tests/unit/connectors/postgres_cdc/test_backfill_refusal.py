"""A backfill window given to the CDC task is refused before any connection, naming why and the fix."""

from __future__ import annotations

import pytest

from kopycat.api.errors import ConfigError
from kopycat.api.window import TimeWindow
from kopycat.connectors.postgres_cdc.source_task import PostgresCdcTask, refuse_window

PROPS = {"topic.prefix": "shop", "database.hostname": "no-such-host.invalid", "database.user": "cdc",
         "database.dbname": "shop", "slot.name": "kopycat"}


def test_a_windowed_start_fails_with_the_key_the_window_and_both_fixes() -> None:
    window = TimeWindow(1_795_824_000_000, 1_795_827_600_000)
    with pytest.raises(ConfigError) as error:
        PostgresCdcTask().start({**PROPS, **window.to_props()})  # the host does not resolve: never reached
    message = str(error.value)
    assert error.value.key == "kopycat.window.start.ms"
    assert "kopycat.window.start.ms=1795824000000" in message and "[1795824000000, 1795827600000)" in message
    assert "released that window's write-ahead log" in message
    assert "window='never'" in message and "snapshot.mode=initial" in message


def test_a_run_without_a_window_passes() -> None:
    refuse_window(PROPS)
