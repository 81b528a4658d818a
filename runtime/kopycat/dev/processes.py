"""Child processes of the dev services and the benches: stopping a session's process group, and the
JVM service both Kafka processes (:mod:`~kopycat.dev.kafka_broker`, :mod:`~kopycat.dev.kafka_connect`)
are: launched with the JDK in a session of their own, checked while they start, their log tail shown
when they fail, stopped with their work dir removed.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

from kopycat.dev.service import LocalService

__all__ = ["JvmService", "JvmStartError", "die_with_parent", "file_log4j2_properties", "java_executable",
           "stop_process_group"]


class JvmStartError(RuntimeError):
    """A JVM service did not come up; the message carries its log tail (or says the JDK is missing)."""


def stop_process_group(process: subprocess.Popen[bytes], timeout_s: float) -> int:
    """SIGTERM ``process``'s process group (it shuts down cleanly), SIGKILL after ``timeout_s``;
    the exit code. For children started with ``start_new_session=True``."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return int(process.returncode)


def die_with_parent() -> None:
    """In the child (a ``preexec_fn``): have Linux stop it if its owner dies (a killed pytest or demo).

    prctl(PR_SET_PDEATHSIG, SIGTERM); without it a killed test run leaves JVMs behind.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)


def java_executable() -> str:
    """``$JAVA_HOME/bin/java`` when present, else ``java`` on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if java is None:
        raise JvmStartError("no `java` on PATH: install JDK 17 (make setup does)")
    return java


class JvmService(LocalService):
    """A JVM process owned by this object, with its files in ``workdir`` (removed on stop).

    Subclasses write their config under ``workdir``, :meth:`launch` the JVM and wait for it to
    answer, calling :meth:`check_alive` while they wait. They name what they run (``kind``), the
    error their start raises (``start_error``) and their log (``log_file``). Not thread-safe.
    """

    kind: ClassVar[str] = "JVM"
    """What the process is, in messages: "the broker exited with 1"."""
    start_error: ClassVar[type[JvmStartError]] = JvmStartError
    stop_timeout_s: ClassVar[float] = 30.0

    def __init__(self) -> None:
        self.workdir: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    @abstractmethod
    def log_file(self) -> Path:
        """The JVM's own log (log4j), under ``workdir``."""

    @property
    def pid(self) -> int | None:
        """The JVM's process id while it runs: benchmarks read its CPU and RSS in /proc."""
        return None if self._process is None else self._process.pid

    def launch(self, command: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        """Start ``command`` in a session of its own, stdout and stderr appended to
        ``workdir/stdout.log``, with ``env`` added to this process's environment; the child dies
        with this process."""
        assert self.workdir is not None, f"{self.kind} has no work dir yet"
        # appended: a service relaunched in the same work dir after a crash keeps the first run's output
        stdout = open(self.workdir / "stdout.log", "ab")  # noqa: SIM115 - owned by the process
        self._process = subprocess.Popen(
            list(command), stdout=stdout, stderr=subprocess.STDOUT, start_new_session=True,
            env=None if env is None else {**os.environ, **env},
            preexec_fn=die_with_parent)  # noqa: PLW1509 - one prctl call, no locks taken

    def check_alive(self) -> None:
        """Raise ``start_error`` with the log tail when the process has exited."""
        if self._process is not None and self._process.poll() is not None:
            code = self._process.returncode
            self._process = None
            raise self.start_error(f"the {self.kind} exited with {code}:\n{self.log_tail()}")

    def log_tail(self, lines: int = 60) -> str:
        """The last lines of the JVM's log and stdout, for error messages."""
        if self.workdir is None:
            return f"(no log: the {self.kind} never started)"
        parts = []
        for path in dict.fromkeys((self.log_file, self.workdir / "stdout.log")):  # once when they are one
            if path.exists():
                parts.append(f"--- {path} ---\n" + "\n".join(
                    path.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(parts) or f"(the {self.kind} wrote no log)"

    def kill(self) -> None:
        """SIGKILL the process group and keep ``workdir``: a crash, as fault tests stage it (no shutdown
        hook runs, nothing is flushed); the service's own ``restart`` brings it back on the same files."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=60)

    def stop(self, timeout_s: float | None = None) -> None:
        """Stop the process group (SIGTERM, then SIGKILL after ``timeout_s``, default
        ``stop_timeout_s``) and remove ``workdir``; safe to call twice."""
        process, self._process = self._process, None
        if process is not None:
            stop_process_group(process, self.stop_timeout_s if timeout_s is None else timeout_s)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None


def file_log4j2_properties(log_property: str, levels: Mapping[str, str]) -> str:
    """A log4j2 configuration writing the JVM's log to the file named by the system property
    ``log_property``, at INFO, with ``levels`` (logger name -> level) overriding single loggers.

    One shape for every JVM started here (broker, Connect worker, benchmarks), so their logs read alike.
    """
    lines = ["status = error", "appender.file.type = File", "appender.file.name = file",
             f"appender.file.fileName = ${{sys:{log_property}}}", "appender.file.layout.type = PatternLayout",
             "appender.file.layout.pattern = [%d] %p %m (%c)%n", "rootLogger.level = INFO",
             "rootLogger.appenderRef.file.ref = file"]
    for index, (name, level) in enumerate(levels.items()):
        key = _LOGGER_KEYS.get(name, f"logger{index}")
        lines += [f"logger.{key}.name = {name}", f"logger.{key}.level = {level}"]
    return "\n".join(lines) + "\n"


_LOGGER_KEYS = {"kafka": "kafka", "state.change.logger": "state", "org.apache.kafka": "kafka",
                "org.apache.kafka.clients": "clients", "org.eclipse.jetty": "jetty"}
