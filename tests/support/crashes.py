"""A ``kopycat standalone`` worker under a fault of the services it uses (a crashed broker, a terminated
database backend): run to the end of its copy, rerun once if it failed on the fault, checked for a clear error."""

from __future__ import annotations

import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from tests.support.standalone import start_worker

__all__ = ["FAILED", "STALL_S", "Worker", "standalone_workers", "topic_size"]

STALL_S = 240.0  # a loaded machine is slow; a worker that copies nothing for this long is stuck


FAILED = (b" ERROR kopycat.runtime.worker: Task ", b" ERROR kopycat.runtime.worker: Connector ")
"""How the standalone worker logs a task or connector that failed: it stays FAILED, as in Kafka Connect, until
the operator restarts the worker."""


class Worker:
    """One ``kopycat standalone`` run and its log; a rerun when the first one failed on the fault."""

    def __init__(self, worker: Path, connector: Path, log: Path) -> None:
        self.worker, self.connector, self.log = worker, connector, log
        self.processes: list[subprocess.Popen[bytes]] = []
        self.failures: list[str] = []
        self._log_from = 0

    def start(self) -> subprocess.Popen[bytes]:
        self._log_from = self.log.stat().st_size if self.log.exists() else 0
        self.processes.append(start_worker(self.worker, self.connector, self.log))
        return self.processes[-1]

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else "(no log)"

    def saw_error(self, *phrases: str) -> bool:
        """Whether any run logged one of ``phrases`` in a retried or failed step: the fault reached the task."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return any(phrase in line for line in text.splitlines() if "WARNING" in line or "ERROR" in line
                   for phrase in phrases)

    def failure(self) -> str | None:
        """The error of this run's failed task or connector (its log line and trace), or the log's end
        when the process exited; None while it runs without one."""
        text = self.log.read_bytes()[self._log_from:] if self.log.exists() else b""
        found = [text.find(marker) for marker in FAILED if marker in text]
        if found:
            return text[min(found):][:4000].decode(errors="replace")
        return None if self.processes[-1].poll() is None else self.tail()

    def run_to(self, progress: Callable[[], int], total: int) -> None:
        """Until ``progress()`` reaches ``total``; then stopped cleanly (exit 0). A run that failed
        (a task FAILED, or the process exited) must say why with an error; it is stopped and rerun, once."""
        last, stalled_since = -1, time.monotonic()
        while (done := progress()) < total:
            if (error := self.failure()) is not None:
                assert not self.failures, f"the rerun failed too: {error}"
                assert "Error" in error, f"the worker failed without an error: {error}"
                self.failures.append(error)
                self.stop(check=False)
                self.start()
            if done != last:
                last, stalled_since = done, time.monotonic()
            assert time.monotonic() - stalled_since < STALL_S, f"stalled at {done} of {total}: {self.tail()}"
            time.sleep(0.3)
        self.stop(check=True)

    def stop(self, *, check: bool) -> None:
        """SIGTERM once the worker runs (before, Python's default handler ends it); ``check``: exit 0."""
        process = self.processes[-1]
        deadline = time.monotonic() + 180
        while b"standalone worker running" not in self.log.read_bytes()[self._log_from:] and process.poll() is None:
            assert time.monotonic() < deadline, f"the worker did not start: {self.tail()}"
            time.sleep(0.1)
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        code = process.wait(120)
        assert code == 0 or not check, self.tail()

    def kill_leftovers(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait(30)


def topic_size(bootstrap: str, topic: str, *, committed_only: bool = False) -> int:
    """The records written to ``topic``: the sum of its high watermarks, or with ``committed_only`` of its
    last stable offsets (a read_committed consumer's end: records of open transactions are past it)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                         "isolation.level": "read_committed" if committed_only else "read_uncommitted"})
    try:
        metadata = consumer.list_topics(topic, timeout=30)
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                   for p in metadata.topics[topic].partitions)
    finally:
        consumer.close()


@contextmanager
def standalone_workers() -> Iterator[Callable[[Path, Path, Path], Worker]]:
    """``make(worker_properties, connector_properties, log)``: Workers whose processes a failed test
    does not leave behind."""
    made: list[Worker] = []

    def make(worker: Path, connector: Path, log: Path) -> Worker:
        made.append(Worker(worker, connector, log))
        return made[-1]

    try:
        yield make
    finally:
        for each in made:
            each.kill_leftovers()
