"""split_line_array: the columnar split must give split_lines' exact texts and end positions.

The ASCII fast path finds the newlines in one scan and cuts them out of the chunk; UTF-8 and
``\\r`` chunks take the decoding paths. Every case compares against :func:`split_lines`, the record path's split.
"""

from __future__ import annotations

import pytest

from kopycat.connectors.files.tailed_file import split_line_array, split_lines

CHUNKS = {
    "ascii": b"00000001 abc\n00000002 defgh\n\n0003\n",
    "one line": b"x\n",
    "empty lines": b"\n\n\n",
    "utf-8": "é€ line\nzwei 𝄞\n".encode(),
    "bad utf-8": b"ok\n\xff\xfe broken\nend\n",
    "cr and crlf": b"a\r\nb\rc\nd\r\n",
    "bad utf-8 and crlf": b"\xff\r\n\xe2\x82 half\nok\r",
}


@pytest.mark.parametrize("chunk", CHUNKS.values(), ids=CHUNKS.keys())
@pytest.mark.parametrize("base", [0, 4711])
def test_split_line_array_equals_split_lines(chunk: bytes, base: int) -> None:
    values, ends = split_line_array(chunk, base)
    expected_values, expected_ends = split_lines(chunk, base)
    assert values.to_pylist() == expected_values
    assert ends.tolist() == expected_ends
    assert ends.tolist()[-1] == base + len(chunk)  # the last position is the chunk's end


def test_split_line_array_many_lines_keep_every_byte() -> None:
    lines = [f"{i:08d} {'y' * (i % 97)}" for i in range(20_000)]
    chunk = ("\n".join(lines) + "\n").encode()
    values, ends = split_line_array(chunk, 10)
    assert values.to_pylist() == lines
    assert len(ends) == 20_000
    assert int(ends[0]) == 10 + len(lines[0]) + 1
    assert int(ends[-1]) == 10 + len(chunk)
