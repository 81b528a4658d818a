"""An SMT that fails a task once, after N records of one topic: the injected fault of DAG tests.

The first time it sees record N of ``fail.topic`` it creates ``marker.path`` and raises, and goes
on raising in that attempt (the engine retries a failed batch record by record); a later attempt
finds the marker and passes everything. So an Airflow retry of that mapped task succeeds, and the
test can prove the retry resumed from the committed offsets (no duplicates, nothing lost).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kopycat.api.config import ConfigDef, ConfigType
from kopycat.api.errors import ConnectError
from kopycat.api.records import ConnectRecord
from kopycat.api.transforms import Transformation


class FailOnceTransform(Transformation[ConnectRecord]):
    def configure(self, configs: Mapping[str, Any]) -> None:
        values = self.config().parse(configs)
        self.marker = Path(values["marker.path"])
        self.topic = values["fail.topic"]
        self.after = values["after.records"]
        self.seen = 0
        self.failing = False

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        if record.topic == self.topic and (self.failing or not self.marker.exists()):
            self.seen += 1
            if self.failing or self.seen > self.after:
                self.failing = True
                self.marker.touch()
                raise ConnectError(f"injected failure after {self.after} records of {self.topic}")
        return record

    def config(self) -> ConfigDef:
        return (ConfigDef()
                .define("marker.path", ConfigType.STRING, doc="created when the failure fires")
                .define("fail.topic", ConfigType.STRING, doc="the topic whose records count")
                .define("after.records", ConfigType.INT, default=100, doc="records let through first"))

    def close(self) -> None:
        pass
