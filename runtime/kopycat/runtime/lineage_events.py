"""OpenLineage datasets with facets, and the standalone worker's run events through openlineage-python.

:mod:`kopycat.runtime.lineage` names what a connector reads and writes; this module turns it into
OpenLineage's ``Dataset`` with the ``schema`` and ``columnLineage`` dataset facets (the same objects the
Airflow provider's ``OperatorLineage`` carries, so the operators, :mod:`kopycat_airflow.lineage`, and
the standalone worker report identical datasets).

The standalone worker has no Airflow listener to send events for it: :class:`LineageEmitter` does what
the OpenLineage provider does around an operator's ``execute``, per connector instead of per task
instance. A connector the worker starts is one run of the job ``<openlineage.namespace>/<connector>``:
START when it is planned, then COMPLETE when it is removed (the worker stops, or ``DELETE``), or FAIL
when the connector or one of its tasks failed, with an ``errorMessage`` run facet holding the trace.
Both events carry the connector's datasets, computed once from the plan's task configs. A connector that
asks for reconfiguration (the JDBC source finding a new table) and gets new task configs ends its run
there and starts a new one, with the new configs' datasets: each run's events name what it copied.
An event that cannot be sent (backend down, lineage not computable) is logged and never stops a task,
as the provider's listener never fails a task instance.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import (
    JobFacet,
    RunFacet,
    column_lineage_dataset,
    error_message_run,
    job_type_job,
    schema_dataset,
)
from openlineage.client.generated.base import Dataset
from openlineage.client.uuid import generate_new_uuid

from kopycat.api.errors import ConfigError
from kopycat.runtime.lineage import DatasetRef, Lineage, connector_lineage
from kopycat.runtime.lineage_config import (
    OPENLINEAGE_CONFIG,
    OPENLINEAGE_NAMESPACE_CONFIG,
    OPENLINEAGE_TRANSPORT_LOG_FILE_PATH_CONFIG,
    OPENLINEAGE_TRANSPORT_PREFIX,
    OPENLINEAGE_TRANSPORT_TYPE_CONFIG,
    OPENLINEAGE_TRANSPORT_URL_CONFIG,
)

__all__ = ["LineageEmitter", "openlineage_dataset", "transport_config"]

log = logging.getLogger(__name__)

PRODUCER = "urn:kopycat"
"""The ``producer`` of every event, the software that emitted it (a URI), followed by its version."""

_REQUIRED = {"file": OPENLINEAGE_TRANSPORT_LOG_FILE_PATH_CONFIG, "http": OPENLINEAGE_TRANSPORT_URL_CONFIG}


def openlineage_dataset(ref: DatasetRef) -> Dataset:
    """``ref`` as an OpenLineage dataset: a schema facet where fields are known, column lineage on outputs."""
    facets: dict[str, Any] = {}
    if ref.fields:
        facets["schema"] = schema_dataset.SchemaDatasetFacet(fields=[
            schema_dataset.SchemaDatasetFacetFields(name=name, type=kind or None) for name, kind in ref.fields])
    if ref.column_lineage:
        facets["columnLineage"] = column_lineage_dataset.ColumnLineageDatasetFacet(fields={
            out: column_lineage_dataset.Fields(
                inputFields=[column_lineage_dataset.InputField(namespace=src.namespace, name=src.name,
                                                               field=src.field) for src in sources],
                transformationType="IDENTITY", transformationDescription="")
            for out, sources in ref.column_lineage.items()})
    return Dataset(namespace=ref.namespace, name=ref.name, facets=facets)


def transport_config(worker_props: Mapping[str, Any]) -> dict[str, Any] | None:
    """The openlineage-python ``transport`` config of the worker's ``openlineage.transport.*`` keys, nested
    on dots; None when no transport type is set. Raises ConfigError for a transport missing its target."""
    kind = str(OPENLINEAGE_CONFIG.parse(worker_props)[OPENLINEAGE_TRANSPORT_TYPE_CONFIG]).lower()
    if not kind:
        return None
    required = _REQUIRED.get(kind)
    if required and not worker_props.get(required):
        raise ConfigError.for_key(OPENLINEAGE_TRANSPORT_TYPE_CONFIG, kind,
                                  f"the {kind} transport needs {required}; set it in the worker properties")
    config: dict[str, Any] = {}
    for key, value in worker_props.items():
        if key.startswith(OPENLINEAGE_TRANSPORT_PREFIX):
            *parents, leaf = key[len(OPENLINEAGE_TRANSPORT_PREFIX):].split(".")
            node = config
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = _typed(value)
    config["type"] = kind
    return config


def _typed(value: Any) -> Any:
    """A properties file's ``true``/``false`` as the booleans the client's transport configs take."""
    text = str(value)
    return {"true": True, "false": False}.get(text.lower(), text)


class LineageEmitter:
    """Sends the START and COMPLETE/FAIL run events of the connectors a worker runs.

    Thread-safety: the worker calls it from its API threads; one lock guards the runs in progress.
    """

    def __init__(self, client: OpenLineageClient, namespace: str, worker_props: Mapping[str, Any]) -> None:
        self.client = client
        self.namespace = namespace
        self.worker_props = dict(worker_props)
        self._runs: dict[str, tuple[str, Lineage]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_worker_props(cls, worker_props: Mapping[str, Any]) -> LineageEmitter | None:
        """An emitter when ``openlineage.transport.type`` is set, else None (no events)."""
        transport = transport_config(worker_props)
        if transport is None:
            return None
        namespace = OPENLINEAGE_CONFIG.parse(worker_props)[OPENLINEAGE_NAMESPACE_CONFIG]
        log.info("Sending OpenLineage events of namespace %s through the %s transport", namespace,
                 transport["type"])
        return cls(OpenLineageClient(config={"transport": transport}), namespace, worker_props)

    def connector_started(self, name: str, props: Mapping[str, Any], task_configs: list[dict[str, str]]) -> None:
        """START of a new run of the connector's job, with the datasets its task configs read and write."""
        try:
            lineage = connector_lineage(props, self.worker_props, task_configs)
        except Exception:  # noqa: BLE001 - lineage is informational; the connector runs without it
            log.exception("Could not compute the OpenLineage datasets of connector %s", name)
            lineage = Lineage()
        run_id = str(generate_new_uuid())
        with self._lock:
            self._runs[name] = (run_id, lineage)
        self._emit(RunState.START, name, run_id, lineage, {})

    def connector_stopped(self, name: str, failure: str | None) -> None:
        """COMPLETE of the connector's run, or FAIL with ``failure`` (a trace) as its error message."""
        with self._lock:
            started = self._runs.pop(name, None)
        if started is None:
            return
        run_id, lineage = started
        if failure is None:
            self._emit(RunState.COMPLETE, name, run_id, lineage, {})
            return
        message = failure.strip().splitlines()[-1] if failure.strip() else "failed"
        self._emit(RunState.FAIL, name, run_id, lineage, {"errorMessage": error_message_run.ErrorMessageRunFacet(
            message=message, programmingLanguage="python", stackTrace=failure)})

    def close(self) -> None:
        """Send what the transport buffers and release it."""
        try:
            self.client.close()
        except Exception:  # noqa: BLE001 - closing a lineage transport must not fail the worker's stop
            log.exception("Could not close the OpenLineage client")

    def _emit(self, state: RunState, name: str, run_id: str, lineage: Lineage, run_facets: dict[str, RunFacet]
              ) -> None:
        job_facets: dict[str, JobFacet] = {"jobType": job_type_job.JobTypeJobFacet(
            processingType="STREAMING", integration="KOPYCAT", jobType="CONNECTOR")}
        event = RunEvent(
            eventTime=dt.datetime.now(dt.UTC).isoformat(), producer=_producer(), eventType=state,
            run=Run(runId=run_id, facets=run_facets), job=Job(namespace=self.namespace, name=name, facets=job_facets),
            inputs=[_as(InputDataset, ref) for ref in lineage.inputs],
            outputs=[_as(OutputDataset, ref) for ref in lineage.outputs])
        try:
            self.client.emit(event)
        except Exception:  # noqa: BLE001 - a lineage backend being down must not stop the copy
            log.exception("Could not send the OpenLineage %s event of connector %s", state.value, name)


def _as(kind: type[InputDataset] | type[OutputDataset], ref: DatasetRef) -> Any:
    dataset = openlineage_dataset(ref)
    return kind(namespace=dataset.namespace, name=dataset.name, facets=dataset.facets)


def _producer() -> str:
    try:
        return f"{PRODUCER}:{version('kopycat')}"
    except PackageNotFoundError:
        return PRODUCER
