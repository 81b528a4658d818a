"""`python -m bench [NAME ...] [--OPTION ...]`: run the benchmarks, one line each, then peak RSS.

Each module bench/bench_<name>.py has `run()` returning BenchResults (or (name, value, anchor)
tuples). With names, only those modules run. Arguments from the first `-...` on are options,
handed to each selected module whose `run` takes an argv (e.g. `python -m bench jdbc --rows 50000`).
`--quick` (taken here) runs every bench at a tenth of its default size: a check that all of them
still run, within minutes, not figures to quote.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
import time
from collections.abc import Iterable

import bench
from bench.common import BenchResult, peak_rss_mib, set_quick


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


def split_options(argv: list[str]) -> tuple[list[str], list[str]]:
    """(bench names, options): the options start at the first argument beginning with "-"."""
    first = next((i for i, arg in enumerate(argv) if arg.startswith("-")), len(argv))
    return argv[:first], argv[first:]


def main(argv: list[str]) -> int:
    names, options = split_options(argv)
    set_quick("--quick" in options)
    options = [option for option in options if option != "--quick"]
    for name in _modules(names):
        started = time.perf_counter()
        module = importlib.import_module(f"bench.bench_{name}")
        takes_options = bool(inspect.signature(module.run).parameters)
        if options and not takes_options:
            sys.exit(f"benchmark {name} takes no options ({' '.join(options)}): "
                     f"name only the benchmarks they are for")
        for result in _as_results(module.run(options) if takes_options else module.run()):
            print(result.line(), flush=True)
        print(f"  ({name} took {time.perf_counter() - started:.1f} s)", flush=True)
    print(f"peak RSS: {peak_rss_mib():.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
