"""Kafka Connect's metrics, computed as Kafka's ``Sensor`` stats do, and the registry a host exports.

Follows ``org.apache.kafka.common.metrics``: a windowed stat keeps ``samples`` samples of
``window_s`` each (Kafka Connect's ``metrics.num.samples=2`` and ``metrics.sample.window.ms=30000``);
a sample is complete once it is ``window_s`` old and the oldest one is reused; samples older than
``samples * window_s`` are left out when measuring (Kafka purges them). On that window:

- :class:`Rate` (Kafka's ``Rate`` over a ``WindowedSum``): the sum over the live samples divided by
  the time they span, counted as at least ``samples - 1`` full windows, so a rate measured just after
  a start is not blown up by a tiny elapsed time; per second;
- :class:`Avg` and :class:`Max` (Kafka's ``Avg``, ``Max``): of the values recorded in the live
  samples; NaN when there are none, as Kafka reports them;
- :class:`Total` (Kafka's ``CumulativeSum``): everything ever recorded.

A :class:`ConnectMetrics` (Kafka's ``ConnectMetrics``) is the registry of one host: providers, each
answering :class:`GroupValues` (a group name such as ``source-task-metrics``, its tags, its values)
when a scraper asks. Nothing here runs per record: runners record once per batch
(:mod:`kopycat.runtime.task_metrics`).

Thread-safety: a stat is recorded on one thread (its task's) and read from any; reading writes
nothing, so no lock is taken. A read may see a batch half recorded (one stat updated, the next not yet).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

__all__ = ["Avg", "ConnectMetrics", "GroupValues", "Max", "MetricConfig", "Rate", "Total"]


@dataclass(frozen=True)
class MetricConfig:
    """How windowed stats sample (Kafka's ``MetricConfig``): ``samples`` windows of ``window_s``."""

    samples: int = 2
    window_s: float = 30.0

    @property
    def expire_s(self) -> float:
        return self.samples * self.window_s


DEFAULT_CONFIG = MetricConfig()


class _Sample:
    __slots__ = ("count", "start", "value")

    def __init__(self, start: float, initial: float) -> None:
        self.start = start
        self.value = initial
        self.count = 0


class _SampledStat:
    """Kafka's ``SampledStat``: a ring of samples, advanced when the current one is a window old."""

    initial = 0.0

    def __init__(self, config: MetricConfig = DEFAULT_CONFIG) -> None:
        self.config = config
        self.samples: list[_Sample] = []
        self.current = 0

    def record(self, value: float, now: float) -> None:
        samples = self.samples
        if not samples:
            samples.append(_Sample(now, self.initial))
        sample = samples[self.current]
        if now - sample.start >= self.config.window_s:
            sample = self._advance(now)
        self.update(sample, value)
        sample.count += 1

    def update(self, sample: _Sample, value: float) -> None:
        raise NotImplementedError

    def combine(self, samples: list[_Sample]) -> float:
        raise NotImplementedError

    def measure(self, now: float) -> float:
        return self.combine(self.live(now))

    def live(self, now: float) -> list[_Sample]:
        """Samples younger than ``samples * window_s``. Kafka's ``purgeObsoleteSamples`` resets the
        older ones instead; leaving them be keeps a scraper's read from writing to the stat."""
        expire = self.config.expire_s
        return [sample for sample in list(self.samples) if now - sample.start < expire]

    def _advance(self, now: float) -> _Sample:
        self.current = (self.current + 1) % self.config.samples
        if self.current >= len(self.samples):
            sample = _Sample(now, self.initial)
            self.samples.append(sample)
            return sample
        sample = self.samples[self.current]
        sample.start, sample.value, sample.count = now, self.initial, 0
        return sample


class _WindowedSum(_SampledStat):
    def update(self, sample: _Sample, value: float) -> None:
        sample.value += value

    def combine(self, samples: list[_Sample]) -> float:
        return sum(s.value for s in samples)


class Avg(_SampledStat):
    """The mean of the values recorded in the live window; NaN when none (Kafka's ``Avg``)."""

    def update(self, sample: _Sample, value: float) -> None:
        sample.value += value

    def combine(self, samples: list[_Sample]) -> float:
        count = sum(s.count for s in samples)
        return sum(s.value for s in samples) / count if count else math.nan


class Max(_SampledStat):
    """The largest value recorded in the live window; NaN when none (Kafka's ``Max``)."""

    initial = -math.inf

    def update(self, sample: _Sample, value: float) -> None:
        if value > sample.value:
            sample.value = value

    def combine(self, samples: list[_Sample]) -> float:
        live = [s.value for s in samples if s.count]
        return max(live) if live else math.nan


class Rate:
    """Per second over the live window (Kafka's ``Rate`` with a ``WindowedSum``, seconds unit)."""

    def __init__(self, config: MetricConfig = DEFAULT_CONFIG) -> None:
        self.config = config
        self.stat = _WindowedSum(config)

    def record(self, value: float, now: float) -> None:
        self.stat.record(value, now)

    def measure(self, now: float) -> float:
        value = self.stat.measure(now)
        return value / self.window_size(now)

    def window_size(self, now: float) -> float:
        """Seconds the live samples span, at least ``samples - 1`` full windows (Kafka's ``windowSize``)."""
        live = self.stat.live(now)
        elapsed = now - min(sample.start for sample in live) if live else 0.0
        full_windows = int(elapsed / self.config.window_s)
        least = self.config.samples - 1
        if full_windows < least:
            elapsed += (least - full_windows) * self.config.window_s
        return elapsed if elapsed > 0 else 0.001


class Total:
    """Everything ever recorded (Kafka's ``CumulativeSum``)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def record(self, value: float, now: float = 0.0) -> None:
        self.value += value

    def measure(self, now: float = 0.0) -> float:
        return self.value


@dataclass(frozen=True)
class GroupValues:
    """One metric group's values at a moment: ``group`` (``source-task-metrics``), ``tags``
    (``{"connector": "c", "task": "0"}``) and metric name -> value (a number, or text for ``status``)."""

    group: str
    tags: dict[str, str]
    values: dict[str, float | str] = field(default_factory=dict)


MetricsProvider = Callable[[], Iterable[GroupValues]]


class ConnectMetrics:
    """The metric groups of one host (Kafka's ``ConnectMetrics``): providers under keys, read on scrape.

    A worker registers each task's :class:`~kopycat.runtime.task_metrics.TaskMetrics` under its task
    id and its own worker group under ``"worker"``; registering a key again replaces its provider
    (a restarted task starts from zero, as in Kafka). Any thread.
    """

    def __init__(self) -> None:
        self._providers: dict[object, MetricsProvider] = {}
        self._listeners: list[Callable[[MetricsProvider], None]] = []
        self._lock = threading.Lock()

    def register(self, key: object, provider: MetricsProvider) -> None:
        with self._lock:
            self._providers[key] = provider
            listeners = list(self._listeners)
        for listener in listeners:
            listener(provider)

    def add_listener(self, listener: Callable[[MetricsProvider], None]) -> None:
        """Call ``listener`` with each provider registered from now on (an exporter that declares
        instruments per metric name learns a new task's names before its first collection)."""
        with self._lock:
            self._listeners.append(listener)

    def unregister(self, key: object) -> None:
        with self._lock:
            self._providers.pop(key, None)

    def unregister_where(self, matches: Callable[[object], bool]) -> None:
        """Remove every provider whose key ``matches`` (a removed connector's tasks)."""
        with self._lock:
            for key in [k for k in self._providers if matches(k)]:
                del self._providers[key]

    def collect(self) -> list[GroupValues]:
        """Every group's current values."""
        with self._lock:
            providers = list(self._providers.values())
        return [group for provider in providers for group in provider()]
