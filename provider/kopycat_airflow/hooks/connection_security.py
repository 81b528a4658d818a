"""An Airflow connection's SASL/TLS settings as worker.properties keys.

A connection (``kopycat`` or apache-kafka's ``kafka`` type) holds the cluster's security the way
Airflow keeps secrets: the password in the connection's password field (encrypted, masked in logs),
the user in its login, everything else in the extra as the Java keys a Kafka Connect
worker.properties uses (``security.protocol``, ``sasl.mechanism``, ``ssl.truststore.location``,
``ssl.truststore.password``...). :func:`connection_worker_props` turns them into worker keys:

- login and password become the ``sasl.jaas.config`` line of the PLAIN or SCRAM login module
  (:func:`kopycat.jaas.jaas_config`), as a Kafka Connect user writes it; with
  ``sasl.mechanism=OAUTHBEARER`` they are the OAuth client id and secret of an
  ``OAuthBearerLoginModule`` line (:func:`kopycat.jaas.oauthbearer_jaas_config`; the scope from the
  extra's ``sasl.oauthbearer.scope``, Kafka 4.1's name for it), the token endpoint in the extra;
- the connection is one cluster, so its security keys secure every client of the worker: they are
  written at the top level (the worker's own stores and admin clients) and under ``producer.``,
  ``consumer.`` and ``admin.`` (the tasks' clients), as Kafka's ``Worker`` scopes them; a prefixed
  key already in the extra wins.

The result still holds Java keys; :func:`kopycat.kafka.librdkafka_config` translates them for each
client, as for a worker.properties file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from kopycat.api.errors import ConfigError
from kopycat.client_security import is_security_key
from kopycat.jaas import LOGIN_MODULES, jaas_config, oauthbearer_jaas_config

__all__ = ["CLIENT_PREFIXES", "connection_worker_props", "secret_values"]

CLIENT_PREFIXES: Final = ("producer.", "consumer.", "admin.")
"""The worker key prefixes of a task's clients, which see no top-level security key."""
_OAUTHBEARER: Final = "OAUTHBEARER"
_OAUTH_SCOPE: Final = "sasl.oauthbearer.scope"
_SECRET_KEY: Final = re.compile(r"password|secret|jaas\.config|\.key\.pem|keystore\.key$", re.IGNORECASE)


def connection_worker_props(props: Mapping[str, Any], login: str | None, password: str | None,
                            conn_id: str = "the connection") -> dict[str, Any]:
    """``props`` (the connection's extra as worker keys) with its login/password and security applied.

    A password needs a SASL ``security.protocol`` and a PLAIN, SCRAM or OAUTHBEARER ``sasl.mechanism``
    (PLAIN when unset), and no ``sasl.jaas.config`` in the extra beside it; else a ConfigError says which
    field to fix. Without a password the extra is taken as it is (mTLS, or a JAAS line from a secrets backend).
    """
    found = dict(props)
    if password:
        found["sasl.jaas.config"] = _login_jaas(found, login, password, conn_id)
    security = {key: value for key, value in found.items() if is_security_key(key)}
    for prefix in CLIENT_PREFIXES:
        for key, value in security.items():
            found.setdefault(f"{prefix}{key}", value)
    return found


def _login_jaas(found: dict[str, Any], login: str | None, password: str, conn_id: str) -> str:
    """The ``sasl.jaas.config`` line of the login and password (for OAUTHBEARER: the client id and secret,
    with the extra's ``sasl.oauthbearer.scope``, which the line carries instead); a ConfigError names the field."""
    protocol = str(found.get("security.protocol") or "").upper()
    if not protocol.startswith("SASL_"):
        raise ConfigError(f"{conn_id} has a password but security.protocol={protocol or 'PLAINTEXT'} in its "
                          f"extra: set security.protocol to SASL_SSL (or SASL_PLAINTEXT) to log in with it",
                          key="security.protocol")
    if found.get("sasl.jaas.config"):
        raise ConfigError(f"{conn_id} has both a password and sasl.jaas.config in its extra: keep the "
                          f"password in the password field only and drop sasl.jaas.config",
                          key="sasl.jaas.config")
    mechanism = str(found.get("sasl.mechanism") or "PLAIN").upper()
    if mechanism not in LOGIN_MODULES and mechanism != _OAUTHBEARER:
        raise ConfigError(f"{conn_id}: sasl.mechanism={mechanism} does not log in with a user and password; "
                          f"use one of {', '.join([*LOGIN_MODULES, _OAUTHBEARER])}, or leave the password empty",
                          key="sasl.mechanism")
    if not login:
        raise ConfigError(f"{conn_id} has a password but no login: set the SASL user (for OAUTHBEARER, the "
                          f"OAuth client id) in the login field", key="login")
    found["sasl.mechanism"] = mechanism
    if mechanism == _OAUTHBEARER:
        return oauthbearer_jaas_config(login, password, found.pop(_OAUTH_SCOPE, None))
    return jaas_config(mechanism, login, password)


def secret_values(props: Mapping[str, Any]) -> list[str]:
    """The values of ``props`` that are secrets (passwords, JAAS lines, private keys): what to mask in logs."""
    return sorted({str(value) for key, value in props.items() if value and _SECRET_KEY.search(key)})
