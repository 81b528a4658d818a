"""Kafka Connect's Java security settings as librdkafka's, and authentication failures that end.

A worker.properties written for Kafka Connect secures its clients with Java keys: a JAAS line in
``sasl.jaas.config`` and Java key stores in ``ssl.truststore.*`` / ``ssl.keystore.*``. librdkafka
names the same things ``sasl.username``/``sasl.password``, OIDC settings and PEM files.
:func:`translate_security` turns one client's settings from the first into the second, so the same
files work unchanged:

==================================================  ===============================================
Java (Kafka Connect)                                librdkafka
==================================================  ===============================================
``sasl.jaas.config`` PlainLoginModule/ScramLoginModule  ``sasl.username``, ``sasl.password``
``sasl.jaas.config`` OAuthBearerLoginModule +        ``sasl.oauthbearer.method=oidc``,
``sasl.oauthbearer.token.endpoint.url``              ``sasl.oauthbearer.client.id``/``.client.secret``/
                                                     ``.scope``/``.extensions``
``ssl.truststore.location/type/password``            ``ssl.ca.location`` (a PEM file)
``ssl.truststore.certificates`` (PEM type)           ``ssl.ca.pem``
``ssl.keystore.location/type/password``,             ``ssl.certificate.location``, ``ssl.key.location``,
``ssl.key.password``                                 ``ssl.key.password``
``ssl.keystore.certificate.chain``/``.key`` (PEM)    ``ssl.certificate.pem``, ``ssl.key.pem``
``ssl.endpoint.identification.algorithm=`` (empty)   ``ssl.endpoint.identification.algorithm=none``
==================================================  ===============================================

librdkafka retries a refused login forever; Kafka's Java clients throw at once
(``SaslAuthenticationException``, ``SslAuthenticationException``) and the task fails.
:class:`AuthenticationWatch` is the ``error_cb`` that gives up after
``kopycat.auth.failure.timeout.ms`` of failed logins with one line naming the cluster, the mechanism
and the likely fix; an OAUTHBEARER token the identity provider refused fails at once (librdkafka reports
it only once), and so does an authorization error, naming the ACL operation that is missing.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Mapping
from typing import Any, Final

from confluent_kafka import KafkaError

from kopycat.api.config import ConfigDef, ConfigType, Importance, Range
from kopycat.api.errors import ConfigError, ConnectError
from kopycat.jaas import parse_jaas_config
from kopycat.keystores import client_key_files, trusted_certificates_file

__all__ = [
    "AUTH_FAILURE_TIMEOUT_MS_CONFIG", "AUTH_FAILURE_TIMEOUT_MS_DEFAULT", "AuthenticationFailedError",
    "AuthenticationWatch", "AuthorizationFailedError", "CLIENT_SECURITY_CONFIG", "explain_client_error",
    "is_security_key",
    "missing_acl",
    "translate_security", "without_tracebacks",
]

log = logging.getLogger(__name__)

AUTH_FAILURE_TIMEOUT_MS_CONFIG: Final = "kopycat.auth.failure.timeout.ms"
AUTH_FAILURE_TIMEOUT_MS_DEFAULT: Final = 20_000
CLIENT_SECURITY_CONFIG: Final = ConfigDef().define(
    AUTH_FAILURE_TIMEOUT_MS_CONFIG, ConfigType.LONG, AUTH_FAILURE_TIMEOUT_MS_DEFAULT, Range(min=0),
    Importance.LOW, doc="How long a client keeps retrying a refused login (wrong password, untrusted "
                        "certificate) before its task fails with the reason; librdkafka alone retries forever.")
"""Worker keys of the clients' security; merged into the worker's definition."""

_SECURITY_PREFIXES: Final = ("sasl.", "ssl.")
_LOGIN_MODULES: Final = {
    "PlainLoginModule": "PLAIN", "ScramLoginModule": "SCRAM-SHA-256/512", "OAuthBearerLoginModule": "OAUTHBEARER",
}
_JAVA_ONLY_SECURITY: Final = frozenset({
    "ssl.truststore.type", "ssl.keystore.type", "ssl.protocol", "ssl.enabled.protocols", "ssl.provider",
    "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.secure.random.implementation",
    "ssl.engine.factory.class", "sasl.login.class", "sasl.login.callback.handler.class",
    "sasl.client.callback.handler.class", "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter",
    "sasl.login.refresh.min.period.seconds", "sasl.login.refresh.buffer.seconds",
    "sasl.login.connect.timeout.ms", "sasl.login.read.timeout.ms", "sasl.login.retry.backoff.ms",
    "sasl.login.retry.backoff.max.ms", "sasl.oauthbearer.scope.claim.name", "sasl.oauthbearer.sub.claim.name",
    "sasl.oauthbearer.jwks.endpoint.url", "sasl.oauthbearer.expected.audience",
    "sasl.oauthbearer.expected.issuer", "sasl.oauthbearer.clock.skew.seconds",
})
"""Java client keys with no librdkafka equivalent; librdkafka would refuse them."""


def is_security_key(name: str) -> bool:
    """A client setting about authentication or encryption (``security.protocol``, ``sasl.*``, ``ssl.*``):
    the top-level worker keys that also configure the worker's own clients."""
    return name == "security.protocol" or name.startswith(_SECURITY_PREFIXES)


