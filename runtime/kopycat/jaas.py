"""Parsing a ``sasl.jaas.config`` value, as Kafka's ``JaasConfig`` reads it.

The value is one login module entry (Kafka refuses more in ``sasl.jaas.config``)::

    org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p\\"q";

a class name, a control flag (``required``, ``requisite``, ``sufficient``, ``optional``), options
``name=value`` where a value is a bare word or a double-quoted string with backslash escapes, and a
closing ``;``. Comments (``//`` and ``/* */``) are skipped, as Java's ``StreamTokenizer`` does.
:func:`jaas_config` writes such a line for a user and password (PLAIN, SCRAM), quoting as Kafka reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from kopycat.api.errors import ConfigError

__all__ = ["LOGIN_MODULES", "OAUTHBEARER_LOGIN_MODULE", "JaasEntry", "jaas_config", "oauthbearer_jaas_config",
           "parse_jaas_config"]

_FLAGS: Final = frozenset({"required", "requisite", "sufficient", "optional"})
_ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}
_DELIMITERS: Final = frozenset("=;\"")
LOGIN_MODULES: Final = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
                        "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
                        "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule"}
"""The login module of each user/password SASL mechanism (``sasl.mechanism``), as Kafka's clients name them."""
OAUTHBEARER_LOGIN_MODULE: Final = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
"""The login module of ``sasl.mechanism=OAUTHBEARER``."""


@dataclass(frozen=True, slots=True)
class JaasEntry:
    """One login module: its class, control flag and options. ``repr`` hides option values (secrets)."""

    login_module: str
    flag: str
    options: dict[str, str] = field(repr=False)

    @property
    def simple_name(self) -> str:
        """The class name without its package: ``PlainLoginModule``."""
        return self.login_module.rsplit(".", 1)[-1]


def _tokens(text: str, key: str) -> list[tuple[str, str]]:
    """``(kind, text)`` pairs: ``word``, ``quoted``, ``=`` and ``;``."""
    found: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char.isspace():
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ConfigError(f"{key}: a /* comment is not closed", key=key)
            i = end + 2
        elif char in "=;":
            found.append((char, char))
            i += 1
        elif char == '"':
            value: list[str] = []
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                    value.append(_ESCAPES.get(text[i], text[i]))
                else:
                    value.append(text[i])
                i += 1
            if i >= n:
                raise ConfigError(f"{key}: a quoted value is not closed (a missing \")", key=key)
            found.append(("quoted", "".join(value)))
            i += 1
        else:
            start = i
            while i < n and not text[i].isspace() and text[i] not in _DELIMITERS and not text.startswith("/*", i):
                i += 1
            found.append(("word", text[start:i]))
    return found


def parse_jaas_config(text: str, key: str = "sasl.jaas.config") -> JaasEntry:
    """The one login module ``text`` configures; a ConfigError naming ``key`` says what is wrong
    (never showing the value, which holds a password)."""
    shape = '<LoginModule class> required name="value" ... ;'
    tokens = _tokens(text, key)
    if len(tokens) < 2 or tokens[0][0] != "word" or tokens[1][0] != "word":
        raise ConfigError(f"{key} must be one login module: {shape}", key=key)
    module, flag = tokens[0][1], tokens[1][1]
    if flag.lower() not in _FLAGS:
        raise ConfigError(f"{key}: {flag!r} after {module} is not a control flag; use one of "
                          f"{', '.join(sorted(_FLAGS))}", key=key)
    options: dict[str, str] = {}
    i = 2
    while i < len(tokens) and tokens[i][0] != ";":
        if (i + 2 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1][0] != "="
                or tokens[i + 2][0] not in ("word", "quoted")):
            raise ConfigError(f"{key}: expected name=value options after {module} {flag}; {shape}", key=key)
        options[tokens[i][1]] = tokens[i + 2][1]
        i += 3
    if i >= len(tokens):
        raise ConfigError(f"{key} must end with ';' ({shape})", key=key)
    if i + 1 < len(tokens):
        raise ConfigError(f"{key} configures more than one login module; Kafka allows one", key=key)
    return JaasEntry(module, flag.lower(), options)


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def jaas_config(mechanism: str, username: str, password: str) -> str:
    """The ``sasl.jaas.config`` line of a user/password login: ``PlainLoginModule`` for PLAIN,
    ``ScramLoginModule`` for SCRAM-SHA-256/512, values quoted so :func:`parse_jaas_config` (and Kafka's
    ``JaasConfig``) read them back unchanged. A ConfigError names ``sasl.mechanism`` for any other mechanism."""
    module = LOGIN_MODULES.get(mechanism.upper())
    if module is None:
        raise ConfigError(f"sasl.mechanism={mechanism} takes no user and password; use one of "
                          f"{', '.join(LOGIN_MODULES)}", key="sasl.mechanism")
    return f"{module} required username={_quoted(username)} password={_quoted(password)};"


def oauthbearer_jaas_config(client_id: str, client_secret: str, scope: str | None = None) -> str:
    """The ``sasl.jaas.config`` line of an OAuth client credentials login (``OAuthBearerLoginModule`` with
    ``clientId``/``clientSecret``/``scope``, as Kafka's ``OAuthBearerLoginCallbackHandler`` reads them)."""
    scoped = "" if scope is None else f" scope={_quoted(scope)}"
    return (f"{OAUTHBEARER_LOGIN_MODULE} required clientId={_quoted(client_id)} "
            f"clientSecret={_quoted(client_secret)}{scoped};")
