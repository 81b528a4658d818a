"""The Singer source connector's keys, and the files a tap run takes: config, catalog, state.

A Singer tap is started as ``<tap> --config config.json [--catalog catalog.json] [--state
state.json]`` (Singer spec). The config comes from ``singer.tap.config.file`` and the
``singer.tap.config.<setting>`` keys (which win); properties carry text, so a setting's value is
converted to the type the tap's ``--about --format json`` settings schema declares (integer,
number, boolean, array, object) when the tap answers it, and stays text otherwise. Secrets take
config providers like any key (``singer.tap.config.password=${file:/secrets:pg}``): they are
resolved when the task starts and written only to the task's private temporary files.
"""

from __future__ import annotations

import json
import logging
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from kopycat.api import ConfigDef, ConfigError, ConfigType, ConnectError, Importance, Range
from kopycat.topic_names import sanitized_topic_name

__all__ = [
    "CATALOG_CONFIG", "CONFIG", "CONFIG_FILE_CONFIG", "DECIMAL_SCALE_CONFIG", "EXECUTABLE_CONFIG",
    "MAX_RECORDS_CONFIG", "RESTART_INTERVAL_MS_CONFIG", "SELECT_CONFIG", "SETTING_PREFIX", "TOPIC_PREFIX_CONFIG",
    "plugin_settings", "selected_catalog", "tap_settings", "topic_for",
]

log = logging.getLogger(__name__)

EXECUTABLE_CONFIG: Final = "singer.tap.executable"
SETTING_PREFIX: Final = "singer.tap.config."
CONFIG_FILE_CONFIG: Final = "singer.tap.config.file"
CATALOG_CONFIG: Final = "singer.tap.catalog"
SELECT_CONFIG: Final = "singer.tap.select"
TOPIC_PREFIX_CONFIG: Final = "topic.prefix"
DECIMAL_SCALE_CONFIG: Final = "singer.decimal.scale"
MAX_RECORDS_CONFIG: Final = "singer.batch.max.records"
RESTART_INTERVAL_MS_CONFIG: Final = "singer.tap.restart.interval.ms"

CONFIG: Final = ConfigDef().define(
    EXECUTABLE_CONFIG, ConfigType.STRING, importance=Importance.HIGH,
    doc="The Singer tap to run: an executable on PATH (tap-postgres) or a path to one. It is started with "
        "--config, and --catalog and --state when there are any.",
).define(
    CONFIG_FILE_CONFIG, ConfigType.STRING, default="", importance=Importance.HIGH,
    doc="A JSON file with the tap's config. Keys singer.tap.config.<setting> add or override settings "
        "(singer.tap.config.host=db1); their text is converted to the type the tap's settings schema "
        "declares (--about --format json), and may use config providers for secrets.",
).define(
    CATALOG_CONFIG, ConfigType.STRING, default="", importance=Importance.MEDIUM,
    doc="A Singer catalog file (streams, schemas, selection metadata) passed as --catalog. Empty: the tap's "
        "own selection, or its --discover output when singer.tap.select names streams.",
).define(
    SELECT_CONFIG, ConfigType.LIST, default="", importance=Importance.MEDIUM,
    doc="Streams to copy (tap_stream_id or stream name); the others are deselected in the catalog. Empty: "
        "the catalog's selection as it is.",
).define(
    TOPIC_PREFIX_CONFIG, ConfigType.STRING, default="", importance=Importance.HIGH,
    doc="Each stream is written to the topic <topic.prefix><stream>; characters Kafka does not allow in a "
        "topic name become '_'.",
).define(
    DECIMAL_SCALE_CONFIG, ConfigType.INT, default=9, validator=Range.between(0, 38), importance=Importance.LOW,
    doc="The scale of Decimal values for properties of format singer.decimal without multipleOf. A value "
        "with more decimal places fails the task instead of being rounded.",
).define(
    MAX_RECORDS_CONFIG, ConfigType.INT, default=1000, validator=Range.at_least(1), importance=Importance.LOW,
    doc="Most records one poll() returns. Records are held until the tap's next STATE message covers them; "
        "a longer run of records without STATE is sent in parts carrying the previous state.",
).define(
    RESTART_INTERVAL_MS_CONFIG, ConfigType.LONG, default=60_000, validator=Range.at_least(0),
    importance=Importance.LOW,
    doc="In a continuous (standalone) run, how long to wait after the tap exited before running it again "
        "from the last state. A bounded run (kopycat run, Airflow) ends when the tap exits.",
)

