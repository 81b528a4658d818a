"""A Confluent Schema Registry client: schema ids both ways, cached, retried with backoff.

Follows Confluent's ``CachedSchemaRegistryClient`` and its ``RestService`` (the REST API any
Confluent-compatible registry answers: Confluent's, Apicurio's ``/apis/ccompat/v7``, Karapace):

- ``GET /schemas/ids/{id}``                      the schema text of an id (cached: ids never change)
- ``POST /subjects/{subject}/versions``           register, answers the id (``auto.register.schemas``)
- ``POST /subjects/{subject}``                    look a schema (its id, its version) up under a subject
- ``GET /subjects/{subject}/versions/latest``     the latest schema (``use.latest.version``)
- ``GET /subjects/{subject}/versions/{version}``  a referenced schema (a Protobuf import), cached

``normalize=true`` is sent when asked (``normalize.schemas``). ``schema.registry.url`` may list
several URLs: a request that cannot be sent, or that answers 5xx, moves to the next URL, and after
a round over all of them waits (doubling from ``retry_backoff_s``, capped) until ``max_retries``
rounds are spent; then :class:`SchemaRegistryError` says what failed. 4xx answers are not retried:
they carry Confluent's ``error_code`` (40401 subject not found, 40403 schema not found, ...).
Authentication: HTTP basic (``basic.auth.credentials.source`` USER_INFO or URL) or bearer headers
asked for on every request (a static or OAuth token: :mod:`kopycat.converters.registry_bearer`).
HTTPS takes an ``ssl.SSLContext`` (built from ``schema.registry.ssl.*`` by
:mod:`kopycat.converters.registry_tls`); a TLS failure (an untrusted certificate, a refused client
certificate) is not retried: it will not heal, and its error names the URL and the keys to set.

Why not ``confluent_kafka.schema_registry.SchemaRegistryClient``: it needs the
``schemaregistry`` extra (authlib and httpx), which Kopycat's engine does not otherwise depend on,
and it retries only on HTTP statuses, not on connection errors. The tests still use it, with
Confluent's own ``AvroSerializer``/``AvroDeserializer``, as the oracle. The standard library's HTTP
client is enough here: a converter asks the registry once per new schema or id. Thread-safe: the
caches are dicts filled idempotently.
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kopycat.api.errors import DataError

__all__ = ["RegisteredSchema", "SchemaReference", "SchemaRegistryClient", "SchemaRegistryError"]

log = logging.getLogger(__name__)

_CONTENT_TYPE: Final = "application/vnd.schemaregistry.v1+json"
SCHEMA_NOT_FOUND: Final = 40403
SUBJECT_NOT_FOUND: Final = 40401
VERSION_NOT_FOUND: Final = 40402


class SchemaRegistryError(DataError):
    """The registry refused a request (``status``, Confluent's ``error_code``) or could not be reached.

    A :class:`DataError`, so a converter's failure to find a schema is handled by
    ``errors.tolerance`` and the dead letter queue like any other bad record.
    """

    def __init__(self, message: str, status: int | None = None, error_code: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code


@dataclass(frozen=True)
class SchemaReference:
    """A schema another one references (Confluent's ``SchemaReference``): the name the referencing
    schema knows it by (a Protobuf import path), and the subject version that holds it."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema as the registry holds it: its id, its text and (when known) subject, version and references."""

    schema_id: int
    schema: str
    subject: str | None = None
    version: int | None = None
    references: tuple[SchemaReference, ...] = ()


class SchemaRegistryClient:
    """One registry (one or more URLs for it), with caches: id -> schema, (subject, schema) -> id.

    ``basic_auth`` is ``"user:password"``; ``bearer_headers`` answers the bearer headers of each request
    (``Authorization: Bearer`` and Confluent's cluster headers; ignored with ``basic_auth``);
    ``ssl_context`` is used for ``https://`` URLs (None: the system's CAs).
    """

    def __init__(self, urls: str | Sequence[str], *, basic_auth: str | None = None,
                 bearer_headers: Callable[[], Mapping[str, str]] | None = None, max_retries: int = 3,
                 retry_backoff_s: float = 0.5, retry_backoff_max_s: float = 5.0, timeout_s: float = 30.0,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        if isinstance(urls, str):
            urls = [u.strip() for u in urls.split(",")]
        self.urls = [u.rstrip("/") for u in urls if u]
        if not self.urls:
            raise ValueError("schema.registry.url names no URL")
        self.max_retries = max_retries
        self.retry_backoff_s = retry_backoff_s
        self.retry_backoff_max_s = retry_backoff_max_s
        self.timeout_s = timeout_s
        self.ssl_context = ssl_context
        self._headers = {"Accept": _CONTENT_TYPE, "Content-Type": _CONTENT_TYPE}
        self._bearer_headers = None if basic_auth else bearer_headers
        if basic_auth:
            self._headers["Authorization"] = "Basic " + base64.b64encode(basic_auth.encode()).decode()
        self._by_id: dict[int, str] = {}
        self._ids: dict[tuple[str, str, bool], int] = {}
        self._versions: dict[tuple[str, str], RegisteredSchema] = {}
        self._references: dict[int, tuple[SchemaReference, ...]] = {}
        self._subject_versions: dict[tuple[str, int], RegisteredSchema] = {}

    # ------------------------------------------------------------------ the converter's calls

    def schema_by_id(self, schema_id: int) -> str:
        """The schema text registered as ``schema_id``; an unknown id raises SchemaRegistryError."""
        known = self._by_id.get(schema_id)
        if known is None:
            answer = self.request("GET", f"/schemas/ids/{schema_id}")
            self._references.setdefault(schema_id, _references(answer))
            known = self._by_id.setdefault(schema_id, answer["schema"])
        return known

    def references_of(self, schema_id: int) -> tuple[SchemaReference, ...]:
        """The schemas the one registered as ``schema_id`` references (fetched with its text, once)."""
        known = self._references.get(schema_id)
        if known is None:
            answer = self.request("GET", f"/schemas/ids/{schema_id}")
            self._by_id.setdefault(schema_id, answer["schema"])
            known = self._references.setdefault(schema_id, _references(answer))
        return known

    def subject_version(self, subject: str, version: int) -> RegisteredSchema:
        """The schema registered as ``version`` of ``subject`` (cached: a version never changes)."""
        known = self._subject_versions.get((subject, version))
        if known is None:
            answer = self.request("GET", f"/subjects/{_quote(subject)}/versions/{version}")
            found = RegisteredSchema(int(answer["id"]), answer["schema"], answer.get("subject", subject),
                                     answer.get("version", version), _references(answer))
            known = self._subject_versions.setdefault((subject, version), found)
        return known

    def register(self, subject: str, schema: str, *, normalize: bool = False, schema_type: str | None = None) -> int:
        """The id of ``schema`` under ``subject``, registering it when new (Confluent's ``register``).

        ``schema_type`` is the registry's ``schemaType`` (``JSON``, ``PROTOBUF``); None means Avro.
        """
        key = (subject, schema, normalize)
        known = self._ids.get(key)
        if known is None:
            answer = self.request("POST", f"/subjects/{_quote(subject)}/versions", _body(schema, schema_type),
                                  params={"normalize": "true"} if normalize else None)
            known = self._remember(key, int(answer["id"]), schema)
        return known

    def lookup(self, subject: str, schema: str, *, normalize: bool = False, schema_type: str | None = None) -> int:
        """The id of ``schema`` already registered under ``subject`` (``auto.register.schemas=false``)."""
        key = (subject, schema, normalize)
        known = self._ids.get(key)
        if known is None:
            answer = self.request("POST", f"/subjects/{_quote(subject)}", _body(schema, schema_type),
                                  params={"normalize": "true"} if normalize else None)
            known = self._remember(key, int(answer["id"]), schema)
        return known

    def version_of(self, subject: str, schema: str, *, schema_type: str | None = None) -> RegisteredSchema:
        """``schema`` as registered under ``subject``, with its version (Confluent's ``getVersion``)."""
        key = (subject, schema)
        known = self._versions.get(key)
        if known is None:
            answer = self.request("POST", f"/subjects/{_quote(subject)}", _body(schema, schema_type))
            found = RegisteredSchema(int(answer["id"]), schema, answer.get("subject", subject), answer.get("version"))
            known = self._versions.setdefault(key, found)
        return known

    def latest(self, subject: str) -> RegisteredSchema:
        """The latest version under ``subject`` (not cached: it changes as schemas are added)."""
        answer = self.request("GET", f"/subjects/{_quote(subject)}/versions/latest")
        found = RegisteredSchema(int(answer["id"]), answer["schema"], answer.get("subject"), answer.get("version"))
        self._by_id.setdefault(found.schema_id, found.schema)
        return found

    def _remember(self, key: tuple[str, str, bool], schema_id: int, schema: str) -> int:
        self._by_id.setdefault(schema_id, schema)
        return self._ids.setdefault(key, schema_id)

    # ------------------------------------------------------------------ HTTP

    def request(self, method: str, path: str, body: Any = None, *,
                params: Mapping[str, str] | None = None) -> Any:
        """One REST call with failover over the URLs and retries with backoff; the decoded JSON answer."""
        data = None if body is None else json.dumps(body).encode()
        query = "" if not params else "?" + urllib.parse.urlencode(params)
        failures: list[str] = []
        delay = self.retry_backoff_s
        for attempt in range(self.max_retries + 1):
            for url in self.urls:
                try:
                    return self._send(method, url + path + query, data)
                except _Retriable as exc:
                    failures.append(f"{url}: {exc}")
            if attempt < self.max_retries:
                log.warning("Schema Registry %s %s failed (%s); retrying in %.1f s", method, path, failures[-1], delay)
                time.sleep(delay)
                delay = min(delay * 2, self.retry_backoff_max_s)
        raise SchemaRegistryError(f"Schema Registry {method} {path} failed after {self.max_retries + 1} attempts "
                                  f"on {', '.join(self.urls)}; last error: {failures[-1]}. Check that "
                                  f"schema.registry.url is right and the registry is up")

    def _send(self, method: str, url: str, data: bytes | None) -> Any:
        headers = self._headers if self._bearer_headers is None else {**self._headers, **self._bearer_headers()}
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s, context=self.ssl_context) as response:
                text = response.read()
        except urllib.error.HTTPError as exc:
            answer = exc.read().decode(errors="replace")
            if exc.code >= 500:
                raise _Retriable(f"HTTP {exc.code}: {answer[:200]}") from None
            try:
                error = json.loads(answer)
            except ValueError:
                error = {"message": answer}
            code = error.get("error_code") if isinstance(error, dict) else None
            message = error.get("message", answer) if isinstance(error, dict) else answer
            raise SchemaRegistryError(f"Schema Registry answered {exc.code} to {method} {url}: {message}",
                                      status=exc.code, error_code=code) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = exc if isinstance(exc, ssl.SSLError) else getattr(exc, "reason", exc)
            if isinstance(reason, ssl.SSLError):  # raised as is after the handshake, else inside a URLError
                raise SchemaRegistryError(_tls_failure(url, reason)) from None
            raise _Retriable(str(reason)) from None
        return json.loads(text) if text else None


class _Retriable(Exception):
    """A failure worth another attempt: no connection, a timeout, a 5xx answer."""


def _tls_failure(url: str, error: ssl.SSLError) -> str:
    """What a failed TLS handshake with the registry means, and the key that fixes it."""
    if isinstance(error, ssl.SSLCertVerificationError):
        return (f"The Schema Registry's certificate at {url} is not trusted: {error.verify_message}. Set "
                f"schema.registry.ssl.truststore.location (and .password, .type) to a trust store holding the CA "
                f"that signed it")
    return (f"The TLS handshake with the Schema Registry at {url} failed: {error.reason or error}. Check "
            f"schema.registry.ssl.keystore.location (the client certificate a registry requiring mutual TLS "
            f"checks) and schema.registry.ssl.truststore.location")


def _references(answer: Mapping[str, Any]) -> tuple[SchemaReference, ...]:
    return tuple(SchemaReference(ref["name"], ref["subject"], int(ref["version"]))
                 for ref in answer.get("references") or ())


def _body(schema: str, schema_type: str | None) -> dict[str, str]:
    """A register or lookup request's body; Avro, the registry's default type, is sent without ``schemaType``."""
    return {"schema": schema} if schema_type is None else {"schema": schema, "schemaType": schema_type}


def _quote(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")
