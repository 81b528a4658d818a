"""Schemathesis against the REST API's own OpenAPI spec: no generated call gets a server error.

Every operation of ``/openapi.json`` is called with paths, queries and bodies generated from its
schema (valid and invalid ones), over the in-memory stores of conftest.py. A 5xx is a bug: Kafka
Connect answers bad input with 400/404/409 and a JSON ``ErrorMessage``, never a crash. Driven
through Hypothesis directly (schemathesis' pytest plugin does not load on pytest 9).
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from kopycat.rest import RestHerder, create_app
from kopycat.storage.config_backing_store import MemoryConfigBackingStore
from kopycat.storage.status_backing_store import MemoryStatusBackingStore


def _schema(herder: RestHerder) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_asgi("/openapi.json", create_app(herder))


OPERATIONS = [result.ok().label for result in _schema(
    RestHerder(MemoryConfigBackingStore(), MemoryStatusBackingStore())).get_all_operations()]


def test_the_spec_covers_the_kafka_connect_routes() -> None:
    assert len(OPERATIONS) == 25 and "PATCH /connectors/{name}/offsets" in OPERATIONS


@pytest.mark.parametrize("label", OPERATIONS)
def test_no_generated_call_gets_a_server_error(herder: RestHerder, file_source: str, label: str) -> None:
    """``file_source`` exists, so generated names sometimes hit it (schemathesis also tries it)."""
    operation = _schema(herder).find_operation_by_label(label)
    assert operation is not None

    @given(case=operation.as_strategy())
    @settings(max_examples=30, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def call(case: schemathesis.Case) -> None:
        case.call_and_validate(checks=[not_a_server_error])

    call()
