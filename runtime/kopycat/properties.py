"""Reading worker and connector config files as Kafka Connect does.

``.properties`` files follow ``java.util.Properties.load``: ``#``/``!`` comments, ``=``, ``:`` or
whitespace between key and value, trailing-backslash continuations, ``\\uXXXX`` and the usual
escapes. JSON connector files (Kafka 3.8+ standalone) are either the ``POST /connectors`` body
``{"name": ..., "config": {...}}`` or a flat map of strings.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from kopycat.api.errors import ConfigError

__all__ = ["load_config_file", "parse_properties"]

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_SEPARATOR = re.compile(r"(?<!\\)(?:\\\\)*(\s*[=:]\s*|\s+)")


def _unescape(text: str) -> str:
    out, index = [], 0
    while index < len(text):
        char = text[index]
        if char != "\\" or index + 1 == len(text):
            out.append(char)
            index += 1
            continue
        nxt = text[index + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[index + 2:index + 6]):
            out.append(chr(int(text[index + 2:index + 6], 16)))
            index += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        index += 2
    return "".join(out)


def _logical_lines(text: str) -> list[str]:
    lines, pending = [], ""
    for raw in text.splitlines():
        line = raw.lstrip() if pending else raw.strip()
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:  # an odd number of backslashes continues the line
            pending += line[:-1]
            continue
        lines.append(pending + line)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def parse_properties(text: str) -> dict[str, str]:
    """Parse ``.properties`` text into a dict; later keys win, as in Java."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        match = _SEPARATOR.search(line)
        if match is None:
            key, value = line, ""
        else:
            key, value = line[:match.start(1)], line[match.end(1):]
        props[_unescape(key)] = _unescape(value)
    return props


def load_config_file(path: str | Path) -> dict[str, str]:
    """A worker or connector config from a ``.properties`` or ``.json`` file.

    Raises ConfigError naming the file when it cannot be read or has the wrong shape.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"Cannot read config file {file}: {exc.strerror or exc}") from None
    if file.suffix.lower() != ".json":
        return parse_properties(text)
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{file} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if isinstance(data, dict) and isinstance(data.get("config"), dict):
        config = dict(data["config"])
        if "name" in data:
            config.setdefault("name", data["name"])
        data = config
    if not isinstance(data, dict):
        raise ConfigError(f"{file} must hold a JSON object: {{\"name\": ..., \"config\": {{...}}}} or a flat "
                          f"map of config keys to values")
    return {str(k): v if isinstance(v, str) else json.dumps(v) if isinstance(v, dict | list) else str(v)
            for k, v in data.items() if v is not None}
