"""Kafka Connect's ``ConnectStandalone`` in a JVM of its own, for the benches that compare against it.

Started from the Maven Central jars (include/jars/connect-runtime) with what
bin/connect-standalone.sh and kafka-run-class.sh give the JVM, logging to a file in the work dir.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

from kopycat.dev.jars import JarsError, ensure_jars
from kopycat.dev.ports import free_port
from kopycat.dev.processes import die_with_parent, file_log4j2_properties, java_executable, stop_process_group

STANDALONE_MAIN = "org.apache.kafka.connect.cli.ConnectStandalone"
# What bin/connect-standalone.sh and kafka-run-class.sh give the JVM (heap, G1 settings).
JVM_OPTIONS = ["-Xms256M", "-Xmx2G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
               "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
               "-Djava.awt.headless=true"]
LOG4J2_PROPERTIES = file_log4j2_properties("kopycat.bench.log", {"org.apache.kafka.clients": "WARN"})
POLL_S = 0.2
JARS_WAIT_S = 20 * 60.0


def connect_libs() -> Path:
    """The connect-runtime jars, fetched on first use; waits (20 minutes) for a pom being added."""
    deadline = time.monotonic() + JARS_WAIT_S
    while True:
        try:
            return ensure_jars("connect-runtime")
        except JarsError:
            if time.monotonic() > deadline:
                raise
            time.sleep(30)


def properties_file(path: Path, props: Mapping[str, str]) -> Path:
    path.write_text("".join(f"{key}={value}\n" for key, value in props.items()))
    return path


@contextlib.contextmanager
def standalone(bootstrap: str, converters: Mapping[str, str], connector: Mapping[str, str], workdir: Path
               ) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """A ConnectStandalone JVM running one connector, the worker's converters ``converters``:
    yields (process, REST port), then stops it."""
    port = free_port()
    worker = properties_file(workdir / "worker.properties", {
        "bootstrap.servers": bootstrap, **converters,
        "offset.storage.file.filename": str(workdir / "connect.offsets"),
        "offset.flush.interval.ms": "60000", "listeners": f"http://127.0.0.1:{port}",
        # Kafka's plugins carry ServiceLoader manifests (KIP-898): no reflective classpath scan.
        "plugin.discovery": "service_load"})
    log4j = workdir / "log4j2.properties"
    log4j.write_text(LOG4J2_PROPERTIES)
    stdout = (workdir / "stdout.log").open("wb")
    process = subprocess.Popen(
        [java_executable(), *JVM_OPTIONS, f"-Dlog4j2.configurationFile={log4j}",
         f"-Dkopycat.bench.log={workdir / 'connect.log'}", "-cp", f"{connect_libs()}/*",
         STANDALONE_MAIN, str(worker), str(properties_file(workdir / "connector.properties",
                                                       connector))],
        stdout=stdout, stderr=subprocess.STDOUT, start_new_session=True,
        preexec_fn=die_with_parent)  # noqa: PLW1509 - one prctl call, no locks taken
    try:
        yield process, port
    finally:
        stop_process_group(process, 30)
        stdout.close()


def rest_answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=POLL_S) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def log_tail(workdir: Path, lines: int = 40) -> str:
    path = workdir / "connect.log"
    text = path.read_text(errors="replace") if path.exists() else "(no log)"
    return "\n".join(text.splitlines()[-lines:])
