"""``kopycat connect import|export`` against a fake Kafka Connect REST API on loopback.

The fake answers the calls a migration makes the way Kafka's ``ConnectorsResource`` does; the
Kopycat side is a herder over in-memory stores. The real Java worker is exercised in
tests/integration/test_connect_migration.py.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from kopycat import cli
from kopycat.rest import connect_migration
from kopycat.rest.connect_client import KafkaConnectClient
from kopycat.rest.connect_migration import export_connectors, import_connectors
from kopycat.rest.herder import RestHerder
from kopycat.storage.config_backing_store import MemoryConfigBackingStore, TargetState
from kopycat.storage.status_backing_store import MemoryStatusBackingStore

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
UNKNOWN = "com.acme.MainframeSourceConnector"
SECRET = "s3cr3t-do-not-print"


class FakeConnect:
    """The state of a fake Kafka Connect cluster: configs, states, and every request seen."""

    def __init__(self, plugins: tuple[str, ...] = (FILE_SOURCE,)) -> None:
        self.configs: dict[str, dict[str, str]] = {}
        self.states: dict[str, str] = {}
        self.plugins = plugins
        self.requests: list[tuple[str, str]] = []
        self.stuck: set[str] = set()  # connectors whose state never changes

    def add(self, name: str, config: dict[str, str], state: str = "RUNNING") -> None:
        self.configs[name] = {**config, "name": name}
        self.states[name] = state

    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        self.requests.append((method, path))
        parts = [unquote(p) for p in urlsplit(path).path.strip("/").split("/")]
        if method == "GET" and parts == ["connectors"]:
            return 200, {name: {"info": {"name": name, "config": config, "tasks": [], "type": "source"},
                                "status": {"name": name, "connector": {"state": self.states[name]}, "tasks": []}}
                         for name, config in self.configs.items()}
        if parts[0] == "connector-plugins" and parts[2:] == ["config", "validate"]:
            if parts[1] not in self.plugins:
                return 400, {"error_code": 400, "message": f"Failed to find any class that implements Connector "
                                                           f"and which name matches {parts[1]}"}
            return 200, {"name": parts[1], "error_count": 0, "groups": [], "configs": []}
        name, action = parts[1], parts[2] if len(parts) > 2 else ""
        if action == "status":
            return 200, {"name": name, "connector": {"state": self.states[name]}, "tasks": []}
        if action in ("stop", "pause", "resume") and name in self.stuck:
            return 202, None
        if action in ("stop", "pause", "resume"):
            self.states[name] = {"stop": "STOPPED", "pause": "PAUSED", "resume": "RUNNING"}[action]
            return 202, None
        if method == "PUT" and action == "config":
            self.add(name, body, self.states.get(name, "RUNNING"))
            return 201, {"name": name, "config": body, "tasks": [], "type": "source"}
        return 404, {"error_code": 404, "message": f"no route for {method} {path}"}


@contextmanager
def serving(fake: FakeConnect) -> Iterator[KafkaConnectClient]:
    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            status, answer = fake.answer(self.command, self.path, body)
            data = b"" if answer is None else json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_PUT = do_POST = _handle

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield KafkaConnectClient(f"http://127.0.0.1:{server.server_address[1]}", timeout_s=10)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def herder() -> RestHerder:
    return RestHerder(MemoryConfigBackingStore(), MemoryStatusBackingStore(), {"bootstrap.servers": "127.0.0.1:1"})


def file_source(path: str = "/data/in.txt") -> dict[str, str]:
    return {"connector.class": FILE_SOURCE, "tasks.max": "1", "file": path, "topic": "lines",
            "sftp.password": SECRET}


def test_import_stores_supported_connectors_stopping_them_first_and_skips_unknown_classes(
        herder: RestHerder) -> None:
    fake = FakeConnect()
    fake.add("files", file_source())
    fake.add("mainframe", {"connector.class": UNKNOWN, "tasks.max": "1"})

    with serving(fake) as client:
        report = import_connectors(client, herder, stop_source=True)

    assert report.moved == {"files": FILE_SOURCE}
    assert [(s.name, s.connector_class) for s in report.skipped] == [("mainframe", UNKNOWN)]
    stored = herder.config_store.snapshot()
    assert stored.connector_configs == {"files": {**file_source(), "name": "files"}}
    assert stored.target_states.get("files", TargetState.STARTED) is TargetState.STARTED
    assert fake.states == {"files": "STOPPED", "mainframe": "RUNNING"}
    assert not any("mainframe" in path for _, path in fake.requests)


def test_import_keeps_a_paused_connector_paused_and_only_the_named_ones(herder: RestHerder) -> None:
    fake = FakeConnect()
    fake.add("paused", file_source("/data/a.txt"), state="PAUSED")
    fake.add("other", file_source("/data/b.txt"))

    with serving(fake) as client:
        report = import_connectors(client, herder, names=["paused", "missing"])

    assert report.moved == {"paused": FILE_SOURCE}
    assert [(s.name, s.reason.startswith("no connector of this name")) for s in report.skipped] == [("missing", True)]
    assert herder.config_store.snapshot().target_states["paused"] is TargetState.PAUSED
    assert fake.states == {"paused": "PAUSED", "other": "RUNNING"}


def test_import_skips_a_connector_that_does_not_stop_in_time_without_storing_it(herder: RestHerder) -> None:
    fake = FakeConnect()
    fake.add("stuck", file_source())
    fake.stuck.add("stuck")

    with serving(fake) as client:
        report = import_connectors(client, herder, stop_source=True, stop_timeout_s=0.5)

    assert not report.moved and [s.name for s in report.skipped] == ["stuck"]
    assert "did not reach STOPPED" in report.skipped[0].reason and "resume it there" in report.skipped[0].reason
    assert not herder.config_store.snapshot().connector_configs


def test_export_puts_stored_configs_and_stops_them_in_kopycat_unless_the_target_lacks_the_plugin(
        herder: RestHerder) -> None:
    herder.put_connector_config("files", file_source())
    herder.put_connector_config("files-b", file_source("/data/b.txt"))
    fake = FakeConnect()

    with serving(fake) as client:
        fake.plugins = ()
        refused = export_connectors(herder, client, names=["files-b"], stop=True)
        fake.plugins = (FILE_SOURCE,)
        report = export_connectors(herder, client, names=["files"], stop=True)

    assert [(s.name, s.connector_class) for s in refused.skipped] == [("files-b", FILE_SOURCE)]
    assert report.moved == {"files": FILE_SOURCE} and not report.skipped
    assert fake.configs == {"files": {**file_source(), "name": "files"}}
    assert fake.states == {"files": "RUNNING"}
    states = herder.config_store.snapshot().target_states
    assert states["files"] is TargetState.STOPPED
    assert states.get("files-b", TargetState.STARTED) is TargetState.STARTED


def test_cli_import_lists_skipped_connectors_with_their_class_exits_1_and_never_prints_secrets(
        herder: RestHerder, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Any) -> None:
    fake = FakeConnect()
    fake.add("files", file_source())
    fake.add("mainframe", {"connector.class": UNKNOWN, "tasks.max": "1", "db.password": SECRET})
    worker = tmp_path / "worker.properties"
    worker.write_text("bootstrap.servers=127.0.0.1:1\n")

    @contextmanager
    def memory_herder(props: Any) -> Iterator[RestHerder]:
        yield herder

    monkeypatch.setattr(connect_migration, "kopycat_herder", memory_herder)
    with serving(fake) as client, pytest.raises(SystemExit) as exited:
        cli.main(["connect", "import", "--url", client.url, "--worker", str(worker), "--stop-source"])

    out = capsys.readouterr()
    assert exited.value.code == 1
    assert f"imported files ({FILE_SOURCE})" in out.out
    assert f"skipped mainframe ({UNKNOWN}): Kopycat has no connector of this class" in out.out
    assert SECRET not in out.out + out.err
