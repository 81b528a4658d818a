"""A real HDFS on loopback: Hadoop's MiniDFSCluster (one NameNode, one DataNode) in one JVM.

The jars are the set include/jars/hdfs/pom.xml (``hadoop-client-minicluster`` from Maven Central);
the launcher, ``java/KopycatMiniHdfs.java``, is compiled with ``javac`` against them on first use
(into the jar set's cache, again when the source changes). It binds the NameNode's RPC port
(:attr:`LocalHdfs.url`, ``hdfs://127.0.0.1:PORT``, what Spark and ``hdfs dfs`` speak) and its HTTP
port (:attr:`LocalHdfs.webhdfs_url`, the WebHDFS REST API the Python storage sink writes through),
both fixed before start so a client config can name them. Permissions are off: a test cluster has
one user.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from kopycat.dev.jars import ensure_jars
from kopycat.dev.ports import free_port
from kopycat.dev.processes import JvmService, JvmStartError, java_executable

__all__ = ["HdfsStartError", "LocalHdfs", "compile_launcher"]

log = logging.getLogger(__name__)

JAR_SET = "hdfs"
LAUNCHER = "KopycatMiniHdfs"
LAUNCHER_SOURCE = Path(__file__).with_name("java") / f"{LAUNCHER}.java"
READY_LINE = b"KOPYCAT-HDFS-READY"


class HdfsStartError(JvmStartError):
    """The MiniDFSCluster did not come up; the message carries its log tail."""


def compile_launcher(libs: Path) -> Path:
    """The directory holding the compiled launcher, compiled against ``libs`` when missing or stale."""
    classes = libs.parent / "classes"
    digest = hashlib.sha256(LAUNCHER_SOURCE.read_bytes()).hexdigest()
    stamp = classes / ".source-sha256"
    if stamp.exists() and stamp.read_text() == digest:
        return classes
    javac = shutil.which("javac")
    if javac is None:
        raise HdfsStartError("no `javac` on PATH: install a JDK 17 (make setup does)")
    shutil.rmtree(classes, ignore_errors=True)
    classes.mkdir(parents=True)
    result = subprocess.run([javac, "-nowarn", "-cp", f"{libs}/*", "-d", str(classes), str(LAUNCHER_SOURCE)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise HdfsStartError(f"compiling {LAUNCHER_SOURCE} failed:\n{result.stdout}{result.stderr}")
    stamp.write_text(digest)
    return classes


class LocalHdfs(JvmService):
    """One MiniDFSCluster process, started and stopped by this object; its blocks live in ``workdir``.

    A small heap and C1-only compilation, as the test broker: a test cluster stores megabytes.
    Not thread-safe.
    """

    kind = "HDFS MiniDFSCluster"
    start_error = HdfsStartError
    stop_timeout_s = 20.0

    def __init__(self, *, name: str = "hdfs", heap: str = "384m", start_timeout_s: float = 120.0) -> None:
        super().__init__()
        self.name = name
        self.heap = heap
        self.start_timeout_s = start_timeout_s
        self.port = 0
        self.http_port = 0

    @property
    def url(self) -> str:
        """The file system's URI, ``fs.defaultFS``: ``hdfs://127.0.0.1:PORT``."""
        return f"hdfs://127.0.0.1:{self.port}"

    @property
    def webhdfs_url(self) -> str:
        """The NameNode's HTTP address, where WebHDFS (``/webhdfs/v1``) answers."""
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def log_file(self) -> Path:
        """Hadoop logs to stderr here: the launch's own ``stdout.log``."""
        assert self.workdir is not None, "HDFS not started"
        return self.workdir / "stdout.log"

    def start(self) -> None:
        """Launch the cluster and wait until WebHDFS lists ``/``."""
        libs = ensure_jars(JAR_SET)
        classes = compile_launcher(libs)
        began = time.monotonic()
        self.workdir = Path(tempfile.mkdtemp(prefix=f"kopycat-{self.name}-"))
        self.port, self.http_port = free_port(), free_port()
        self.launch([java_executable(), "-XX:TieredStopAtLevel=1", f"-Xmx{self.heap}",
                     f"-Djava.io.tmpdir={self.workdir}", "-cp", f"{classes}:{libs}/*", LAUNCHER,
                     str(self.workdir / "dfs"), str(self.port), str(self.http_port)])
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        log.info("HDFS at %s (WebHDFS %s) after %.1f s", self.url, self.webhdfs_url, time.monotonic() - began)

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        listing = f"{self.webhdfs_url}/webhdfs/v1/?op=LISTSTATUS"
        last = "the launcher never reported ready"
        while time.monotonic() < deadline:
            self.check_alive()
            if READY_LINE in self.log_file.read_bytes():
                try:
                    with urllib.request.urlopen(listing, timeout=5) as response:
                        if response.status == 200:
                            return
                except (urllib.error.URLError, OSError) as exc:
                    last = str(exc)
            time.sleep(0.3)
        raise HdfsStartError(f"HDFS at {self.url} was not ready within {self.start_timeout_s:.0f}s "
                             f"(last: {last}):\n{self.log_tail()}")
