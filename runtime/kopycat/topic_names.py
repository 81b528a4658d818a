"""Which names Kafka accepts for a topic, with Kafka's own messages (``Topic.validate``).

Checked where a name enters a config or a request (a sink's ``topics``, the dead letter queue's
topic, offsets in a REST body), so a bad name is refused with the key and the rule before any
record moves, rather than by the broker in the middle of a run. Where a source makes a topic name
from its data (a Singer stream, a dlt resource), :func:`sanitized_topic_name` makes it legal instead.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["TOPIC_NAME_MAX_LENGTH", "sanitized_topic_name", "topic_name_problem"]

TOPIC_NAME_MAX_LENGTH: Final = 249
_LEGAL_CHARS: Final = re.compile(r"[a-zA-Z0-9._-]+")
_ILLEGAL_CHAR: Final = re.compile(r"[^a-zA-Z0-9._-]")


def topic_name_problem(topic: str) -> str | None:
    """Why Kafka refuses ``topic`` as a topic name, in Kafka's words; None when it is legal."""
    if not topic:
        return "Topic name is illegal, it can't be empty"
    if topic in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(topic) > TOPIC_NAME_MAX_LENGTH:
        return f"Topic name is illegal, it can't be longer than {TOPIC_NAME_MAX_LENGTH} characters"
    if not _LEGAL_CHARS.fullmatch(topic):
        return (f"Topic name \"{topic}\" is illegal, it contains a character other than ASCII alphanumerics, "
                f"'.', '_' and '-'")
    return None


def sanitized_topic_name(name: str) -> str:
    """``name`` with each character Kafka refuses in a topic name replaced by '_' (Debezium's
    ``AbstractTopicNamingStrategy`` sanitizes the names it makes from table names so)."""
    return _ILLEGAL_CHAR.sub("_", name)
