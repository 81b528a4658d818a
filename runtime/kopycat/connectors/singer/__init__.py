"""Singer taps as source connectors (https://hub.meltano.com/singer/spec).

``connector.class=kopycat.connectors.singer.SingerSourceConnector`` runs a Singer tap and writes
its streams to Kafka, with the tap's STATE as the source offset in connect-offsets.
"""

from __future__ import annotations

from kopycat.connectors.singer.source_connector import SingerSourceConnector

__all__ = ["SingerSourceConnector"]
