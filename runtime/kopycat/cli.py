"""The `kopycat` command line (like Kafka's connect-standalone.sh and friends).

    kopycat standalone worker.properties conn.properties [conn2.json ...]
                             run connectors until Ctrl-C / SIGTERM (offsets in a file)
    kopycat run worker.properties conn.properties [--max-records N] [--max-seconds S]
                             copy once what is there now, as one scheduled DAG run does, with a
                             live progress bar; a summary per task, exit 1 if one failed
    kopycat plugins          list connectors, converters, transformations, predicates
    kopycat validate conn.properties
                             check a connector config as the REST validate endpoint does
    kopycat offsets get|reset --connector NAME --worker worker.properties
                             read or forget a connector's offsets (stop it first)
    kopycat rest worker.properties [--host 127.0.0.1] [--port 8083] [--token-file F]
                             serve Kafka Connect's REST API over the Kafka config/status topics
    kopycat dev kafka [--security]
                             run a real single-node Kafka broker in the foreground (secured: SASL_SSL,
                             mTLS and ACLs, printing the client settings in Java's and librdkafka's keys)
    kopycat dev postgres     run a throwaway PostgreSQL server in the foreground
    kopycat dev demo         the README's demo pipeline on embedded defaults

Output for people goes to stdout; errors exit non-zero with one clear line.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from kopycat.api.errors import ConnectError


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

    if args.security:
        return _dev_secured_kafka()
    with LocalKafkaBroker(name="dev-kafka") as broker:
        print(f"bootstrap.servers={broker.bootstrap_servers}", flush=True)
        _serve_until_interrupted("Kafka broker", broker.bootstrap_servers)
    return 0


def _dev_secured_kafka() -> int:
    from kopycat.dev.secured_kafka import RESTRICTED_USER, SecuredKafkaBroker

    with SecuredKafkaBroker(name="dev-kafka-secured") as broker:
        blocks = {
            "SASL_SSL, as Kafka Connect's worker.properties (Java)": broker.java_sasl_settings(),
            "SASL_SSL, as librdkafka's settings": broker.librdkafka_sasl_settings(),
            "mutual TLS, as Kafka Connect's worker.properties (Java)": broker.java_mtls_settings(),
            "mutual TLS, as librdkafka's settings": broker.librdkafka_mtls_settings(),
            f"a user without ACLs ({RESTRICTED_USER}), Java": broker.java_sasl_settings(RESTRICTED_USER, "PLAIN"),
        }
        for title, settings in blocks.items():
            print(f"# {title}", *(f"{key}={value}" for key, value in settings.items()), "", sep="\n", flush=True)
        _serve_until_interrupted("Secured Kafka broker", broker.bootstrap_servers)
    return 0


def _dev_postgres(args: argparse.Namespace) -> int:
    from kopycat.dev.postgres import LocalPostgres

    with LocalPostgres(name="dev-postgres") as server:
        _serve_until_interrupted("PostgreSQL", server.url())
    return 0


def _dev_demo(args: argparse.Namespace) -> int:
    try:
        from kopycat_airflow.demo import run_demo
    except ImportError as exc:
        raise ConnectError(f"The demo runs Airflow DAGs and needs the provider: pip install 'kopycat[airflow]' "
                           f"({exc})") from exc
    return run_demo(orders=args.orders)


def _standalone(args: argparse.Namespace) -> int:
    from kopycat.properties import load_config_file
    from kopycat.runtime.standalone import run_standalone

    worker = load_config_file(args.worker)
    connectors = [load_config_file(path) for path in args.connectors]
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    run_standalone(worker, connectors, stop)
    return 0


def _run(args: argparse.Namespace) -> int:
    from kopycat.properties import load_config_file
    from kopycat.runtime.progress import ProgressBar
    from kopycat.runtime.run_once import planned_sink_records, run_connector_once

    worker, connector = load_config_file(args.worker), load_config_file(args.connector)
    with ExitStack() as stack:
        bars: list[ProgressBar] = []  # started once the plan says how much a sink will copy

        def on_plan(planned: Sequence[Any]) -> None:
            print(f"{connector.get('name')}: {len(planned)} task(s) planned", flush=True)
            if not args.no_progress:
                bars.append(stack.enter_context(ProgressBar(sys.stderr,
                                                            planned_sink_records(connector, worker, planned))))

        summaries = run_connector_once(connector, worker, max_records=args.max_records, max_seconds=args.max_seconds,
                                       on_plan=on_plan, observe=lambda summary: [bar.add(summary) for bar in bars])
    for summary in summaries:
        print(f"task {summary.task}: {summary.records:,} records ({summary.skipped:,} skipped, {summary.filtered:,} "
              f"filtered) in {summary.duration_s:.1f} s, {summary.stop_reason.value}"
              + (f", FAILED: {summary.error}" if summary.error else ""))
    return 1 if any(s.error for s in summaries) else 0


def _plugins(args: argparse.Namespace) -> int:
    from kopycat.plugins import list_plugins

    for plugin in list_plugins(connectors_only=args.connectors_only):
        print(f"{plugin.type:<17} {plugin.class_name}  {plugin.version}")
    return 0


def _validate(args: argparse.Namespace) -> int:
    from kopycat.properties import load_config_file
    from kopycat.runtime.connector_config import validate_connector_config

    response = validate_connector_config(load_config_file(args.config))
    if args.json:
        print(json.dumps(response, indent=2))
    else:
        for entry in response["configs"]:
            for error in entry["value"]["errors"]:
                print(f"{entry['value']['name']}: {error}")
        print(f"{response['name']}: {response['error_count']} error(s)")
    return 1 if response["error_count"] else 0


def _offsets(args: argparse.Namespace) -> int:
    from kopycat.properties import load_config_file
    from kopycat.runtime.offsets_admin import get_offsets, reset_offsets

    worker = load_config_file(args.worker)
    action = get_offsets if args.action == "get" else reset_offsets
    print(json.dumps(action(args.connector, worker), indent=2))
    return 0


def _read_token(path: str | None) -> str | None:
    """The bearer token in ``path`` (surrounding whitespace ignored), or None without a file."""
    if path is None:
        return None
    try:
        token = Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConnectError(f"Cannot read the token file {path}: {exc.strerror}") from exc
    if not token:
        raise ConnectError(f"The token file {path} is empty: write the bearer token clients must send")
    return token


def _rest(args: argparse.Namespace) -> int:
    from kopycat.properties import load_config_file
    from kopycat.rest.server import serve

    token = _read_token(args.token_file)
    serve(load_config_file(args.worker), host=args.host, port=args.port, token=token)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kopycat", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    standalone = commands.add_parser("standalone", help="run connectors in this process")
    standalone.add_argument("worker", help="worker.properties (Kafka Connect's StandaloneConfig keys)")
    standalone.add_argument("connectors", nargs="+", help="connector .properties or .json files")
    standalone.set_defaults(func=_standalone)
    run = commands.add_parser("run", help="copy once what is there now, with a progress bar")
    run.add_argument("worker", help="worker.properties (offset.storage.file.filename, or the offsets topic)")
    run.add_argument("connector", help="connector .properties or .json file")
    run.add_argument("--max-records", type=int, help="stop each task after this many records")
    run.add_argument("--max-seconds", type=float, help="stop each task after this many seconds")
    run.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    run.set_defaults(func=_run)
    plugins = commands.add_parser("plugins", help="list installed plugins")
    plugins.add_argument("--connectors-only", action="store_true")
    plugins.set_defaults(func=_plugins)
    validate = commands.add_parser("validate", help="validate a connector config")
    validate.add_argument("config", help="connector .properties or .json file")
    validate.add_argument("--json", action="store_true", help="print Kafka Connect's validate response")
    validate.set_defaults(func=_validate)
    offsets = commands.add_parser("offsets", help="read or reset a connector's offsets")
    offsets.add_argument("action", choices=["get", "reset"])
    offsets.add_argument("--connector", required=True)
    offsets.add_argument("--worker", required=True, help="the worker.properties the connector runs with")
    offsets.set_defaults(func=_offsets)
    rest = commands.add_parser("rest", help="serve Kafka Connect's REST API")
    rest.add_argument("worker", help="worker.properties: bootstrap.servers and the *.storage.topic keys")
    rest.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    rest.add_argument("--port", type=int, default=8083, help="port to listen on (default 8083)")
    rest.add_argument("--token-file", help="file holding a bearer token every request must send")
    rest.set_defaults(func=_rest)
    dev = commands.add_parser("dev", help="real services for development").add_subparsers(
        dest="dev_command", required=True)
    kafka = dev.add_parser("kafka", help="run a single-node Kafka broker")
    kafka.add_argument("--security", action="store_true",
                       help="SASL_SSL (PLAIN, SCRAM), mutual TLS and ACLs; prints the client settings")
    kafka.set_defaults(func=_dev_kafka)
    dev.add_parser("postgres", help="run a PostgreSQL server").set_defaults(func=_dev_postgres)
    demo = dev.add_parser("demo", help="run the demo pipeline: the shop DAGs through Airflow")
    demo.add_argument("--orders", type=int, default=5_000, help="orders in the demo shop (default 5000)")
    demo.set_defaults(func=_dev_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        code = args.func(args)
    except ConnectError as exc:  # a user's mistake or an outside failure: one clear line, no trace
        print(f"kopycat {args.command}: {exc}", file=sys.stderr)
        code = 2
    sys.exit(code)


if __name__ == "__main__":
    main()
