"""Jars from Maven Central, fetched with `mvn dependency:copy-dependencies` into a user cache.

The poms live in the repository (include/jars/<name>/pom.xml) and name versions once; the jars
land in ~/.cache/kopycat/<name>-<version>/libs (KOPYCAT_CACHE overrides the root) so a clean
clone reuses them and the work tree stays small. The set is fetched again when its pom changes
(the stamp holds the pom's hash), so an edited exclusion never leaves stale jars behind.
A pom that lists ``<artifactItems>`` instead of dependencies (an archive whose parent pom Maven
Central lacks, such as the Schema Registry's zip) is fetched with ``dependency:unpack``: its
archives are unpacked into the same libs directory.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
POMS_DIR = REPO_ROOT / "include" / "jars"


class JarsError(RuntimeError):
    """The jars could not be located or fetched."""


def cache_root() -> Path:
    """Where fetched jars are kept: $KOPYCAT_CACHE or ~/.cache/kopycat."""
    return Path(os.environ.get("KOPYCAT_CACHE", Path.home() / ".cache" / "kopycat"))


def pom_path(name: str) -> Path:
    path = POMS_DIR / name / "pom.xml"
    if not path.is_file():
        raise JarsError(f"no pom for jar set {name!r} at {path}; the sets are: "
                        f"{', '.join(sorted(p.name for p in POMS_DIR.iterdir()))}")
    return path


def pom_version(name: str) -> str:
    """The `<name>.version` property of include/jars/<name>/pom.xml (the one place it is set)."""
    text = pom_path(name).read_text()
    match = re.search(rf"<{re.escape(name)}\.version>([^<]+)</", text)
    if not match:
        raise JarsError(f"{pom_path(name)} sets no <{name}.version> property")
    return match.group(1).strip()


def libs_dir(name: str) -> Path:
    return cache_root() / f"{name}-{pom_version(name)}" / "libs"


def pom_digest(name: str) -> str:
    return hashlib.sha256(pom_path(name).read_bytes()).hexdigest()


def ensure_jars(name: str) -> Path:
    """The directory holding jar set `name`, fetched from Maven Central on first use."""
    target = libs_dir(name)
    stamp = target / ".complete"
    if stamp.exists() and stamp.read_text() == pom_digest(name):
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsError("Maven (mvn) is not installed; run `make setup` (or apt-get install maven)")
    if target.exists():
        shutil.rmtree(target)
    goal = "dependency:unpack" if "<artifactItems>" in pom_path(name).read_text() else "dependency:copy-dependencies"
    cmd = [mvn, "-q", "-B", "-f", str(pom_path(name)), goal, f"-DoutputDirectory={target}"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise JarsError(f"fetching the {name} jars failed ({' '.join(cmd)}):\n"
                        f"{result.stdout[-3000:]}{result.stderr[-3000:]}")
    stamp.write_text(pom_digest(name))
    return target


def main() -> None:
    """`python -m kopycat.dev.jars NAME...`: fetch jar sets (used by .ci/bootstrap)."""
    import sys

    for name in sys.argv[1:] or ["kafka"]:
        sys.stdout.write(f"{name}: {ensure_jars(name)}\n")


if __name__ == "__main__":
    main()
