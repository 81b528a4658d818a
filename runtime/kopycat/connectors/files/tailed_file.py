"""One tailed file of the FileStreamSource: its read position, unfinished line and ready lines.

Kafka's ``FileStreamSourceTask`` keeps a stream and a buffer per file; this keeps the same state
for many files (KIP-26's log import), reads in 1 MiB chunks and splits whole chunks into lines at
once (:func:`split_lines`), so a line costs no Python call of its own. It notices truncation and
replacement (rotation) through ``check``. Split from :mod:`.filestream_source`.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from itertools import accumulate
from typing import Any, BinaryIO, Final

__all__ = ["FILENAME_FIELD", "READ_CHUNK_BYTES", "TailedFile", "split_line_array", "split_lines"]

log = logging.getLogger(__name__)

FILENAME_FIELD: Final = "filename"
READ_CHUNK_BYTES = 1 << 20

_LINE: Final = re.compile(rb"([^\r\n]*)(\r\n|\r|\n)")
_NEWLINE: Final = ord("\n")


def split_lines(complete: bytes, base: int) -> tuple[list[str], list[int]]:
    """The lines of ``complete`` (which ends with a terminator) and the position after each.

    ``base`` is the position of ``complete``'s first byte. Without ``\\r`` (the common case) the
    chunk is decoded once and split once: a ``\\n`` byte never belongs to a multi-byte or
    replaced sequence, so the text splits exactly where the bytes do.
    """
    if b"\r" not in complete:
        values = complete.decode("utf-8", "replace").split("\n")
        values.pop()
        if complete.isascii():
            lengths: Iterable[int] = map(len, values)
        else:
            raw = complete.split(b"\n")
            raw.pop()
            lengths = map(len, raw)
        return values, [base + total + n for n, total in enumerate(accumulate(lengths), 1)]
    pairs = _LINE.findall(complete)
    values = [line.decode("utf-8", "replace") for line, _ in pairs]
    ends = list(accumulate((len(line) + len(end) for line, end in pairs), initial=base))
    return values, ends[1:]


def split_line_array(complete: bytes, base: int) -> tuple[Any, Any]:
    """:func:`split_lines` as columns: a ``pyarrow.StringArray`` of the lines (the same texts) and a
    numpy array of the position after each, with no Python object per line.

    Without ``\r`` the newline bytes are found by numpy and cut out of the chunk, and the rest
    becomes the array's data; bytes that are not UTF-8 are replaced first, as :func:`split_lines`
    decodes them. An ASCII chunk (the common case) is scanned for newlines once: they are both the
    positions and the bytes to cut.
    """
    import numpy as np

    if b"\r" in complete:
        values, ends = split_lines(complete, base)
        text, positions = ("\n".join(values) + "\n").encode(), np.array(ends, np.int64)
    else:
        newlines = np.flatnonzero(np.frombuffer(complete, np.uint8) == _NEWLINE)
        positions = newlines + (base + 1)
        if complete.isascii():
            return _cut_lines(complete, newlines), positions
        text = complete.decode("utf-8", "replace").encode()
    return _cut_lines(text, np.flatnonzero(np.frombuffer(text, np.uint8) == _NEWLINE)), positions


def _cut_lines(text: bytes, newlines: Any) -> Any:
    """A StringArray of the UTF-8 ``text`` split at its ``newlines`` (the indexes of every ``\n``
    in it), which are left out. ``bytes.replace`` cuts them in one memchr-driven copy: ~11 ns a
    100-byte line against ~100 for ``np.delete`` by index, which was a file read's largest cost."""
    import numpy as np
    import pyarrow as pa

    offsets = np.empty(len(newlines) + 1, np.int32)
    offsets[0] = 0
    offsets[1:] = newlines - np.arange(len(newlines))  # each line's end once the newlines are cut out
    return pa.Array.from_buffers(pa.string(), len(newlines),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(text.replace(b"\n", b""))])


