"""Moving connectors between a Kafka Connect cluster and Kopycat: ``kopycat connect import|export``.

Both sides keep source offsets in the same topics and formats (DESIGN §2), so moving a connector
is moving its config and making sure only one side runs it:

- **import** reads every connector of a Kafka Connect cluster (``GET /connectors?expand=info``),
  stores each in Kopycat's config topic through :class:`~kopycat.rest.herder.RestHerder` (the
  path of ``POST /connectors``: name check, validation, write) with the state it had there, and
  with ``stop_source`` first stops it in Kafka Connect (KIP-875's ``PUT .../stop``) and waits
  for STOPPED, so its tasks have committed their offsets and no connector runs twice;
- **export** reads Kopycat's stored connectors from the config topic (the REST API hides
  secrets, the topic holds them as given), validates each on the target cluster
  (``PUT /connector-plugins/{class}/config/validate``), optionally stops it in Kopycat (target
  state STOPPED), then ``PUT /connectors/{name}/config`` there and sets the state it had here
  (so one stopped there by an earlier import runs again).

A connector the other side cannot run (no such plugin class, or an invalid config) is skipped
before anything happens to it, on either side, and listed with its class and the reason: none is
half-moved. Configs travel as stored, secrets included, and are never logged or printed: reports
carry names, classes and (masked) validation messages only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kopycat.api.errors import ConfigError, ConnectError
from kopycat.plugins import connector_class
from kopycat.rest.connect_client import KafkaConnectClient
from kopycat.rest.errors import ConnectRestError
from kopycat.rest.herder import RestHerder
from kopycat.rest.masking import mask_text
from kopycat.runtime.connector_config import CONNECTOR_CLASS_CONFIG
from kopycat.storage.config_backing_store import KafkaConfigBackingStore, TargetState
from kopycat.storage.status_backing_store import KafkaStatusBackingStore

__all__ = ["MigrationReport", "Skipped", "export_connectors", "import_connectors", "kopycat_herder"]

log = logging.getLogger(__name__)

_STATES = {TargetState.STARTED: "RUNNING", TargetState.PAUSED: "PAUSED", TargetState.STOPPED: "STOPPED"}


@dataclass(frozen=True)
class Skipped:
    """A connector left where it was: its name, its class, and why."""

    name: str
    connector_class: str
    reason: str


@dataclass
class MigrationReport:
    """What a move did: the connectors moved (name -> class), and those skipped."""

    moved: dict[str, str] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)

    def skip(self, name: str, config: Mapping[str, Any], reason: str) -> None:
        self.skipped.append(Skipped(name, str(config.get(CONNECTOR_CLASS_CONFIG) or "(no connector.class)"), reason))
        log.warning("Skipped connector %s: %s", name, reason)


@contextmanager
def kopycat_herder(worker_props: Mapping[str, Any]) -> Iterator[RestHerder]:
    """A herder over the config and status topics ``worker_props`` name, as ``kopycat rest`` serves."""
    with KafkaConfigBackingStore.from_config(worker_props) as configs, \
            KafkaStatusBackingStore.from_config(worker_props) as statuses:
        yield RestHerder(configs, statuses, worker_props, worker_id="kopycat-connect-migration")


def _selected(available: Mapping[str, Any], names: Sequence[str] | None, where: str,
              report: MigrationReport) -> list[str]:
    for missing in sorted(set(names or ()) - set(available)):
        report.skip(missing, {}, f"no connector of this name in {where}")
    return sorted(available if not names else set(names) & set(available))


def _validation_errors(response: Mapping[str, Any], config: Mapping[str, Any]) -> str | None:
    """The errors of a ``ConfigInfos`` answer as one masked line, or None when there are none."""
    if not response.get("error_count"):
        return None
    errors = [f"{e['value']['name']}: {error}" for e in response.get("configs", []) for error in e["value"]["errors"]]
    return mask_text(f"{response['error_count']} config error(s): " + "; ".join(errors), config)


def import_connectors(source: KafkaConnectClient, herder: RestHerder, *, names: Sequence[str] | None = None,
                      stop_source: bool = False, stop_timeout_s: float = 120.0) -> MigrationReport:
    """Store the Kafka Connect cluster's connectors (all, or ``names``) in Kopycat's config topic.

    With ``stop_source`` each is stopped there first; one that does not report STOPPED within
    ``stop_timeout_s`` is skipped, not stored.
    """
    report = MigrationReport()
    listing = source.connectors()
    for name in _selected(listing, names, f"Kafka Connect at {source.url}", report):
        config = {str(k): str(v) for k, v in listing[name]["info"]["config"].items() if v is not None}
        state = str(listing[name].get("status", {}).get("connector", {}).get("state", "RUNNING"))
        plugin = config.get(CONNECTOR_CLASS_CONFIG, "")
        try:
            connector_class(plugin)
        except ConfigError:
            report.skip(name, config, "Kopycat has no connector of this class (see `kopycat plugins`)")
            continue
        try:
            problem = _validation_errors(herder.validate_plugin_config(plugin, config), config)
        except (ConnectRestError, ConnectError) as exc:
            problem = mask_text(str(exc), config)
        if problem:
            report.skip(name, config, f"its config is not valid for Kopycat: {problem}")
            continue
        try:
            if stop_source and state != "STOPPED":
                source.stop(name, stop_timeout_s)
            herder.put_connector_config(name, config)
        except (ConnectRestError, ConnectError) as exc:
            where = " (stopped in Kafka Connect: resume it there)" if stop_source and state != "STOPPED" else ""
            report.skip(name, config, f"not stored{where}: {mask_text(str(exc), config)}")
            continue
        if state in ("PAUSED", "STOPPED"):
            (herder.pause_connector if state == "PAUSED" else herder.stop_connector)(name)
        report.moved[name] = plugin
        log.info("Imported connector %s (%s) from %s%s", name, plugin, source.url,
                 ", stopped there" if stop_source else "")
    return report


def export_connectors(herder: RestHerder, target: KafkaConnectClient, *, names: Sequence[str] | None = None,
                      stop: bool = False) -> MigrationReport:
    """PUT Kopycat's stored connectors (all, or ``names``) to the Kafka Connect cluster ``target``."""
    report = MigrationReport()
    stored = herder.config_store.snapshot()
    for name in _selected(stored.connector_configs, names, "Kopycat's config topic", report):
        config = dict(stored.connector_configs[name])
        plugin = config.get(CONNECTOR_CLASS_CONFIG, "")
        try:
            problem = _validation_errors(target.validate(plugin, config), config)
        except ConnectError as exc:
            problem = mask_text(str(exc), config)
        if problem:
            report.skip(name, config, f"Kafka Connect at {target.url} does not accept it: {problem}")
            continue
        state = _STATES[stored.target_states.get(name, TargetState.STARTED)]
        if stop:
            herder.stop_connector(name)
        target.put_config(name, config)
        target.set_state(name, state)  # a PUT keeps an existing connector's state (a STOPPED one stays stopped)
        report.moved[name] = plugin
        log.info("Exported connector %s (%s) to %s%s", name, plugin, target.url, ", stopped in Kopycat" if stop else "")
    return report
