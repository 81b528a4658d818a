"""Topic names a source makes from its data: sanitized to what Kafka accepts, alike for Singer and dlt."""

from __future__ import annotations

from kopycat.connectors.dlt import source_config as dlt_config
from kopycat.connectors.singer import source_config as singer_config
from kopycat.topic_names import sanitized_topic_name, topic_name_problem


def test_each_character_kafka_refuses_becomes_an_underscore_and_the_rest_stays() -> None:
    assert sanitized_topic_name("shop.public-orders_2026") == "shop.public-orders_2026"
    assert sanitized_topic_name("shop orders/été:v1") == "shop_orders__t__v1"
    assert topic_name_problem(sanitized_topic_name("shop orders/été:v1")) is None


def test_singer_streams_and_dlt_resources_name_their_topics_alike() -> None:
    for topic_for in (singer_config.topic_for, dlt_config.topic_for):
        assert topic_for("src.", "public-orders items") == "src.public-orders_items"
