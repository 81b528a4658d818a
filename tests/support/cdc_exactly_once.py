"""``kopycat standalone`` streaming PostgreSQL CDC with exactly-once, killed at random and run to the end.

The exactly-once CDC tests share this setup: a worker with ``exactly.once.source.support=enabled``
(Kafka Connect's KIP-618) and offsets in a topic of its own, a CDC connector whose transactions stay
open for an interval (``transaction.boundary=interval``, so a kill lands inside one), and the
committed offset read back as a read_committed reader of that topic sees it.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kopycat.storage.kafka_offset_store import KafkaOffsetStore
from kopycat.storage.offset_storage_reader_writer import OffsetStorageReaderImpl
from tests.support.cdc import connector_props
from tests.support.kills import kill_when
from tests.support.standalone import run_until, start_worker, write_props

__all__ = ["ExactlyOnceCdc", "exactly_once_cdc"]


@dataclass(frozen=True)
class ExactlyOnceCdc:
    """One CDC connector of one exactly-once standalone worker: its names, properties files and log."""

    bootstrap: str
    name: str
    prefix: str
    slot: str
    offsets_topic: str
    worker: Path
    connector: Path
    log: Path

    @property
    def topic(self) -> str:
        """The change topic of ``public.items``."""
        return f"{self.prefix}.public.items"

    def committed(self) -> Any:
        """The connector's offset as the last committed transaction left it (None before the first)."""
        with KafkaOffsetStore(self.bootstrap, topic=self.offsets_topic, replication_factor=1, partitions=1) as store:
            return OffsetStorageReaderImpl(store, self.name).offset({"server": self.prefix})

    def kill_after_a_commit(self, rng: random.Random, low_s: float, high_s: float,
                            inside: Callable[[Any], bool] = lambda offset: True) -> Any:
        """Start a run, SIGKILL it a random ``low_s``..``high_s`` after a transaction of its own committed
        an offset ``inside`` the phase the test is about (however slow the machine); the committed
        offset the kill left."""
        before = self.committed()
        process = start_worker(self.worker, self.connector, self.log)
        kill_when(process, lambda: (offset := self.committed()) != before and inside(offset), self.log, poll_s=0.1,
                  waiting_for="a transaction of this run committed", after_s=rng.uniform(low_s, high_s))
        return self.committed()

    def finish(self, count: Callable[[], int], expected: int) -> None:
        """A last run until the read_committed ``count()`` reaches ``expected`` (or stalls), then a clean stop."""
        run_until(self.worker, self.connector, self.log, count, expected)


def exactly_once_cdc(tmp_path: Path, bootstrap: str, postgres_url: str, tag: str, interval_ms: int,
                     **connector_extra: str) -> ExactlyOnceCdc:
    """The properties files (in ``tmp_path``) of a CDC connector named ``cdc-<tag>-<run>`` with slot
    ``slot_<tag>_<run>``, streaming only (``snapshot.mode=no_data``) in transactions of ``interval_ms``,
    batches of 500, schemaless JSON; ``connector_extra`` added. Topic, slot and publication are the test's."""
    run = uuid.uuid4().hex[:8]
    cdc = ExactlyOnceCdc(bootstrap, f"cdc-{tag}-{run}", f"{tag}{run}", f"slot_{tag}_{run}", f"offsets-{tag}-{run}",
                         tmp_path / "worker.properties", tmp_path / "connector.properties", tmp_path / "worker.log")
    write_props(cdc.worker, {
        "bootstrap.servers": bootstrap, "exactly.once.source.support": "enabled",
        "group.id": f"{tag}-{run}", "offset.storage.topic": cdc.offsets_topic,
        "offset.storage.replication.factor": "1", "offset.storage.partitions": "1"})
    write_props(cdc.connector, {
        **connector_props(postgres_url, cdc.name, cdc.prefix, cdc.slot), "snapshot.mode": "no_data",
        "key.converter.schemas.enable": "false", "value.converter.schemas.enable": "false",
        "transaction.boundary": "interval", "transaction.boundary.interval.ms": str(interval_ms),
        "max.batch.size": "500", "poll.interval.ms": "100", **connector_extra})
    return cdc
