"""Bearer authentication to the Schema Registry: a static token or an OAuth token, cached and refreshed.

Follows Confluent's ``BearerAuthCredentialProvider`` family (``bearer.auth.credentials.source``):

- ``STATIC_TOKEN`` (``StaticTokenCredentialProvider``): ``bearer.auth.token`` as is (the default; no
  header without a token).
- ``OAUTHBEARER`` (``OauthCredentialProvider``): the OAuth 2.0 client credentials grant at
  ``bearer.auth.issuer.endpoint.url`` with ``bearer.auth.client.id``/``.client.secret`` (HTTP Basic, as
  Kafka's ``HttpAccessTokenRetriever`` sends them) and ``bearer.auth.scope``.
- ``SASL_OAUTHBEARER_INHERIT`` (``SaslOauthCredentialProvider``): the same grant with the Kafka client's
  OAUTHBEARER settings given to the converter: ``sasl.jaas.config`` (``OAuthBearerLoginModule`` with
  ``clientId``, ``clientSecret``, ``scope``, ``extension_identityPoolId``) and
  ``sasl.oauthbearer.token.endpoint.url`` (and ``sasl.oauthbearer.scope/sub.claim.name``, which win over
  the ``bearer.auth.*`` claim names); any other ``bearer.auth.*`` key that is set wins over them.

The token is checked as Kafka's ``LoginAccessTokenValidator`` checks it (a JWT whose payload has ``exp``
and the ``bearer.auth.sub.claim.name`` claim; the signature is the registry's to check) and cached as
Confluent's ``OauthTokenCache`` caches it: refreshed after 80% of its lifetime, and at the latest
``bearer.auth.cache.expiry.buffer.seconds`` before it expires. ``bearer.auth.logical.cluster`` and
``bearer.auth.identity.pool.id`` go out as Confluent's ``RestService`` sends them, in the
``target-sr-cluster`` and ``Confluent-Identity-Pool-Id`` headers. The client secret is never logged
nor put in an error message; a refused secret fails with a :class:`ConfigError` naming the key to fix.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kopycat.api.config import CaseInsensitiveValidString, ConfigDef, ConfigType, Importance, Password, Range
from kopycat.api.errors import ConfigError, ConnectError
from kopycat.jaas import OAUTHBEARER_LOGIN_MODULE, parse_jaas_config

__all__ = ["BEARER_AUTH_TOKEN_CONFIG", "CREDENTIALS_SOURCE_CONFIG", "REGISTRY_BEARER_CONFIG", "STATIC_TOKEN",
           "OAuthTokenSource", "TokenGrant", "bearer_headers", "secret_text"]

log = logging.getLogger(__name__)

CREDENTIALS_SOURCE_CONFIG: Final = "bearer.auth.credentials.source"
BEARER_AUTH_TOKEN_CONFIG: Final = "bearer.auth.token"
ISSUER_ENDPOINT_URL_CONFIG: Final = "bearer.auth.issuer.endpoint.url"
CLIENT_ID_CONFIG: Final = "bearer.auth.client.id"
CLIENT_SECRET_CONFIG: Final = "bearer.auth.client.secret"
SCOPE_CONFIG: Final = "bearer.auth.scope"
SCOPE_CLAIM_NAME_CONFIG: Final = "bearer.auth.scope.claim.name"
SUB_CLAIM_NAME_CONFIG: Final = "bearer.auth.sub.claim.name"
CACHE_EXPIRY_BUFFER_CONFIG: Final = "bearer.auth.cache.expiry.buffer.seconds"
LOGICAL_CLUSTER_CONFIG: Final = "bearer.auth.logical.cluster"
IDENTITY_POOL_ID_CONFIG: Final = "bearer.auth.identity.pool.id"
SASL_JAAS_CONFIG: Final = "sasl.jaas.config"
SASL_TOKEN_ENDPOINT_URL_CONFIG: Final = "sasl.oauthbearer.token.endpoint.url"
SASL_SCOPE_CLAIM_NAME_CONFIG: Final = "sasl.oauthbearer.scope.claim.name"
SASL_SUB_CLAIM_NAME_CONFIG: Final = "sasl.oauthbearer.sub.claim.name"

STATIC_TOKEN: Final = "STATIC_TOKEN"
OAUTHBEARER: Final = "OAUTHBEARER"
SASL_OAUTHBEARER_INHERIT: Final = "SASL_OAUTHBEARER_INHERIT"
LOGICAL_CLUSTER_HEADER: Final = "target-sr-cluster"
IDENTITY_POOL_HEADER: Final = "Confluent-Identity-Pool-Id"
_CACHE_EXPIRY_THRESHOLD: Final = 0.8
_TOKEN_ATTEMPTS: Final = 3

REGISTRY_BEARER_CONFIG: Final = (
    ConfigDef()
    .define(CREDENTIALS_SOURCE_CONFIG, ConfigType.STRING, default=STATIC_TOKEN,
            validator=CaseInsensitiveValidString.in_(STATIC_TOKEN, OAUTHBEARER, SASL_OAUTHBEARER_INHERIT),
            importance=Importance.MEDIUM,
            doc="Where the bearer token comes from: STATIC_TOKEN (bearer.auth.token), OAUTHBEARER (the OAuth "
                "client credentials grant with the bearer.auth.* keys) or SASL_OAUTHBEARER_INHERIT (the grant "
                "with the converter's sasl.jaas.config OAuthBearerLoginModule options and "
                "sasl.oauthbearer.token.endpoint.url; bearer.auth.* keys that are set win).")
    .define(BEARER_AUTH_TOKEN_CONFIG, ConfigType.PASSWORD, default="", importance=Importance.MEDIUM,
            doc="A static bearer token sent as 'Authorization: Bearer <token>' (used when no basic auth is set).")
    .define(ISSUER_ENDPOINT_URL_CONFIG, ConfigType.STRING, default=None, importance=Importance.MEDIUM,
            doc="The OAuth/OIDC identity provider's token endpoint URL (OAUTHBEARER).")
    .define(CLIENT_ID_CONFIG, ConfigType.STRING, default=None, importance=Importance.MEDIUM,
            doc="The client id of the OAuth client credentials grant.")
    .define(CLIENT_SECRET_CONFIG, ConfigType.PASSWORD, default=None, importance=Importance.MEDIUM,
            doc="The client secret of the OAuth client credentials grant.")
    .define(SCOPE_CONFIG, ConfigType.STRING, default=None, importance=Importance.LOW,
            doc="The scope asked for in the token request (unset: none).")
    .define(SCOPE_CLAIM_NAME_CONFIG, ConfigType.STRING, default="scope", importance=Importance.LOW,
            doc="The token claim holding its scopes.")
    .define(SUB_CLAIM_NAME_CONFIG, ConfigType.STRING, default="sub", importance=Importance.LOW,
            doc="The token claim naming its subject (principal); a token without it is refused.")
    .define(CACHE_EXPIRY_BUFFER_CONFIG, ConfigType.INT, default=300, validator=Range(min=0),
            importance=Importance.LOW,
            doc="Seconds before a token expires by which a new one is fetched (the token is also refreshed "
                "after 80% of its lifetime, whichever comes first).")
    .define(LOGICAL_CLUSTER_CONFIG, ConfigType.STRING, default=None, importance=Importance.LOW,
            doc="The Schema Registry logical cluster id, sent in the target-sr-cluster header.")
    .define(IDENTITY_POOL_ID_CONFIG, ConfigType.STRING, default=None, importance=Importance.LOW,
            doc="The identity pool id, sent in the Confluent-Identity-Pool-Id header.")
    .define(SASL_JAAS_CONFIG, ConfigType.PASSWORD, default=None, importance=Importance.LOW,
            doc="SASL_OAUTHBEARER_INHERIT: the Kafka client's OAuthBearerLoginModule line, whose clientId, "
                "clientSecret, scope and extension_identityPoolId options are used.")
    .define(SASL_TOKEN_ENDPOINT_URL_CONFIG, ConfigType.STRING, default=None, importance=Importance.LOW,
            doc="SASL_OAUTHBEARER_INHERIT: the Kafka client's token endpoint URL (when "
                "bearer.auth.issuer.endpoint.url is unset).")
    .define(SASL_SCOPE_CLAIM_NAME_CONFIG, ConfigType.STRING, default=None, importance=Importance.LOW,
            doc="SASL_OAUTHBEARER_INHERIT: the Kafka client's scope claim name; set, it wins over "
                "bearer.auth.scope.claim.name.")
    .define(SASL_SUB_CLAIM_NAME_CONFIG, ConfigType.STRING, default=None, importance=Importance.LOW,
            doc="SASL_OAUTHBEARER_INHERIT: the Kafka client's subject claim name; set, it wins over "
                "bearer.auth.sub.claim.name.")
)
"""The bearer keys every registry converter takes (merged into its REGISTRY_CONFIG)."""


@dataclass(frozen=True)
class TokenGrant:
    """What a client credentials token request needs, and the keys that supplied each part."""

    url: str
    client_id: str
    client_secret: str = ""
    scope: str | None = None
    secret_key: str = CLIENT_SECRET_CONFIG


class OAuthTokenSource:
    """An access token for ``grant``, fetched when missing or due, shared by the converter's threads."""

    def __init__(self, grant: TokenGrant, *, sub_claim: str = "sub", scope_claim: str = "scope",
                 expiry_buffer_s: float = 300, timeout_s: float = 30.0) -> None:
        self.grant = grant
        self.sub_claim = sub_claim
        self.scope_claim = scope_claim
        self.expiry_buffer_s = expiry_buffer_s
        self.timeout_s = timeout_s
        self.fetched = 0
        self._token = ""
        self._refresh_at = 0.0
        self._lock = threading.Lock()

    def token(self) -> str:
        """The cached token, or a new one once the cached one is due (module doc)."""
        with self._lock:
            if time.time() >= self._refresh_at:
                self._token, claims = self._fetch()
                self._refresh_at = self._refresh_time(claims)
            return self._token

    def _refresh_time(self, claims: Mapping[str, Any]) -> float:
        """Confluent's ``OauthTokenCache.calculateTokenExpiryTime``: 80% of the lifetime, capped by the buffer."""
        now, expires = time.time(), float(claims["exp"])
        if now + self.expiry_buffer_s > expires:
            return now + max(expires - now, 0) * _CACHE_EXPIRY_THRESHOLD
        start = float(claims.get("iat", now))
        return min(start + (expires - start) * _CACHE_EXPIRY_THRESHOLD, expires - self.expiry_buffer_s)

    def _fetch(self) -> tuple[str, Mapping[str, Any]]:
        answer = self._request()
        token = answer.get("access_token") if isinstance(answer, dict) else None
        if not isinstance(token, str) or not token:
            raise ConnectError(f"The identity provider at {self.grant.url} answered no access_token to the client "
                               f"credentials grant of client {self.grant.client_id}")
        claims = _validated_claims(token, self.sub_claim, self.scope_claim)
        self.fetched += 1
        log.debug("Schema Registry OAuth token for %s fetched (principal %s, expires %s)",
                  self.grant.client_id, claims[self.sub_claim], claims["exp"])
        return token, claims

    def _request(self) -> Any:
        """The token endpoint's JSON answer; connection errors and 5xx are retried a few times."""
        delay = 0.5
        for attempt in range(1, _TOKEN_ATTEMPTS + 1):
            try:
                with urllib.request.urlopen(self._token_request(), timeout=self.timeout_s) as response:
                    return json.loads(response.read() or b"{}")
            except urllib.error.HTTPError as exc:
                if exc.code < 500 or attempt == _TOKEN_ATTEMPTS:
                    raise self._refused(exc) from None
            except (urllib.error.URLError, OSError) as exc:
                if attempt == _TOKEN_ATTEMPTS:
                    raise ConnectError(f"The identity provider at {self.grant.url} could not be reached: "
                                       f"{getattr(exc, 'reason', exc)}. Check {ISSUER_ENDPOINT_URL_CONFIG}") from None
            time.sleep(delay)
            delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _token_request(self) -> urllib.request.Request:
        form = {"grant_type": "client_credentials"}
        if self.grant.scope:
            form["scope"] = self.grant.scope
        pair = f"{urllib.parse.quote(self.grant.client_id)}:{urllib.parse.quote(self.grant.client_secret)}"
        headers = {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode(),
                   "Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
        return urllib.request.Request(self.grant.url, data=urllib.parse.urlencode(form).encode(),
                                      method="POST", headers=headers)

    def _refused(self, exc: urllib.error.HTTPError) -> ConnectError:
        body = exc.read().decode(errors="replace")[:200]
        if exc.code in (400, 401, 403):
            return ConfigError(f"The identity provider at {self.grant.url} refused the client credentials of "
                               f"client {self.grant.client_id!r} (HTTP {exc.code}: {body}). Check "
                               f"{self.grant.secret_key} and {CLIENT_ID_CONFIG}", key=self.grant.secret_key)
        return ConnectError(f"The identity provider at {self.grant.url} answered HTTP {exc.code} to the client "
                            f"credentials grant: {body}")


def _validated_claims(token: str, sub_claim: str, scope_claim: str) -> Mapping[str, Any]:
    """The payload of a JWT access token, checked as Kafka's ``LoginAccessTokenValidator`` does."""
    parts = token.split(".")
    if len(parts) != 3:
        raise ConnectError(f"The access token is not a JWT (it has {len(parts)} dot-separated parts, not 3)")
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, ValueError) as exc:
        raise ConnectError(f"The access token's payload is not base64url JSON: {exc}") from None
    if not isinstance(claims, dict) or not isinstance(claims.get("exp"), int | float):
        raise ConnectError("The access token has no numeric exp claim")
    if not claims.get(sub_claim):
        raise ConnectError(f"The access token has no {sub_claim!r} claim; set {SUB_CLAIM_NAME_CONFIG} to the claim "
                           f"naming its subject")
    if claims.get(scope_claim) is not None and not isinstance(claims[scope_claim], str | list):
        raise ConnectError(f"The access token's {scope_claim!r} claim is neither a string nor a list")
    return claims


