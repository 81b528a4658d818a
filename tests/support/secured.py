"""Helpers for tests on the secured broker: worker.properties as a Kafka Connect user writes them, a
``kopycat`` child process whose argv is sampled while it runs, and the checks that no password leaked."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
from confluent_kafka import Message

from kopycat.dev.ports import free_port
from kopycat.dev.secured_kafka import SecuredKafkaBroker
from tests.support.kafka import consume_records

JSON_CONVERTERS = {"key.converter": "org.apache.kafka.connect.json.JsonConverter",
                   "key.converter.schemas.enable": "true",
                   "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                   "value.converter.schemas.enable": "true"}

FILE_CONFIG_PROVIDER = {"config.providers": "file",
                        "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider"}
"""Worker keys resolving ``${file:<path>:<key>}`` placeholders (Kafka's ``FileConfigProvider``)."""


def write_lines(path: Path, lines: Iterable[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


def write_properties(path: Path, props: Mapping[str, str]) -> Path:
    return write_lines(path, (f"{key}={value}" for key, value in props.items()))


def worker_properties(client: Mapping[str, str], topic: str, **extra: str) -> dict[str, str]:
    """A distributed-style worker.properties: the client's security keys at the top level (the worker's
    own clients: offsets, config and status topics) and under ``producer.``/``consumer.`` (the tasks'),
    the three storage topics named after ``topic``."""
    security = {k: v for k, v in client.items() if k != "bootstrap.servers"}
    props = {"bootstrap.servers": client["bootstrap.servers"], "group.id": f"{topic}-group", **JSON_CONVERTERS,
             "offset.storage.topic": f"{topic}-offsets", "config.storage.topic": f"{topic}-configs",
             "status.storage.topic": f"{topic}-status"}
    for name in ("offset", "config", "status"):
        props[f"{name}.storage.replication.factor"] = "1"
    props.update({"offset.storage.partitions": "1", "status.storage.partitions": "1"})
    for prefix in ("", "producer.", "consumer.", "admin."):
        props.update({f"{prefix}{key}": value for key, value in security.items()})
    props.update(extra)
    return props


@dataclass
class Watched:
    """A finished child process: its output and every argv seen of it and its descendants."""

    returncode: int
    stdout: str
    stderr: str
    argvs: list[list[str]] = field(default_factory=list)


def argvs_of(process: psutil.Process) -> list[list[str]]:
    """The argv of ``process`` and of every live descendant of it."""
    found = []
    for each in [process, *process.children(recursive=True)]:
        try:
            found.append(each.cmdline())
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def kopycat(*args: str, timeout_s: float = 300.0) -> Watched:
    """``python -m kopycat.cli *args`` to the end, its argv and its children's sampled while it runs."""
    child = subprocess.Popen([sys.executable, "-m", "kopycat.cli", *args], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    return watch(child, timeout_s)


def watch(child: subprocess.Popen[str], timeout_s: float = 300.0) -> Watched:
    """Wait for ``child``, sampling the argv of it and its descendants every 0.2 s."""
    argvs: list[list[str]] = []
    process = psutil.Process(child.pid)
    deadline = time.monotonic() + timeout_s
    while True:
        argvs += argvs_of(process)
        try:
            stdout, stderr = child.communicate(timeout=0.2)
            break
        except subprocess.TimeoutExpired:
            if time.monotonic() > deadline:
                child.kill()
                raise
    return Watched(child.returncode, stdout, stderr, argvs)


def assert_absent(secrets: Iterable[str], where: str, texts: Iterable[Any]) -> None:
    """No secret in any of ``texts`` (each stringified); ``where`` names them in the failure."""
    wanted = [secret for secret in secrets if secret]
    assert wanted, "no secret to look for"
    for text in texts:
        line = text if isinstance(text, str) else repr(text)
        for secret in wanted:
            assert secret not in line, f"a password reached {where}"


def assert_no_secret_in_run(run: Watched, *secrets: str) -> None:
    assert_absent(secrets, "the output", (run.stdout + run.stderr).splitlines())
    assert_absent(secrets, "a process argv", (" ".join(argv) for argv in run.argvs))


def consume_secured(broker: SecuredKafkaBroker, topic: str, *, committed_only: bool = False) -> list[Message]:
    """Every record of ``topic`` on the secured broker, read to the end as the admin user."""
    return consume_records(broker.bootstrap_servers, topic, committed_only=committed_only,
                           client=broker.librdkafka_sasl_settings())


def librdkafka_threads() -> int:
    """librdkafka's threads in this process (``rdk:main``, ``rdk:broker<n>``, ``rdk:bg``...): each
    live client has some, and they end only when the client is destroyed."""
    count = 0
    for task in Path("/proc/self/task").iterdir():
        try:
            count += (task / "comm").read_text().startswith("rdk:")
        except OSError:  # the thread ended while we looked
            continue
    return count


def wait_for_librdkafka_threads(before: int, what: str, timeout_s: float = 60.0) -> None:
    """Wait until no more librdkafka threads run than ``before``; fail naming ``what`` after ``timeout_s``
    (a client it made is still alive, retrying its login and logging each attempt)."""
    deadline = time.monotonic() + timeout_s
    while (left := librdkafka_threads() - before) > 0:
        assert time.monotonic() < deadline, f"{left} librdkafka threads outlived {what}: a client of it is still alive"
        time.sleep(0.2)


def wait_until_serving(base: str, process: subprocess.Popen[bytes], log: Path, timeout_s: float = 120) -> None:
    """Until ``kopycat rest`` at ``base`` answers ``GET /``; fails with its log tail if it exits or times out."""
    deadline = time.monotonic() + timeout_s
    while True:
        assert process.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        try:
            if httpx.get(f"{base}/", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)


@dataclass(frozen=True)
class RestWorker:
    """A ``kopycat rest`` child process serving at ``base``."""

    base: str
    process: subprocess.Popen[bytes]

    def create_and_read(self, name: str, config: Mapping[str, str], paths: Iterable[str]) -> list[httpx.Response]:
        """POST the connector (201), then GET each of ``paths`` (200 each); every response, the POST's first."""
        created = httpx.post(f"{self.base}/connectors", json={"name": name, "config": dict(config)}, timeout=60)
        assert created.status_code == 201, created.text
        responses = [created]
        for path in paths:
            responses.append(httpx.get(f"{self.base}{path}", timeout=60))
            assert responses[-1].status_code == 200, (path, responses[-1].text)
        return responses

    def assert_hides(self, secrets: Iterable[str], responses: Iterable[httpx.Response]) -> None:
        """No secret in ``responses`` nor in the argv of the process or its children."""
        secrets = list(secrets)
        assert_absent(secrets, "a REST response", (response.text for response in responses))
        argvs = argvs_of(psutil.Process(self.process.pid))
        assert_absent(secrets, "a process argv", (" ".join(argv) for argv in argvs))


@contextmanager
def rest_worker(worker: Path, log: Path) -> Iterator[RestWorker]:
    """``kopycat rest worker.properties`` on a free port, its output to ``log``, once it answers;
    terminated on exit."""
    port = free_port()
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "kopycat.cli", "rest", str(worker), "--port", str(port)],
                                   stdout=out, stderr=subprocess.STDOUT)
    rest = RestWorker(f"http://127.0.0.1:{port}", process)
    try:
        wait_until_serving(rest.base, process, log)
        yield rest
    finally:
        process.terminate()
        process.wait(60)


def stored_connector_records(broker: SecuredKafkaBroker, topic: str, name: str) -> list[Message]:
    """The config topic's records (``<topic>-configs``), after checking connector ``name`` is among them."""
    stored = consume_secured(broker, f"{topic}-configs")
    assert any(name.encode() in (m.key() or b"") for m in stored), "the connector is not in the config topic"
    return stored
