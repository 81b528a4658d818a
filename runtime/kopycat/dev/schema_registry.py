"""A real Schema Registry on loopback: Apicurio Registry, answering Confluent's REST API.

Apicurio Registry (Apache-2.0) from the jar set include/jars/schema-registry/pom.xml, run with the
JDK as ``java -jar apicurio-registry-app-<version>-runner.jar`` (Quarkus) with its in-memory
storage, on a free 127.0.0.1 port (``QUARKUS_HTTP_HOST``/``QUARKUS_HTTP_PORT``). :attr:`url` is
Confluent's API (``/apis/ccompat/v7``), what ``schema.registry.url`` names for the Avro converter
and for Confluent's own serializers. Start-up waits until ``GET <url>/subjects`` answers.

``tls=True`` serves HTTPS only (``QUARKUS_HTTP_SSL_PORT``, the plain port refused with
``QUARKUS_HTTP_INSECURE_REQUESTS=disabled``) with a certificate for 127.0.0.1 signed by a throwaway
CA (:func:`kopycat.dev.certificates.make_certificates`); :meth:`LocalSchemaRegistry.tls_config`
gives the ``schema.registry.ssl.*`` keys that trust it. Apicurio 3.0.9's Quarkus fixes
``quarkus.http.ssl.client-auth`` at build time (to none), so it cannot be made to require client
certificates: mutual TLS is tested against a Python HTTPS server instead.
"""

from __future__ import annotations

import logging
import ssl
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from kopycat.dev.certificates import CertificateFiles, make_certificates
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

    def __init__(self, *, name: str = "schema-registry", heap: str = "256m", start_timeout_s: float = 180.0,
                 tls: bool = False) -> None:
        super().__init__()
        self.name = name
        self.heap = heap
        self.start_timeout_s = start_timeout_s
        self.tls = tls
        self.port = 0
        self.certificates: CertificateFiles | None = None
        """With ``tls``: the CA, its trust stores and the registry's key pair (made on start)."""

    @property
    def base_url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def tls_config(self, store_type: str = "PKCS12") -> dict[str, str]:
        """The ``schema.registry.ssl.*`` keys that trust this registry's CA, by a trust store of ``store_type``
        (JKS, PKCS12 or PEM)."""
        certs = self.certificates
        assert certs is not None, "registry not started with tls=True"
        location = {"JKS": certs.truststore_jks, "PKCS12": certs.truststore_pkcs12, "PEM": certs.ca_pem}[store_type]
        return {"schema.registry.ssl.truststore.location": str(location),
                "schema.registry.ssl.truststore.password": certs.truststore_password,
                "schema.registry.ssl.truststore.type": store_type}

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
        if self.tls:
            env |= self._https_settings()
        self.launch([java_executable(), "-XX:TieredStopAtLevel=1", f"-Xmx{self.heap}",
                     f"-Djava.io.tmpdir={self.workdir}", "-jar", str(app)], env=env)
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        log.info("Schema Registry at %s after %.1f s", self.url, time.monotonic() - began)

    def _https_settings(self) -> dict[str, str]:
        """Quarkus's HTTPS settings: a fresh CA and certificate, HTTPS on :attr:`port`, plain HTTP off."""
        assert self.workdir is not None
        self.certificates = make_certificates(self.workdir / "certs", password="registry-secret",
                                              broker_name="registry")
        plain_port, self.port = self.port, free_port()
        return {"QUARKUS_HTTP_PORT": str(plain_port), "QUARKUS_HTTP_SSL_PORT": str(self.port),
                "QUARKUS_HTTP_INSECURE_REQUESTS": "disabled",
                "QUARKUS_HTTP_SSL_CERTIFICATE_FILES": str(self.certificates.broker.pem_certificate),
                "QUARKUS_HTTP_SSL_CERTIFICATE_KEY_FILES": str(self.certificates.broker.pem_key)}

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while not wait_for_port(self.port, 0.5) and time.monotonic() < deadline:
            self.check_alive()
        last = "the port never opened"
        context = ssl.create_default_context(cafile=str(self.certificates.ca_pem)) if self.certificates else None
        while time.monotonic() < deadline:
            self.check_alive()
            try:
                with urllib.request.urlopen(self.url + "/subjects", timeout=5, context=context) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError) as exc:
                last = str(exc)
            time.sleep(0.3)
        raise SchemaRegistryStartError(f"the Schema Registry at {self.url} did not answer within "
                                       f"{self.start_timeout_s:.0f}s (last: {last}):\n{self.log_tail()}")
