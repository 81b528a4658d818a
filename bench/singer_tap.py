"""tap-orders as a bench runs it: the Singer tests' singer-sdk tap with singer-sdk's own STATE cadence.

The test tap (tests/support/singer_orders_tap.py) writes a STATE every 3 records so that tests of
the state gate see many; a real singer-sdk tap writes one every 10,000 (``Stream.STATE_MSG_FREQUENCY``'s
default), and a STATE every 3 records would make both the tap and the connector move state, not
rows. Run it as ``python bench/singer_tap.py --config config.json`` with the repository root on
PYTHONPATH (the bench's ``tap-orders`` wrapper puts it there).
"""

from __future__ import annotations

from singer_sdk import Stream

from tests.support.singer_orders_tap import OrdersStream, TapOrders

STATE_EVERY = 10_000
"""singer-sdk's default ``STATE_MSG_FREQUENCY``."""


class BenchOrdersStream(OrdersStream):
    """The orders stream with singer-sdk's default STATE cadence."""

    STATE_MSG_FREQUENCY = STATE_EVERY


class BenchTapOrders(TapOrders):
    """tap-orders over :class:`BenchOrdersStream`."""

    def discover_streams(self) -> list[Stream]:
        return [BenchOrdersStream(self)]


if __name__ == "__main__":
    BenchTapOrders.cli()
