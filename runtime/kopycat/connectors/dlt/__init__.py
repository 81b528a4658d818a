"""dlt sources as source connectors (https://dlthub.com/docs/general-usage/source).

``connector.class=kopycat.connectors.dlt.DltSourceConnector`` runs a dlt source's resources and
writes them to Kafka, with each resource's incremental state as its source offset in connect-offsets.
"""

from __future__ import annotations

from kopycat.connectors.dlt.source_connector import DltSourceConnector

__all__ = ["DltSourceConnector"]
