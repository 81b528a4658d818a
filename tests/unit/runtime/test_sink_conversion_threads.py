"""Which sink runs convert their batches on helper threads: those whose value converter decodes
columns mostly outside the GIL (JsonConverter), not StringConverter, whose decode joins the bytes
under the GIL and would only take turns with the consuming thread."""

from __future__ import annotations

import pytest
from confluent_kafka import Message

from kopycat.api.data import Type
from kopycat.runtime.bounds import RunSummary
from kopycat.runtime.errors import RetryWithToleranceOperator
from kopycat.runtime.sink_conversion import SinkConversion
from kopycat.runtime.task_parts import TaskParts
from kopycat.runtime.worker_config import converters_for
from kopycat.transforms.chain import TransformationChain

STRING = "org.apache.kafka.connect.storage.StringConverter"
JSON = "org.apache.kafka.connect.json.JsonConverter"


def conversion(value_converter: str, batch_types: frozenset[Type]) -> SinkConversion:
    key, value, headers = converters_for({}, {"key.converter": STRING, "value.converter": value_converter,
                                              "value.converter.schemas.enable": "false"})
    parts = TaskParts(key, value, headers, TransformationChain.from_props({}),
                      RetryWithToleranceOperator.from_config({}))
    return SinkConversion(parts, RunSummary("sink", 0), batch_types, lambda runs, messages: (messages, runs))


@pytest.mark.parametrize(("value_converter", "batch_types", "helpers"), [
    (JSON, frozenset({Type.STRUCT}), True),
    (STRING, frozenset({Type.STRING}), False),
    (JSON, frozenset(), False),
], ids=["json-columns", "string-columns", "records"])
def test_only_a_decode_outside_the_gil_converts_on_helper_threads(value_converter: str, batch_types: frozenset[Type],
                                                                   helpers: bool) -> None:
    assert conversion(value_converter, batch_types).decodes_off_the_gil is helpers


def test_string_columns_decoded_on_the_runner_thread_hold_every_value_and_offset() -> None:
    messages = [Message(topic="lines", partition=0, offset=100 + i, value=b"line %d" % i) for i in range(5)]
    converted = conversion(STRING, frozenset({Type.STRING})).convert([messages], frozenset())
    [(piece, batch)] = converted.pieces
    assert batch is not None and list(piece) == messages
    assert batch.values.to_pylist() == [f"line {i}" for i in range(5)]
    assert list(batch.offsets) == [100, 101, 102, 103, 104] and converted.size == sum(map(len, messages))
