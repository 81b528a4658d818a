"""A REST API over in-memory stores and a file offset store: no services needed."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kopycat.rest import RestHerder, create_app
from kopycat.storage.config_backing_store import MemoryConfigBackingStore
from kopycat.storage.status_backing_store import MemoryStatusBackingStore

FILE_SOURCE: dict[str, Any] = {
    "name": "local-file-source",
    "config": {"connector.class": "FileStreamSource", "tasks.max": "1", "file": "/tmp/test.txt",
               "topic": "connect-test"},
}
"""Kafka Connect's REST documentation example, verbatim."""


@pytest.fixture
def herder(tmp_path: Path) -> RestHerder:
    return RestHerder(MemoryConfigBackingStore(), MemoryStatusBackingStore(),
                      {"offset.storage.file.filename": str(tmp_path / "connect.offsets")},
                      worker_id="127.0.0.1:8083", kafka_cluster_id="test-cluster")


@pytest.fixture
def client(herder: RestHerder) -> Iterator[TestClient]:
    with TestClient(create_app(herder)) as test_client:
        yield test_client


@pytest.fixture
def docs_request() -> dict[str, Any]:
    """A fresh copy of the documentation's create request."""
    return copy.deepcopy(FILE_SOURCE)


@pytest.fixture
def file_source(client: TestClient) -> str:
    """The documentation's FileStreamSource connector, created."""
    assert client.post("/connectors", json=FILE_SOURCE).status_code == 201
    return str(FILE_SOURCE["name"])
