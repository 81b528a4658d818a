"""`python -m bench [NAME ...]`: run the benchmarks, one line each, then peak RSS.

Each module bench/bench_<name>.py has `run()` returning BenchResults (or (name, value, anchor)
tuples). With names, only those modules run.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from collections.abc import Iterable

import bench
from bench.common import BenchResult, peak_rss_mib


def _modules(selected: list[str]) -> list[str]:
    names = sorted(m.name[len("bench_"):] for m in pkgutil.iter_modules(bench.__path__)
                   if m.name.startswith("bench_"))
    unknown = set(selected) - set(names)
    if unknown:
        sys.exit(f"unknown benchmark(s) {', '.join(sorted(unknown))}; known: {', '.join(names)}")
    # The anchors first: later ratios are read against them.
    ordered = sorted(selected or names, key=lambda n: (n != "raw_kafka", n))
    return ordered


def _as_results(rows: Iterable[BenchResult | tuple]) -> list[BenchResult]:
    return [row if isinstance(row, BenchResult) else BenchResult(*row) for row in rows]


def main(argv: list[str]) -> int:
    for name in _modules(argv):
        started = time.perf_counter()
        module = importlib.import_module(f"bench.bench_{name}")
        for result in _as_results(module.run()):
            print(result.line(), flush=True)
        print(f"  ({name} took {time.perf_counter() - started:.1f} s)", flush=True)
    print(f"peak RSS: {peak_rss_mib():.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
