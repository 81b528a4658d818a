"""The `kopycat` command line (like Kafka's connect-standalone.sh and friends).

    kopycat dev kafka        run a real single-node Kafka broker in the foreground
    kopycat dev postgres     run a throwaway PostgreSQL server in the foreground
    kopycat dev demo         the README's demo pipeline on embedded defaults

Output for people goes to stdout; errors exit non-zero with one clear line.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence


def _serve_until_interrupted(what: str, address: str) -> None:
    """Print where the service listens and block until Ctrl-C or SIGTERM."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"{what} listening on {address} (Ctrl-C stops)", flush=True)
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass


def _dev_kafka(args: argparse.Namespace) -> int:
    from kopycat.dev.kafka_broker import LocalKafkaBroker

    with LocalKafkaBroker(name="dev-kafka") as broker:
        print(f"bootstrap.servers={broker.bootstrap_servers}", flush=True)
        _serve_until_interrupted("Kafka broker", broker.bootstrap_servers)
    return 0


def _dev_postgres(args: argparse.Namespace) -> int:
    from kopycat.dev.postgres import LocalPostgres

    with LocalPostgres(name="dev-postgres") as server:
        _serve_until_interrupted("PostgreSQL", server.url())
    return 0


def _dev_demo(args: argparse.Namespace) -> int:
    from kopycat.dev.demo import run_demo

    return run_demo(lines=args.lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kopycat", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    dev = commands.add_parser("dev", help="real services for development").add_subparsers(
        dest="dev_command", required=True)
    dev.add_parser("kafka", help="run a single-node Kafka broker").set_defaults(func=_dev_kafka)
    dev.add_parser("postgres", help="run a PostgreSQL server").set_defaults(func=_dev_postgres)
    demo = dev.add_parser("demo", help="run the demo pipeline")
    demo.add_argument("--lines", type=int, default=10_000, help="lines to copy (default 10000)")
    demo.set_defaults(func=_dev_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    sys.exit(args.func(args))


if __name__ == "__main__":
    main()
