"""Runs one task config in a child process, seen by the worker as a runner: ``task.isolation=process``.

Kafka Connect runs every task on a thread of the JVM; in Python those threads share one interpreter
lock, so ``tasks.max`` above 1 would not use a second core. :class:`TaskProcess` keeps the runner's
shape the :class:`~kopycat.runtime.worker.Worker` drives (``run``, ``stop``, ``summary``, ``metrics``,
``topics_listener``) and runs the real runner, built by the same
:func:`~kopycat.runtime.task_factory.build_task_runner`, in a child started with multiprocessing's
"forkserver" method: confluent-kafka's librdkafka threads do not survive ``fork``, so children are forked
from a server process that has imported the runtime (this module) and started no client, which saves each
task the seconds a "spawn"ed interpreter takes to import it. (The runtime imports pyarrow, whose allocator
starts a background thread on import: children have been forked past it since the fork server came in.) The
server also imports what tasks would import on their first batch, where installed (:data:`OPTIONAL_PRELOAD`).

One duplex pipe joins the two; every message is a tuple:

- child -> worker: ``("get"|"set"|"partitions", id, argument)`` offset-store requests (the child reads and
  writes offsets through the worker's store, as the file store has one writer: the worker), ``("metrics",
  groups)`` the task's metric groups once a second (:data:`METRICS_INTERVAL_S`), ``("topics", names)``
  KIP-558's newly used topics, and ``("done", summary, trace)`` the run's summary and its failure's trace;
- worker -> child: ``("reply", id, result, error)`` and ``("stop",)``, which stops the run gracefully
  (the child commits its offsets and reports ``done``).

A child that exits without ``done`` (killed, crashed) fails the run with its exit code; one that does not
stop within the grace time after ``stop`` is killed. A child whose worker dies (the pipe closes) exits at
once without committing, as a killed worker's thread would.

Thread-safety: :meth:`TaskProcess.run` runs on one thread (the worker's task thread); :meth:`stop` and
the metrics may be called from any other.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.forkserver
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from kopycat.api.errors import ConnectError
from kopycat.api.records import TopicPartition
from kopycat.runtime.bounds import Bounds, RunSummary, StopReason
from kopycat.runtime.metrics import GroupValues
from kopycat.runtime.task_factory import build_task_runner
from kopycat.runtime.task_parts import TaskId
from kopycat.storage.offset_backing_store import OffsetBackingStore
from kopycat.storage.write_completion import SetCallback

__all__ = ["METRICS_INTERVAL_S", "OPTIONAL_PRELOAD", "TaskProcess", "TaskProcessError", "start_fork_server"]

log = logging.getLogger(__name__)

METRICS_INTERVAL_S = 1.0
"""How often a child sends its task's metric groups: a scrape of /metrics is at most this much behind."""

OPTIONAL_PRELOAD = ("pandas", "pyarrow.pandas_compat", "dlt.extract", "dlt.sources.sql_database", "psycopg",
                    "kopycat.connectors.postgres_cdc.source_task")
"""Modules the fork server imports besides the runtime, each skipped when it is not installed (multiprocessing
ignores a preload's ImportError): pyarrow imports pandas and its pandas shim on a task's first ``pa.array`` of
Python values (0.2 s per task process), a dlt task imports dlt and, for dlt's most used source, sql_database
with SQLAlchemy (about 1 s), and a PostgreSQL CDC task psycopg and its connector's modules (0.17 s, a seventh
of a 100,000-change run): paid once per worker when the server starts instead of inside every task's run.
None of them starts a thread, opens a connection or resolves dlt's config on import."""

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload([__name__, *OPTIONAL_PRELOAD])


def start_fork_server() -> None:
    """Start the fork server now (once per process), so that its start (an interpreter importing the runtime:
    seconds) is paid when a worker starts, not inside its first task's run."""
    multiprocessing.forkserver.ensure_running()


class TaskProcessError(ConnectError):
    """The task failed in its child process: the message is the child's traceback, or its exit code."""


@dataclass(frozen=True)
class _TaskSpec:
    """Everything a child needs to build the runner (picklable)."""

    task_id: TaskId
    task_props: dict[str, str]
    connector_props: dict[str, Any]
    worker_props: dict[str, str]
    bounds: Bounds | None
    assignment: tuple[TopicPartition, ...] | None
    track_topics: bool
    log_level: int


