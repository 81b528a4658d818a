"""A real Kafka Connect worker (Apache Kafka 4.x, distributed mode) on loopback, next to Kopycat.

Started from the jars in include/jars/connect-runtime/pom.xml with the JDK: Kafka's
``org.apache.kafka.connect.cli.ConnectDistributed`` with a generated worker.properties, its
REST API on a free 127.0.0.1 port and its offsets, configs and status on the given broker.
Kafka's FileStreamSource/Sink connectors are on the classpath (no plugin.path). Interop tests
run it beside Kopycat on the same offsets topic, so each side must resume from the other's
offsets. Start-up waits for ``GET /health`` (KIP-1017: 200 once the herder has started, after
``GET /`` first answers); a failure shows the tail of the worker's log.
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kopycat.dev.jars import ensure_jars
from kopycat.dev.ports import free_port, wait_for_port
from kopycat.dev.processes import JvmService, JvmStartError, file_log4j2_properties, java_executable

__all__ = ["ConnectRestError", "ConnectStartError", "LocalKafkaConnect"]

log = logging.getLogger(__name__)

MAIN_CLASS = "org.apache.kafka.connect.cli.ConnectDistributed"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"

# One worker on a one-broker cluster: internal topics with replication factor 1 (as Kafka's
# config/connect-distributed.properties), and offsets flushed every second instead of every
# minute so tests see a task's position without waiting.
TEST_WORKER_SETTINGS: dict[str, str] = {
    "config.storage.replication.factor": "1",
    "offset.storage.replication.factor": "1",
    "status.storage.replication.factor": "1",
    "offset.flush.interval.ms": "1000",
    # Kafka's own plugins carry ServiceLoader manifests (KIP-898): skip the reflective scan of
    # the classpath, which costs seconds on two busy cores.
    "plugin.discovery": "service_load",
}

LOG4J2_PROPERTIES = file_log4j2_properties(
    "kopycat.connect.log",
    {"org.apache.kafka": "INFO", "org.apache.kafka.clients": "WARN", "org.eclipse.jetty": "WARN"})

# C1 only, as the test broker: a test worker lives for minutes. A benchmark passes the JVM options
# Kafka's bin/kafka-run-class.sh uses instead (C2 included), so the worker runs at full speed.
TEST_JVM_OPTIONS: tuple[str, ...] = ("-XX:TieredStopAtLevel=1",)

_CONFLICT_RETRY_S = 60.0  # a 409 means "rebalance in progress": the request is valid, try again


class ConnectStartError(JvmStartError):
    """The worker did not come up; the message carries its log tail."""


class ConnectRestError(RuntimeError):
    """Kafka Connect's REST API answered with an error status; ``status`` and ``body`` say which."""

    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        super().__init__(f"{method} {path} answered {status}: {body}")
        self.status = status
        self.body = body


