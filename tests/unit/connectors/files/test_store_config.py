"""The store's keys: ``s3.part.size`` is checked where the config is parsed, naming the fix; ``hdfs.webhdfs.url``
finds the NameNode's HTTP port."""

from __future__ import annotations

import pytest

from kopycat.api.errors import ConfigError
from kopycat.connectors.files.sink_config import FILE_SINK_CONFIG
from kopycat.connectors.files.store import HDFS_WEBHDFS_URL_CONFIG, S3_PART_SIZE_CONFIG, STORE_CONFIG, locate_store
from kopycat.connectors.files.store_factory import open_store
from kopycat.connectors.files.webhdfs_store import webhdfs_address


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


@pytest.mark.parametrize(("webhdfs_url", "address"), [
    ("", ("namenode", 9870)),
    ("http://namenode-http:50070", ("namenode-http", 50070)),
    ("https://secure-nn", ("secure-nn", 9870)),
], ids=["default", "configured", "no-port"])
def test_an_hdfs_store_reaches_webhdfs_on_the_namenodes_http_port(webhdfs_url: str, address: tuple[str, int]) -> None:
    values = STORE_CONFIG.parse({"store.url": "hdfs://namenode:8020/data", HDFS_WEBHDFS_URL_CONFIG: webhdfs_url})

    assert webhdfs_address(values, locate_store(values)) == address


def test_a_webhdfs_url_that_is_not_http_names_the_key_and_the_fix() -> None:
    values = STORE_CONFIG.parse({"store.url": "hdfs://namenode:8020/data", HDFS_WEBHDFS_URL_CONFIG: "namenode:9870"})

    with pytest.raises(ConfigError, match=r"hdfs\.webhdfs\.url.*http://namenode:9870"):
        webhdfs_address(values, locate_store(values))
