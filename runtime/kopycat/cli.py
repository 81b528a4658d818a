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
                             (Airflow runs the connectors)
    kopycat worker worker.properties [--host 127.0.0.1] [--port 8083] [--token-file F]
                             the same REST API, and this process runs every stored connector
                             (one node, like connect-distributed; scale-out is Airflow's)
    kopycat connect import --url http://connect:8083 --worker worker.properties [--stop-source]
                           [--connector NAME ...]
                             store a Kafka Connect cluster's connectors in Kopycat's config topic
                             (stopped there first with --stop-source); exit 1 if some were skipped
    kopycat connect export --worker worker.properties --to http://connect:8083 [--stop]
                           [--connector NAME ...]
                             put Kopycat's stored connectors to a Kafka Connect cluster (stopped
                             in Kopycat first with --stop); exit 1 if some were skipped
    kopycat dev kafka [--security]
                             run a real single-node Kafka broker in the foreground (secured: SASL_SSL,
                             mTLS and ACLs, printing the client settings in Java's and librdkafka's keys)
    kopycat dev postgres     run a throwaway PostgreSQL server in the foreground
    kopycat dev redis        run a throwaway Redis server (the CeleryExecutor's broker) in the foreground
    kopycat dev shop-db [PATH]
                             create the example shop database the DAGs of dags/ read
                             (SQLite, default include/demo/shop.db)
    kopycat dev schema-registry [--tls]
                             run a Schema Registry (Apicurio, Confluent's API) in the foreground
    kopycat dev hdfs         run a real HDFS (MiniDFSCluster: NameNode + DataNode) in the foreground,
                             printing store.url and hdfs.webhdfs.url
    kopycat dev demo         the README's demo pipeline on embedded defaults
    kopycat dev singer-plugin NAME==VERSION ...
                             install Singer taps/targets (Meltano's plugins) each in its own venv under
                             ~/.cache/kopycat/singer, printing each venv

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

from kopycat.api.errors import ConfigError, ConnectError


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
            "OAUTHBEARER (the dev identity provider's client), as Kafka Connect's worker.properties (Java)":
                broker.java_oauth_settings(),
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


def _dev_redis(args: argparse.Namespace) -> int:
    from kopycat.dev.redis_server import LocalRedis

    with LocalRedis(name="dev-redis") as server:
        _serve_until_interrupted("Redis", server.url)
    return 0


def _dev_shop_db(args: argparse.Namespace) -> int:
    from kopycat.dev.shop_db import row_counts, seed_shop

    path = Path(args.path).resolve()
    if path.exists():
        raise ConnectError(f"{path} exists already: the example DAGs keep their offsets against it; remove it "
                           f"to start the shop again, or name another path")
    path.parent.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{path}"
    seed_shop(url).dispose()
    counts = ", ".join(f"{table} {count:,}" for table, count in row_counts(url).items())
    print(f"Shop database {path}: {counts}")
    return 0


def _dev_schema_registry(args: argparse.Namespace) -> int:
    from kopycat.dev.schema_registry import LocalSchemaRegistry

    with LocalSchemaRegistry(name="dev-schema-registry", tls=args.tls) as registry:
        settings = {"schema.registry.url": registry.url, **(registry.tls_config() if args.tls else {})}
        print("\n".join(f"{key}={value}" for key, value in settings.items()), flush=True)
        _serve_until_interrupted("Schema Registry", registry.url)
    return 0


def _dev_hdfs(args: argparse.Namespace) -> int:
    from kopycat.dev.hdfs import LocalHdfs

    with LocalHdfs(name="dev-hdfs") as hdfs:
        print(f"store.url={hdfs.url}/data\nhdfs.webhdfs.url={hdfs.webhdfs_url}", flush=True)
        _serve_until_interrupted("HDFS", hdfs.url)
    return 0


def _dev_singer_plugin(args: argparse.Namespace) -> int:
    from kopycat.dev.singer_plugins import main as install_plugins

    return install_plugins(args.requirements)


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
    """Kafka's validate response, then the checks a run makes before it copies (converters,
    transformations, error handling). Exit 1 for any invalid config, an unknown connector class
    included; 2 stays for usage errors."""
    from kopycat.properties import load_config_file
    from kopycat.runtime.connector_config import validate_connector_config
    from kopycat.runtime.task_factory import check_task_parts

    worker = _worker_config(args.worker) if args.worker else None
    props = load_config_file(args.config)
    try:
        response = validate_connector_config(props, worker)
        if not response["error_count"]:
            check_task_parts(props)
    except ConfigError as exc:
        print(f"kopycat validate: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(response, indent=2))
    else:
        for entry in response["configs"]:
            for error in entry["value"]["errors"]:
                print(f"{entry['value']['name']}: {error}")
        print(f"{response['name']}: {response['error_count']} error(s)")
    return 1 if response["error_count"] else 0


def _offsets(args: argparse.Namespace) -> int:
    from kopycat.runtime.offsets_admin import get_offsets, reset_offsets

    worker = _worker_config(args.worker)
    action = get_offsets if args.action == "get" else reset_offsets
    own_topic = {"offsets.storage.topic": args.offsets_topic} if args.offsets_topic else None
    print(json.dumps(action(args.connector, worker, connector_props=own_topic), indent=2))
    return 0


def _worker_config(path: str) -> dict[str, Any]:
    """worker.properties with its own ``${provider:...}`` placeholders resolved, for the worker's clients."""
    from kopycat.properties import load_config_file
    from kopycat.runtime.config_transformer import resolve_worker_config

    return resolve_worker_config(load_config_file(path))


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
    from kopycat.rest.server import serve

    token = _read_token(args.token_file)
    serve(_worker_config(args.worker), host=args.host, port=args.port, token=token)
    return 0


def _worker(args: argparse.Namespace) -> int:
    from kopycat.rest.worker_server import serve_worker

    token = _read_token(args.token_file)
    serve_worker(_worker_config(args.worker), host=args.host, port=args.port, token=token)
    return 0


def _add_server_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("worker", help="worker.properties: bootstrap.servers and the *.storage.topic keys")
    command.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    command.add_argument("--port", type=int, default=8083, help="port to listen on (default 8083)")
    command.add_argument("--token-file", help="file holding a bearer token every request must send")


def _connect_move(args: argparse.Namespace) -> int:
    from kopycat.rest.connect_client import KafkaConnectClient
    from kopycat.rest.connect_migration import export_connectors, import_connectors, kopycat_herder

    with kopycat_herder(_worker_config(args.worker)) as herder:
        if args.connect_command == "import":
            verb = "imported"
            report = import_connectors(KafkaConnectClient(args.url), herder, names=args.connector,
                                       stop_source=args.stop_source)
        else:
            verb = "exported"
            report = export_connectors(herder, KafkaConnectClient(args.to), names=args.connector, stop=args.stop)
    for name, plugin in report.moved.items():
        print(f"{verb} {name} ({plugin})")
    for skipped in report.skipped:
        print(f"skipped {skipped.name} ({skipped.connector_class}): {skipped.reason}")
    print(f"{len(report.moved)} {verb}, {len(report.skipped)} skipped")
    return 1 if report.skipped else 0


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
    validate.add_argument("--worker", help="worker.properties whose config.providers resolve ${provider:...} values")
    validate.add_argument("--json", action="store_true", help="print Kafka Connect's validate response")
    validate.set_defaults(func=_validate)
    offsets = commands.add_parser("offsets", help="read or reset a connector's offsets")
    offsets.add_argument("action", choices=["get", "reset"])
    offsets.add_argument("--connector", required=True)
    offsets.add_argument("--worker", required=True, help="the worker.properties the connector runs with")
    offsets.add_argument("--offsets-topic", help="the connector's own offsets.storage.topic, if it has one "
                                                 "(read first, the worker's topic as fallback)")
    offsets.set_defaults(func=_offsets)
    rest = commands.add_parser("rest", help="serve Kafka Connect's REST API (connectors run by Airflow)")
    _add_server_arguments(rest)
    rest.set_defaults(func=_rest)
    worker = commands.add_parser(
        "worker", help="serve the REST API and run every stored connector in this process (one node; "
                       "scale-out is Airflow's dags/kopycat_connectors.py)")
    _add_server_arguments(worker)
    worker.set_defaults(func=_worker)
    connect = commands.add_parser("connect", help="move connectors from or to a Kafka Connect cluster").add_subparsers(
        dest="connect_command", required=True)
    imports = connect.add_parser("import", help="store a Kafka Connect cluster's connectors in Kopycat")
    imports.add_argument("--url", required=True, help="the Kafka Connect REST API (http://connect:8083)")
    imports.add_argument("--stop-source", action="store_true",
                         help="stop each connector in Kafka Connect (and wait for STOPPED) before storing it")
    exports = connect.add_parser("export", help="put Kopycat's stored connectors to a Kafka Connect cluster")
    exports.add_argument("--to", required=True, help="the Kafka Connect REST API (http://connect:8083)")
    exports.add_argument("--stop", action="store_true", help="stop each connector in Kopycat before putting it")
    for move in (imports, exports):
        move.add_argument("--worker", required=True,
                          help="Kopycat's worker.properties: bootstrap.servers and the config/status topics")
        move.add_argument("--connector", action="append", metavar="NAME", help="only this connector (repeatable)")
        move.set_defaults(func=_connect_move)
    dev = commands.add_parser("dev", help="real services for development").add_subparsers(
        dest="dev_command", required=True)
    kafka = dev.add_parser("kafka", help="run a single-node Kafka broker")
    kafka.add_argument("--security", action="store_true",
                       help="SASL_SSL (PLAIN, SCRAM), mutual TLS and ACLs; prints the client settings")
    kafka.set_defaults(func=_dev_kafka)
    dev.add_parser("postgres", help="run a PostgreSQL server").set_defaults(func=_dev_postgres)
    dev.add_parser("redis", help="run a Redis server (Celery broker)").set_defaults(func=_dev_redis)
    shop_db = dev.add_parser("shop-db", help="create the example shop database the DAGs of dags/ read")
    shop_db.add_argument("path", nargs="?", default="include/demo/shop.db",
                         help="the SQLite file to create (default include/demo/shop.db, the DAGs' default)")
    shop_db.set_defaults(func=_dev_shop_db)
    registry = dev.add_parser("schema-registry", help="run a Schema Registry (Apicurio, Confluent's API)")
    registry.add_argument("--tls", action="store_true",
                          help="HTTPS only, with a throwaway CA; prints the schema.registry.ssl.* settings")
    registry.set_defaults(func=_dev_schema_registry)
    dev.add_parser("hdfs", help="run a real HDFS (MiniDFSCluster) with WebHDFS").set_defaults(func=_dev_hdfs)
    singer = dev.add_parser("singer-plugin", help="install Singer plugins, each in its own venv")
    singer.add_argument("requirements", nargs="+", metavar="NAME==VERSION",
                        help="a pinned plugin, e.g. meltanolabs-tap-postgres==0.10.0")
    singer.set_defaults(func=_dev_singer_plugin)
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