def bearer_headers(parsed: Mapping[str, Any]) -> Callable[[], dict[str, str]] | None:
    """The headers of every registry request the keys of :data:`REGISTRY_BEARER_CONFIG` ask for
    (None: no bearer authentication); a function, so an OAuth token is fetched only when due."""
    source = parsed[CREDENTIALS_SOURCE_CONFIG].upper()
    fixed = {name: parsed[key] for key, name in ((LOGICAL_CLUSTER_CONFIG, LOGICAL_CLUSTER_HEADER),
                                                   (IDENTITY_POOL_ID_CONFIG, IDENTITY_POOL_HEADER)) if parsed[key]}
    if source == STATIC_TOKEN:
        token = secret_text(parsed[BEARER_AUTH_TOKEN_CONFIG])
        return (lambda: {**fixed, "Authorization": "Bearer " + token}) if token else None
    inherit = source == SASL_OAUTHBEARER_INHERIT
    grant = _inherited_grant(parsed, fixed) if inherit else _oauth_grant(parsed)
    tokens = OAuthTokenSource(
        grant, sub_claim=inherit and parsed[SASL_SUB_CLAIM_NAME_CONFIG] or parsed[SUB_CLAIM_NAME_CONFIG],
        scope_claim=inherit and parsed[SASL_SCOPE_CLAIM_NAME_CONFIG] or parsed[SCOPE_CLAIM_NAME_CONFIG],
        expiry_buffer_s=parsed[CACHE_EXPIRY_BUFFER_CONFIG])
    return lambda: {**fixed, "Authorization": "Bearer " + tokens.token()}


