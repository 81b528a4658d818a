"""Which Singer STATE a record may carry as its source offset, so a committed offset never skips a record.

A Singer tap interleaves RECORD and STATE messages: a STATE says "resume here and you get every
record after me". Kafka Connect commits a record's source offset once that record and all before
it are acknowledged (the acked-prefix rule), and has no offset without a record. So:

- a record carries the last STATE *before* it (resuming there re-sends it: at-least-once);
- except the last record before a STATE: it carries that STATE (or the last of several in a
  row), because committing it means every record the STATE covers is in Kafka.

To give the last record the STATE that follows it, records are held until the next RECORD
after a STATE, or the tap's end; a run of ``limit`` records with no STATE is released early,
every one carrying the previous state. Records after the tap's last STATE carry that state. A
crash therefore re-sends at most the records since the last STATE that was committed, and a
STATE that no record follows (a stream with nothing new) is not stored: the next run resumes
from the state before it and finds the same nothing.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

__all__ = ["StateGate"]

Entry = TypeVar("Entry")
State = dict[str, Any] | None


class StateGate(Generic[Entry]):
    """Holds a tap's records until a STATE covers them; hands them out paired with their offsets.

    Not thread-safe: the task's thread feeds it and takes from it.
    """

    def __init__(self, state: State, limit: int) -> None:
        self.safe: State = state
        """The state the held records came after: resuming from it re-sends all of them."""
        self.latest: State = state
        self.limit = limit
        self._held: list[Entry] = []
        self._ready: list[tuple[Entry, State]] = []

    def record(self, entry: Entry) -> None:
        if self.latest is not self.safe:
            self._release(self.latest)
        self._held.append(entry)
        if len(self._held) >= self.limit:
            self._release(self.safe)

    def state(self, value: dict[str, Any]) -> None:
        self.latest = value

    def end(self) -> None:
        """The tap ended: every held record is covered by the last state seen."""
        self._release(self.latest)

    def take(self) -> list[tuple[Entry, State]]:
        """The released (entry, source offset) pairs, in the tap's order."""
        ready, self._ready = self._ready, []
        return ready

    def _release(self, last: State) -> None:
        held, self._held = self._held, []
        if held:
            self._ready.extend((entry, self.safe) for entry in held[:-1])
            self._ready.append((held[-1], last))
        self.safe = last
        self.latest = last
