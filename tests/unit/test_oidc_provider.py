"""The dev identity provider answers as an OAuth 2.0 client credentials endpoint does, and its tokens
verify against its own JWKS with the claims Kafka's ``OAuthBearerValidatorCallbackHandler`` checks."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import httpx
import jwt
import pytest

from kopycat.dev.oidc_provider import LocalOidcProvider


@pytest.fixture
def provider() -> Iterator[LocalOidcProvider]:
    with LocalOidcProvider({"app": "s3cret"}, audience="kafka") as started:
        yield started


def _basic(client_id: str, secret: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()}


def test_a_known_client_gets_an_rs256_token_that_verifies_against_the_jwks(provider: LocalOidcProvider) -> None:
    answer = httpx.post(provider.token_url, data={"grant_type": "client_credentials", "scope": "kafka"},
                        headers=_basic("app", "s3cret"), timeout=10)
    assert answer.status_code == 200, answer.text
    token = answer.json()["access_token"]
    jwks = httpx.get(provider.jwks_url, timeout=10).json()
    [key] = jwks["keys"]
    assert jwt.get_unverified_header(token)["kid"] == key["kid"]
    claims = jwt.decode(token, jwt.PyJWK(key).key, algorithms=["RS256"], audience="kafka", issuer=provider.issuer)
    assert claims["sub"] == "app" and claims["scope"] == "kafka" and claims["exp"] > claims["iat"]
    assert (provider.issued, provider.refused) == (1, 0)


def test_form_credentials_work_too_and_a_wrong_secret_or_unknown_client_gets_401(provider: LocalOidcProvider) -> None:
    form = {"grant_type": "client_credentials", "client_id": "app", "client_secret": "s3cret"}
    assert httpx.post(provider.token_url, data=form, timeout=10).status_code == 200
    for client_id, secret in (("app", "wrong"), ("nobody", "s3cret")):
        refused = httpx.post(provider.token_url, data={"grant_type": "client_credentials"},
                             headers=_basic(client_id, secret), timeout=10)
        assert refused.status_code == 401 and refused.json()["error"] == "invalid_client"
    assert (provider.issued, provider.refused) == (1, 2)
    other_grant = httpx.post(provider.token_url, data={**form, "grant_type": "password"}, timeout=10)
    assert other_grant.status_code == 400 and other_grant.json()["error"] == "unsupported_grant_type"
