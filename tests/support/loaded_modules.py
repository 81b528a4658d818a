"""A child process target that reports which modules it started with, before it imports anything."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from multiprocessing.connection import Connection


def send_loaded(pipe: Connection, names: Sequence[str]) -> None:
    """Send ``{name: already imported}`` for each of ``names`` over ``pipe``."""
    pipe.send({name: name in sys.modules for name in names})
    pipe.close()
