"""OpenLineage facets of the plan, copy and Spark export operators (``get_openlineage_facets_on_*``).

The datasets, schemas and column lineage come from :mod:`kopycat.runtime.lineage` (named by the
OpenLineage naming spec) as :mod:`kopycat.runtime.lineage_events` makes them into OpenLineage datasets
with ``schema`` and ``columnLineage`` facets (the standalone worker sends the same ones); this module
wraps them in the OpenLineage provider's ``OperatorLineage``. The provider's listener calls the
operators' methods around ``execute`` and sends the events through the configured transport
(``[openlineage] transport``); a failure here is logged by the listener and never fails the task.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from airflow.providers.openlineage.extractors import OperatorLineage

from kopycat.runtime import lineage
from kopycat.runtime.lineage import Lineage
from kopycat.runtime.lineage_events import openlineage_dataset

__all__ = ["connector_lineage", "operator_lineage"]


def connector_lineage(props: Mapping[str, Any], worker_props: Mapping[str, Any],
                      task_configs: Iterable[Mapping[str, Any]]) -> OperatorLineage:
    """The lineage of a connector's planned tasks (the plan's items' ``config``): a JDBC source's tables
    and topics; a storage sink's topics and directories; nothing for other connectors."""
    return operator_lineage(lineage.connector_lineage(props, worker_props, task_configs))


def operator_lineage(found: Lineage) -> OperatorLineage:
    """``OperatorLineage`` of ``found``: schema facets where fields are known, column lineage on outputs."""
    return OperatorLineage(inputs=[openlineage_dataset(ref) for ref in found.inputs],
                           outputs=[openlineage_dataset(ref) for ref in found.outputs])
