"""The Singer sink connector's keys, and the STATE value that carries a sink's consumed offsets.

A Singer target is started as ``<target> --config config.json`` (Singer spec). Its config comes
from ``singer.target.config.file`` and the ``singer.target.config.<setting>`` keys (which win),
typed as the target's ``--about --format json`` declares them, exactly as a tap's
(:func:`~kopycat.connectors.singer.source_config.plugin_settings`). The topics are the engine's
``topics``/``topics.regex`` keys, as for every sink connector.

The STATE messages Kopycat sends hold the next offset of every topic partition written so far,
``{"kopycat_offsets": {"<topic>": {"<partition>": <next offset>}}}``: JSON object keys are
text, so partitions are too. A target echoes such a value back once it has persisted every record
before it; :func:`offsets_of` reads the echo.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kopycat.api import ConfigDef, ConfigType, DataError, Importance, NonEmptyString, Range
from kopycat.api.records import TopicPartition

__all__ = [
    "BATCH_RECORDS_CONFIG", "CONFIG", "CONFIG_FILE_CONFIG", "ECHO_TIMEOUT_MS_CONFIG", "EXECUTABLE_CONFIG",
    "FINISH_TIMEOUT_MS_CONFIG",
    "OFFSETS_FIELD", "SETTING_PREFIX", "offsets_of", "state_value",
]

EXECUTABLE_CONFIG: Final = "singer.target.executable"
SETTING_PREFIX: Final = "singer.target.config."
CONFIG_FILE_CONFIG: Final = "singer.target.config.file"
BATCH_RECORDS_CONFIG: Final = "singer.batch.max.records"
FINISH_TIMEOUT_MS_CONFIG: Final = "singer.target.finish.timeout.ms"
ECHO_TIMEOUT_MS_CONFIG: Final = "singer.target.echo.timeout.ms"
OFFSETS_FIELD: Final = "kopycat_offsets"

CONFIG: Final = ConfigDef().define(
    EXECUTABLE_CONFIG, ConfigType.STRING, validator=NonEmptyString(), importance=Importance.HIGH,
    doc="The Singer target to run: an executable on PATH (target-postgres) or a path to one. It is started "
        "with --config and fed a SCHEMA message per topic, then the topics' records as RECORD messages; the "
        "stream of a record is its topic.",
).define(
    CONFIG_FILE_CONFIG, ConfigType.STRING, default="", importance=Importance.HIGH,
    doc="A JSON file with the target's config. Keys singer.target.config.<setting> add or override settings "
        "(singer.target.config.host=db1); their text is converted to the type the target's settings schema "
        "declares (--about --format json), and may use config providers for secrets.",
).define(
    BATCH_RECORDS_CONFIG, ConfigType.INT, default=1000, validator=Range.at_least(1), importance=Importance.MEDIUM,
    doc="Most RECORD messages between two STATE messages (one is also sent after each batch consumed). The "
        "consumer group is committed only up to the last state the target echoed, that is persisted, so a "
        "crash writes again at most the records the target had persisted past its last echo.",
).define(
    FINISH_TIMEOUT_MS_CONFIG, ConfigType.LONG, default=300_000, validator=Range.at_least(1),
    importance=Importance.LOW,
    doc="How long the target may take to persist what it holds and exit once its input ended: at the end "
        "of a bounded run (kopycat run, Airflow) and at each commit of one.",
).define(
    ECHO_TIMEOUT_MS_CONFIG, ConfigType.LONG, default=0, validator=Range.at_least(0), importance=Importance.MEDIUM,
    doc="0: records are written as they come, and the group follows the target's echoes as they come. Above "
        "0, lock-step for targets that persist at each STATE (pipelinewise targets): each batch of "
        "singer.batch.max.records records waits up to this long for the target to echo its state, and is "
        "committed before the next is written (the rest of a larger poll is read again), so a crash writes "
        "again at most one batch. A target that does not echo in time fails the task.",
)


def state_value(offsets: Mapping[TopicPartition, int]) -> dict[str, Any]:
    """The STATE value for the next ``offsets`` of each topic partition written."""
    by_topic: dict[str, dict[str, int]] = {}
    for tp, offset in offsets.items():
        by_topic.setdefault(tp.topic, {})[str(tp.partition)] = offset
    return {OFFSETS_FIELD: by_topic}


def offsets_of(state: Mapping[str, Any], target: str) -> dict[TopicPartition, int]:
    """The offsets an echoed state holds; a state without them is a DataError naming the target."""
    by_topic = state.get(OFFSETS_FIELD)
    if not isinstance(by_topic, Mapping):
        raise DataError(f"Singer target {target!r} echoed a state without {OFFSETS_FIELD!r}: {str(state)[:200]}; "
                        f"a target must echo the STATE values it was sent")
    try:
        return {TopicPartition(str(topic), int(partition)): int(offset)
                for topic, partitions in by_topic.items() for partition, offset in partitions.items()}
    except (AttributeError, TypeError, ValueError) as exc:
        raise DataError(f"Singer target {target!r} echoed offsets Kopycat did not send: {str(by_topic)[:200]}"
                        ) from exc