_SETTING_TYPES = {"integer": int, "number": float, "boolean": None, "array": None, "object": None}


def topic_for(prefix: str, stream: str) -> str:
    """The topic of a stream's records: ``<prefix><stream>``, with characters Kafka refuses as '_'."""
    return sanitized_topic_name(f"{prefix}{stream}")


def tap_settings(executable: str, props: Mapping[str, Any]) -> dict[str, Any]:
    """The tap's config: the file's settings, then the ``singer.tap.config.<setting>`` keys typed."""
    return plugin_settings(executable, props, SETTING_PREFIX, CONFIG_FILE_CONFIG)


def plugin_settings(executable: str, props: Mapping[str, Any], prefix: str, file_key: str) -> dict[str, Any]:
    """A Singer plugin's (tap's or target's) config: ``file_key``'s JSON settings, then the
    ``<prefix><setting>`` keys, typed as the plugin's ``--about`` declares them."""
    settings: dict[str, Any] = {}
    path = str(props.get(file_key) or "")
    if path:
        try:
            settings.update(json.loads(Path(path).read_text()))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{file_key}={path} could not be read as a JSON object: {exc}", key=file_key) from exc
    given = {key[len(prefix):]: str(value) for key, value in props.items()
             if key.startswith(prefix) and key != file_key}
    types = _declared_types(executable) if given else {}
    for name, text in given.items():
        settings[name] = _typed(prefix, name, text, types.get(name))
    return settings


def _declared_types(executable: str) -> dict[str, str]:
    """Setting name -> JSON type from ``<tap> --about --format json``; empty when the tap does not say."""
    try:
        done = subprocess.run([executable, "--about", "--format", "json"], capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL)
        about = json.loads(done.stdout) if done.returncode == 0 else {}
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return {}
    properties = (about.get("settings") or {}).get("properties") or {}
    types: dict[str, str] = {}
    for name, node in properties.items():
        declared = node.get("type") if isinstance(node, Mapping) else None
        names = [declared] if isinstance(declared, str) else list(declared or [])
        found = [t for t in names if t in _SETTING_TYPES]
        if found:
            types[name] = found[0]
    return types


def _typed(prefix: str, name: str, text: str, declared: str | None) -> Any:
    if declared is None:
        return text
    try:
        value = json.loads(text) if declared != "boolean" else text.strip().lower() == "true"
        convert = _SETTING_TYPES[declared]
        return convert(value) if convert is not None else value
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{prefix}{name}={text!r} is not a valid {declared}, the type the plugin "
                          f"declares for {name}", key=f"{prefix}{name}") from exc


def selected_catalog(executable: str, config_file: Path, catalog_file: str,
                     select: Sequence[str]) -> dict[str, Any] | None:
    """The catalog to pass with --catalog: the file's (or ``--discover``'s) with ``select`` applied;
    None when there is neither a catalog file nor a selection (the tap then chooses)."""
    if not catalog_file and not select:
        return None
    if catalog_file:
        try:
            catalog = json.loads(Path(catalog_file).read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{CATALOG_CONFIG}={catalog_file} could not be read as a Singer catalog: {exc}",
                              key=CATALOG_CONFIG) from exc
    else:
        done = subprocess.run([executable, "--config", str(config_file), "--discover"], capture_output=True,
                              text=True, timeout=600, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise ConnectError(f"Singer tap {executable!r} --discover exited with code {done.returncode}: "
                               f"{done.stderr[-2000:]}")
        catalog = json.loads(done.stdout)
    if select:
        _select(catalog, set(select))
    return catalog  # type: ignore[no-any-return]


def _select(catalog: dict[str, Any], wanted: set[str]) -> None:
    """Mark the ``wanted`` streams selected and every other stream not (the stream's [] breadcrumb)."""
    names = set()
    for stream in catalog.get("streams", []):
        ids = {stream.get("tap_stream_id"), stream.get("stream")}
        names |= ids
        chosen = bool(ids & wanted)
        metadata = stream.setdefault("metadata", [])
        top = next((entry for entry in metadata if entry.get("breadcrumb") == []), None)
        if top is None:
            top = {"breadcrumb": [], "metadata": {}}
            metadata.append(top)
        top.setdefault("metadata", {})["selected"] = chosen
    missing = wanted - names
    if missing:
        raise ConfigError(f"{SELECT_CONFIG} names streams the catalog does not have: {sorted(missing)}; "
                          f"streams found: {sorted(n for n in names if n)}", key=SELECT_CONFIG)
