"""Worker and connector files read as Kafka Connect reads them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kopycat.api.errors import ConfigError
from kopycat.properties import load_config_file, parse_properties


def test_properties_follow_java_rules_for_separators_comments_escapes_and_continuations() -> None:
    text = ("# comment\n! also a comment\na=1\nb : 2\nc 3\nd=first \\\n    second\n"
            "e=\\u0041\\tz\nempty=\ng=x=y\nkey\\ with\\ space = v\n")
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "first second", "e": "A\tz",
                                      "empty": "", "g": "x=y", "key with space": "v"}


def test_a_later_key_wins() -> None:
    assert parse_properties("a=1\na=2\n") == {"a": "2"}


def test_json_connector_files_take_the_rest_body_or_a_flat_map(tmp_path: Path) -> None:
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"name": "c1", "config": {"connector.class": "FileStreamSource", "tasks.max": 2}}))
    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps({"name": "c2", "topic": "t"}))
    assert load_config_file(body) == {"name": "c1", "connector.class": "FileStreamSource", "tasks.max": "2"}
    assert load_config_file(flat) == {"name": "c2", "topic": "t"}


def test_unreadable_or_malformed_files_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="missing.properties"):
        load_config_file(tmp_path / "missing.properties")
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(ConfigError, match=r"bad.json is not valid JSON \(line 1"):
        load_config_file(bad)
