"""Asset events of the topics a copy task or a run's summary task wrote (``emit_topic_events``)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from airflow.sdk import Asset, AssetAlias

from kopycat_airflow.assets import connector_alias, emit_topic_events, kafka_asset


class Events:
    """What ``outlet_events[alias]`` records: each asset added and its extra."""

    def __init__(self) -> None:
        self.added: list[tuple[Asset, dict[str, Any]]] = []

    def add(self, asset: Asset, extra: dict[str, Any]) -> None:
        self.added.append((asset, extra))


def test_one_event_per_topic_written_on_each_alias_in_topic_order() -> None:
    events: defaultdict[AssetAlias, Events] = defaultdict(Events)
    outlets = [connector_alias("orders"), Asset("s3://bucket/x"), AssetAlias("audit")]
    emit_topic_events({"outlet_events": events}, outlets, lambda: "broker:9092",  # type: ignore[arg-type]
                      ["shop-orders", "shop-customers"], {"records": 12, "task": 0})
    expected = [(kafka_asset("broker:9092", "shop-customers"), {"records": 12, "task": 0}),
                (kafka_asset("broker:9092", "shop-orders"), {"records": 12, "task": 0})]
    assert {alias.name: e.added for alias, e in events.items()} == {"kopycat:orders": expected, "audit": expected}
    assert expected[0][0].uri == "kafka://broker:9092/shop-customers"


def test_no_alias_or_no_topic_emits_nothing_and_does_not_ask_for_the_cluster() -> None:
    def cluster() -> str:
        raise AssertionError("the cluster was asked for with no event to emit")

    events: defaultdict[AssetAlias, Events] = defaultdict(Events)
    emit_topic_events({"outlet_events": events}, [Asset("s3://bucket/x")], cluster,  # type: ignore[arg-type]
                      ["shop-orders"], {"records": 1})
    emit_topic_events({"outlet_events": events}, [connector_alias("orders")], cluster,  # type: ignore[arg-type]
                      [], {"records": 0})
    assert events == {}
