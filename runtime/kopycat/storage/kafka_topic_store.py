"""What a store kept on one Kafka topic shares: its log, the log's partition count, start and stop.

Kafka Connect's ``KafkaOffsetBackingStore``, ``KafkaStatusBackingStore`` and ``KafkaConfigBackingStore``
each compose one ``KafkaBasedLog`` and start and stop it with themselves; Kopycat's do the same through
this mixin. A store that checks or reports more on start (the config store refuses a topic with more
than one partition) extends :meth:`KafkaTopicStore.start`.
"""

from __future__ import annotations

from kopycat.storage.kafka_based_log import KafkaBasedLog

__all__ = ["KafkaTopicStore"]


class KafkaTopicStore:
    """A store over :attr:`topic_log`, which the store's ``__init__`` sets. Thread-safety is the log's."""

    topic_log: KafkaBasedLog

    @property
    def num_partitions(self) -> int:
        """The topic's actual partition count (known after ``start``)."""
        return self.topic_log.num_partitions

    def start(self) -> None:
        """Create the topic if missing and read it to its end."""
        self.topic_log.start()

    def stop(self) -> None:
        """Close the log's clients, finishing pending writes as far as possible."""
        self.topic_log.stop()
