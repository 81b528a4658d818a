"""Bearer authentication of the registry client: OAuth tokens from a loopback OIDC provider, cached and
refreshed; Confluent's cluster headers; a refused secret named by key and never shown.

A recording HTTP server stands in for the registry (it answers every request with one schema); the
identity provider is Kopycat's :class:`LocalOidcProvider`, whose JWKS checks each token's signature.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest

from kopycat.api.errors import ConfigError, ConnectError
from kopycat.converters import registry_bearer
from kopycat.converters.registry_converter import REGISTRY_CONFIG, registry_client
from kopycat.dev.oidc_provider import LocalOidcProvider
from kopycat.jaas import oauthbearer_jaas_config

CLIENT = "registry-client"


class _Recorder(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.headers: list[Message] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: _Recorder

    def do_GET(self) -> None:  # noqa: N802 - BaseHTTPRequestHandler's name
        self.server.headers.append(self.headers)  # names case-insensitive, as HTTP's
        data = json.dumps({"subject": "s", "version": 1, "id": 1, "schema": '"int"'}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - BaseHTTPRequestHandler's
        """Quiet."""


@pytest.fixture
def registry() -> Iterator[_Recorder]:
    server = _Recorder()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def secret() -> str:
    return f"s3cret-{uuid.uuid4().hex}"


@pytest.fixture
def provider(secret: str) -> Iterator[LocalOidcProvider]:
    oidc = LocalOidcProvider({CLIENT: secret}, audience="schema-registry")
    oidc.start()
    yield oidc
    oidc.stop()


def _client(registry: _Recorder, **configs: str) -> Any:
    return registry_client(REGISTRY_CONFIG.parse({"schema.registry.url": registry.url, **configs}))


def _verified(header: str, provider: LocalOidcProvider) -> dict[str, Any]:
    """The claims of a ``Bearer`` header's JWT, its signature checked against the provider's JWKS."""
    scheme, token = header.split(" ", 1)
    assert scheme == "Bearer"
    key = jwt.PyJWK(provider.jwks()["keys"][0]).key
    return jwt.decode(token, key, algorithms=["RS256"], audience="schema-registry", issuer=provider.issuer)


def test_oauthbearer_fetches_one_token_for_many_requests_and_sends_confluents_headers(
        registry: _Recorder, provider: LocalOidcProvider, secret: str) -> None:
    client = _client(registry, **{
        "bearer.auth.credentials.source": "OAUTHBEARER", "bearer.auth.issuer.endpoint.url": provider.token_url,
        "bearer.auth.client.id": CLIENT, "bearer.auth.client.secret": secret, "bearer.auth.scope": "registry",
        "bearer.auth.logical.cluster": "lsrc-123", "bearer.auth.identity.pool.id": "pool-9"})
    for _ in range(5):
        client.latest("s")
    assert len(registry.headers) == 5 and provider.issued == 1 and provider.refused == 0
    assert len({seen["Authorization"] for seen in registry.headers}) == 1
    claims = _verified(registry.headers[0]["Authorization"], provider)
    assert (claims["sub"], claims["scope"]) == (CLIENT, "registry")
    assert {(seen["target-sr-cluster"], seen["Confluent-Identity-Pool-Id"]) for seen in registry.headers} == {
        ("lsrc-123", "pool-9")}


def test_a_token_is_refreshed_once_its_cache_time_is_past(
        registry: _Recorder, provider: LocalOidcProvider, secret: str, monkeypatch: pytest.MonkeyPatch) -> None:
    tokens = registry_bearer.OAuthTokenSource(
        registry_bearer.TokenGrant(provider.token_url, CLIENT, secret), expiry_buffer_s=300)
    first = tokens.token()
    assert tokens.token() == first and tokens.fetched == 1
    later = time.time() + provider.token_lifetime_s - 299  # inside the 300 s buffer before expiry
    monkeypatch.setattr(registry_bearer.time, "time", lambda: later)
    second = tokens.token()
    assert second != first and tokens.fetched == 2 and provider.issued == 2


def test_sasl_oauthbearer_inherit_takes_the_kafka_clients_jaas_options(
        registry: _Recorder, provider: LocalOidcProvider, secret: str) -> None:
    jaas = oauthbearer_jaas_config(CLIENT, secret, "kafka")[:-1] + ' extension_identityPoolId="pool-7";'
    client = _client(registry, **{
        "bearer.auth.credentials.source": "SASL_OAUTHBEARER_INHERIT", "sasl.jaas.config": jaas,
        "sasl.oauthbearer.token.endpoint.url": provider.token_url})
    client.latest("s")
    claims = _verified(registry.headers[0]["Authorization"], provider)
    assert (claims["sub"], claims["scope"], registry.headers[0]["Confluent-Identity-Pool-Id"]) == (
        CLIENT, "kafka", "pool-7")


def test_a_wrong_client_secret_names_the_key_and_never_shows_the_secret(
        registry: _Recorder, provider: LocalOidcProvider) -> None:
    wrong = f"wrong-{uuid.uuid4().hex}"
    client = _client(registry, **{
        "bearer.auth.credentials.source": "OAUTHBEARER", "bearer.auth.issuer.endpoint.url": provider.token_url,
        "bearer.auth.client.id": CLIENT, "bearer.auth.client.secret": wrong})
    with pytest.raises(ConfigError) as refused:
        client.latest("s")
    assert refused.value.key == "bearer.auth.client.secret"
    assert "bearer.auth.client.secret" in str(refused.value) and "HTTP 401" in str(refused.value)
    assert wrong not in str(refused.value) and registry.headers == [] and provider.refused == 1


@pytest.mark.parametrize(("configs", "key"), [
    ({"bearer.auth.client.id": CLIENT, "bearer.auth.client.secret": "x"}, "bearer.auth.issuer.endpoint.url"),
    ({"bearer.auth.issuer.endpoint.url": "http://idp/token", "bearer.auth.client.secret": "x"},
     "bearer.auth.client.id"),
    ({"bearer.auth.issuer.endpoint.url": "idp/token", "bearer.auth.client.id": CLIENT,
      "bearer.auth.client.secret": "x"}, "bearer.auth.issuer.endpoint.url"),
])
def test_missing_or_bad_oauthbearer_keys_are_named(registry: _Recorder, configs: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as bad:
        _client(registry, **{"bearer.auth.credentials.source": "OAUTHBEARER", **configs})
    assert bad.value.key == key and key in str(bad.value)


def test_inherit_refuses_a_login_module_that_is_not_oauthbearer(registry: _Recorder) -> None:
    plain = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";'
    with pytest.raises(ConfigError) as bad:
        _client(registry, **{"bearer.auth.credentials.source": "SASL_OAUTHBEARER_INHERIT", "sasl.jaas.config": plain})
    assert bad.value.key == "sasl.jaas.config" and "PlainLoginModule" in str(bad.value)
    assert '"p"' not in str(bad.value)


def test_inherit_takes_the_kafka_clients_sub_claim_name_over_the_registrys(
        registry: _Recorder, provider: LocalOidcProvider, secret: str) -> None:
    client = _client(registry, **{
        "bearer.auth.credentials.source": "SASL_OAUTHBEARER_INHERIT",
        "sasl.jaas.config": oauthbearer_jaas_config(CLIENT, secret), "sasl.oauthbearer.token.endpoint.url":
        provider.token_url, "sasl.oauthbearer.sub.claim.name": "azp", "bearer.auth.sub.claim.name": "sub"})
    with pytest.raises(ConnectError, match="no 'azp' claim"):  # the provider's tokens have sub, not azp
        client.latest("s")
    assert registry.headers == [] and provider.issued == 1


def test_basic_auth_beside_an_oauth_source_is_refused_naming_the_source_key(registry: _Recorder) -> None:
    with pytest.raises(ConfigError) as both:
        _client(registry, **{"basic.auth.credentials.source": "USER_INFO", "basic.auth.user.info": "u:pw",
                             "bearer.auth.credentials.source": "OAUTHBEARER"})
    assert both.value.key == "bearer.auth.credentials.source" and "pw" not in str(both.value)