def _named(origin: Mapping[str, str], name: str) -> str:
    return origin.get(name, name)


def _sasl(config: dict[str, Any], origin: Mapping[str, str]) -> None:
    key = _named(origin, "sasl.jaas.config")
    entry = parse_jaas_config(str(config.pop("sasl.jaas.config")), key)
    options = entry.options
    if entry.simple_name in ("PlainLoginModule", "ScramLoginModule"):
        for option in ("username", "password"):
            if option not in options:
                raise ConfigError(f"{key}: {entry.simple_name} needs a {option}=\"...\" option", key=key)
            config[f"sasl.{option}"] = options[option]
    elif entry.simple_name == "OAuthBearerLoginModule":
        if not config.get("sasl.oauthbearer.token.endpoint.url"):
            raise ConfigError(f"{key}: OAuthBearerLoginModule is supported with an OIDC token endpoint: set "
                              f"sasl.oauthbearer.token.endpoint.url beside it (unsecured JWTs are not)", key=key)
        config["sasl.oauthbearer.method"] = "oidc"
        for option, target in (("clientId", "client.id"), ("clientSecret", "client.secret"), ("scope", "scope")):
            if option in options:
                config[f"sasl.oauthbearer.{target}"] = options[option]
        extensions = [f"{name[len('extension_'):]}={value}" for name, value in options.items()
                      if name.startswith("extension_")]
        if extensions:
            config["sasl.oauthbearer.extensions"] = ",".join(extensions)
    else:
        raise ConfigError(f"{key} names {entry.login_module}, which Kopycat cannot use; supported: "
                          f"PlainLoginModule, ScramLoginModule, and OAuthBearerLoginModule with "
                          f"sasl.oauthbearer.token.endpoint.url", key=key)


def _truststore(config: dict[str, Any], origin: Mapping[str, str]) -> None:
    kind = config.get("ssl.truststore.type")
    password = config.pop("ssl.truststore.password", None)
    inline = config.pop("ssl.truststore.certificates", None)
    location = config.pop("ssl.truststore.location", None)
    if inline:
        config["ssl.ca.pem"] = inline
    elif location:
        config["ssl.ca.location"] = str(trusted_certificates_file(
            str(location), kind, password, key=_named(origin, "ssl.truststore.location"),
            type_key=_named(origin, "ssl.truststore.type")))


def _keystore(config: dict[str, Any], origin: Mapping[str, str]) -> None:
    kind = config.get("ssl.keystore.type")
    password = config.pop("ssl.keystore.password", None)
    chain = config.pop("ssl.keystore.certificate.chain", None)
    private_key = config.pop("ssl.keystore.key", None)
    location = config.pop("ssl.keystore.location", None)
    if chain or private_key:
        config["ssl.certificate.pem"], config["ssl.key.pem"] = chain, private_key
    elif location:
        files = client_key_files(str(location), kind, password, config.get("ssl.key.password"),
                                 key=_named(origin, "ssl.keystore.location"),
                                 type_key=_named(origin, "ssl.keystore.type"))
        config["ssl.certificate.location"] = str(files.certificate)
        config["ssl.key.location"] = str(files.key)
        if files.key_password:
            config["ssl.key.password"] = files.key_password
        else:
            config.pop("ssl.key.password", None)


