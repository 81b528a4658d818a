"""OpenLineage facets of the plan, copy and Spark export operators (``get_openlineage_facets_on_*``).

The datasets, schemas and column lineage come from :mod:`kopycat.runtime.lineage` (named by the
OpenLineage naming spec); this module turns them into the OpenLineage provider's ``OperatorLineage``
with ``schema`` and ``columnLineage`` dataset facets. The provider's listener calls the operators'
methods around ``execute`` and sends the events through the configured transport
(``[openlineage] transport``); a failure here is logged by the listener and never fails the task.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from airflow.providers.common.compat.openlineage.facet import (
    ColumnLineageDatasetFacet,
    Dataset,
    Fields,
    InputField,
    SchemaDatasetFacet,
    SchemaDatasetFacetFields,
)
from airflow.providers.openlineage.extractors import OperatorLineage

from kopycat.connectors.jdbc.source_config import TABLES_CONFIG
from kopycat.runtime.lineage import DatasetRef, Lineage, jdbc_source_lineage, storage_sink_lineage

__all__ = ["connector_lineage", "operator_lineage"]

def connector_lineage(props: Mapping[str, Any], worker_props: Mapping[str, Any],
                      task_configs: Iterable[Mapping[str, Any]]) -> OperatorLineage:
    """The lineage of a connector's planned tasks (the plan's items' ``config``): a JDBC source's tables
    and topics; a storage sink's topics and directories; nothing for other connectors."""
    bootstrap = str(worker_props.get("bootstrap.servers") or "")
    lineage = Lineage()
    if str(props.get("connector.class", "")).endswith("JdbcSourceConnector"):
        for config in task_configs:
            found = jdbc_source_lineage(props, str(config.get(TABLES_CONFIG) or ""), bootstrap)
            lineage.inputs += found.inputs
            lineage.outputs += found.outputs
    elif props.get("store.url"):
        lineage = storage_sink_lineage(props, bootstrap)
    return operator_lineage(lineage)


def operator_lineage(lineage: Lineage) -> OperatorLineage:
    """``OperatorLineage`` of ``lineage``: schema facets where fields are known, column lineage on outputs."""
    return OperatorLineage(inputs=[_dataset(ref) for ref in lineage.inputs],
                           outputs=[_dataset(ref) for ref in lineage.outputs])


def _dataset(ref: DatasetRef) -> Dataset:
    facets: dict[str, Any] = {}
    if ref.fields:
        facets["schema"] = SchemaDatasetFacet(fields=[SchemaDatasetFacetFields(name=name, type=kind or None)
                                                      for name, kind in ref.fields])
    if ref.column_lineage:
        facets["columnLineage"] = ColumnLineageDatasetFacet(fields={
            out: Fields(inputFields=[InputField(namespace=src.namespace, name=src.name, field=src.field)
                                     for src in sources],
                        transformationType="IDENTITY", transformationDescription="")
            for out, sources in ref.column_lineage.items()})
    return Dataset(namespace=ref.namespace, name=ref.name, facets=facets)
