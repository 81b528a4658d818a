"""TLS to the Schema Registry: Confluent's ``schema.registry.ssl.*`` keys as a Python SSL context.

Follows Confluent's ``SchemaRegistryClientConfig``/``RestService``: the converter's keys prefixed
``schema.registry.ssl.`` are Kafka's SSL keys (``SslConfigs``) for the registry's HTTPS connection,
so the Java key stores a Kafka Connect worker already points its converters at work unchanged:

- ``schema.registry.ssl.truststore.location/password/type``: the CAs that may sign the registry's
  certificate (default: the system's CAs).
- ``schema.registry.ssl.keystore.location/password/type`` and ``schema.registry.ssl.key.password``:
  the client certificate a registry that requires mutual TLS checks.
- ``schema.registry.ssl.endpoint.identification.algorithm``: ``https`` (the default) checks that the
  certificate names the registry's host; empty turns the check off, as in Kafka.

Stores of type JKS, PKCS12 or PEM are converted to PEM files once per process by
:mod:`kopycat.keystores` (the same conversion the Kafka clients' ``ssl.*`` keys take).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any, Final

from kopycat.api.config import ConfigDef, ConfigType, Importance, Password
from kopycat.api.errors import ConfigError
from kopycat.keystores import client_key_files, trusted_certificates_file

__all__ = ["REGISTRY_TLS_CONFIG", "SSL_PREFIX", "TRUSTSTORE_LOCATION_CONFIG", "registry_ssl_context"]

SSL_PREFIX: Final = "schema.registry.ssl."
TRUSTSTORE_LOCATION_CONFIG: Final = SSL_PREFIX + "truststore.location"
TRUSTSTORE_PASSWORD_CONFIG: Final = SSL_PREFIX + "truststore.password"
TRUSTSTORE_TYPE_CONFIG: Final = SSL_PREFIX + "truststore.type"
KEYSTORE_LOCATION_CONFIG: Final = SSL_PREFIX + "keystore.location"
KEYSTORE_PASSWORD_CONFIG: Final = SSL_PREFIX + "keystore.password"
KEYSTORE_TYPE_CONFIG: Final = SSL_PREFIX + "keystore.type"
KEY_PASSWORD_CONFIG: Final = SSL_PREFIX + "key.password"
ENDPOINT_IDENTIFICATION_CONFIG: Final = SSL_PREFIX + "endpoint.identification.algorithm"

REGISTRY_TLS_CONFIG: Final = (
    ConfigDef()
    .define(TRUSTSTORE_LOCATION_CONFIG, ConfigType.STRING, default=None, importance=Importance.MEDIUM,
            doc="The trust store file holding the CA certificates that may sign the Schema Registry's HTTPS "
                "certificate; unset, the system's CAs are trusted.")
    .define(TRUSTSTORE_PASSWORD_CONFIG, ConfigType.PASSWORD, default=None, importance=Importance.MEDIUM,
            doc="The password of the trust store (needed for JKS).")
    .define(TRUSTSTORE_TYPE_CONFIG, ConfigType.STRING, default="JKS", importance=Importance.LOW,
            doc="The file format of the trust store: JKS, PKCS12 or PEM.")
    .define(KEYSTORE_LOCATION_CONFIG, ConfigType.STRING, default=None, importance=Importance.MEDIUM,
            doc="The key store file holding the client certificate and key sent to a Schema Registry that "
                "requires mutual TLS.")
    .define(KEYSTORE_PASSWORD_CONFIG, ConfigType.PASSWORD, default=None, importance=Importance.MEDIUM,
            doc="The password of the key store.")
    .define(KEYSTORE_TYPE_CONFIG, ConfigType.STRING, default="JKS", importance=Importance.LOW,
            doc="The file format of the key store: JKS, PKCS12 or PEM.")
    .define(KEY_PASSWORD_CONFIG, ConfigType.PASSWORD, default=None, importance=Importance.LOW,
            doc="The password of the private key in the key store, when it differs from the store's.")
    .define(ENDPOINT_IDENTIFICATION_CONFIG, ConfigType.STRING, default="https", importance=Importance.LOW,
            doc="https checks that the Schema Registry's certificate names the host in schema.registry.url; "
                "empty disables that check.")
)
"""The registry converters' TLS keys (added to every format's CONFIG)."""


def _secret(value: Any) -> str | None:
    if value is None:
        return None
    return (value.value() if isinstance(value, Password) else str(value)) or None


def registry_ssl_context(parsed: Mapping[str, Any]) -> ssl.SSLContext | None:
    """The SSL context the parsed ``schema.registry.ssl.*`` keys describe; None when none is set
    (HTTPS then trusts the system's CAs, as Java's default trust store)."""
    truststore = parsed.get(TRUSTSTORE_LOCATION_CONFIG)
    keystore = parsed.get(KEYSTORE_LOCATION_CONFIG)
    algorithm = parsed.get(ENDPOINT_IDENTIFICATION_CONFIG, "https")
    if algorithm and str(algorithm).lower() != "https":
        raise ConfigError.for_key(ENDPOINT_IDENTIFICATION_CONFIG, algorithm,
                                  "not an algorithm Kopycat knows; use https, or empty to disable the host check")
    if not truststore and not keystore and algorithm:
        return None
    context = ssl.create_default_context()
    if truststore:
        context.load_verify_locations(cafile=str(trusted_certificates_file(
            truststore, parsed[TRUSTSTORE_TYPE_CONFIG], _secret(parsed[TRUSTSTORE_PASSWORD_CONFIG]),
            key=TRUSTSTORE_LOCATION_CONFIG, type_key=TRUSTSTORE_TYPE_CONFIG)))
    if keystore:
        files = client_key_files(keystore, parsed[KEYSTORE_TYPE_CONFIG], _secret(parsed[KEYSTORE_PASSWORD_CONFIG]),
                                 _secret(parsed[KEY_PASSWORD_CONFIG]), key=KEYSTORE_LOCATION_CONFIG,
                                 type_key=KEYSTORE_TYPE_CONFIG)
        try:
            context.load_cert_chain(files.certificate, files.key, files.key_password)
        except ssl.SSLError as exc:
            raise ConfigError.for_key(KEYSTORE_LOCATION_CONFIG, keystore,
                                      f"its certificate and key cannot be used ({exc.reason}); check "
                                      f"{KEY_PASSWORD_CONFIG}") from None
    context.check_hostname = bool(algorithm)
    return context
