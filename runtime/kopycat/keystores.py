"""Java key stores (JKS, PKCS12, PEM) as the PEM files librdkafka reads.

A Kafka Connect user points ``ssl.truststore.location`` and ``ssl.keystore.location`` at Java key
stores; librdkafka reads PEM (``ssl.ca.location``, ``ssl.certificate.location``, ``ssl.key.location``).
Each store is converted once per process into files of mode 0600 in a private temporary directory
(mode 0700) that is removed when the process exits.

PKCS12 and PEM are read with ``cryptography``. JKS is Java's own format: it is first turned into PKCS12
by the JDK's ``keytool -importkeystore`` (a user with JKS files has a JDK; the pure-Python JKS readers
are unmaintained), so no JKS parser is carried here.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from kopycat.api.errors import ConfigError

__all__ = ["ClientKeyFiles", "client_key_files", "keytool_executable", "trusted_certificates_file"]

_STORE_TYPES = ("JKS", "PKCS12", "PEM")
_lock = threading.Lock()
_directory: Path | None = None
_converted: dict[tuple[str, ...], object] = {}


def keytool_executable() -> str:
    """``$JAVA_HOME/bin/keytool`` when present, else ``keytool`` on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "keytool").exists():
        return str(Path(java_home) / "bin" / "keytool")
    keytool = shutil.which("keytool")
    if keytool is None:
        raise ConfigError("JKS key stores are read with the JDK's keytool, and there is no `keytool` on PATH: "
                          "install a JDK, or convert the store to PKCS12 or PEM")
    return keytool


@dataclass(frozen=True, slots=True)
class ClientKeyFiles:
    """A client's certificate chain and private key as PEM; the key is encrypted with ``key_password``
    when there is one (librdkafka's ``ssl.key.password``)."""

    certificate: Path
    key: Path
    key_password: str | None


def _private_directory() -> Path:
    global _directory  # noqa: PLW0603 - one directory per process, removed at exit
    if _directory is None:
        _directory = Path(tempfile.mkdtemp(prefix="kopycat-tls-"))  # mode 0700
        atexit.register(shutil.rmtree, _directory, ignore_errors=True)
    return _directory


def _write(name: str, data: bytes) -> Path:
    path = _private_directory() / f"{len(_converted)}-{name}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return path


def _store_type(key: str, store_type: str | None) -> str:
    kind = (store_type or "JKS").upper()  # Java's default ssl.*store.type
    if kind not in _STORE_TYPES:
        raise ConfigError(f"{key}={store_type} is not a key store type Kopycat reads; use JKS, PKCS12 or PEM",
                          key=key)
    return kind


def _read(location: str, key: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{key}={location} cannot be read: {exc.strerror}", key=key) from None


def _jks_as_pkcs12(location: str, password: str | None, key_password: str | None, key: str) -> bytes:
    """``keytool -importkeystore`` of a JKS store into a PKCS12 one under the same password."""
    if not password:
        raise ConfigError(f"{key}={location} is a JKS store without a password; set its password, or "
                          f"convert it to PKCS12 or PEM", key=key)
    with tempfile.TemporaryDirectory(prefix="kopycat-jks-") as scratch:
        target = Path(scratch) / "store.p12"
        command = [keytool_executable(), "-importkeystore", "-noprompt", "-srckeystore", location,
                   "-srcstoretype", "JKS", "-srcstorepass:env", "KOPYCAT_SRC_PASS", "-destkeystore", str(target),
                   "-deststoretype", "PKCS12", "-deststorepass:env", "KOPYCAT_SRC_PASS"]
        env = {**os.environ, "KOPYCAT_SRC_PASS": password}
        if key_password and key_password != password:
            command += ["-srckeypass:env", "KOPYCAT_KEY_PASS"]
            env["KOPYCAT_KEY_PASS"] = key_password
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
        if result.returncode != 0:
            detail = (result.stdout + result.stderr).strip().splitlines()
            raise ConfigError(f"{key}={location} could not be read as JKS by keytool: "
                              f"{detail[-1] if detail else result.returncode}", key=key)
        return target.read_bytes()


def _pkcs12(data: bytes, password: str | None, location: str, key: str) -> pkcs12.PKCS12KeyAndCertificates:
    try:
        return pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError:
        raise ConfigError(f"{key}={location} could not be opened as PKCS12: wrong password, or not a "
                          f"PKCS12 store", key=key) from None


def _pem_certificates(data: bytes, location: str, key: str) -> list[x509.Certificate]:
    try:
        return x509.load_pem_x509_certificates(data)
    except ValueError:
        raise ConfigError(f"{key}={location} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                          key=key) from None


def _pem(certificates: list[x509.Certificate]) -> bytes:
    return b"".join(cert.public_bytes(serialization.Encoding.PEM) for cert in certificates)


def trusted_certificates_file(location: str, store_type: str | None, password: str | None, *,
                              key: str = "ssl.truststore.location", type_key: str = "ssl.truststore.type") -> Path:
    """A PEM file of every certificate in the trust store (librdkafka's ``ssl.ca.location``)."""
    kind = _store_type(type_key, store_type)
    cache_key = ("trust", location, kind, password or "")
    with _lock:
        found = _converted.get(cache_key)
        if isinstance(found, Path):
            return found
        if kind == "PEM":
            certificates = _pem_certificates(_read(location, key), location, key)
        else:
            data = _read(location, key)
            if kind == "JKS":
                data = _jks_as_pkcs12(location, password, None, key)
            store = _pkcs12(data, password, location, key)
            certificates = [c.certificate for c in store.additional_certs]
            if store.cert is not None:
                certificates.insert(0, store.cert.certificate)
        if not certificates:
            raise ConfigError(f"{key}={location} holds no certificate to trust", key=key)
        path = _write("ca.pem", _pem(certificates))
        _converted[cache_key] = path
        return path


def client_key_files(location: str, store_type: str | None, password: str | None, key_password: str | None, *,
                     key: str = "ssl.keystore.location", type_key: str = "ssl.keystore.type") -> ClientKeyFiles:
    """The key store's private key and certificate chain as PEM files (librdkafka's
    ``ssl.certificate.location`` and ``ssl.key.location``); the key encrypted with the key password."""
    kind = _store_type(type_key, store_type)
    cache_key = ("key", location, kind, password or "", key_password or "")
    with _lock:
        found = _converted.get(cache_key)
        if isinstance(found, ClientKeyFiles):
            return found
        data = _read(location, key)
        if kind == "PEM":
            try:
                private_key = serialization.load_pem_private_key(
                    data, (key_password or password or "").encode() or None)
            except (ValueError, TypeError) as exc:
                raise ConfigError(f"{key}={location}: no readable private key ({exc})", key=key) from None
            chain = _pem_certificates(data, location, key)
        else:
            if kind == "JKS":
                data = _jks_as_pkcs12(location, password, key_password, key)
            store = _pkcs12(data, password, location, key)
            if store.key is None or store.cert is None:
                raise ConfigError(f"{key}={location} holds no private key with its certificate", key=key)
            private_key = store.key
            chain = [store.cert.certificate, *(c.certificate for c in store.additional_certs)]
        secret = key_password or password
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(secret.encode()) if secret else serialization.NoEncryption())
        files = ClientKeyFiles(
            _write("certificate.pem", _pem(chain)),
            _write("key.pem", private_key.private_bytes(  # type: ignore[union-attr]
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)),
            secret or None)
        _converted[cache_key] = files
        return files
