"""A real Schema Registry on loopback: Apicurio Registry, answering Confluent's REST API.

Apicurio Registry (Apache-2.0) from the jar set include/jars/schema-registry/pom.xml, run with the
JDK as ``java -jar apicurio-registry-app-<version>-runner.jar`` (Quarkus) with its in-memory
storage, on a free 127.0.0.1 port (``QUARKUS_HTTP_HOST``/``QUARKUS_HTTP_PORT``). :attr:`url` is
Confluent's API (``/apis/ccompat/v7``), what ``schema.registry.url`` names for the Avro converter
and for Confluent's own serializers. Start-up waits until ``GET <url>/subjects`` answers.
"""

from __future__ import annotations

import logging
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from kopycat.dev.jars import ensure_jars, pom_version
from kopycat.dev.ports import free_port, wait_for_port
from kopycat.dev.processes import JvmService, JvmStartError, java_executable

__all__ = ["LocalSchemaRegistry", "SchemaRegistryStartError"]

log = logging.getLogger(__name__)

CCOMPAT_PATH = "/apis/ccompat/v7"
JAR_SET = "schema-registry"


class SchemaRegistryStartError(JvmStartError):
    """The registry did not come up; the message carries its log tail."""


class LocalSchemaRegistry(JvmService):
    """One Apicurio Registry process (in-memory storage), started and stopped by this object.

    Its schemas live as long as the process. C1-only compilation and a small heap, as the test
    broker: a test registry answers a few hundred requests. Not thread-safe.
    """

    kind = "Schema Registry"
    start_error = SchemaRegistryStartError
    stop_timeout_s = 15.0

    def __init__(self, *, name: str = "schema-registry", heap: str = "256m", start_timeout_s: float = 180.0) -> None:
        super().__init__()
        self.name = name
        self.heap = heap
        self.start_timeout_s = start_timeout_s
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """Confluent's API of this registry: the ``schema.registry.url`` to configure."""
        return self.base_url + CCOMPAT_PATH

    @property
    def log_file(self) -> Path:
        """Quarkus logs to stdout: the launch's own ``stdout.log``."""
        assert self.workdir is not None, "registry not started"
        return self.workdir / "stdout.log"

    def start(self) -> None:
        """Launch the registry and wait until Confluent's API answers."""
        app = ensure_jars(JAR_SET) / f"apicurio-registry-app-{pom_version(JAR_SET)}-runner.jar"
        if not app.is_file():
            raise SchemaRegistryStartError(f"{app} is missing: remove {app.parent} and fetch the "
                                           f"{JAR_SET} jars again (python -m kopycat.dev.jars {JAR_SET})")
        began = time.monotonic()
        self.workdir = Path(tempfile.mkdtemp(prefix=f"kopycat-{self.name}-"))
        self.port = free_port()
        env = {"QUARKUS_HTTP_HOST": "127.0.0.1", "QUARKUS_HTTP_PORT": str(self.port)}
        self.launch([java_executable(), "-XX:TieredStopAtLevel=1", f"-Xmx{self.heap}",
                     f"-Djava.io.tmpdir={self.workdir}", "-jar", str(app)], env=env)
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        log.info("Schema Registry at %s after %.1f s", self.url, time.monotonic() - began)

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while not wait_for_port(self.port, 0.5) and time.monotonic() < deadline:
            self.check_alive()
        last = "the port never opened"
        while time.monotonic() < deadline:
            self.check_alive()
            try:
                with urllib.request.urlopen(self.url + "/subjects", timeout=5) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError) as exc:
                last = str(exc)
            time.sleep(0.3)
        raise SchemaRegistryStartError(f"the Schema Registry at {self.url} did not answer within "
                                       f"{self.start_timeout_s:.0f}s (last: {last}):\n{self.log_tail()}")
