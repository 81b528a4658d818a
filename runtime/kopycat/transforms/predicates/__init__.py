"""Predicates that guard transformations (Kafka Connect's ``transforms.predicates``, KIP-585).

Configured as ``predicates=p``, ``predicates.p.type=...`` and used with
``transforms.<alias>.predicate=p`` (``transforms.<alias>.negate=true`` inverts it).
"""

from __future__ import annotations

from kopycat.transforms.predicates.has_header_key import HasHeaderKey
from kopycat.transforms.predicates.record_is_tombstone import RecordIsTombstone
from kopycat.transforms.predicates.topic_name_matches import TopicNameMatches

__all__ = ["HasHeaderKey", "RecordIsTombstone", "TopicNameMatches"]
