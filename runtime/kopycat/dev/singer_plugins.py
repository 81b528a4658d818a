"""Singer taps and targets (Meltano's plugins) installed each in its own venv, outside Kopycat's.

A Singer plugin is an executable that speaks JSON lines, so it need not share Kopycat's
dependencies: ``meltanolabs-tap-postgres`` pins an SQLAlchemy that Airflow cannot take. As
Meltano does (one venv per plugin under ``.meltano/extractors/<name>/venv``), each plugin gets a
venv ``~/.cache/kopycat/singer/<name>-<version>`` made with the project's uv (``uv venv`` +
``uv pip install``, uv's one shared cache, so a second install of a package downloads nothing).
Idempotent: a venv whose stamp names the same requirement is kept as it is. Run as::

    python -m kopycat.dev.singer_plugins meltanolabs-tap-postgres==0.10.0 meltanolabs-target-postgres==0.8.1

and point ``singer.tap.executable`` / ``singer.target.executable`` at
:func:`plugin_executable`'s path (``.../bin/tap-postgres``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from kopycat.dev.jars import cache_root

__all__ = ["SingerPluginError", "ensure_plugin", "plugin_executable", "plugin_venv"]

_REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!-]+)$")
_STAMP = ".kopycat-requirement"


class SingerPluginError(RuntimeError):
    """A plugin requirement was malformed or its install failed."""


def _parse(requirement: str) -> tuple[str, str]:
    match = _REQUIREMENT.match(requirement.strip())
    if match is None:
        raise SingerPluginError(f"Singer plugin {requirement!r} is not pinned as NAME==VERSION "
                                f"(for example meltanolabs-tap-postgres==0.10.0)")
    return match.group(1), match.group(2)


def plugin_venv(requirement: str) -> Path:
    """Where ``NAME==VERSION`` is installed: ``<cache>/singer/<name>-<version>``."""
    name, version = _parse(requirement)
    return cache_root() / "singer" / f"{name}-{version}"


def _uv() -> str:
    """The project's uv: the one beside this interpreter (.venv/bin/uv), else one on PATH."""
    beside = Path(sys.executable).parent / "uv"
    found = str(beside) if beside.exists() else shutil.which("uv")
    if found is None:
        raise SingerPluginError("uv is not installed: run .ci/bootstrap, which installs it into .venv")
    return found


def ensure_plugin(requirement: str) -> Path:
    """The venv holding ``requirement``, made and installed on first use."""
    venv = plugin_venv(requirement)
    stamp = venv / _STAMP
    if stamp.is_file() and stamp.read_text() == requirement:
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    uv = _uv()
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    for argv in ([uv, "venv", "-q", "--python", sys.executable, str(venv)],
                 [uv, "pip", "install", "-q", "--python", str(venv / "bin" / "python"), requirement]):
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            raise SingerPluginError(f"{' '.join(argv)} (Python {python}) failed: {done.stderr[-2000:]}")
    stamp.write_text(requirement)
    return venv


def plugin_executable(requirement: str, executable: str) -> Path:
    """The path of ``executable`` (tap-postgres) in the plugin's venv, installing it if needed."""
    path = ensure_plugin(requirement) / "bin" / executable
    if not path.exists():
        raise SingerPluginError(f"{requirement} installed no executable {executable!r} in {path.parent}")
    return path


def main(argv: list[str]) -> int:
    """Install each ``NAME==VERSION``; one line per venv, or one error line and exit code 1."""
    try:
        for requirement in argv:
            print(f"{requirement}: {ensure_plugin(requirement)}", flush=True)
    except SingerPluginError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