def translate_security(config: Mapping[str, Any], origin: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``config`` with its Java security settings replaced by librdkafka's (see the module docstring).

    ``origin`` maps a setting to the key the user wrote (``producer.override.sasl.jaas.config``), so a
    ConfigError names it. Settings already in librdkafka's vocabulary are left as they are, so
    translating twice changes nothing. Key stores are converted once per process.
    """
    found = dict(config)
    names = origin or {}
    if found.get("sasl.jaas.config"):
        _sasl(found, names)
    if any(found.get(k) for k in ("ssl.truststore.location", "ssl.truststore.certificates")):
        _truststore(found, names)
    if any(found.get(k) for k in ("ssl.keystore.location", "ssl.keystore.certificate.chain", "ssl.keystore.key")):
        _keystore(found, names)
    algorithm = found.get("ssl.endpoint.identification.algorithm")
    if algorithm is not None and not str(algorithm).strip():
        found["ssl.endpoint.identification.algorithm"] = "none"
    for name in _JAVA_ONLY_SECURITY & found.keys():
        log.info("Ignoring %s: a Java client setting with no librdkafka equivalent", _named(names, name))
        del found[name]
    return found


class AuthenticationFailedError(ConnectError):
    """A client's login was refused for longer than ``kopycat.auth.failure.timeout.ms``."""


class AuthorizationFailedError(ConnectError):
    """The cluster refused an operation to the client's principal: an ACL is missing
    (Kafka's ``AuthorizationException``, which fails a Java task at once too)."""


_AUTH_CODES: Final = frozenset({KafkaError._AUTHENTICATION, KafkaError._SSL})
_TOKEN_FAILURE: Final = "Failed to acquire SASL OAUTHBEARER token"
"""librdkafka's error when its OIDC client got no token. It reports it once (again only if the text
changes) however often it retries, so there is no run of failures to time: the task fails at once, as
Kafka's ``OAuthBearerLoginCallbackHandler`` fails the login once its token request is refused."""
_EXACTLY_ONCE_ACLS: Final = ("the ACLs an exactly-once source needs (KIP-618): Write and Describe on the "
                              "TransactionalId <group.id>-<connector>-<task> (a prefixed ACL on <group.id>- "
                              "covers every task), and IdempotentWrite on the cluster")
_MISSING_ACL: Final = {
    KafkaError.TOPIC_AUTHORIZATION_FAILED: "the Describe, Read or Write operation on the topic",
    KafkaError.GROUP_AUTHORIZATION_FAILED: "the Read operation on the consumer group",
    KafkaError.CLUSTER_AUTHORIZATION_FAILED: "an operation on the cluster",
    KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: _EXACTLY_ONCE_ACLS,
}
_IDEMPOTENT_WRITE: Final = ("the IdempotentWrite operation on the cluster, or Write on the topics it produces to "
                            "(KIP-679)")


def missing_acl(code: int, text: str = "") -> str | None:
    """What ACL an authorization error ``code`` says is missing, or None when it is no such error."""
    if code == KafkaError.CLUSTER_AUTHORIZATION_FAILED and "idempotence" in text.lower():
        return _IDEMPOTENT_WRITE
    return _MISSING_ACL.get(code)


def explain_client_error(exc: BaseException) -> ConnectError | None:
    """A clear error for a librdkafka authorization failure raised by a client call (a fatal error
    such as a refused idempotent producer id is raised by ``poll``, never passed to ``error_cb``);
    None for any other exception."""
    error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
    if error is None:
        return None
    acl = missing_acl(error.code(), error.str())
    if acl is None:
        return None
    return AuthorizationFailedError(f"{error.str()} ({error.name()}): the principal lacks {acl}; grant it with "
                                    f"kafka-acls.sh --add --allow-principal <principal> ...")


class AuthenticationWatch:
    """librdkafka's ``error_cb`` for one client: raises :class:`AuthenticationFailedError` (out of the
    ``poll``/``consume``/``flush`` that serves it) once logins have failed for ``timeout_s`` in a row.

    Failures more than ``timeout_s`` apart start a new count: a refused login between good ones (a
    rotated password picked up later) does not fail a task. Thread-safe.
    """

    def __init__(self, config: Mapping[str, Any], timeout_s: float) -> None:
        self.servers = str(config.get("bootstrap.servers", "?"))
        self.protocol = str(config.get("security.protocol", "PLAINTEXT")).upper()
        self.mechanism = str(config.get("sasl.mechanism", "GSSAPI")).upper() if "SASL" in self.protocol else ""
        self.timeout_s = timeout_s
        self._username = str(config.get("sasl.username") or "")
        self._first: float | None = None
        self._last = 0.0
        self._lock = threading.Lock()

    def fix(self, error: KafkaError) -> str:
        """The likely fix for ``error``, in the Java keys the user wrote."""
        if error.code() == KafkaError._AUTHENTICATION and self.mechanism == "OAUTHBEARER":
            return ("check clientId and clientSecret in sasl.jaas.config, sasl.oauthbearer.token.endpoint.url, "
                    "and that the cluster accepts the identity provider's tokens (audience, issuer)")
        if error.code() == KafkaError._AUTHENTICATION:
            return (f"check the username and password in sasl.jaas.config, and that the user has "
                    f"{self.mechanism} credentials on the cluster")
        text = error.str().lower()
        if "certificate verify failed" in text or "could not be verified" in text:
            return ("check that ssl.truststore.location holds the CA that signed the broker's certificate "
                    "(and ssl.endpoint.identification.algorithm)")
        return "check ssl.keystore.* (the client certificate the broker requires) and ssl.truststore.*"

    @property
    def principal(self) -> str:
        """The principal the cluster sees, as far as the settings tell it."""
        user = self._username
        return f"User:{user}" if user else "the client's principal"

    def __call__(self, error: KafkaError) -> None:
        acl = missing_acl(error.code(), error.str())
        if acl is not None:
            raise AuthorizationFailedError(
                f"The Kafka cluster at {self.servers} refused {self.principal}: {error.str()}; grant it {acl} "
                f"(kafka-acls.sh --add --allow-principal {self.principal} ...)")
        if error.code() not in _AUTH_CODES:
            log.debug("Client error from %s: %s", self.servers, error.str())
            return
        if _TOKEN_FAILURE in error.str():
            raise self.failure(error, 0.0)
        now = time.monotonic()
        with self._lock:
            if self._first is None or now - self._last > max(self.timeout_s, 30.0):
                self._first = now
                log.warning("Login to %s refused (%s); retrying for up to %.0f s", self.servers, error.str(),
                            self.timeout_s)
            self._last = now
            failing_for = now - self._first
        if failing_for >= self.timeout_s:
            raise self.failure(error, failing_for)

    def failure(self, error: KafkaError, failing_for: float) -> AuthenticationFailedError:
        """The one-line error of a login refused for ``failing_for`` seconds."""
        how = f"{self.protocol} {self.mechanism}".strip()
        detail = error.str().split(": ", 1)[-1].split(" (after ")[0]
        after = f" after {failing_for:.0f} s" if failing_for else ""
        return AuthenticationFailedError(
            f"Cannot authenticate to the Kafka cluster at {self.servers} ({how}){after}: {detail}; {self.fix(error)}")


def without_tracebacks(exc: BaseException) -> BaseException:
    """``exc`` with its traceback, and those of its causes, kept as notes only; returns ``exc``.

    For an error out of a client that is being dropped: the traceback's frames (and the closures they
    ran) hold the client, and a librdkafka client that raised from its ``error_cb`` is in a reference
    cycle with the error that the garbage collector cannot see through. Only dropping the last reference
    destroys a client (the admin client has no ``close()``), so a caller keeping the error (a task's
    failure, a hook's ``test_connection``, a test's ``pytest.raises``) would keep the client's threads
    retrying a refused login and logging each attempt for as long as the process lives.
    """
    seen: set[int] = set()
    each: BaseException | None = exc
    while each is not None and id(each) not in seen:
        seen.add(id(each))
        if each.__traceback__ is not None:
            each.add_note("".join(traceback.format_tb(each.__traceback__)).rstrip())
            each.with_traceback(None)
        each = each.__cause__ or each.__context__
    return exc