class TailedFile:
    """One open file: where its next unsplit byte sits, its unfinished line, its ready lines.

    ``position`` is the offset of the first byte not yet split into lines (a line boundary);
    ``parts`` hold the bytes read past it (an unfinished line, kept as pieces so a very long
    line is joined once); ``values``/``ends`` are split lines not yet returned, from ``taken``:
    an Arrow array and a numpy array (:func:`split_line_array`).
    Used under the task's lock only.
    """

    __slots__ = ("at_eof", "ends", "handle", "identity", "partition", "parts", "path", "position",
                 "read_position", "replaced", "taken", "values")

    def __init__(self, path: str, handle: BinaryIO, position: int) -> None:
        self.path = path
        self.partition = {FILENAME_FIELD: path}  # shared by this file's records; never mutated
        self.handle = handle
        status = os.fstat(handle.fileno())
        self.identity = (status.st_dev, status.st_ino)
        self.position = self.read_position = position
        self.parts: list[bytes] = []
        self.values: Any = []
        self.ends: Any = []
        self.taken = 0
        self.at_eof = False
        self.replaced = False

    @classmethod
    def open(cls, path: str, position: int) -> TailedFile:
        """Open ``path`` at ``position``, or at 0 when the file is shorter than that."""
        handle = open(path, "rb", buffering=0)  # noqa: SIM115 - closed by close()
        try:
            size = os.fstat(handle.fileno()).st_size
            if size < position:
                log.warning("File %s is %d bytes long, shorter than its committed position %d: it "
                            "was truncated or replaced; reading it from the start", path, size,
                            position)
                position = 0
            handle.seek(position)
            return cls(path, handle, position)
        except BaseException:
            handle.close()
            raise

    @property
    def drained(self) -> bool:
        return self.at_eof and self.taken >= len(self.values)

    def take(self, limit: int) -> tuple[Any, Any]:
        """Up to ``limit`` complete lines and their end positions; reads when none are ready."""
        if self.taken >= len(self.values):
            self.values, self.ends, self.taken = [], [], 0
            while not len(self.values) and self._fill():
                pass
        start = self.taken
        stop = self.taken = min(len(self.values), start + limit)
        if start == 0 and stop == len(self.values):
            return self.values, self.ends
        return self.values[start:stop], self.ends[start:stop]

    def _fill(self) -> bool:
        """Read one chunk and split what it completes; False at the end of the file."""
        chunk = self.handle.read(READ_CHUNK_BYTES)
        self.at_eof = not chunk
        if not chunk:
            return False
        self.read_position += len(chunk)
        # A \r ending the previous read is a terminator unless this chunk starts with \n
        # (then rfind finds that \n); a \r ending this read waits for the next byte.
        cr_before = bool(self.parts) and self.parts[-1].endswith(b"\r")
        self.parts.append(chunk)
        end = len(chunk) - 1 if chunk.endswith(b"\r") else len(chunk)
        cut = max(chunk.rfind(b"\n", 0, end), chunk.rfind(b"\r", 0, end))
        if cut < 0 and not cr_before:
            return True
        data = self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)
        split_at = len(data) - len(chunk) + cut + 1
        complete, rest = data[:split_at], data[split_at:]
        self.parts = [rest] if rest else []
        self.values, self.ends = split_line_array(complete, self.position)
        self.position += len(complete)
        return True

    def check(self) -> None:
        """Notice truncation (size below what was read) and replacement (path renamed away)."""
        size = os.fstat(self.handle.fileno()).st_size
        if size < self.read_position:
            log.warning("File %s shrank to %d bytes below the %d already read: it was truncated; "
                        "reading it again from the start%s", self.path, size, self.read_position,
                        self.dropped_note())
            self.handle.seek(0)
            self.parts, self.position, self.read_position = [], 0, 0
        try:
            status = os.stat(self.path)
            self.replaced = (status.st_dev, status.st_ino) != self.identity
        except FileNotFoundError:
            self.replaced = True

    def dropped_note(self) -> str:
        """For logs: the unfinished last line a truncation or rotation loses, if any."""
        pending = sum(map(len, self.parts))
        return f" ({pending} bytes of an unfinished last line are dropped)" if pending else ""

    def close(self) -> None:
        self.handle.close()
