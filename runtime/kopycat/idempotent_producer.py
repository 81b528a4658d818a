"""Connecting a new idempotent producer before its first record (source tasks, the offsets log).

Kafka's Java producer asks for its producer id as soon as a node is ready; librdkafka may wait a
fixed half second for it. Every idempotent producer Kopycat makes goes through
:func:`connect_idempotent` so its first records do not wait.
"""

from __future__ import annotations

import logging
import time

from confluent_kafka import KafkaException, Producer

__all__ = ["CONNECT_TIMEOUT_S", "connect_idempotent"]

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 5.0  # how long to wait for a broker before the producer's own retries take over


def connect_idempotent(producer: Producer, client: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Have a new idempotent producer ask for its producer id now, not after librdkafka's 500 ms timer.

    librdkafka sends InitProducerId when a Metadata response arrives, to a broker that is up
    (``rd_kafka_parse_Metadata`` runs the PID state machine), and otherwise retries on a 500 ms
    timer (``rd_kafka_idemp_pid_timer_restart``). A new client's first metadata usually comes
    through its bootstrap connection, which it drops as soon as it learns the brokers' ids: the
    id request then finds no broker up, and every record the task produces waits the 500 ms (a
    third of a 1M-line file copy, in the rounds that lost this race). So metadata is asked for
    until a broker known by its id answers: that broker is up when the id request goes out, as
    the Java producer's ``Sender.maybeWaitForProducerId`` sends it to the first ready node.
    A broker that does not answer within ``timeout_s`` is left to the producer's own retries.
    """
    deadline = time.monotonic() + timeout_s
    try:
        while producer.list_topics(timeout=max(0.1, deadline - time.monotonic())).orig_broker_id < 0:
            if time.monotonic() > deadline:
                break
    except KafkaException as exc:
        log.debug("%s: no broker answered a metadata request in %.0f s (%s); the producer "
                  "asks for its producer id on its own", client, timeout_s, exc)
