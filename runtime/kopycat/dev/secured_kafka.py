"""A real secured single-node Apache Kafka broker: SASL_SSL, mutual TLS and ACLs, as the clusters
users run (Confluent Cloud, MSK, Aiven, Strimzi) are secured.

Listeners, all on loopback:

- ``SASL_SSL`` (``bootstrap_servers``): PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER; SCRAM
  credentials are written at format time (``kafka-storage format --add-scram``), PLAIN users in the
  listener's JAAS. OAUTHBEARER tokens come from a :class:`~kopycat.dev.oidc_provider.LocalOidcProvider`
  this object starts first; Kafka's ``OAuthBearerValidatorCallbackHandler`` checks their signature against
  its JWKS, their audience and issuer, and the principal is the token's ``sub`` (the client id).
- ``SSL`` (``ssl_bootstrap_servers``): TLS that requires a client certificate (mTLS); it is also the
  inter-broker listener, the broker authenticating with its own certificate.
- ``CONTROLLER``: TLS with client certificates too, so no PLAINTEXT listener is left.

``StandardAuthorizer`` guards every listener: the broker (``User:CN=broker``), the fixtures' user
(``admin``), the OAuth client (``User:kopycat-oauth``) and the client certificate (``User:CN=client``) are
super users; ``restricted`` can log in
but has no ACLs, so each of its requests is refused. The CA and certificates are made at start
(:mod:`kopycat.dev.certificates`) and removed with the broker's work dir.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from kopycat.dev.certificates import CertificateFiles, make_certificates
from kopycat.dev.kafka_broker import LocalKafkaBroker
from kopycat.dev.oidc_provider import LocalOidcProvider
from kopycat.dev.ports import free_port
from kopycat.jaas import LOGIN_MODULES, OAUTHBEARER_LOGIN_MODULE, jaas_config, oauthbearer_jaas_config

__all__ = ["ADMIN_USER", "OAUTH_CLIENT", "OAUTH_LOGIN_CALLBACK_HANDLER", "RESTRICTED_USER", "SecuredKafkaBroker"]

ADMIN_USER = "admin"
RESTRICTED_USER = "restricted"
OAUTH_CLIENT = "kopycat-oauth"
OAUTH_AUDIENCE = "kafka"
OAUTH_LOGIN_CALLBACK_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
"""The Java client's ``sasl.login.callback.handler.class`` that fetches tokens from an OIDC token endpoint."""
_OAUTH_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
_ALLOWED_URLS_PROPERTY = "org.apache.kafka.sasl.oauthbearer.allowed.urls"
_SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


