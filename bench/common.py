"""What benchmarks share: the result line, a broker and a PostgreSQL for the run, peak RSS, the
cProfile report and measured child processes."""

from __future__ import annotations

import argparse
import atexit
import cProfile
import io
import os
import pstats
import re
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from operator import attrgetter
from pathlib import Path
from typing import Protocol, Self, TypeVar

from confluent_kafka.admin import AdminClient

from kopycat.dev.kafka_broker import LocalKafkaBroker
from kopycat.dev.postgres import LocalPostgres
from kopycat.runtime.bounds import RunSummary

_broker: LocalKafkaBroker | None = None
T = TypeVar("T")


def goal_text(goal: float) -> str:
    """A goal to two decimals, one when the second is 0: 0.5, 1.0, 1.3, and 0.98 (not rounded to 1.0)."""
    text = f"{goal:.2f}"
    return text[:-1] if text.endswith("0") else text


@dataclass(frozen=True)
class BenchResult:
    """One benchmark's line. anchor=None marks an anchor itself (a physical limit)."""

    name: str
    value: float
    anchor: float | None = None
    unit: str = "records/s"
    goal: float | None = None  # the ratio the issue asks for, shown next to the measured one
    spread: float | None = None  # the value's rounds: (slowest - fastest) / median, see Measure.spread
    anchor_spread: float | None = None  # the same of the anchor's rounds

    def line(self) -> str:
        if self.anchor is None:
            return f"{self.name}: anchor {self.value:,.0f} {self.unit}{_spread(self.spread)}"
        goal = f" (goal >= {goal_text(self.goal)})" if self.goal is not None else ""
        return (f"{self.name}: kopycat {self.value:,.0f} {self.unit}{_spread(self.spread)}, "
                f"anchor {self.anchor:,.0f} {self.unit}{_spread(self.anchor_spread)}, "
                f"ratio {self.value / self.anchor:.2f}{goal}")


def _spread(spread: float | None) -> str:
    return "" if spread is None else f" (spread {spread:.0%})"


QUICK_DIVISOR = 10
"""``python -m bench --quick`` runs every bench at this fraction of its size: a check, not a figure."""
_divisor = 1


def set_quick(quick: bool) -> None:
    """Make :func:`scaled` divide every bench's default size by :data:`QUICK_DIVISOR` (or not)."""
    global _divisor
    _divisor = QUICK_DIVISOR if quick else 1


def scaled(size: int) -> int:
    """A bench's default size, a tenth of it under ``--quick``."""
    return max(1, size // _divisor)


def shared_broker() -> LocalKafkaBroker:
    """A broker started on first use and stopped when the run ends."""
    global _broker
    if _broker is None:
        # A long start-up wait: on two cores shared with other brokers it can take minutes.
        _broker = LocalKafkaBroker(name="bench-kafka", heap="1g", start_timeout_s=600.0)
        _broker.start()
        atexit.register(_broker.stop)
    return _broker


_peak_before_reset_kib = 0  # what reset_peak_rss() made the kernel forget


def peak_rss_mib() -> float:
    """This process's peak resident set size so far, in MiB (Linux reports KiB)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return max(own, _peak_before_reset_kib) / 1024


def vm_hwm_mib(pid: int | str = "self") -> float | None:
    """A live process's peak RSS since start or since its last reset (VmHWM); None off Linux."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    return int(match.group(1)) / 1024 if match else None


def reset_peak_rss() -> bool:
    """Start a new peak for vm_hwm_mib() ("5" to /proc/self/clear_refs); False if unsupported.

    peak_rss_mib() keeps reporting the peak of the whole run: the forgotten peak is kept here.
    """
    global _peak_before_reset_kib
    _peak_before_reset_kib = max(_peak_before_reset_kib, int((vm_hwm_mib() or 0) * 1024))
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def cpu_seconds(pid: int | str = "self") -> float | None:
    """User plus system CPU a live process (all its threads) has used; None off Linux.

    On a machine shared with other work, a mover's CPU per record shifts less than its wall
    time does, so benches show it next to records/s. This process's own is read from its CPU
    clock (``time.process_time``: every thread, nanoseconds); /proc counts in 10 ms ticks, too
    coarse for runs of a fraction of a second.
    """
    if pid == "self":
        return time.process_time()
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)": state is field 3
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


