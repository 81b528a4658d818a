"""RegexRouter and TimestampRouter, after Kafka's RegexRouterTest and TimestampRouterTest."""

from __future__ import annotations

import pytest

from kopycat.api.errors import ConfigError, DataError
from kopycat.api.records import SinkRecord, SourceRecord
from kopycat.transforms import RegexRouter, TimestampRouter


def route(regex: str, replacement: str, topic: str) -> str:
    router = RegexRouter()
    router.configure({"regex": regex, "replacement": replacement})
    out = router.apply(SinkRecord(topic=topic, kafka_partition=0)).topic
    router.close()
    return out


@pytest.mark.parametrize(("regex", "replacement", "topic", "expected"), [
    ("foo", "bar", "foo", "bar"),                                     # staticReplacement
    ("foo", "bar", "orig", "orig"),                                   # doesntMatch
    ("(.*)", "$1", "orig", "orig"),                                   # identity
    ("(.*)", "prefix-$1", "orig", "prefix-orig"),                     # addPrefix
    ("(.*)", "$1-suffix", "orig", "orig-suffix"),                     # addSuffix
    ("(.*)-(\\d\\d\\d\\d\\d\\d\\d\\d)", "$1", "index-20160117", "index"),  # slice
    ("(?<db>[a-z]+)\\.(?<table>.*)", "${table}_from_${db}", "shop.orders", "orders_from_shop"),
    ("(a)(b)?", "$1$2\\$", "a", "a$"),
    ("(.)", "$12", "x", "x2"),
    ("\\Qa.b\\E(.*)", "c$1", "a.bd", "cd"),
    ("foo", "bar", "xfoo", "xfoo"),
])
def test_topics_are_routed_as_javas_matches_then_replace_first(regex, replacement, topic, expected):
    assert route(regex, replacement, topic) == expected


@pytest.mark.parametrize(("props", "key"), [
    ({"regex": "(", "replacement": "x"}, "regex"),
    ({"regex": "(.*)", "replacement": "$2"}, "replacement"),
    ({"regex": "(.*)", "replacement": "${nope}"}, "replacement"),
    ({"replacement": "x"}, "regex"),
])
def test_bad_regex_or_replacement_is_a_config_error_naming_the_key(props, key):
    with pytest.raises(ConfigError, match=key) as info:
        RegexRouter().configure(props)
    assert info.value.key == key


def test_regex_router_batch_keeps_order_and_unmatched_records():
    router = RegexRouter()
    router.configure({"regex": "db\\.(.*)", "replacement": "mirror.$1"})
    records = [SourceRecord(topic=t, value=i) for i, t in enumerate(["db.a", "other", "db.b", "db.a"])]
    out = router.apply_batch(records)
    assert [(r.topic, r.value) for r in out] == [("mirror.a", 0), ("other", 1), ("mirror.b", 2), ("mirror.a", 3)]
    assert out[1] is records[1]
    assert [router.apply(r).topic for r in records] == [r.topic for r in out]


def test_timestamp_router_default_configuration():
    # TimestampRouterTest.defaultConfiguration
    router = TimestampRouter()
    router.configure({})
    record = SourceRecord(topic="test", kafka_partition=0, timestamp=1483425001864)
    assert router.apply(record) == SourceRecord(topic="test-20170103", kafka_partition=0, timestamp=1483425001864)


@pytest.mark.parametrize(("timestamp_format", "expected"), [
    ("yyyy-MM-dd'T'HH:mm:ss.SSS", "2017-01-03T06:30:01.864"),
    ("yy.M.d H:m:s.S", "17.1.3 6:30:1.864"),
    ("EEE, d MMM yyyy hh:mm a z", "Tue, 3 Jan 2017 06:30 AM UTC"),
    ("EEEE MMMM D u Z X", "Tuesday January 3 2 +0000 Z"),
    ("'week''s' yyyy", "week's 2017"),
    ("k K", "6 6"),
])
def test_timestamp_format_follows_simple_date_format_in_utc(timestamp_format, expected):
    router = TimestampRouter()
    router.configure({"topic.format": "${timestamp}", "timestamp.format": timestamp_format})
    assert router.apply(SourceRecord(topic="t", timestamp=1483425001864)).topic == expected


def test_topic_format_replaces_topic_then_timestamp_and_caches_per_unit():
    router = TimestampRouter()
    router.configure({"topic.format": "${topic}_${timestamp}_${topic}", "timestamp.format": "yyyyMMddHH"})
    day = 1483425001864
    topics = [r.topic for r in router.apply_batch([
        SourceRecord(topic="a", timestamp=day), SourceRecord(topic="a", timestamp=day + 1000),
        SourceRecord(topic="b", timestamp=day + 3_600_000)])]
    assert topics == ["a_2017010306_a", "a_2017010306_a", "b_2017010307_b"]


def test_a_record_without_timestamp_is_a_data_error():
    router = TimestampRouter()
    router.configure({})
    with pytest.raises(DataError, match="Timestamp missing on record"):
        router.apply(SourceRecord(topic="t"))


@pytest.mark.parametrize("timestamp_format", ["yyyy-ww", "yyyyMMdd'", "yyyy-MM-dd q"])
def test_an_unsupported_timestamp_format_is_a_config_error(timestamp_format):
    with pytest.raises(ConfigError, match="timestamp.format") as info:
        TimestampRouter().configure({"timestamp.format": timestamp_format})
    assert info.value.key == "timestamp.format"
