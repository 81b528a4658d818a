"""A fixed script of REST requests, run against Kafka Connect and Kopycat, and what may differ between them.

:data:`SCRIPT` walks every endpoint both serve and their error cases with one FileStreamSource and one
FileStreamSink (Kafka's classes, which Kopycat's connectors answer to). Each side runs it through a
:class:`Side` (how to call it); :func:`run_script` returns one :class:`Exchange` per step. Placeholders
``{src}``, ``{sink}``, ``{file}``, ``{out}`` and ``{topic}`` are filled in the same for both sides.
Before a step with ``wait``, each side is polled until its status shows that state, so a step never
compares a worker caught mid-transition.

:func:`normalize` applies :data:`ALLOWED`, the only differences accepted, each with its reason.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

__all__ = ["ALLOWED", "SCRIPT", "Exchange", "Side", "Step", "normalize", "run_script"]

KAFKA_FILE_SOURCE: Final = "org.apache.kafka.connect.file.FileStreamSourceConnector"
KAFKA_FILE_SINK: Final = "org.apache.kafka.connect.file.FileStreamSinkConnector"


@dataclass(frozen=True)
class Step:
    """One request; ``wait`` = (connector state, task states) both sides must show first, ``wait_lines`` =
    the lines the sink's file must hold first. ``allow`` names why this step's answers may differ: then
    only "both refused" or "both accepted" is compared."""

    method: str
    path: str
    body: Any = None
    wait: tuple[str, tuple[str, ...]] | None = None
    wait_for: str = "{src}"
    wait_lines: int = 0
    allow: str | None = None


@dataclass
class Exchange:
    step: Step
    status: int
    body: Any


@dataclass
class Side:
    """How to call one REST API: ``call(method, path, body) -> (status, decoded JSON or None)``."""

    name: str
    call: Callable[[str, str, Any], tuple[int, Any]]
    values: Mapping[str, str] = field(default_factory=dict)


def _source(file: str = "{file}", topic: str = "{topic}") -> dict[str, str]:
    return {"connector.class": KAFKA_FILE_SOURCE, "tasks.max": "1", "file": file, "topic": topic}


def _sink() -> dict[str, str]:
    return {"connector.class": KAFKA_FILE_SINK, "tasks.max": "1", "file": "{out}", "topics": "{topic}"}


_SMTS: Final = "org.apache.kafka.connect.transforms."
SMT_PLUGINS: Final = (
    *(f"{_SMTS}{name}" for name in ("DropHeaders", "InsertHeader", "Flatten$Key", "Flatten$Value", "HeaderFrom$Key",
                                    "HeaderFrom$Value", "SetSchemaMetadata$Key", "SetSchemaMetadata$Value",
                                    "TimestampConverter$Key", "TimestampConverter$Value")),
    "org.apache.kafka.connect.storage.SimpleHeaderConverter",
)


def _smt_configs(*, bad: bool) -> dict[str, str]:
    """One transform of each new kind; ``bad`` gives each a value its validators refuse (or leaves one out)."""
    return {
        "transforms": "ts,hf,ih,dh,fl,meta",
        "transforms.ts.type": f"{_SMTS}TimestampConverter$Value", "transforms.ts.field": "at",
        "transforms.ts.target.type": "Hours" if bad else "unix",
        "transforms.ts.unix.precision": "minutes" if bad else "seconds",
        "transforms.hf.type": f"{_SMTS}HeaderFrom$Value", "transforms.hf.fields": "a",
        "transforms.hf.headers": "" if bad else "h", "transforms.hf.operation": "cut" if bad else "move",
        "transforms.ih.type": f"{_SMTS}InsertHeader", "transforms.ih.header": "h",
        **({} if bad else {"transforms.ih.value.literal": "42"}),
        "transforms.dh.type": f"{_SMTS}DropHeaders", "transforms.dh.headers": "" if bad else "h",
        "transforms.fl.type": f"{_SMTS}Flatten$Key", "transforms.fl.delimiter": "_",
        "transforms.meta.type": f"{_SMTS}SetSchemaMetadata$Value",
        "transforms.meta.schema.version": "x" if bad else "2",
        "header.converter": "org.apache.kafka.connect.storage.SimpleHeaderConverter",
    }


LINES: Final = 20  # lines in the source file
LINES_COPIED: Final = 2 * LINES  # the source reads the file twice: its offsets are reset once
RUNNING: Final = ("RUNNING", ("RUNNING",))
PAUSED: Final = ("PAUSED", ("PAUSED",))
STOPPED: Final = ("STOPPED", ())

SCRIPT: Final[tuple[Step, ...]] = (
    Step("GET", "/"),
    Step("GET", "/connectors"),
    # unknown connector: 404 everywhere
    Step("GET", "/connectors/nope-{src}"),
    Step("GET", "/connectors/nope-{src}/config"),
    Step("GET", "/connectors/nope-{src}/status"),
    Step("GET", "/connectors/nope-{src}/tasks"),
    Step("GET", "/connectors/nope-{src}/tasks/0/status"),
    Step("GET", "/connectors/nope-{src}/offsets"),
    Step("PUT", "/connectors/nope-{src}/pause"),
    Step("PUT", "/connectors/nope-{src}/resume"),
    Step("PUT", "/connectors/nope-{src}/stop"),
    Step("POST", "/connectors/nope-{src}/restart"),
    Step("POST", "/connectors/nope-{src}/restart?includeTasks=true"),
    Step("POST", "/connectors/nope-{src}/tasks/0/restart"),
    Step("DELETE", "/connectors/nope-{src}"),
    Step("DELETE", "/connectors/nope-{src}/offsets"),
    Step("PATCH", "/connectors/nope-{src}/offsets", {"offsets": [{"partition": {"filename": "{file}"},
                                                                  "offset": {"position": 0}}]}),
    Step("PATCH", "/connectors/nope-{src}/config", {"tasks.max": "1"}),
    # plugins
    Step("GET", "/connector-plugins"),
    Step("GET", "/connector-plugins?connectorsOnly=false"),
    Step("GET", "/connector-plugins/FileStreamSource/config"),
    Step("GET", "/connector-plugins/FileStreamSink/config"),
    Step("GET", "/connector-plugins/NoSuchPlugin/config"),
    Step("PUT", "/connector-plugins/FileStreamSource/config/validate", _source()),
    Step("PUT", "/connector-plugins/FileStreamSource/config/validate", {**_source(), "tasks.max": "x"}),
    Step("PUT", "/connector-plugins/FileStreamSource/config/validate", {"connector.class": KAFKA_FILE_SOURCE,
                                                                       "file": "{file}"}),
    Step("PUT", "/connector-plugins/FileStreamSink/config/validate", _source()),
    Step("PUT", "/connector-plugins/FileStreamSink/config/validate", {"connector.class": KAFKA_FILE_SINK}),
    # Kafka's SMTs and header converter: their keys, and their validation inside a connector config
    *(Step("GET", f"/connector-plugins/{name}/config") for name in SMT_PLUGINS),
    Step("PUT", "/connector-plugins/FileStreamSource/config/validate", {**_source(), **_smt_configs(bad=False)}),
    Step("PUT", "/connector-plugins/FileStreamSource/config/validate", {**_source(), **_smt_configs(bad=True)}),
    # bad configs: 400
    Step("POST", "/connectors", {"name": "{src}", "config": {"tasks.max": "1"}}),
    Step("PUT", "/connectors/{src}/config", {"tasks.max": "1", "topic": "{topic}", "file": "{file}", "batch.size": "5",
                                             "errors.tolerance": "all", "key.converter": "x.Y"}),
    Step("POST", "/connectors", {"name": "{src}", "config": {**_source(), "tasks.max": "0"}}),
    Step("POST", "/connectors", {"name": "{src}", "config": {**_source(), "tasks.max": "x"}}),
    Step("POST", "/connectors", {"name": "{src}", "config": {**_source(), "name": "other"}}),
    Step("PUT", "/connectors/{src}/config", {**_source(), "name": "other"}),
    Step("POST", "/connectors", {"name": "{src}", "config": _source(), "initial_state": "SLEEPING"},
         allow="Kafka answers 500 with Jackson's enum error: an unknown initial_state is bad input, so Kopycat "
               "answers 400 naming the field and the values allowed (RULES: bad input gets a clear error)"),
    # a source: create, conflict, read it back
    Step("POST", "/connectors", {"name": "{src}", "config": _source()}),
    Step("POST", "/connectors", {"name": "{src}", "config": _source()}),
    Step("GET", "/connectors/{src}", wait=RUNNING),
    Step("GET", "/connectors/{src}/config"),
    Step("GET", "/connectors/{src}/tasks"),
    Step("GET", "/connectors/{src}/status"),
    Step("GET", "/connectors/{src}/tasks/0/status"),
    Step("GET", "/connectors/{src}/tasks/7/status"),
    Step("GET", "/connectors/{src}/topics"),
    Step("GET", "/connectors?expand=status"),
    Step("GET", "/connectors?expand=info"),
    Step("GET", "/connectors?expand=status&expand=info"),
    # reconfigure
    Step("PUT", "/connectors/{src}/config", {**_source(), "batch.size": "100"}),
    Step("PATCH", "/connectors/{src}/config", {"batch.size": None}),
    Step("GET", "/connectors/{src}/config", wait=RUNNING),
    # pause, resume, restart
    Step("PUT", "/connectors/{src}/pause"),
    Step("GET", "/connectors/{src}/status", wait=PAUSED),
    Step("PUT", "/connectors/{src}/resume"),
    Step("GET", "/connectors/{src}/status", wait=RUNNING),
    Step("POST", "/connectors/{src}/restart"),
    Step("POST", "/connectors/{src}/tasks/0/restart", wait=RUNNING),
    Step("POST", "/connectors/{src}/tasks/3/restart", wait=RUNNING),
    Step("POST", "/connectors/{src}/restart?includeTasks=true&onlyFailed=true", wait=RUNNING),
    # offsets: only on a stopped connector
    Step("PATCH", "/connectors/{src}/offsets", {"offsets": [{"partition": {"filename": "{file}"},
                                                             "offset": {"position": 0}}]}, wait=RUNNING),
    Step("DELETE", "/connectors/{src}/offsets"),
    Step("PUT", "/connectors/{src}/stop"),
    Step("GET", "/connectors/{src}/status", wait=STOPPED),
    Step("GET", "/connectors/{src}/tasks"),
    Step("GET", "/connectors/{src}/offsets"),
    Step("PATCH", "/connectors/{src}/offsets", {"offsets": [{"partition": {"filename": "{file}"},
                                                             "offset": {"position": 7}}]}),
    Step("GET", "/connectors/{src}/offsets"),
    Step("PATCH", "/connectors/{src}/offsets", {}),
    Step("PATCH", "/connectors/{src}/offsets", {"offsets": []}),
    Step("DELETE", "/connectors/{src}/offsets"),
    Step("GET", "/connectors/{src}/offsets",
         allow="after a reset Kafka 4.1 still lists the source partition, with a null offset; Kopycat's offset "
               "stores forget a tombstoned partition and list none: both mean 'no offset', and a restart "
               "reads the file from its start on both (the sink's line count below shows it)"),
    Step("PUT", "/connectors/{src}/resume"),
    Step("GET", "/connectors/{src}/status", wait=RUNNING),
    # a sink, created stopped (KIP-980), with its offsets
    Step("PUT", "/connectors/{sink}/config", _sink()),
    Step("GET", "/connectors/{sink}/status", wait=RUNNING, wait_for="{sink}"),
    Step("PUT", "/connectors/{sink}/stop", wait_lines=LINES_COPIED),
    Step("GET", "/connectors/{sink}/offsets", wait=STOPPED, wait_for="{sink}"),
    Step("PATCH", "/connectors/{sink}/offsets", {"offsets": [
        {"partition": {"kafka_topic": "{topic}", "kafka_partition": 0}, "offset": {"kafka_offset": 1}}]}),
    Step("GET", "/connectors/{sink}/offsets"),
    Step("DELETE", "/connectors/{sink}/offsets"),
    Step("GET", "/connectors/{sink}/offsets"),
    Step("DELETE", "/connectors/{sink}"),
    Step("POST", "/connectors", {"name": "{sink}", "config": _sink(), "initial_state": "STOPPED"}),
    Step("GET", "/connectors/{sink}/status", wait=STOPPED, wait_for="{sink}"),
    # delete
    Step("DELETE", "/connectors/{sink}"),
    Step("DELETE", "/connectors/{src}"),
    Step("GET", "/connectors/{src}"),
    Step("GET", "/connectors"),
)


def _fill(value: Any, values: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        for key, replacement in values.items():
            value = value.replace("{" + key + "}", replacement)
        return value
    if isinstance(value, Mapping):
        return {_fill(k, values): _fill(v, values) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_fill(v, values) for v in value]
    return value


def _wait(side: Side, name: str, wanted: tuple[str, tuple[str, ...]], timeout_s: float = 180.0) -> None:
    deadline, last = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        status, body = side.call("GET", f"/connectors/{name}/status", None)
        if status == 200:
            last = (body["connector"]["state"], tuple(t["state"] for t in body["tasks"]))
            if last == wanted:
                return
        time.sleep(0.3)
    raise AssertionError(f"{side.name}: connector {name} did not reach {wanted} in {timeout_s:.0f} s; last {last}")


def _wait_lines(side: Side, lines: int, timeout_s: float = 180.0) -> None:
    path, deadline = Path(side.values["out"]), time.monotonic() + timeout_s
    while not (path.exists() and path.read_text(encoding="utf-8").count("\n") >= lines):
        assert time.monotonic() < deadline, f"{side.name}: the sink wrote fewer than {lines} lines to {path}"
        time.sleep(0.3)


def _unfill(value: Any, values: Mapping[str, str]) -> Any:
    """``value`` with each side's own values put back as their placeholders (its sink file, say)."""
    if isinstance(value, str):
        for key, replacement in sorted(values.items(), key=lambda kv: -len(kv[1])):
            value = value.replace(replacement, "{" + key + "}")
        return value
    if isinstance(value, Mapping):
        return {_unfill(k, values): _unfill(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_unfill(v, values) for v in value]
    return value


def run_script(side: Side, script: tuple[Step, ...] = SCRIPT) -> list[Exchange]:
    """Every step of ``script`` against ``side``, in order; bodies with placeholders for the side's values."""
    out = []
    for step in script:
        if step.wait is not None:
            _wait(side, _fill(step.wait_for, side.values), step.wait)
        if step.wait_lines:
            _wait_lines(side, step.wait_lines)
        status, body = side.call(step.method, _fill(step.path, side.values), _fill(step.body, side.values))
        out.append(Exchange(step, status, _unfill(body, side.values)))
    return out


# ------------------------------------------------------------------ what may differ, and why

ALLOWED: Final[dict[str, str]] = {
    "worker_id": "each worker names itself by its own REST host:port",
    "trace": "a Java stack trace against a Python one",
    "version": "plugin versions: Kafka's 4.1.1 jars against Kopycat's connectors",
    "task.class": "a task config names the class that runs it: Kafka's Java task, Kopycat's Python one",
    "GET /": "the build (version, commit), the cluster id (each side has its own broker) and Kopycat's extra "
             "kopycat_version key",
    "keys only Kafka defines": "KIP-891's connector.plugin.version, <converter>.plugin.version and "
                               "transforms/predicates.<alias>.plugin.version (Kopycat loads one version of each "
                               "plugin; the other keys of the alias's group then come one order earlier) and "
                               "config.action.reload (no config providers are reloaded)",
    "embedded key names": "a transformation's or predicate's own validator names its key as the plugin defines it in "
                          "Kafka ('target.type', ConfigDef.embeddedValidator) and prefixed in Kopycat "
                          "('transforms.ts.target.type', kopycat.api.config.ConfigDef.embed), which says which "
                          "alias is wrong when a connector has several: messages are compared with the prefix "
                          "taken out",
    "keys only Kopycat defines": "kopycat.schedule and delivery.guarantee (Kopycat's), and its FileStreamSource's "
                                 "extensions (files, file.discovery.interval.ms, poll.interval.ms, task.index, "
                                 "task.count)",
    "documentation": "Kopycat's docs describe Kopycat's behaviour (Airflow runs, its extensions)",
    "converter keys": "Kafka types key/value/header.converter CLASS with the worker's converter as default and "
                      "every installed converter recommended; Kopycat's are STRING keys that default to the "
                      "worker's at run time",
    "FileStreamSink file": "Kopycat's FileStreamSink requires `file` (Kafka's falls back to standard output, "
                           "which a worker under Airflow does not have)",
    "missing-key message": "Kopycat appends the key's documentation to Kafka's 'Missing required configuration' "
                           "text, so the message says what to give (RULES: an error names the fix)",
    "plugin lists": "Kopycat ships connectors and converters the Kafka worker's class path lacks "
                    "(KOPYCAT_ONLY_PLUGINS), lacks some of Kafka's (KAFKA_ONLY_PLUGINS), and sorts its list; "
                    "Kafka's order is its plugin scan's, which it does not document",
    "unparsable value": "Kafka also runs the validator on null after a value failed to parse ('Value must be "
                        "non-null'); Kopycat reports the one real error (tests/unit/api/test_config.py)",
}

KAFKA_ONLY_KEYS: Final = frozenset({"connector.plugin.version", "key.converter.plugin.version",
                                    "value.converter.plugin.version", "header.converter.plugin.version",
                                    "config.action.reload"})
KOPYCAT_ONLY_KEYS: Final = frozenset({"kopycat.schedule", "delivery.guarantee", "files", "file.discovery.interval.ms",
                                      "poll.interval.ms", "task.index", "task.count"})
KAFKA_ONLY_PLUGINS: Final[frozenset[str]] = frozenset()
"""Plugins of Kafka 4.1's worker that Kopycat does not implement yet (the diff fails when one is added, so
this list shrinks with them)."""
KOPYCAT_ONLY_PLUGINS: Final = frozenset({
    "io.confluent.connect.hdfs.HdfsSinkConnector", "io.confluent.connect.jdbc.JdbcSinkConnector",
    "io.confluent.connect.jdbc.JdbcSourceConnector", "io.debezium.connector.postgresql.PostgresConnector",
    "kopycat.connectors.singer.SingerSourceConnector", "kopycat.connectors.singer.SingerSinkConnector",
    "kopycat.connectors.dlt.DltSourceConnector", "io.confluent.connect.avro.AvroConverter",
    "io.confluent.connect.json.JsonSchemaConverter", "io.confluent.connect.protobuf.ProtobufConverter",
})
"""Plugins Kopycat ships that the Kafka worker's class path (include/jars/connect-runtime) lacks."""
CONVERTER_KEYS: Final = frozenset({"key.converter", "value.converter", "header.converter"})
_SCRUBBED: Final = frozenset({"worker_id", "trace", "version", "task.class"})
_MISSING_WITH_DOC: Final = re.compile(r'(Missing required configuration "([^"]+)" which has no default value\.) \2: .*',
                                      re.DOTALL)
_NULL_AFTER_PARSE: Final = re.compile(r"Invalid value null for configuration (\S+): Value must be non-null")
_ALIAS_PLUGIN_VERSION: Final = re.compile(r"(?:transforms|predicates)\.[^.]+\.plugin\.version")
_EMBEDDED_NAME: Final = re.compile(r"for configuration (?:transforms|predicates)\.[^.]+\.")
_COUNT: Final = re.compile(r"contains the following (\d+) error\(s\):")


def _scrub(value: Any) -> Any:
    """Blank the values ALLOWED names, wherever they appear in a body."""
    if isinstance(value, Mapping):
        return {k: ("<" + k + ">" if k in _SCRUBBED else _scrub(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def _errors(errors: list[str], sink_file: bool) -> list[str]:
    """A key's errors, with the allowed differences of their texts taken out."""
    out = []
    for error in errors:
        error = _MISSING_WITH_DOC.sub(r"\1", error)
        parsed_before = out and out[-1].startswith("Invalid value ") and "Value must be non-null" not in out[-1]
        if _NULL_AFTER_PARSE.fullmatch(error) and parsed_before:
            continue  # "unparsable value"
        if not (sink_file and error.startswith('Missing required configuration "file"')):
            out.append(error)
    return out


def _definition(definition: Mapping[str, Any] | None, sink: bool) -> Any:
    if definition is None:
        return None
    kept = {k: v for k, v in definition.items() if k != "documentation"}
    if definition["name"] in CONVERTER_KEYS:
        kept = {k: v for k, v in kept.items() if k not in ("type", "default_value")}
    if sink and definition["name"] == "file":
        kept.pop("required")
    return kept


def _plugin_versions(configs: list[Any]) -> list[Any]:
    """``configs`` without KIP-891's ``<transforms|predicates>.<alias>.plugin.version`` keys; the keys after one
    in its group move one order earlier, as they sit in Kopycat's group."""
    dropped = {c["definition"]["group"]: c["definition"]["order"] for c in configs
               if _ALIAS_PLUGIN_VERSION.fullmatch(c["value"]["name"]) and c["definition"] is not None}
    out = []
    for entry in configs:
        definition = entry["definition"]
        if _ALIAS_PLUGIN_VERSION.fullmatch(entry["value"]["name"]):
            continue
        if definition is not None and definition["group"] in dropped and \
                definition["order"] > dropped[definition["group"]]:
            entry = {**entry, "definition": {**definition, "order": definition["order"] - 1}}
        out.append(entry)
    return out


def _config_infos(body: Mapping[str, Any], sink: bool) -> dict[str, Any]:
    """A validate response with the allowed differences taken out; error_count counted again."""
    configs = []
    for entry in _plugin_versions(body["configs"]):
        name = entry["value"]["name"]
        if name in KAFKA_ONLY_KEYS | KOPYCAT_ONLY_KEYS:
            continue
        errors = [_EMBEDDED_NAME.sub("for configuration ", e) for e in entry["value"]["errors"]]
        value = {**entry["value"], "errors": _errors(errors, sink and name == "file")}
        if name in CONVERTER_KEYS:
            value = {k: v for k, v in value.items() if k not in ("value", "recommended_values")}
        configs.append({"definition": _definition(entry["definition"], sink), "value": value})
    return {**body, "error_count": sum(len(c["value"]["errors"]) for c in configs), "configs": configs}


def _invalid_config_message(message: str) -> str:
    """The 400 of an invalid config, its error lines and their count taken as _errors takes them."""
    lines = message.split("\n")
    if not _COUNT.search(lines[0]):
        return message
    errors = _errors(lines[1:-1], sink_file=False)
    return "\n".join([_COUNT.sub(f"contains the following {len(errors)} error(s):", lines[0]), *errors, lines[-1]])


def normalize(exchange: Exchange) -> tuple[int, Any]:
    """(status, body) with every allowed difference taken out."""
    body, path = exchange.body, exchange.step.path
    if exchange.step.allow is not None:
        return exchange.status >= 400, None
    sink = "FileStreamSink" in path
    if path == "/" and isinstance(body, Mapping):
        body = sorted(set(body) - {"kopycat_version"})
    elif path.endswith("/config/validate") and isinstance(body, Mapping) and "configs" in body:
        body = _config_infos(body, sink)
    elif path.startswith("/connector-plugins?") or path == "/connector-plugins":
        body = sorted((p for p in body if p["class"] not in KAFKA_ONLY_PLUGINS | KOPYCAT_ONLY_PLUGINS),
                      key=lambda p: (p["class"], p["type"]))
    elif path.startswith("/connector-plugins/") and isinstance(body, list):
        body = [_definition(d, sink) for d in body if d["name"] not in KAFKA_ONLY_KEYS | KOPYCAT_ONLY_KEYS]
    elif isinstance(body, Mapping) and isinstance(body.get("message"), str):
        body = {**body, "message": _invalid_config_message(body["message"])}
    return exchange.status, _scrub(body)
