"""A real single-node Apache Kafka 4.x broker (KRaft, combined broker+controller) on loopback.

Started from the jars in include/jars/kafka/pom.xml with the JDK, with its log dir in a temp
dir, so tests, the demo and the benchmarks talk to the same broker a user runs. Start-up waits
for a real metadata response; a failure shows the tail of the broker's log.
"""

from __future__ import annotations

import base64
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from kopycat.dev.jars import ensure_jars
from kopycat.dev.ports import free_port, wait_for_port
from kopycat.dev.processes import JvmService, JvmStartError, file_log4j2_properties, java_executable

# One broker on one machine: every internal topic must live with replication factor 1, and a
# group's first rebalance must not wait, or transactions and groups hang (DESIGN.md §7).
SINGLE_NODE_SETTINGS: dict[str, str] = {
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "5",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "5",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "num.partitions": "1",
    "default.replication.factor": "1",
    "min.insync.replicas": "1",
    # Let compaction tests see the cleaner work within seconds rather than minutes.
    "log.cleaner.backoff.ms": "1000",
    # Keep every record whatever its timestamp: tests and demos stamp records in the past (backfill
    # windows), and time retention would delete them between two runs when its check fires.
    "log.retention.ms": "-1",
}

LOG4J2_PROPERTIES = file_log4j2_properties("kopycat.broker.log", {"kafka": "INFO", "state.change.logger": "WARN"})


class BrokerStartError(JvmStartError):
    """The broker did not come up; the message carries its log tail."""


def cluster_id() -> str:
    """A cluster id as Kafka's `kafka-storage random-uuid` prints it (URL-safe base64, no padding).

    Like Kafka's Uuid.randomUuid, never one starting with "-": the storage tool's argument
    parser would take it for an option (1 id in 64 starts with it).
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class LocalKafkaBroker(JvmService):
    """One Apache Kafka broker process, started and stopped by this object.

    Use as a context manager, or call start()/stop(); fault tests kill() it (SIGKILL) and restart() it
    on the same address and data. `bootstrap_servers` is the PLAINTEXT listener on 127.0.0.1.
    Not thread-safe: one owner starts and stops it.
    """

    kind = "broker"
    start_error = BrokerStartError
    stop_timeout_s = 20.0

    def __init__(self, *, name: str = "kafka", extra_settings: dict[str, str] | None = None,
                 heap: str = "768m", start_timeout_s: float = 180.0) -> None:
        super().__init__()
        self.name = name
        self.extra_settings = dict(extra_settings or {})
        self.heap = heap
        self.start_timeout_s = start_timeout_s
        self.port = 0
        self.controller_port = 0

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        assert self.workdir is not None, "broker not started"
        return self.workdir / "broker.log"

    def start(self) -> None:
        """Format a fresh log dir, launch the broker and wait until it answers metadata."""
        self.workdir = Path(tempfile.mkdtemp(prefix=f"kopycat-{self.name}-"))
        self.port, self.controller_port = free_port(), free_port()
        self.prepare(self.workdir)
        config = self._write_config()
        (self.workdir / "log4j2.properties").write_text(LOG4J2_PROPERTIES)
        self._format_storage([*self._java_base(), "-Xmx256m"], config)
        self._launch_broker()

    def restart(self) -> None:
        """Launch the broker again on the same ports, config and log dirs, after :meth:`kill`.

        What a crashed broker's restart does: the log recovery of an unclean shutdown, then the same
        cluster, topics, records and transaction state on the same address, so clients reconnect.
        """
        assert self.workdir is not None and self._process is None, "restart() follows kill() of a started broker"
        self._launch_broker()

    def _java_base(self) -> list[str]:
        assert self.workdir is not None
        log4j = self.workdir / "log4j2.properties"
        # C1 only: a test broker lives for minutes, and C2 compiling at start-up costs seconds.
        return [java_executable(), "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
                f"-Dlog4j2.configurationFile={log4j}", f"-Dkopycat.broker.log={self.log_file}",
                *self.jvm_options(), "-cp", f"{ensure_jars('kafka')}/*"]

    def _launch_broker(self) -> None:
        assert self.workdir is not None
        self.launch([*self._java_base(), f"-Xms{self.heap}", f"-Xmx{self.heap}", "-XX:+UseG1GC", "kafka.Kafka",
                     str(self.workdir / "server.properties")])
        self._wait_until_ready()

    # ------------------------------------------------------------------ hooks a variant declares

    def prepare(self, workdir: Path) -> None:
        """Hook: write what the config refers to (certificates...) into ``workdir`` and take more
        ports, before the config is written. Default: nothing."""

    def listener_settings(self) -> dict[str, str]:
        """Hook: the listener keys of server.properties. Default: PLAINTEXT on ``port`` for clients and
        the broker itself, a PLAINTEXT CONTROLLER listener on ``controller_port``."""
        return {
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port},"
                                    f"CONTROLLER://127.0.0.1:{self.controller_port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        }

    def jvm_options(self) -> list[str]:
        """Hook: more ``-D`` options of the broker's JVM (Kafka reads some settings only as system
        properties). Default: none."""
        return []

    def storage_format_arguments(self) -> list[str]:
        """Hook: more arguments of ``kafka-storage format`` (``--add-scram ...``). Default: none."""
        return []

    def client_config(self) -> dict[str, str]:
        """Hook: the librdkafka settings of a client with every right on this broker (the start-up
        check uses it). Default: ``bootstrap.servers`` alone."""
        return {"bootstrap.servers": self.bootstrap_servers}

    # ------------------------------------------------------------------ start-up

    def _write_config(self) -> Path:
        assert self.workdir is not None
        settings = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            **self.listener_settings(),
            "log.dirs": str(self.workdir / "data"),
            **SINGLE_NODE_SETTINGS,
            **self.extra_settings,
        }
        path = self.workdir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        return path

    def _format_storage(self, base: list[str], config: Path) -> None:
        cmd = [*base, "kafka.tools.StorageTool", "format", "--standalone",
               "-t", cluster_id(), "-c", str(config),
               *self.storage_format_arguments()]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise BrokerStartError(f"formatting the log dir failed:\n{result.stdout}{result.stderr}")

    def _wait_until_ready(self) -> None:
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + self.start_timeout_s
        # Wait for the listener before making a client, or librdkafka logs every refused connect.
        while not wait_for_port(self.port, 0.5) and time.monotonic() < deadline:
            self.check_alive()
        admin = AdminClient(self.client_config())
        while time.monotonic() < deadline:
            self.check_alive()
            try:
                metadata = admin.list_topics(timeout=2)
                if metadata.brokers:
                    return
            except Exception:  # noqa: BLE001 - not up yet; the deadline decides
                time.sleep(0.2)
        tail = self.log_tail()
        self.stop()
        raise BrokerStartError(f"no metadata from {self.bootstrap_servers} after "
                               f"{self.start_timeout_s:.0f}s:\n{tail}")
