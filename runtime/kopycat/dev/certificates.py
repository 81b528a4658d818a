"""A throwaway certificate authority and the key stores a secured dev broker and its clients use.

The CA, the broker's certificate (for 127.0.0.1 and localhost) and a client certificate are made
in-process with ``cryptography``; the JDK's ``keytool`` then writes the JKS stores a Kafka Connect
user points ``ssl.truststore.location`` / ``ssl.keystore.location`` at, so tests use the files
exactly as a Java worker would. Every file is written with mode 0600 in a directory the caller owns.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kopycat.keystores import keytool_executable

__all__ = ["CertificateFiles", "KeyPair", "make_certificates"]

_VALID_FOR = datetime.timedelta(days=2)


@dataclass(frozen=True, slots=True)
class KeyPair:
    """One party's certificate and key in every shape a client or the broker reads.

    ``pem_certificate``/``pem_key`` (unencrypted PKCS#8) are librdkafka's; ``pkcs12`` and ``jks`` are
    Java key stores protected by ``password`` (key password = store password, as keytool makes them).
    """

    principal: str
    pem_certificate: Path
    pem_key: Path
    pkcs12: Path
    jks: Path
    password: str


@dataclass(frozen=True, slots=True)
class CertificateFiles:
    """The CA (PEM, and JKS/PKCS12 trust stores under ``truststore_password``) and two key pairs."""

    ca_pem: Path
    truststore_jks: Path
    truststore_pkcs12: Path
    truststore_password: str
    broker: KeyPair
    client: KeyPair


def _write(path: Path, data: bytes) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(subject: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name,
                 issuer_key: ec.EllipticCurvePrivateKey, *, ca: bool) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(issuer)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + _VALID_FOR)
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
            key_agreement=False, key_cert_sign=True, crl_sign=True, encipher_only=False, decipher_only=False),
            critical=True)
    else:
        builder = (builder
                   .add_extension(x509.SubjectAlternativeName([
                       x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                       critical=False)
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                         ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
    return builder.sign(issuer_key, hashes.SHA256())


def _keytool(*args: str) -> None:
    result = subprocess.run([keytool_executable(), *args], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"keytool {args[0]} failed: {result.stdout}{result.stderr}")


def _key_pair(directory: Path, common_name: str, ca_cert: x509.Certificate,
              ca_key: ec.EllipticCurvePrivateKey, password: str) -> KeyPair:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _certificate(common_name, key, ca_cert.subject, ca_key, ca=False)
    pem_cert = _write(directory / f"{common_name}.crt", cert.public_bytes(serialization.Encoding.PEM))
    pem_key = _write(directory / f"{common_name}.key", key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    p12 = _write(directory / f"{common_name}.p12", pkcs12.serialize_key_and_certificates(
        common_name.encode(), key, cert, [ca_cert], serialization.BestAvailableEncryption(password.encode())))
    jks = directory / f"{common_name}.jks"
    _keytool("-importkeystore", "-noprompt", "-srckeystore", str(p12), "-srcstoretype", "PKCS12",
             "-srcstorepass", password, "-destkeystore", str(jks), "-deststoretype", "JKS",
             "-deststorepass", password, "-destkeypass", password)
    jks.chmod(0o600)
    return KeyPair(f"User:CN={common_name}", pem_cert, pem_key, p12, jks, password)


def make_certificates(directory: Path, *, password: str, broker_name: str = "broker",
                      client_name: str = "client") -> CertificateFiles:
    """A fresh CA in ``directory`` with a broker and a client key pair signed by it (valid two days)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("kopycat-dev-ca")
    ca_cert = _certificate("kopycat-dev-ca", ca_key, ca_name, ca_key, ca=True)
    ca_pem = _write(directory / "ca.crt", ca_cert.public_bytes(serialization.Encoding.PEM))
    truststore_jks = directory / "truststore.jks"
    truststore_p12 = directory / "truststore.p12"
    for store, kind in ((truststore_jks, "JKS"), (truststore_p12, "PKCS12")):
        _keytool("-importcert", "-noprompt", "-alias", "ca", "-file", str(ca_pem), "-keystore", str(store),
                 "-storetype", kind, "-storepass", password)
        store.chmod(0o600)
    return CertificateFiles(ca_pem, truststore_jks, truststore_p12, password,
                            _key_pair(directory, broker_name, ca_cert, ca_key, password),
                            _key_pair(directory, client_name, ca_cert, ca_key, password))
