"""``retrying``: which broker errors an admin call waits out (Kafka Connect's RetryUtil) and which it reports."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import KafkaError, KafkaException

from kopycat.api.errors import ConnectError
from kopycat.storage.topic_admin import retrying


def failing(codes: list[int], answer: str = "ends") -> Callable[[], str]:
    """A call failing with ``codes`` in turn, then answering."""
    left = list(codes)

    def call() -> str:
        if left:
            raise KafkaException(KafkaError(left.pop(0), "No leaders found"))
        return answer
    return call


def test_no_leader_while_the_broker_restarts_is_waited_out() -> None:
    # librdkafka's list_offsets answers _NOENT while the only broker is down: a crashed broker's restart
    call = failing([KafkaError._NOENT, KafkaError._NOENT, KafkaError.LEADER_NOT_AVAILABLE])
    assert retrying(call, "read the end offsets of topic 'offsets'", 30.0) == "ends"


def test_a_lasting_outage_ends_with_an_error_naming_what_failed() -> None:
    call = failing([KafkaError._NOENT] * 1000)
    with pytest.raises(ConnectError, match="Failed to read the end offsets of topic 'offsets': No leaders found"):
        retrying(call, "read the end offsets of topic 'offsets'", 0.3)


def test_a_refusal_is_not_retried() -> None:
    call = failing([KafkaError.TOPIC_AUTHORIZATION_FAILED])
    with pytest.raises(ConnectError, match="TOPIC_AUTHORIZATION_FAILED"):
        retrying(call, "read the end offsets of topic 'offsets'", 30.0)
