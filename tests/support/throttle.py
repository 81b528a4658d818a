"""An SMT that sleeps a fixed time per record: it stretches a copy so that a fault lands in its middle.

Crash tests (tests/integration/airflow_dags/test_celery_deployment.py) kill a task process while it
copies; a copy of a few thousand rows is over in a second, faster than a test can watch the topic
fill and act. Sleeping ``sleep.ms`` per record makes the copy last ``rows * sleep.ms``, whatever the
machine's speed, and changes nothing in the records.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from kopycat.api.config import ConfigDef, ConfigType
from kopycat.api.records import ConnectRecord
from kopycat.api.transforms import Transformation


class ThrottleTransform(Transformation[ConnectRecord]):
    def configure(self, configs: Mapping[str, Any]) -> None:
        self.sleep_s = self.config().parse(configs)["sleep.ms"] / 1000

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        time.sleep(self.sleep_s)
        return record

    def config(self) -> ConfigDef:
        return ConfigDef().define("sleep.ms", ConfigType.INT, default=1, doc="milliseconds slept per record")

    def close(self) -> None:
        pass