_postgres: LocalPostgres | None = None


def shared_postgres() -> LocalPostgres:
    """A throwaway PostgreSQL server (``kopycat dev postgres``) started on first use, for the run."""
    global _postgres
    if _postgres is None:
        _postgres = LocalPostgres(name="bench-postgres")
        _postgres.start()
        atexit.register(_postgres.stop)
    return _postgres


class Span:
    """Wall time, CPU time (all threads, and the calling thread's own) and peak RSS of this process
    over a ``with`` block.

    The peak is VmHWM, reset on entry, so each mover's peak is its own; peak_rss_mib() still
    reports the whole run's.
    """

    wall_s: float
    cpu_s: float | None
    thread_cpu_s: float
    rss_mib: float | None

    def __enter__(self) -> Self:
        reset_peak_rss()
        self._cpu = cpu_seconds() or 0.0
        self._thread_cpu = time.thread_time()
        self._started = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall_s = time.perf_counter() - self._started
        self.thread_cpu_s = time.thread_time() - self._thread_cpu
        cpu = cpu_seconds()
        self.cpu_s = None if cpu is None else cpu - self._cpu
        self.rss_mib = vm_hwm_mib()


@dataclass(frozen=True)
class Measure:
    """One mover's pass over ``count`` records or rows: wall and CPU time, peak RSS, RunSummary time."""

    mover: str
    count: int
    wall_s: float
    cpu_s: float | None = None
    rss_mib: float | None = None
    duration_s: float | None = None
    walls: tuple[float, ...] = ()
    """Every round's wall time, in run order, when the mover ran several (:func:`median_rounds`)."""
    thread_cpu_s: float | None = None
    """CPU time of the thread that ran the mover (a runner run on the bench's thread: the task's own)."""
    copy_s: float | None = None
    """A Kopycat run's copy by its own clock: RunSummary.duration_s less its start_s (clients made,
    partitions assigned, offsets read, task started), so it starts where the raw anchors' clocks do."""

    @property
    def rate(self) -> float:
        return self.count / self.wall_s

    @property
    def copy_rate(self) -> float:
        """Records per second of the copy alone (:attr:`copy_s`), or of the whole run without it."""
        return self.count / (self.copy_s or self.wall_s)

    @property
    def spread(self) -> float | None:
        """(slowest - fastest round) / median round, over wall time; None for a single round."""
        return spread_of(self)

    @classmethod
    def of(cls, mover: str, count: int, span: Span, duration_s: float | None = None) -> Measure:
        return cls(mover, count, span.wall_s, span.cpu_s, span.rss_mib, duration_s,
                   thread_cpu_s=span.thread_cpu_s)

    @classmethod
    def of_run(cls, mover: str, count: int, span: Span, summary: RunSummary) -> Measure:
        """A Kopycat run timed around it (``span``) with its own clocks: the whole run and the copy alone."""
        return cls(mover, count, span.wall_s, span.cpu_s, span.rss_mib, summary.duration_s,
                   thread_cpu_s=span.thread_cpu_s, copy_s=summary.duration_s - summary.start_s)


def num_text(value: float | None, spec: str) -> str:
    """``value`` formatted by ``spec``, or "-" where it was not measured."""
    return "-" if value is None else format(value, spec)


def measure_row(measure: Measure) -> str:
    """A mover's line in a bench's table: rate, wall s, CPU s, peak RSS MiB, the RunSummary's s."""
    return (f"  {measure.mover:<46} {measure.rate:>10,.0f} {measure.wall_s:>8.2f} "
            f"{num_text(measure.cpu_s, '.1f'):>7} {num_text(measure.rss_mib, ',.0f'):>8} "
            f"{num_text(measure.duration_s, '.2f'):>10}")


def checked_summary(summaries: Sequence[RunSummary | None], what: str, count: int) -> RunSummary:
    """The one task's summary of a run: no error, exactly ``count`` records (:func:`check_count`)."""
    [summary] = summaries
    if summary is None or summary.error is not None:
        raise RuntimeError(f"{what} failed: {summary.error if summary else 'no summary'}")
    check_count(f"{what} records", summary.records, count)
    return summary


