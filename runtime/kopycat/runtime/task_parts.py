"""What a runner needs besides the task: its id, converters, transformations and error handling.

Kafka's ``Worker.buildWorkerTask`` builds these for each task from the worker and connector
configs; :mod:`kopycat.runtime.task_factory` does here, and the runners only use them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, NamedTuple

from kopycat.api.converter import Converter, HeaderConverter
from kopycat.runtime.errors import RetryWithToleranceOperator
from kopycat.transforms.chain import TransformationChain

__all__ = ["TaskId", "TaskParts"]

log = logging.getLogger(__name__)


class TaskId(NamedTuple):
    """A connector's task number (Kafka's ``ConnectorTaskId``); shown as ``name-3``."""

    connector: str
    task: int

    def __str__(self) -> str:
        return f"{self.connector}-{self.task}"


@dataclass
class TaskParts:
    """The converters, transformation chain and error handling of one task. Closed together."""

    key_converter: Converter
    value_converter: Converter
    header_converter: HeaderConverter
    transforms: TransformationChain[Any]
    retry: RetryWithToleranceOperator

    def close(self) -> None:
        """Close everything, logging (not raising) failures so every part gets closed."""
        for name, close in (("transformations", self.transforms.close),
                            ("key converter", self.key_converter.close),
                            ("value converter", self.value_converter.close),
                            ("error handler", self.retry.close)):
            try:
                close()
            except Exception:  # noqa: BLE001 - keep closing the rest
                log.exception("Failed to close the %s", name)
