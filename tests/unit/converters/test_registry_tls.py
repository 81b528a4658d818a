"""``schema.registry.ssl.*`` against a Python HTTPS server on loopback that requires client certificates.

Apicurio (the integration tests' registry) cannot be made to require client certificates, so mutual
TLS, the key store types and the host name check are tested here; the HTTPS round trip with the
Avro converter and Confluent's deserializer is in tests/integration/test_schema_registry_tls.py.
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from kopycat.api.errors import ConfigError, DataError
from kopycat.converters.avro import AvroConverter
from kopycat.converters.registry_tls import registry_ssl_context
from kopycat.dev.certificates import CertificateFiles, make_certificates

_AVRO_STRING = '"string"'


class _Handler(BaseHTTPRequestHandler):
    server: _TlsServer

    def do_GET(self) -> None:
        peer = self.connection.getpeercert()  # type: ignore[attr-defined]
        self.server.peers.append(dict(item[0] for item in peer["subject"]) if peer else None)
        data = json.dumps({"schema": _AVRO_STRING}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


class _TlsServer(ThreadingHTTPServer):
    def __init__(self, certs: CertificateFiles, host: str) -> None:
        super().__init__((host, 0), _Handler)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(certs.ca_pem))
        context.load_cert_chain(certs.broker.pem_certificate, certs.broker.pem_key)
        context.verify_mode = ssl.CERT_REQUIRED
        self.socket = context.wrap_socket(self.socket, server_side=True)
        self.peers: list[dict[str, str] | None] = []

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A refused handshake is what some tests expect: quiet."""

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"https://{host}:{port}"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> CertificateFiles:
    return make_certificates(tmp_path_factory.mktemp("registry-tls"), password="store-pw", broker_name="registry")


def _serve(certs: CertificateFiles, host: str) -> Iterator[_TlsServer]:
    server = _TlsServer(certs, host)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def server(certs: CertificateFiles) -> Iterator[_TlsServer]:
    yield from _serve(certs, "127.0.0.1")


def _stores(certs: CertificateFiles, kind: str) -> dict[str, str]:
    """Trust and key store keys of one store type (a PEM key store: the certificate and key in one file)."""
    if kind == "PEM":
        key_file = certs.ca_pem.parent / "client-bundle.pem"
        key_file.write_bytes(certs.client.pem_certificate.read_bytes() + certs.client.pem_key.read_bytes())
        trust, key = certs.ca_pem, key_file
    else:
        trust = certs.truststore_jks if kind == "JKS" else certs.truststore_pkcs12
        key = certs.client.jks if kind == "JKS" else certs.client.pkcs12
    stores = {"schema.registry.ssl.truststore.location": str(trust), "schema.registry.ssl.truststore.type": kind,
              "schema.registry.ssl.truststore.password": certs.truststore_password,
              "schema.registry.ssl.keystore.location": str(key), "schema.registry.ssl.keystore.type": kind}
    if kind != "PEM":  # the PEM key is not encrypted
        stores["schema.registry.ssl.keystore.password"] = certs.client.password
    return stores


def _converter(url: str, **extra: str) -> AvroConverter:
    converter = AvroConverter()
    converter.configure({"schema.registry.url": url, "max.retries": "0", **extra}, False)
    return converter


@pytest.mark.parametrize("kind", ["JKS", "PKCS12", "PEM"])
def test_the_client_certificate_of_each_store_type_is_presented_and_the_schema_read(
        server: _TlsServer, certs: CertificateFiles, kind: str) -> None:
    converter = _converter(server.url, **_stores(certs, kind))
    schema, value = converter.to_connect_data("orders", b"\x00\x00\x00\x00\x07\x06abc")
    assert value == "abc" and schema is not None
    assert server.peers == [{"commonName": "client"}]


def test_without_a_key_store_the_refused_handshake_names_the_key_store_key(
        server: _TlsServer, certs: CertificateFiles) -> None:
    stores = _stores(certs, "PKCS12")
    trust_only = {k: v for k, v in stores.items() if ".keystore." not in k}
    with pytest.raises(DataError, match=rf"{server.url}.*schema\.registry\.ssl\.keystore\.location"):
        _converter(server.url, **trust_only).to_connect_data("orders", b"\x00\x00\x00\x00\x07\x06abc")
    assert server.peers == []


def test_an_unknown_ca_names_the_url_and_the_trust_store_key_and_is_not_retried(
        server: _TlsServer, certs: CertificateFiles, tmp_path: Path) -> None:
    other = make_certificates(tmp_path / "other", password="other-pw")
    stores = _stores(certs, "PKCS12") | {"schema.registry.ssl.truststore.location": str(other.truststore_pkcs12),
                                         "schema.registry.ssl.truststore.password": other.truststore_password}
    converter = _converter(server.url, **stores, **{"max.retries": "5"})
    with pytest.raises(DataError, match=rf"certificate at {server.url}.* is not trusted.*"
                                        rf"schema\.registry\.ssl\.truststore\.location") as failure:
        converter.to_connect_data("orders", b"\x00\x00\x00\x00\x07\x06abc")
    assert "attempts" not in str(failure.value)  # a TLS failure is final, not retried


def test_the_host_name_check_refuses_another_host_unless_the_algorithm_is_empty(certs: CertificateFiles) -> None:
    for server in _serve(certs, "127.0.0.2"):  # the certificate names 127.0.0.1 and localhost only
        stores = _stores(certs, "PKCS12")
        with pytest.raises(DataError, match="is not trusted.*IP address mismatch"):
            _converter(server.url, **stores).to_connect_data("orders", b"\x00\x00\x00\x00\x07\x06abc")
        unchecked = _converter(server.url, **stores, **{"schema.registry.ssl.endpoint.identification.algorithm": ""})
        assert unchecked.to_connect_data("orders", b"\x00\x00\x00\x00\x07\x06abc").value == "abc"


def test_bad_tls_settings_name_the_key_and_the_value(certs: CertificateFiles, tmp_path: Path) -> None:
    base = {"schema.registry.url": "https://127.0.0.1:1"}
    with pytest.raises(ConfigError, match=r"schema\.registry\.ssl\.truststore\.type=JCEKS.*JKS, PKCS12 or PEM"):
        AvroConverter().configure(base | {"schema.registry.ssl.truststore.location": str(certs.ca_pem),
                                          "schema.registry.ssl.truststore.type": "JCEKS"})
    missing = tmp_path / "nowhere.p12"
    with pytest.raises(ConfigError, match=rf"schema\.registry\.ssl\.keystore\.location={missing} cannot be read"):
        AvroConverter().configure(base | {"schema.registry.ssl.keystore.location": str(missing),
                                          "schema.registry.ssl.keystore.type": "PKCS12"})
    with pytest.raises(ConfigError, match=r"'dns' for configuration schema\.registry\.ssl\.endpoint\.identification"):
        AvroConverter().configure(base | {"schema.registry.ssl.endpoint.identification.algorithm": "dns"})


def test_no_tls_key_set_leaves_the_system_trust_and_plain_http_untouched() -> None:
    assert registry_ssl_context({"schema.registry.ssl.endpoint.identification.algorithm": "https"}) is None
