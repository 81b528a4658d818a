"""A tiny OpenID Connect identity provider on loopback: what a secured dev broker validates OAUTHBEARER
tokens against, with no network and no Keycloak.

Two endpoints, as the OAuth 2.0 client credentials grant (RFC 6749 §4.4) and JWKS (RFC 7517) have them:

- ``POST /token`` (``token_url``): ``grant_type=client_credentials`` with the client's id and secret in
  HTTP Basic auth (what librdkafka's OIDC client and Kafka's ``OAuthBearerLoginCallbackHandler`` send) or
  in the form body; answers an RS256 JWT (``sub`` = the client id, ``aud``, ``iss``, ``iat``, ``exp``,
  ``scope``) for a known id/secret pair, ``401 invalid_client`` otherwise.
- ``GET /jwks`` (``jwks_url``): the public key, which Kafka's ``OAuthBearerValidatorCallbackHandler``
  fetches through ``sasl.oauthbearer.jwks.endpoint.url``.

The key pair is made at start and lives in memory only. The server runs in a daemon thread of the process
that owns the object; ``refused`` counts the refused token requests (a test sees its wrong secret was
tried). Thread-safe: the handler threads only read the clients and the key.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
import time
import uuid
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from kopycat.dev.service import LocalService

__all__ = ["LocalOidcProvider"]


def _b64url_uint(number: int) -> str:
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


class LocalOidcProvider(LocalService):
    """The identity provider of the module docstring, serving ``clients`` (client id -> secret)."""

    def __init__(self, clients: Mapping[str, str], *, audience: str = "kafka",
                 token_lifetime_s: int = 3600) -> None:
        self.clients = dict(clients)
        self.audience = audience
        self.token_lifetime_s = token_lifetime_s
        self.key_id = uuid.uuid4().hex[:12]
        self.refused = 0
        self.issued = 0
        self._key: rsa.RSAPrivateKey | None = None
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "identity provider not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def issuer(self) -> str:
        """The ``iss`` of every token: the provider's base URL, as OIDC providers name themselves."""
        return self.base_url

    @property
    def token_url(self) -> str:
        return f"{self.base_url}/token"

    @property
    def jwks_url(self) -> str:
        return f"{self.base_url}/jwks"

    def start(self) -> None:
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="kopycat-oidc", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def jwks(self) -> dict[str, object]:
        """The JSON Web Key Set of the signing key."""
        assert self._key is not None, "identity provider not started"
        numbers = self._key.public_key().public_numbers()
        return {"keys": [{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": self.key_id,
                          "n": _b64url_uint(numbers.n), "e": _b64url_uint(numbers.e)}]}

    def token_for(self, client_id: str, scope: str = "") -> str:
        """A signed access token for ``client_id`` (no secret check: the endpoint does that)."""
        assert self._key is not None, "identity provider not started"
        now = int(time.time())
        claims = {"sub": client_id, "aud": self.audience, "iss": self.issuer, "iat": now,
                  "exp": now + self.token_lifetime_s, "scope": scope, "jti": uuid.uuid4().hex}
        return jwt.encode(claims, self._key, algorithm="RS256", headers={"kid": self.key_id})

    def grant(self, client_id: str | None, secret: str | None, scope: str) -> str | None:
        """A token when ``client_id``/``secret`` is a known pair, else None (counted in ``refused``)."""
        known = client_id is not None and secret is not None and self.clients.get(client_id) == secret
        with self._lock:
            if known:
                self.issued += 1
            else:
                self.refused += 1
        return self.token_for(str(client_id), scope) if known else None


def _basic_credentials(header: str | None) -> tuple[str | None, str | None]:
    """Client id and secret of an ``Authorization: Basic`` header (each URL-encoded, RFC 6749 §2.3.1)."""
    if not header or not header.lower().startswith("basic "):
        return None, None
    try:
        decoded = base64.b64decode(header[6:].strip()).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None, None
    client_id, _, secret = decoded.partition(":")
    return unquote(client_id), unquote(secret)


def _handler_for(provider: LocalOidcProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        """The two endpoints; request lines are not logged (a token request carries a secret)."""

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - BaseHTTPRequestHandler's
            return

        def _answer(self, status: int, body: Mapping[str, object]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - BaseHTTPRequestHandler's name
            if self.path.split("?", 1)[0] == "/jwks":
                self._answer(200, provider.jwks())
            else:
                self._answer(404, {"error": "not_found"})

        def do_POST(self) -> None:  # noqa: N802 - BaseHTTPRequestHandler's name
            length = int(self.headers.get("Content-Length") or 0)
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            if self.path.split("?", 1)[0] != "/token":
                self._answer(404, {"error": "not_found"})
                return
            if form.get("grant_type") != "client_credentials":
                self._answer(400, {"error": "unsupported_grant_type"})
                return
            client_id, secret = _basic_credentials(self.headers.get("Authorization"))
            if client_id is None:
                client_id, secret = form.get("client_id"), form.get("client_secret")
            token = provider.grant(client_id, secret, form.get("scope", ""))
            if token is None:
                self._answer(401, {"error": "invalid_client", "error_description": "unknown client or wrong secret"})
                return
            self._answer(200, {"access_token": token, "token_type": "Bearer",
                               "expires_in": provider.token_lifetime_s, "scope": form.get("scope", "")})

    return Handler
