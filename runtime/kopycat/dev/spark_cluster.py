"""A real Spark standalone cluster on loopback: one master and two workers from pyspark's own jars.

Each daemon is ``bin/spark-class`` of the installed pyspark (``org.apache.spark.deploy.master.Master``,
``org.apache.spark.deploy.worker.Worker``), bound to 127.0.0.1, a worker with one core and a
small memory (512m by default), so a job submitted to :attr:`LocalSparkCluster.master_url` runs
its executors in JVMs apart from the driver, as on a real cluster. Start-up waits until the
master's JSON status page lists every worker ALIVE. Jobs must ask for executors that fit a
worker: :meth:`LocalSparkCluster.submit_conf`.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from kopycat.dev.ports import free_port
from kopycat.dev.processes import JvmService, JvmStartError
from kopycat.dev.service import LocalService

__all__ = ["LocalSparkCluster", "SparkClusterStartError", "spark_home"]

log = logging.getLogger(__name__)

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


class SparkClusterStartError(JvmStartError):
    """The master or a worker did not come up; the message carries its log tail."""


def spark_home() -> Path:
    """The installed pyspark's directory: its ``bin/spark-class`` and ``jars/``."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


class SparkDaemon(JvmService):
    """One ``spark-class`` process (a master or a worker) with its log in ``workdir/stdout.log``."""

    kind = "Spark daemon"
    start_error = SparkClusterStartError
    stop_timeout_s = 15.0

    def __init__(self, workdir: Path, command: Sequence[str], env: dict[str, str]) -> None:
        super().__init__()
        self.workdir = workdir
        self.command = list(command)
        self.env = env

    @property
    def log_file(self) -> Path:
        """spark-class logs to stderr: the launch's own ``stdout.log``."""
        assert self.workdir is not None, "daemon not started"
        return self.workdir / "stdout.log"

    def start(self) -> None:
        """Launch the daemon; :class:`LocalSparkCluster` waits for the cluster as a whole."""
        self.launch(self.command, env=self.env)


class LocalSparkCluster(LocalService):
    """A standalone master and ``workers`` workers, started and stopped by this object. Not thread-safe."""

    def __init__(self, *, workers: int = 2, worker_memory: str = "512m", worker_cores: int = 1,
                 daemon_heap: str = "256m", start_timeout_s: float = 120.0) -> None:
        self.workers = workers
        self.worker_memory = worker_memory
        self.worker_cores = worker_cores
        self.daemon_heap = daemon_heap
        self.start_timeout_s = start_timeout_s
        self.port = 0
        self.ui_port = 0
        self.workdir: Path | None = None
        self._daemons: list[SparkDaemon] = []

    @property
    def master_url(self) -> str:
        """What ``--master`` (or a Spark connection) names: ``spark://127.0.0.1:PORT``."""
        return f"spark://127.0.0.1:{self.port}"

    def submit_conf(self) -> dict[str, str]:
        """Spark conf a job needs here: executors that fit one worker, the driver on loopback."""
        return {"spark.executor.memory": self.worker_memory, "spark.executor.cores": str(self.worker_cores),
                "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}

    def start(self) -> None:
        """Launch the master, then the workers, and wait until the master lists them all ALIVE."""
        began = time.monotonic()
        self.workdir = Path(tempfile.mkdtemp(prefix="kopycat-spark-cluster-"))
        self.port, self.ui_port = free_port(), free_port()
        spark_class = str(spark_home() / "bin" / "spark-class")
        env = {"SPARK_LOCAL_IP": "127.0.0.1", "SPARK_DAEMON_MEMORY": self.daemon_heap,
               "SPARK_NO_DAEMONIZE": "1", "SPARK_LOG_DIR": str(self.workdir)}
        try:
            self._launch("master", [spark_class, MASTER_CLASS, "--host", "127.0.0.1", "--port", str(self.port),
                                    "--webui-port", str(self.ui_port)], env)
            for n in range(self.workers):
                worker_dir = self.workdir / f"worker-{n}"
                self._launch(f"worker-{n}", [
                    spark_class, WORKER_CLASS, "--host", "127.0.0.1", "--cores", str(self.worker_cores),
                    "--memory", self.worker_memory, "--webui-port", str(free_port()), "--work-dir",
                    str(worker_dir / "work"), self.master_url], env)
            self._wait_for_workers()
        except BaseException:
            self.stop()
            raise
        log.info("Spark standalone master at %s with %d workers after %.1f s", self.master_url, self.workers,
                 time.monotonic() - began)

    def _launch(self, name: str, command: list[str], env: dict[str, str]) -> None:
        assert self.workdir is not None
        directory = self.workdir / name
        directory.mkdir(parents=True, exist_ok=True)
        daemon = SparkDaemon(directory, command, env)
        daemon.kind = f"Spark {name}"
        self._daemons.append(daemon)
        daemon.start()

    def _wait_for_workers(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        last = "the master never answered"
        while time.monotonic() < deadline:
            for daemon in self._daemons:
                daemon.check_alive()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as response:
                    status = json.load(response)
                alive = [w for w in status.get("workers", []) if w.get("state") == "ALIVE"]
                if len(alive) >= self.workers:
                    return
                last = f"{len(alive)} of {self.workers} workers alive"
            except (urllib.error.URLError, OSError, ValueError) as exc:
                last = str(exc)
            time.sleep(0.5)
        tails = "\n".join(daemon.log_tail(30) for daemon in self._daemons)
        raise SparkClusterStartError(f"the Spark cluster at {self.master_url} was not ready within "
                                     f"{self.start_timeout_s:.0f}s ({last}):\n{tails}")

    def stop(self) -> None:
        """Stop the workers, then the master, and remove the cluster's files; safe to call twice."""
        for daemon in reversed(self._daemons):
            daemon.stop()
        self._daemons = []
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None