class TaskProcess:
    """One task config run in a child process, driven like a runner (see the module doc)."""

    def __init__(self, task_id: TaskId, task_props: Mapping[str, str], connector_props: Mapping[str, Any],
                 worker_props: Mapping[str, str], offset_store: OffsetBackingStore, bounds: Bounds | None,
                 stop_timeout_s: float, assignment: Collection[TopicPartition] | None = None) -> None:
        """``offset_store`` is the connector's view of the worker's store, served to the child;
        ``stop_timeout_s`` how long a stopping child may take before it is killed; ``assignment`` a sink
        task's partitions in a bounded run (see :func:`~kopycat.runtime.task_factory.build_task_runner`)."""
        self.id = task_id
        self.summary = RunSummary(task_id.connector, task_id.task)
        self.metrics = _RemoteMetrics()
        self.topics_listener: Callable[[set[str]], None] | None = None
        self.metrics_listener: Callable[[], None] | None = None
        """Called once, when the child's first metric groups arrive: a registry that declares instruments per
        metric name (OpenTelemetry's) reads the task's names then, not from the empty groups before."""
        self._spec = (dict(task_props), dict(connector_props), dict(worker_props), bounds,
                      None if assignment is None else tuple(assignment))
        self._store = offset_store
        self._stop_timeout_s = stop_timeout_s
        self._stop_requested: float | None = None
        self._killed = False
        self._pipe: Connection | None = None
        self._send_lock = threading.Lock()

    def run(self) -> RunSummary:
        """Start the child and serve it until it is done; its summary, or TaskProcessError with its trace."""
        task_props, connector_props, worker_props, bounds, assignment = self._spec
        spec = _TaskSpec(self.id, task_props, connector_props, worker_props, bounds, assignment,
                         self.topics_listener is not None, logging.getLogger().getEffectiveLevel())
        ours, theirs = _CONTEXT.Pipe()
        process = _CONTEXT.Process(target=run_child, args=(theirs, spec), name=f"task-{self.id}", daemon=True)
        process.start()
        theirs.close()
        with self._send_lock:
            self._pipe = ours
        if self._stop_requested is not None:
            self._send(("stop",))
        try:
            done = self._serve(ours, process)
        finally:
            process.join(5.0)
            if process.is_alive():
                process.kill()
                process.join()
            with self._send_lock:
                self._pipe = None
            ours.close()
        if done is None:
            error = TaskProcessError(f"The process of task {self.id} exited with code {process.exitcode} before "
                                     f"reporting its end; offsets since its last commit will be copied again")
            self.summary.stop_reason, self.summary.error = StopReason.FAILED, f"{type(error).__name__}: {error}"
            raise error
        self.summary, trace = done
        if trace is not None:
            raise TaskProcessError(f"Task {self.id} failed in its process:\n{trace}")
        return self.summary

    def stop(self) -> None:
        """Ask the child to stop at its next batch boundary, committing its offsets (any thread)."""
        if self._stop_requested is None:
            self._stop_requested = time.monotonic()
        self._send(("stop",))

    def _serve(self, pipe: Connection, process: Any) -> tuple[RunSummary, str | None] | None:
        """Answer the child's messages until it reports ``done`` (returned) or dies (None)."""
        while True:
            if (not self._killed and self._stop_requested is not None
                    and time.monotonic() - self._stop_requested > self._stop_timeout_s):
                log.error("Task %s did not stop within %.0f s of being asked; killing its process", self.id,
                          self._stop_timeout_s)
                process.kill()
                self._killed = True
            try:
                if not pipe.poll(0.2):
                    if not process.is_alive() and not pipe.poll(0):
                        return None
                    continue
                message = pipe.recv()
            except (EOFError, OSError):
                return None
            if message[0] == "done":
                return message[1], message[2]
            self._handle(message)

    def _handle(self, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "metrics":
            first = not self.metrics.groups
            self.metrics.groups = message[1]
            if first and self.metrics_listener is not None:
                self.metrics_listener()
        elif kind == "topics":
            if self.topics_listener is not None:
                try:
                    self.topics_listener(message[1])
                except Exception:  # noqa: BLE001 - topic tracking is informational, as in WorkerTask
                    log.exception("Task %s: could not record its active topics %s", self.id, sorted(message[1]))
        else:
            self._answer(message[1], kind, message[2])

    def _answer(self, request: int, kind: str, argument: Any) -> None:
        """Run one store call of the child's; a write answers when the store's future resolves."""
        try:
            if kind == "set":
                self._store.set(argument).add_done_callback(
                    lambda future: self._send(("reply", request, None, _error_text(future.exception()))))
                return
            result = self._store.get(argument) if kind == "get" else self._store.connector_partitions(argument)
        except Exception as exc:  # noqa: BLE001 - the child's call raises it
            self._send(("reply", request, None, _error_text(exc)))
            return
        self._send(("reply", request, result, None))

    def _send(self, message: tuple[Any, ...]) -> None:
        with self._send_lock:
            if self._pipe is None:
                return
            try:
                self._pipe.send(message)
            except (OSError, ValueError):  # the child is gone; its end is reported by run()
                log.debug("Task %s: its process no longer listens", self.id)


class _RemoteMetrics:
    """The child's last metric groups, for the worker's registry (``collect``, as TaskMetrics has)."""

    def __init__(self) -> None:
        self.groups: list[GroupValues] = []

    def collect(self) -> list[GroupValues]:
        return list(self.groups)


# ---------------------------------------------------------------------- in the child


def run_child(pipe: Connection, spec: _TaskSpec) -> None:
    """The child's entry point: build the runner, run it, report ``done``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the worker, which stops us gracefully
    logging.basicConfig(level=spec.log_level,
                        format="%(asctime)s %(levelname)s %(processName)s %(name)s: %(message)s")
    channel = _ParentChannel(pipe)
    summary = RunSummary(spec.task_id.connector, spec.task_id.task, stop_reason=StopReason.FAILED)
    trace: str | None = None
    try:
        runner = build_task_runner(spec.task_id, spec.task_props, spec.connector_props, spec.worker_props,
                                   ParentOffsetStore(channel), spec.bounds, spec.assignment)
    except BaseException as exc:  # noqa: BLE001 - reported to the worker as the task's failure
        channel.send(("done", summary, "".join(traceback.format_exception(exc))))
        return
    channel.on_stop(runner.stop)
    if spec.track_topics:
        runner.topics_listener = lambda topics: channel.send(("topics", topics))
    reporting = threading.Event()
    threading.Thread(target=_report_metrics, args=(channel, runner.metrics.collect, reporting),
                     name="metrics-to-worker", daemon=True).start()
    try:
        summary = runner.run()
    except BaseException as exc:  # noqa: BLE001 - reported to the worker as the task's failure
        summary, trace = runner.summary, "".join(traceback.format_exception(exc))
    finally:
        reporting.set()
    channel.send(("metrics", runner.metrics.collect()))
    channel.send(("done", summary, trace))


def _report_metrics(channel: _ParentChannel, collect: Callable[[], list[GroupValues]],
                    finished: threading.Event) -> None:
    while not finished.wait(METRICS_INTERVAL_S):
        channel.send(("metrics", collect()))


class _ParentChannel:
    """The child's end of the pipe: requests with futures, and a reader that applies ``stop``.

    When the worker's end closes (the worker died), the child exits at once: a task must not copy on
    after its worker, which cannot record its offsets any more.
    """

    def __init__(self, pipe: Connection) -> None:
        self._stop: Callable[[], None] | None = None
        self._stop_received = False
        self._pipe = pipe
        self._lock = threading.Lock()
        self._pending: dict[int, Future[Any]] = {}
        self._next = 0
        threading.Thread(target=self._read, name="worker-pipe", daemon=True).start()

    def send(self, message: tuple[Any, ...]) -> None:
        with self._lock:
            self._pipe.send(message)

    def on_stop(self, stop: Callable[[], None]) -> None:
        """Call ``stop`` when the worker says so, or now if it already has (while the runner was built)."""
        with self._lock:
            self._stop = stop
            received = self._stop_received
        if received:
            stop()

    def request(self, kind: str, argument: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            self._next += 1
            self._pending[self._next] = future
            self._pipe.send((kind, self._next, argument))
        return future

    def _read(self) -> None:
        while True:
            try:
                message = self._pipe.recv()
            except (EOFError, OSError):
                os._exit(70)  # the worker is gone (EX_SOFTWARE); see the class doc
            if message[0] == "stop":
                with self._lock:
                    self._stop_received, stop = True, self._stop
                if stop is not None:
                    stop()
                continue
            _, request, result, error = message
            with self._lock:
                future = self._pending.pop(request)
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(ConnectError(f"The worker's offset store failed: {error}"))


class ParentOffsetStore(OffsetBackingStore):
    """The worker's offset store as a child process sees it: every call goes over the pipe.

    Its ``start`` and ``stop`` do nothing: the worker opened the store and closes it.
    """

    def __init__(self, channel: _ParentChannel) -> None:
        self._channel = channel

    def start(self) -> None:
        """Nothing: the worker's store is started."""

    def stop(self) -> None:
        """Nothing: the worker stops its store."""

    def get(self, keys: Collection[bytes]) -> dict[bytes, bytes | None]:
        return self._channel.request("get", list(keys)).result()

    def set(self, values: Mapping[bytes, bytes | None], callback: SetCallback | None = None) -> Future[None]:
        written: Future[None] = Future()

        def complete(reply: Future[Any]) -> None:
            error = reply.exception()
            if callback is not None:
                callback(error)  # before the future resolves, as the stores promise
            if error is None:
                written.set_result(None)
            else:
                written.set_exception(error)

        self._channel.request("set", dict(values)).add_done_callback(complete)
        return written

    def connector_partitions(self, connector: str) -> list[dict[str, Any] | None]:
        return self._channel.request("partitions", connector).result()


def _error_text(error: BaseException | None) -> str | None:
    return None if error is None else f"{type(error).__name__}: {error}"