class SecuredKafkaBroker(LocalKafkaBroker):
    """One Apache Kafka broker with SASL_SSL, mTLS and ACLs; see the module docstring.

    The ``java_*`` methods give a client's settings as a Kafka Connect user writes them (JKS stores,
    a JAAS line), the ``librdkafka_*`` methods the same as librdkafka's (PEM files, user/password).
    Passwords are random per start. Not thread-safe: one owner starts and stops it.
    """

    kind = "secured broker"

    def __init__(self, *, name: str = "kafka-secured", **kwargs: object) -> None:
        super().__init__(name=name, **kwargs)  # type: ignore[arg-type]
        self.ssl_port = 0
        self.store_password = secrets.token_urlsafe(12)
        self.passwords = {ADMIN_USER: secrets.token_urlsafe(12), RESTRICTED_USER: secrets.token_urlsafe(12)}
        self.oauth_client_secret = secrets.token_urlsafe(16)
        self.identity_provider = LocalOidcProvider({OAUTH_CLIENT: self.oauth_client_secret}, audience=OAUTH_AUDIENCE)
        self._certificates: CertificateFiles | None = None

    @property
    def ssl_bootstrap_servers(self) -> str:
        """The mutual-TLS listener."""
        return f"127.0.0.1:{self.ssl_port}"

    @property
    def certificates(self) -> CertificateFiles:
        assert self._certificates is not None, "broker not started"
        return self._certificates

    # ------------------------------------------------------------------ LocalKafkaBroker's hooks

    def prepare(self, workdir: Path) -> None:
        self.ssl_port = free_port()
        self._certificates = make_certificates(workdir / "certificates", password=self.store_password)
        self.identity_provider.start()  # the broker fetches the JWKS as it starts

    def stop(self, timeout_s: float | None = None) -> None:
        """Stop the broker, then its identity provider."""
        super().stop(timeout_s)
        self.identity_provider.stop()

    def jvm_options(self) -> list[str]:
        # Kafka 4.x fetches OAuth URLs only when this system property lists them (CVE-2025-27817).
        provider = self.identity_provider
        return [f"-D{_ALLOWED_URLS_PROPERTY}={provider.jwks_url},{provider.token_url}"]

    def listener_settings(self) -> dict[str, str]:
        certs = self.certificates
        plain_users = " ".join(f'user_{user}="{password}"' for user, password in self.passwords.items())
        listeners = (f"SASL_SSL://127.0.0.1:{self.port},SSL://127.0.0.1:{self.ssl_port},"
                     f"CONTROLLER://127.0.0.1:{self.controller_port}")
        settings = {
            "listeners": listeners,
            "advertised.listeners": listeners,
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "SSL",
            "listener.security.protocol.map": "CONTROLLER:SSL,SSL:SSL,SASL_SSL:SASL_SSL",
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(certs.broker.pkcs12),
            "ssl.keystore.password": self.store_password,
            "ssl.key.password": self.store_password,
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.location": str(certs.truststore_pkcs12),
            "ssl.truststore.password": self.store_password,
            "ssl.client.auth": "required",
            "listener.name.sasl_ssl.ssl.client.auth": "none",
            "sasl.enabled.mechanisms": ",".join([*LOGIN_MODULES, "OAUTHBEARER"]),
            "listener.name.sasl_ssl.plain.sasl.jaas.config":
                f"{LOGIN_MODULES['PLAIN']} required {plain_users};",
            "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config": f"{OAUTHBEARER_LOGIN_MODULE} required;",
            "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class": _OAUTH_VALIDATOR,
            "sasl.oauthbearer.jwks.endpoint.url": self.identity_provider.jwks_url,
            "sasl.oauthbearer.expected.audience": OAUTH_AUDIENCE,
            "sasl.oauthbearer.expected.issuer": self.identity_provider.issuer,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": ";".join([certs.broker.principal, certs.client.principal, f"User:{ADMIN_USER}",
                                     f"User:{OAUTH_CLIENT}"]),
        }
        for mechanism in _SCRAM_MECHANISMS:
            settings[f"listener.name.sasl_ssl.{mechanism.lower()}.sasl.jaas.config"] = \
                f"{LOGIN_MODULES[mechanism]} required;"
        return settings

    def storage_format_arguments(self) -> list[str]:
        return [argument for mechanism in _SCRAM_MECHANISMS for user, password in self.passwords.items()
                for argument in ("--add-scram", f"{mechanism}=[name={user},password={password}]")]

    def client_config(self) -> dict[str, str]:
        return self.librdkafka_sasl_settings()

    # ------------------------------------------------------------------ client settings

    def java_sasl_settings(self, user: str = ADMIN_USER, mechanism: str = "SCRAM-SHA-512", *,
                           password: str | None = None) -> dict[str, str]:
        """A SASL_SSL client as a Kafka Connect worker.properties has it: JAAS line, JKS trust store."""
        secret = self.passwords[user] if password is None else password
        return {
            "bootstrap.servers": self.bootstrap_servers,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism,
            "sasl.jaas.config": jaas_config(mechanism, user, secret),
            "ssl.truststore.location": str(self.certificates.truststore_jks),
            "ssl.truststore.password": self.certificates.truststore_password,
        }

    def java_oauth_settings(self, *, client_secret: str | None = None) -> dict[str, str]:
        """An OAUTHBEARER client as a Kafka Connect worker.properties has it: the login callback handler
        fetching tokens from the identity provider with the JAAS line's clientId/clientSecret/scope."""
        secret = self.oauth_client_secret if client_secret is None else client_secret
        return {
            "bootstrap.servers": self.bootstrap_servers,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.login.callback.handler.class": OAUTH_LOGIN_CALLBACK_HANDLER,
            "sasl.oauthbearer.token.endpoint.url": self.identity_provider.token_url,
            "sasl.jaas.config": oauthbearer_jaas_config(OAUTH_CLIENT, secret, "kafka"),
            "ssl.truststore.location": str(self.certificates.truststore_jks),
            "ssl.truststore.password": self.certificates.truststore_password,
        }

    def java_mtls_settings(self) -> dict[str, str]:
        """A mutual-TLS client as Kafka Connect has it: JKS trust store and key store."""
        certs = self.certificates
        return {
            "bootstrap.servers": self.ssl_bootstrap_servers,
            "security.protocol": "SSL",
            "ssl.truststore.location": str(certs.truststore_jks),
            "ssl.truststore.password": certs.truststore_password,
            "ssl.keystore.location": str(certs.client.jks),
            "ssl.keystore.password": certs.client.password,
            "ssl.key.password": certs.client.password,
        }

    def librdkafka_sasl_settings(self, user: str = ADMIN_USER, mechanism: str = "SCRAM-SHA-512") -> dict[str, str]:
        """The SASL_SSL client as librdkafka's settings: user and password, the CA as PEM."""
        return {
            "bootstrap.servers": self.bootstrap_servers,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism,
            "sasl.username": user,
            "sasl.password": self.passwords[user],
            "ssl.ca.location": str(self.certificates.ca_pem),
        }

    def librdkafka_mtls_settings(self) -> dict[str, str]:
        """The mutual-TLS client as librdkafka's settings: PEM CA, certificate and key."""
        certs = self.certificates
        return {
            "bootstrap.servers": self.ssl_bootstrap_servers,
            "security.protocol": "SSL",
            "ssl.ca.location": str(certs.ca_pem),
            "ssl.certificate.location": str(certs.client.pem_certificate),
            "ssl.key.location": str(certs.client.pem_key),
        }
