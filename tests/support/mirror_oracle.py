"""Kafka's MirrorMaker 2 client code as an oracle: tests/support/java/MirrorOracle.java, compiled and run.

The Java class parses MM2 records with Kafka's ``OffsetSync``/``Checkpoint``/``Heartbeat.deserializeRecord``,
translates a group's offsets with ``RemoteClusterUtils.translateOffsets`` (what an MM2 user calls to fail a
consumer over) and with ``MirrorCheckpointTask``'s ``OffsetSyncStore``, and describes a cluster with
``MirrorClient`` (heartbeat/checkpoint topics, upstream clusters, replication hops). The class path is the
``connect-runtime`` jar set (include/jars/connect-runtime/pom.xml: connect-mirror and connect-mirror-client
4.1.1). It is compiled with ``javac`` once per source version into the jar set's cache (``mirror-oracle``),
because it sits in Kafka's package to reach the package-private ``OffsetSyncStore`` (a source-file launch
would load it in another class loader, where package-private access fails).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kopycat.dev.jars import ensure_jars
from kopycat.dev.processes import java_executable

__all__ = ["MirrorOracle"]

SOURCE = Path(__file__).with_name("java") / "MirrorOracle.java"
MAIN = "org.apache.kafka.connect.mirror.MirrorOracle"


def compiled_classes(libs: Path) -> Path:
    """The directory of the compiled oracle, compiled again when the source changes."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    classes = libs.parent / "mirror-oracle" / digest[:16]
    if (classes / ".complete").exists():
        return classes
    javac = shutil.which("javac")
    assert javac is not None, "no `javac` on PATH: the MM2 oracle needs a JDK 17 (make setup installs one)"
    shutil.rmtree(classes, ignore_errors=True)
    classes.mkdir(parents=True)
    result = subprocess.run([javac, "-nowarn", "-cp", f"{libs}/*", "-d", str(classes), str(SOURCE)],
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, f"compiling {SOURCE} failed:\n{result.stdout}{result.stderr}"
    (classes / ".complete").write_text(digest)
    return classes


class MirrorOracle:
    """One request to Kafka's MM2 classes per call; ``clusters`` names bootstrap servers ({"a": ..., "b": ...})."""

    def __init__(self, clusters: Mapping[str, str]) -> None:
        self.clusters = dict(clusters)
        self.libs = ensure_jars("connect-runtime")
        self.classes = compiled_classes(self.libs)

    def ask(self, *, reads: Sequence[Mapping[str, str]] = (), translations: Sequence[Mapping[str, str]] = (),
            sync_store_translations: Sequence[Mapping[str, Any]] = (),
            topologies: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
        """Run the oracle once; the answer has one list entry per request entry, in order.

        ``reads``: ``{"cluster", "topic", "kind"}`` with kind offset_sync, checkpoint or heartbeat.
        ``translations``: ``{"cluster", "remote_alias", "group"}`` for ``RemoteClusterUtils.translateOffsets``.
        ``sync_store_translations``: ``{"cluster", "topic" (offset syncs), "group", "offsets": [{"topic",
        "partition", "offset"}]}`` for ``OffsetSyncStore.translateDownstream`` after reading every sync.
        ``topologies``: ``{"cluster", "aliases": [...]}`` for ``MirrorClient``.
        """
        request = {"clusters": self.clusters, "reads": list(reads), "translations": list(translations),
                   "sync_store_translations": list(sync_store_translations), "topologies": list(topologies)}
        result = subprocess.run([java_executable(), "-XX:TieredStopAtLevel=1", "-Xmx256m",
                                 "-Dlog4j2.level=ERROR", "-cp", f"{self.classes}:{self.libs}/*", MAIN],
                                input=json.dumps(request), capture_output=True, text=True, timeout=300, check=False)
        assert result.returncode == 0, f"the MM2 oracle failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
        answer: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
        return answer
