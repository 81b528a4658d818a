"""The registry client's caches, retries and failover, against a scripted HTTP server on loopback.

The server answers each request with the next scripted (status, body); what the client asked for
is recorded. The real registry (Apicurio) is exercised by tests/integration/test_avro_converter.py.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from kopycat.api.errors import DataError
from kopycat.converters.registry_converter import REGISTRY_CONFIG, registry_client
from kopycat.converters.schema_registry import SchemaReference, SchemaRegistryClient, SchemaRegistryError


class _Scripted(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script: list[tuple[int, Any]] = []
        self.seen: list[tuple[str, str, Any, str | None]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: _Scripted

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        self.server.seen.append((self.command, self.path, body, self.headers.get("Authorization")))
        status, answer = self.server.script.pop(0) if self.server.script else (500, {"message": "no script"})
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def server() -> Iterator[_Scripted]:
    scripted = _Scripted()
    thread = threading.Thread(target=scripted.serve_forever, daemon=True)
    thread.start()
    yield scripted
    scripted.shutdown()
    scripted.server_close()


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_5xx_answers_are_retried_with_backoff_and_an_id_is_fetched_once(server: _Scripted) -> None:
    server.script = [(503, {"message": "busy"}), (500, {"message": "oops"}), (200, {"schema": '"string"'})]
    client = SchemaRegistryClient(server.url, max_retries=3, retry_backoff_s=0.01)
    assert client.schema_by_id(7) == '"string"'
    assert client.schema_by_id(7) == '"string"'
    assert [(method, path) for method, path, _, _ in server.seen] == [("GET", "/schemas/ids/7")] * 3


def test_a_4xx_is_not_retried_and_carries_confluents_error_code(server: _Scripted) -> None:
    server.script = [(404, {"error_code": 40403, "message": "Schema not found"})]
    client = SchemaRegistryClient(server.url, max_retries=3, retry_backoff_s=0.01)
    with pytest.raises(SchemaRegistryError, match="404.*Schema not found") as raised:
        client.schema_by_id(9)
    assert (raised.value.status, raised.value.error_code, len(server.seen)) == (404, 40403, 1)
    assert isinstance(raised.value, DataError)


def test_after_the_retry_bound_the_error_names_the_urls_and_the_last_failure(server: _Scripted) -> None:
    server.script = [(503, {"message": "down for maintenance"})] * 3
    client = SchemaRegistryClient(server.url, max_retries=2, retry_backoff_s=0.01)
    with pytest.raises(SchemaRegistryError, match=r"failed after 3 attempts on http://127.*down for maintenance"):
        client.register("orders-value", '"long"')
    assert len(server.seen) == 3


def test_an_unreachable_url_fails_over_to_the_next_and_ids_are_cached_per_subject_and_schema(
        server: _Scripted) -> None:
    server.script = [(200, {"id": 4}), (200, {"id": 5})]
    client = SchemaRegistryClient(f"{_closed_port_url()},{server.url}", basic_auth="u:p", max_retries=0)
    assert client.register("orders-value", '"long"', normalize=True) == 4
    assert client.register("orders-value", '"long"', normalize=True) == 4
    assert client.lookup("other-value", '"long"') == 5
    assert client.schema_by_id(4) == '"long"'  # known from the registration: no request
    assert [(m, p, b) for m, p, b, _ in server.seen] == [
        ("POST", "/subjects/orders-value/versions?normalize=true", {"schema": '"long"'}),
        ("POST", "/subjects/other-value", {"schema": '"long"'})]
    assert server.seen[0][3] == "Basic dTpw"


def test_a_bearer_token_is_sent_and_latest_is_not_cached(server: _Scripted) -> None:
    server.script = [(200, {"subject": "s", "version": v, "id": v, "schema": '"int"'}) for v in (1, 2)]
    client = registry_client(REGISTRY_CONFIG.parse({"schema.registry.url": server.url, "bearer.auth.token": "t0k"}))
    assert [client.latest("s").version for _ in range(2)] == [1, 2]
    assert {auth for _, _, _, auth in server.seen} == {"Bearer t0k"}


def test_references_come_with_the_schema_and_subject_versions_are_fetched_once(server: _Scripted) -> None:
    reference = {"name": "shop/common.proto", "subject": "shop/common.proto", "version": 2}
    server.script = [(200, {"schema": "main", "schemaType": "PROTOBUF", "references": [reference]}),
                     (200, {"subject": "shop/common.proto", "version": 2, "id": 3, "schema": "common"})]
    client = SchemaRegistryClient(server.url)
    assert client.schema_by_id(8) == "main"
    assert client.references_of(8) == (SchemaReference("shop/common.proto", "shop/common.proto", 2),)
    for _ in range(2):
        found = client.subject_version("shop/common.proto", 2)
        assert (found.schema_id, found.schema, found.references) == (3, "common", ())
    assert [(m, p) for m, p, _, _ in server.seen] == [("GET", "/schemas/ids/8"),
                                                      ("GET", "/subjects/shop%2Fcommon.proto/versions/2")]
