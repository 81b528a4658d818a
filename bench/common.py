"""What benchmarks share: the result line and one broker for the whole run."""

from __future__ import annotations

import atexit
import resource
from dataclasses import dataclass

from kopycat.dev.kafka_broker import LocalKafkaBroker

_broker: LocalKafkaBroker | None = None


@dataclass(frozen=True)
class BenchResult:
    """One benchmark's line. anchor=None marks an anchor itself (a physical limit)."""

    name: str
    value: float
    anchor: float | None = None
    unit: str = "records/s"

    def line(self) -> str:
        if self.anchor is None:
            return f"{self.name}: anchor {self.value:,.0f} {self.unit}"
        return (f"{self.name}: kopycat {self.value:,.0f} {self.unit}, "
                f"anchor {self.anchor:,.0f} {self.unit}, ratio {self.value / self.anchor:.2f}")


def shared_broker() -> LocalKafkaBroker:
    """A broker started on first use and stopped when the run ends."""
    global _broker
    if _broker is None:
        _broker = LocalKafkaBroker(name="bench-kafka", heap="1g")
        _broker.start()
        atexit.register(_broker.stop)
    return _broker


def peak_rss_mib() -> float:
    """This process's peak resident set size so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
