"""Filter and the predicates, after Kafka's HasHeaderKeyTest and TopicNameMatchesTest."""

from __future__ import annotations

import pytest

from kopycat.api.errors import ConfigError
from kopycat.api.records import Headers, SourceRecord
from kopycat.transforms import Filter, HasHeaderKey, RecordIsTombstone, TopicNameMatches


def test_filter_drops_every_record():
    xform = Filter()
    xform.configure({})
    assert xform.apply(SourceRecord(topic="t", value=1)) is None
    assert xform.apply_batch([SourceRecord(topic="t", value=1), SourceRecord(topic="u")]) == []


def test_has_header_key_requires_a_non_empty_name():
    # HasHeaderKeyTest.testNameRequiredInConfig, testNameMayNotBeEmptyInConfig, testConfig
    with pytest.raises(ConfigError, match='Missing required configuration "name"'):
        HasHeaderKey().configure({})
    with pytest.raises(ConfigError, match="String must be non-empty"):
        HasHeaderKey().configure({"name": ""})
    errors = HasHeaderKey().config().validate({"name": ""})[0].errors
    assert errors == ["Invalid value  for configuration name: String must be non-empty"]


def with_headers(*keys: str) -> SourceRecord:
    return SourceRecord(topic="t", headers=Headers((k, None) for k in keys))


def test_has_header_key_is_true_when_any_header_has_the_name():
    # HasHeaderKeyTest.testTest
    predicate = HasHeaderKey()
    predicate.configure({"name": "foo"})
    assert [predicate.test(with_headers(*keys)) for keys in (
        ("foo",), ("foo", "bar"), ("bar", "foo", "bar", "foo"), ("bar",), ("bar", "bar"), ())] == [
        True, True, True, False, False, False]


def test_topic_name_matches_requires_a_valid_non_empty_pattern():
    # TopicNameMatchesTest.testPatternRequiredInConfig, testPatternMayNotBeEmptyInConfig,
    # testPatternIsValidRegexInConfig, testConfig
    with pytest.raises(ConfigError, match='Missing required configuration "pattern"'):
        TopicNameMatches().configure({})
    with pytest.raises(ConfigError, match="String must be non-empty"):
        TopicNameMatches().configure({"pattern": ""})
    with pytest.raises(ConfigError, match="Invalid regex"):
        TopicNameMatches().configure({"pattern": "["})
    assert TopicNameMatches().config().validate({"pattern": "my-prefix-.*"})[0].errors == []
    errors = TopicNameMatches().config().validate({"pattern": "*"})[0].errors
    assert len(errors) == 1 and "Invalid regex" in errors[0]


def test_topic_name_matches_the_whole_topic():
    # TopicNameMatchesTest.testTest
    predicate = TopicNameMatches()
    predicate.configure({"pattern": "my-prefix-.*"})
    topics = ["my-prefix-", "my-prefix-foo", "x-my-prefix-", "x-my-prefix-foo", "your-prefix-", "your-prefix-foo"]
    assert [predicate.test(SourceRecord(topic=t)) for t in topics] == [True, True, False, False, False, False]
    assert [predicate.test(SourceRecord(topic=t)) for t in topics] == [True, True, False, False, False, False]


def test_record_is_tombstone_is_true_for_a_null_value_only():
    predicate = RecordIsTombstone()
    predicate.configure({})
    assert predicate.test(SourceRecord(topic="t", key="k", value=None))
    assert not predicate.test(SourceRecord(topic="t", value=0))
    assert not predicate.test(SourceRecord(topic="t", value=""))
