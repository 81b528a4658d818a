"""A source connector whose task process dies in its first poll (``os._exit(3)``): a crashed child.

Only for ``task.isolation=process``: in a thread it would end the test's own process.
"""

from __future__ import annotations

import os

from kopycat.api import SourceRecord, SourceTask
from tests.support.counting import CountingSourceConnector, CountingSourceTask

EXIT_CODE = 3


class CrashingSourceConnector(CountingSourceConnector):
    def task_class(self) -> type[SourceTask]:
        return CrashingSourceTask


class CrashingSourceTask(CountingSourceTask):
    def poll(self) -> list[SourceRecord] | None:
        os._exit(EXIT_CODE)