def _oauth_grant(parsed: Mapping[str, Any]) -> TokenGrant:
    """``OAUTHBEARER``: every part from the ``bearer.auth.*`` keys."""
    for key in (ISSUER_ENDPOINT_URL_CONFIG, CLIENT_ID_CONFIG, CLIENT_SECRET_CONFIG):
        if not secret_text(parsed[key]):
            raise ConfigError.for_key(key, "", f"set it: {CREDENTIALS_SOURCE_CONFIG}={OAUTHBEARER} needs "
                                               f"{ISSUER_ENDPOINT_URL_CONFIG}, {CLIENT_ID_CONFIG} and "
                                               f"{CLIENT_SECRET_CONFIG}")
    return TokenGrant(_url(parsed[ISSUER_ENDPOINT_URL_CONFIG], ISSUER_ENDPOINT_URL_CONFIG), parsed[CLIENT_ID_CONFIG],
                  secret_text(parsed[CLIENT_SECRET_CONFIG]), parsed[SCOPE_CONFIG])


def _inherited_grant(parsed: Mapping[str, Any], headers: dict[str, str]) -> TokenGrant:
    """``SASL_OAUTHBEARER_INHERIT``: the Kafka client's JAAS options, under any ``bearer.auth.*`` key set."""
    jaas = secret_text(parsed[SASL_JAAS_CONFIG])
    if not jaas:
        raise ConfigError.for_key(SASL_JAAS_CONFIG, "", f"give the converter the Kafka client's OAuthBearerLoginModule "
                                                        f"line: {CREDENTIALS_SOURCE_CONFIG}={SASL_OAUTHBEARER_INHERIT} "
                                                        f"takes its clientId and clientSecret from it")
    entry = parse_jaas_config(jaas, SASL_JAAS_CONFIG)
    if entry.login_module != OAUTHBEARER_LOGIN_MODULE:
        raise ConfigError(f"{SASL_JAAS_CONFIG} names {entry.simple_name}; {SASL_OAUTHBEARER_INHERIT} needs "
                          f"{OAUTHBEARER_LOGIN_MODULE}", key=SASL_JAAS_CONFIG)
    options = entry.options
    if IDENTITY_POOL_HEADER not in headers and options.get("extension_identityPoolId"):
        headers[IDENTITY_POOL_HEADER] = options["extension_identityPoolId"]
    url_key = ISSUER_ENDPOINT_URL_CONFIG if parsed[ISSUER_ENDPOINT_URL_CONFIG] else SASL_TOKEN_ENDPOINT_URL_CONFIG
    client_id = parsed[CLIENT_ID_CONFIG] or options.get("clientId")
    secret_key = CLIENT_SECRET_CONFIG if secret_text(parsed[CLIENT_SECRET_CONFIG]) else SASL_JAAS_CONFIG
    secret = secret_text(parsed[CLIENT_SECRET_CONFIG]) or options.get("clientSecret", "")
    if not client_id or not secret:
        raise ConfigError(f"{SASL_JAAS_CONFIG} has no clientId or no clientSecret option, and {CLIENT_ID_CONFIG}/"
                          f"{CLIENT_SECRET_CONFIG} are not set", key=SASL_JAAS_CONFIG)
    return TokenGrant(_url(parsed[url_key], url_key), client_id, secret,
                  parsed[SCOPE_CONFIG] or options.get("scope"), secret_key)


def _url(value: str | None, key: str) -> str:
    if not value or urllib.parse.urlsplit(value).scheme not in ("http", "https"):
        raise ConfigError.for_key(key, value or "", "set the identity provider's http(s) token endpoint URL")
    return value


def secret_text(value: Any) -> str:
    """A PASSWORD key's text (Kopycat's ``Password`` hides it everywhere else)."""
    if value is None:
        return ""
    return value.value() if isinstance(value, Password) else str(value)
