"""The store's keys: ``s3.part.size`` is checked where the config is parsed, naming the fix."""

from __future__ import annotations

import pytest

from kopycat.api.errors import ConfigError
from kopycat.connectors.files.sink_config import FILE_SINK_CONFIG
from kopycat.connectors.files.store import S3_PART_SIZE_CONFIG, STORE_CONFIG
from kopycat.connectors.files.store_factory import open_store


def test_s3_part_size_defaults_to_confluents_25_mib() -> None:
    values = FILE_SINK_CONFIG.parse({"store.url": "s3://bucket/prefix", "flush.size": "10"})

    assert values[S3_PART_SIZE_CONFIG] == 26214400


def test_s3_part_size_below_the_s3_minimum_names_key_value_and_minimum() -> None:
    with pytest.raises(ConfigError) as raised:
        STORE_CONFIG.parse({"store.url": "s3://bucket/prefix", S3_PART_SIZE_CONFIG: "1000"})

    message = str(raised.value)
    assert "s3.part.size" in message and "1000" in message and "5242880" in message


def test_s3_part_size_above_an_int_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"s3\.part\.size.*2147483647"):
        FILE_SINK_CONFIG.parse({"store.url": "s3://bucket/prefix", "flush.size": "10",
                                S3_PART_SIZE_CONFIG: str(2**31)})


def test_opening_a_store_checks_the_part_size_too() -> None:
    with pytest.raises(ConfigError, match=r"s3\.part\.size"):
        open_store({"store.url": "s3://bucket/prefix", S3_PART_SIZE_CONFIG: 1000})


def test_s3_part_size_is_documented_with_the_storage_keys() -> None:
    key = STORE_CONFIG.keys[S3_PART_SIZE_CONFIG]

    assert key.group == "Storage" and "multipart" in key.documentation