class LocalKafkaConnect(JvmService):
    """One Kafka Connect worker process (distributed mode), started and stopped by this object.

    ``url`` is its REST API; ``offsets_topic``/``configs_topic``/``status_topic`` are its
    internal topics, named after ``name`` plus a random suffix so two workers (or a rerun on
    the same broker) never share them unless ``extra_settings`` says so. Not thread-safe.

    ``jvm_options`` default to C1-only compilation (TEST_JVM_OPTIONS); benchmarks pass Kafka's own.
    Start-up takes 90-225 s on two busy cores (JVM, plugin scan, three internal topics read to
    their end, the first group join), hence the long default ``start_timeout_s``.
    Stopping sends SIGTERM first: the worker's shutdown hook stops its tasks. Its internal topics
    stay on the broker.
    """

    kind = "Kafka Connect worker"
    start_error = ConnectStartError
    stop_timeout_s = 30.0

    def __init__(self, bootstrap_servers: str, *, name: str = "connect",
                 extra_settings: Mapping[str, str] | None = None, heap: str = "512m",
                 start_timeout_s: float = 480.0, request_timeout_s: float = 120.0,
                 jvm_options: Sequence[str] = TEST_JVM_OPTIONS) -> None:
        super().__init__()
        self.bootstrap_servers = bootstrap_servers
        self.name = name
        suffix = uuid.uuid4().hex[:8]
        self.group_id = f"kopycat-{name}-{suffix}"
        self.offsets_topic = f"{self.group_id}-offsets"
        self.configs_topic = f"{self.group_id}-configs"
        self.status_topic = f"{self.group_id}-status"
        self.extra_settings = dict(extra_settings or {})
        self.heap = heap
        self.start_timeout_s = start_timeout_s
        self.request_timeout_s = request_timeout_s
        self.jvm_options = tuple(jvm_options)
        self.port = 0
        self.started_in_s: float | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        assert self.workdir is not None, "worker not started"
        return self.workdir / "connect.log"

    @property
    def settings(self) -> dict[str, str]:
        """The worker.properties this worker runs with (valid once the port is chosen)."""
        return {
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": self.group_id,
            "offset.storage.topic": self.offsets_topic,
            "config.storage.topic": self.configs_topic,
            "status.storage.topic": self.status_topic,
            "key.converter": STRING_CONVERTER,
            "value.converter": STRING_CONVERTER,
            "listeners": f"http://127.0.0.1:{self.port}",
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": str(self.port),
            **TEST_WORKER_SETTINGS,
            **self.extra_settings,
        }

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Write worker.properties, launch ConnectDistributed and wait until it is healthy."""
        libs = ensure_jars("connect-runtime")
        began = time.monotonic()
        self.workdir = Path(tempfile.mkdtemp(prefix=f"kopycat-{self.name}-"))
        self.port = free_port()
        config = self.workdir / "worker.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in self.settings.items()))
        log4j = self.workdir / "log4j2.properties"
        log4j.write_text(LOG4J2_PROPERTIES)
        self.launch([java_executable(), *self.jvm_options, "-Djava.awt.headless=true",
                     f"-Xms{self.heap}", f"-Xmx{self.heap}", "-XX:+UseG1GC",
                     f"-Dlog4j2.configurationFile={log4j}", f"-Dkopycat.connect.log={self.log_file}",
                     "-cp", f"{libs}/*", MAIN_CLASS, str(config)])
        try:
            self._wait_until_healthy()
        except BaseException:
            self.stop()  # the error already carries the log tail
            raise
        self.started_in_s = time.monotonic() - began
        log.info("Kafka Connect worker %s healthy at %s after %.1f s", self.group_id, self.url,
                 self.started_in_s)

    def _wait_until_healthy(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while not wait_for_port(self.port, 0.5) and time.monotonic() < deadline:
            self.check_alive()
        last = "the REST port never opened"
        while time.monotonic() < deadline:
            self.check_alive()
            try:
                health = self.request("GET", "/health", retry_conflicts_s=0)
                if health and health.get("status") == "healthy":
                    return
                last = str(health)
            except (ConnectRestError, OSError) as exc:  # 503 while the herder starts
                last = str(exc)
            time.sleep(0.5)
        raise ConnectStartError(f"Kafka Connect at {self.url} was not healthy after "
                                f"{self.start_timeout_s:.0f}s (last answer: {last}):\n{self.log_tail()}")

    # ------------------------------------------------------------------ REST

    def request(self, method: str, path: str, body: Any = None, *,
                retry_conflicts_s: float = _CONFLICT_RETRY_S) -> Any:
        """One REST call; the decoded JSON answer (None when empty). Errors raise ConnectRestError.

        A 409 (a rebalance is under way, Kafka's ``RebalanceNeededException``) is retried for
        ``retry_conflicts_s``, as Kafka's own clients of the API do.
        """
        data = None if body is None else json.dumps(body).encode()
        deadline = time.monotonic() + retry_conflicts_s
        while True:
            req = urllib.request.Request(self.url + path, data=data, method=method, headers={
                "Content-Type": "application/json", "Accept": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=self.request_timeout_s) as response:
                    text = response.read()
                return json.loads(text) if text else None
            except urllib.error.HTTPError as exc:
                answer = exc.read().decode(errors="replace")
                if exc.code == 409 and time.monotonic() < deadline:
                    time.sleep(0.5)
                    continue
                raise ConnectRestError(method, path, exc.code, answer) from None

    def create_connector(self, name: str, config: Mapping[str, str], *,
                         initial_state: str | None = None) -> dict[str, Any]:
        """``POST /connectors``; ``initial_state`` RUNNING, PAUSED or STOPPED (KIP-980)."""
        body: dict[str, Any] = {"name": name, "config": {**config, "name": name}}
        if initial_state is not None:
            body["initial_state"] = initial_state
        answer: dict[str, Any] = self.request("POST", "/connectors", body)
        return answer

    def connector_status(self, name: str) -> dict[str, Any]:
        """``GET /connectors/{name}/status``: ``{"connector": {"state": ...}, "tasks": [...]}``."""
        answer: dict[str, Any] = self.request("GET", f"/connectors/{name}/status")
        return answer

    def wait_for_connector_state(self, name: str, state: str, timeout_s: float = 60.0) -> dict[str, Any]:
        """Poll the status until the connector is in ``state`` (RUNNING, PAUSED, STOPPED, FAILED)."""
        return self._wait_for(name, timeout_s, f"connector state {state}",
                              lambda status: status["connector"]["state"] == state)

    def wait_for_task_state(self, name: str, state: str, timeout_s: float = 60.0) -> dict[str, Any]:
        """Poll the status until the connector has tasks and every one is in ``state``.

        A task that FAILED while another state was awaited ends the wait at once, with its trace.
        """
        def reached(status: dict[str, Any]) -> bool:
            tasks = status.get("tasks") or []
            failed = [t for t in tasks if t["state"] == "FAILED"]
            if failed and state != "FAILED":
                raise ConnectRestError("GET", f"/connectors/{name}/status", 200,
                                       f"task {failed[0]['id']} FAILED:\n{failed[0].get('trace')}")
            return bool(tasks) and all(t["state"] == state for t in tasks)

        return self._wait_for(name, timeout_s, f"every task {state}", reached)

    def _wait_for(self, name: str, timeout_s: float, what: str,
                  reached: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        status: dict[str, Any] | str = "(no status yet)"
        while time.monotonic() < deadline:
            try:
                status = self.connector_status(name)
            except ConnectRestError as exc:
                if exc.status != 404:  # 404: the status record is not written yet
                    raise
            else:
                if reached(status):
                    return status
            time.sleep(0.3)
        raise TimeoutError(f"connector {name!r} did not reach {what} within {timeout_s:.0f}s; "
                           f"last status: {status}")

    def stop_connector(self, name: str) -> None:
        """``PUT /connectors/{name}/stop`` (KIP-875): tasks stop and commit; answers 202 at once."""
        self.request("PUT", f"/connectors/{name}/stop")

    def resume_connector(self, name: str) -> None:
        """``PUT /connectors/{name}/resume``: a PAUSED or STOPPED connector runs again."""
        self.request("PUT", f"/connectors/{name}/resume")

    def delete_connector(self, name: str) -> None:
        """``DELETE /connectors/{name}``; its offsets stay in the offsets topic (as in Kafka)."""
        self.request("DELETE", f"/connectors/{name}")

    def get_offsets(self, name: str) -> list[dict[str, Any]]:
        """``GET /connectors/{name}/offsets`` (KIP-875): ``[{"partition": {...}, "offset": {...}}]``."""
        answer = self.request("GET", f"/connectors/{name}/offsets")
        offsets: list[dict[str, Any]] = answer["offsets"]
        return offsets
