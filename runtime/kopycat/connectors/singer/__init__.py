"""Singer taps as source connectors (https://hub.meltano.com/singer/spec).

``connector.class=kopycat.connectors.singer.SingerSourceConnector`` runs a Singer tap and writes
its streams to Kafka, with the tap's STATE as the source offset in connect-offsets;
``connector.class=kopycat.connectors.singer.SingerSinkConnector`` feeds a Singer target from
topics, committing the consumer group behind the state the target echoes.
"""

from __future__ import annotations

from kopycat.connectors.singer.sink_connector import SingerSinkConnector
from kopycat.connectors.singer.source_connector import SingerSourceConnector

__all__ = ["SingerSinkConnector", "SingerSourceConnector"]