ROUNDS = 3
"""Runs of each anchor and mover per bench (``--rounds``): one run on this 2-vCPU VM is no figure."""


class Timed(Protocol):
    """A dataclass of one timed run that can keep its rounds' wall times (Measure, a bench's own Run)."""

    wall_s: float
    walls: tuple[float, ...]


TimedT = TypeVar("TimedT", bound=Timed)


def median_rounds(movers: Sequence[Callable[[], TimedT]], rounds: int) -> list[TimedT]:
    """Each mover ``rounds`` times, taking turns (A B C, then C B A, ...): each one's median-wall run
    (the slower middle one for an even count).

    A single run of one mover here moved by up to ±50% within the hour (the co-located broker's
    and PostgreSQL's work, the page cache, the VM's neighbours), so one anchor run against one
    mover run gave ratios from 0.43 to 0.53 for the same code. Taking turns puts anchors and
    movers under the same spells, and the median drops a round that caught one. The returned
    run keeps every round's wall time in ``walls``; each mover checks its own rounds.
    """
    found: list[list[TimedT]] = [[] for _ in movers]
    order = list(range(len(movers)))
    for round_index in range(rounds):
        for index in order if round_index % 2 == 0 else order[::-1]:
            found[index].append(movers[index]())
    return [replace(sorted(runs, key=lambda m: m.wall_s)[len(runs) // 2],  # type: ignore[type-var]
                    walls=tuple(m.wall_s for m in runs)) for runs in found]


def spread_of(run: Timed) -> float | None:
    """(slowest - fastest round) / the median round's wall time; None when it ran once.

    Printed beside every anchor and mover: a ratio is only as steady as the noisier of its two."""
    if len(run.walls) < 2:
        return None
    return (max(run.walls) - min(run.walls)) / run.wall_s


def rounds_lines(runs: Sequence[TimedT], label: Callable[[TimedT], str] = attrgetter("mover")) -> list[str]:
    """One line per mover that ran several rounds: its wall times, the median (its first match) marked."""
    lines = []
    for run in runs:
        if len(run.walls) > 1:
            median = run.walls.index(run.wall_s)
            walls = " ".join(f"[{w:.2f}]" if i == median else f"{w:.2f}" for i, w in enumerate(run.walls))
            lines.append(f"    rounds of {label(run)}: {walls} s ([median])")
    return lines


def delete_topic(admin: AdminClient, topic: str) -> None:
    """Delete a round's topic once it is checked: a bench's rounds would otherwise fill the broker's disk."""
    admin.delete_topics([topic])[topic].result(30)


def check_count(what: str, got: int, expected: int) -> None:
    """A bench measures only complete copies: anything else is an error, not a number."""
    if got != expected:
        raise RuntimeError(f"{what}: {got:,} instead of {expected:,}")


def positive_count(flag: str) -> Callable[[str], int]:
    """An argparse ``type`` for ``--rows``/``--records``: an int of 1 or more, naming the flag."""
    def parse(text: str) -> int:
        value = int(text)
        if value < 1:
            raise argparse.ArgumentTypeError(f"{flag} must be 1 or more, not {text}")
        return value
    return parse


def size_and_switch(argv: Sequence[str], *, bench: str, doc: str | None, size: tuple[str, int, str],
                    switch: tuple[str, str], rounds: bool = False, default_rounds: int = ROUNDS) -> argparse.Namespace:
    """The arguments every bench takes: a size (``--rows``/``--records N``, 1 or more, with its
    default and help) and one switch (``--profile``, ``--keep``), for ``python -m bench <bench>``;
    with ``rounds``, ``--rounds N`` too (default ``default_rounds``, :data:`ROUNDS` unless a bench
    needs more; see :func:`median_rounds`)."""
    parser = argparse.ArgumentParser(prog=f"python -m bench {bench}", description=(doc or "").splitlines()[0])
    flag, default, size_help = size
    parser.add_argument(flag, type=positive_count(flag), default=scaled(default), help=size_help)
    parser.add_argument(switch[0], action="store_true", help=switch[1])
    if rounds:
        parser.add_argument("--rounds", type=positive_count("--rounds"), default=default_rounds,
                            help=f"runs of each anchor and mover, taking turns; the median counts "
                                 f"(default {default_rounds})")
    return parser.parse_args(list(argv))


def parse_into(options: type[T], argv: Sequence[str], *, bench: str, doc: str | None, size: tuple[str, int, str],
               switch: tuple[str, str], default_rounds: int = ROUNDS) -> T:
    """:func:`size_and_switch`'s arguments as the bench's own frozen dataclass ``options``, each field
    taking the argument of its name (``rows``/``records``, ``profile``/``keep``); ``--rounds`` is
    offered when the dataclass has a ``rounds`` field."""
    names = [field.name for field in fields(options)]  # type: ignore[arg-type]
    args = size_and_switch(argv, bench=bench, doc=doc, size=size, switch=switch, rounds="rounds" in names,
                           default_rounds=default_rounds)
    return options(**{name: getattr(args, name) for name in names})


def print_results(run: Callable[[Sequence[str]], Sequence[BenchResult]]) -> None:
    """A bench run as ``python -m bench.bench_<name> [options]``: its result lines, as ``python -m bench``
    prints them (a ``--profile`` run prints its report itself and returns none)."""
    for result in run(sys.argv[1:]):
        print(result.line())


def per_row(profiler: cProfile.Profile, rows: int, count: int = 25) -> str:
    """The functions with the most own time, in µs per row, and their cumulative µs per row."""
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    top = sorted(stats.items(), key=lambda item: item[1][2], reverse=True)[:count]
    lines = [f"  {'own µs/row':>10} {'cum µs/row':>10} {'calls':>10}  function"]
    for (path, line, function), (_, calls, own, cumulative, _) in top:
        lines.append(f"  {own / rows * 1e6:>10.2f} {cumulative / rows * 1e6:>10.2f} "
                     f"{calls:>10,}  {function} ({Path(path).name}:{line})")
    return "\n".join(lines)


def _cumulative(profiler: cProfile.Profile, count: int = 25) -> str:
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(count)
    return text.getvalue()


def profiled(label: str, call: Callable[[], T], rows: int, unit: str = "records", top: int = 25) -> tuple[T, str]:
    """``call``'s result, and its cProfile report: the ``top`` functions in µs per row
    (:func:`per_row`), then the top 25 by cumulative time. Timed on this thread's CPU clock: on a
    shared machine, wall time per function mostly measures the other processes (and the client's
    own threads are left out)."""
    profiler = cProfile.Profile(time.thread_time)
    with Span() as span, profiler:
        result = call()
    cpu = "-" if span.cpu_s is None else f"{span.cpu_s:.1f}"
    return result, (f"=== {label} under cProfile: {rows:,} {unit} in {span.wall_s:.2f} s wall, {cpu} s CPU ===\n"
                    f"{per_row(profiler, rows, top)}\n{_cumulative(profiler)}")


@dataclass(frozen=True)
class Child:
    """A finished child process: exit code, wall time and the rusage of its process tree."""

    code: int
    wall_s: float
    cpu_s: float          # user + system of it and every descendant it reaped
    peak_rss_mib: float   # ru_maxrss: the tree's largest single process (at least ours at the spawn), not a sum


def run_child(command: Sequence[str], env: Mapping[str, str], out: Path, err: Path, timeout_s: float) -> Child:
    """Run ``command`` to its end, stdout and stderr to files, reaped with ``os.wait4``.

    wait4 gives this child's own rusage; getrusage(RUSAGE_CHILDREN) would mix in every child this
    process reaped before (the broker's storage tool, earlier jobs). Linux carries this process's
    peak RSS into the child at exec: the peak is reset first, so the child's floor is this
    process's RSS at the spawn. Killed after ``timeout_s``.
    """
    reset_peak_rss()
    with out.open("w") as stdout, err.open("w") as stderr:
        started = time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=stdout, stderr=stderr)
        killer = threading.Timer(timeout_s, process.kill)
        killer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            killer.cancel()
        wall_s = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it
    return Child(process.returncode, wall_s, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)
