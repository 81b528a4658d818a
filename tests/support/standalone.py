"""The standalone worker as an operator runs it: properties files and a ``kopycat standalone`` subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

__all__ = ["start_worker", "write_props"]

REPO = Path(__file__).parents[2]


def write_props(path: Path, props: dict[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def start_worker(worker: Path, connector: Path, log: Path) -> subprocess.Popen[bytes]:
    """``python -m kopycat.cli standalone worker connector``, its output appended to ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", "kopycat.cli", "standalone", str(worker), str(connector)],
                                stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
