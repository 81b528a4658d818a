"""The JAAS parser, key store conversion (round trips through keytool) and the Java-to-librdkafka
translation of client security settings."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from kopycat.api.errors import ConfigError
from kopycat.client_security import (
    AuthenticationFailedError,
    AuthenticationWatch,
    AuthorizationFailedError,
    explain_client_error,
    translate_security,
)
from kopycat.jaas import oauthbearer_jaas_config, parse_jaas_config
from kopycat.kafka import client_config, worker_client_config

needs_keytool = pytest.mark.skipif(shutil.which("keytool") is None, reason="needs the JDK's keytool")


def test_jaas_plain_line_gives_module_flag_and_options() -> None:
    entry = parse_jaas_config('org.apache.kafka.common.security.plain.PlainLoginModule required '
                              'username="alice" password="s3cr3t";')
    assert entry.simple_name == "PlainLoginModule"
    assert entry.flag == "required"
    assert entry.options == {"username": "alice", "password": "s3cr3t"}


def test_jaas_quoted_values_keep_escapes_spaces_and_semicolons() -> None:
    entry = parse_jaas_config(r'x.ScramLoginModule REQUIRED username=bob password="a \"q\" b;c\\d" '
                              '/* note */ tokenauth=true ;')
    assert entry.flag == "required"
    assert entry.options == {"username": "bob", "password": 'a "q" b;c\\d', "tokenauth": "true"}


@pytest.mark.parametrize("text", [
    "x.PlainLoginModule required username=\"u\" password=\"p\"",  # no trailing ;
    "x.PlainLoginModule maybe username=\"u\";",  # not a flag
    "x.PlainLoginModule required username=\"u;",  # unclosed quote
    "x.PlainLoginModule required username;",  # no value
    "a.A required; b.B required;",  # two modules
])
def test_jaas_malformed_lines_are_refused_without_showing_the_value(text: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_jaas_config(text, "producer.sasl.jaas.config")
    assert caught.value.key == "producer.sasl.jaas.config"
    assert '"p"' not in str(caught.value) and "password=" not in str(caught.value)


def test_scram_jaas_becomes_username_and_password() -> None:
    config = translate_security({
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                            'username="u" password="p";',
        "ssl.endpoint.identification.algorithm": ""})
    assert config == {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "u",
                      "sasl.password": "p", "ssl.endpoint.identification.algorithm": "none"}
    assert translate_security(config) == config  # translating twice changes nothing


def test_oauthbearer_jaas_becomes_librdkafka_oidc() -> None:
    config = translate_security({
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
        "sasl.login.callback.handler.class":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
        "sasl.jaas.config": 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
                            'clientId="id" clientSecret="secret" scope="kafka" extension_logicalCluster="lkc-1";'})
    assert config == {"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
                      "sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.client.id": "id",
                      "sasl.oauthbearer.client.secret": "secret", "sasl.oauthbearer.scope": "kafka",
                      "sasl.oauthbearer.extensions": "logicalCluster=lkc-1"}


def test_other_login_modules_are_refused_naming_the_key_and_what_works() -> None:
    with pytest.raises(ConfigError, match="consumer.override.sasl.jaas.config names "
                                          "com.sun.security.auth.module.Krb5LoginModule.*PlainLoginModule"):
        client_config({}, {"consumer.override.sasl.jaas.config":
                           "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;"}, "consumer")


def test_security_keys_are_scoped_as_kafka_connect_scopes_them() -> None:
    worker = {"bootstrap.servers": "b:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
              "sasl.jaas.config": 'x.PlainLoginModule required username="w" password="wp";',
              "producer.security.protocol": "SASL_SSL", "producer.sasl.mechanism": "PLAIN",
              "producer.sasl.jaas.config": 'x.PlainLoginModule required username="p" password="pp";',
              "offset.storage.topic": "o"}
    assert worker_client_config(worker)["sasl.username"] == "w"
    assert "offset.storage.topic" not in worker_client_config(worker)
    assert client_config(worker, {}, "producer")["sasl.username"] == "p"
    assert "sasl.username" not in client_config(worker, {}, "consumer")
    assert client_config(worker, {}, "admin")["sasl.username"] == "w"
    override = {"producer.override.sasl.jaas.config": 'x.PlainLoginModule required username="o" password="op";'}
    assert client_config(worker, override, "producer")["sasl.username"] == "o"


def _make_stores(tmp_path: Path) -> tuple[Path, str]:
    from kopycat.dev.certificates import make_certificates
    files = make_certificates(tmp_path / "certs", password="changeit")
    return tmp_path / "certs", files.client.pem_certificate.read_text()


@needs_keytool
@pytest.mark.parametrize("kind", ["JKS", "PKCS12"])
def test_key_stores_made_by_keytool_round_trip_to_pem(tmp_path: Path, kind: str) -> None:
    certs, client_pem = _make_stores(tmp_path)
    suffix = "jks" if kind == "JKS" else "p12"
    config = translate_security({
        "security.protocol": "SSL",
        "ssl.truststore.type": kind, "ssl.truststore.location": str(certs / f"truststore.{suffix}"),
        "ssl.truststore.password": "changeit",
        "ssl.keystore.type": kind, "ssl.keystore.location": str(certs / f"client.{suffix}"),
        "ssl.keystore.password": "changeit", "ssl.key.password": "changeit"})
    assert set(config) == {"security.protocol", "ssl.ca.location", "ssl.certificate.location", "ssl.key.location",
                           "ssl.key.password"}
    ca = x509.load_pem_x509_certificates(Path(config["ssl.ca.location"]).read_bytes())
    assert ca == x509.load_pem_x509_certificates((certs / "ca.crt").read_bytes())
    chain = x509.load_pem_x509_certificates(Path(config["ssl.certificate.location"]).read_bytes())
    assert chain[0] == x509.load_pem_x509_certificate(client_pem.encode())
    key = serialization.load_pem_private_key(Path(config["ssl.key.location"]).read_bytes(), b"changeit")
    assert key.public_key() == chain[0].public_key()
    for name in ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location"):
        path = Path(config[name])
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert path.parent != certs


@needs_keytool
def test_a_wrong_store_password_names_the_key(tmp_path: Path) -> None:
    certs, _ = _make_stores(tmp_path)
    with pytest.raises(ConfigError, match="producer.ssl.truststore.location"):
        client_config({"producer.ssl.truststore.location": str(certs / "truststore.p12"),
                       "producer.ssl.truststore.type": "PKCS12",
                       "producer.ssl.truststore.password": "wrong"}, {}, "producer")


def test_pem_key_store_type_passes_inline_pem() -> None:
    config = translate_security({"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": "CERT",
                                 "ssl.keystore.key": "KEY", "ssl.truststore.type": "PEM",
                                 "ssl.truststore.certificates": "CA"})
    assert config == {"ssl.certificate.pem": "CERT", "ssl.key.pem": "KEY", "ssl.ca.pem": "CA"}


class _Error:
    def __init__(self, code: int, text: str) -> None:
        self._code, self._text = code, text

    def code(self) -> int:
        return self._code

    def str(self) -> str:
        return self._text


def test_refused_logins_fail_after_the_timeout_with_one_line() -> None:
    watch = AuthenticationWatch({"bootstrap.servers": "h:9093", "security.protocol": "SASL_SSL",
                                 "sasl.mechanism": "SCRAM-SHA-512"}, timeout_s=0.0)
    watch(_Error(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))  # not a login error: ignored
    with pytest.raises(AuthenticationFailedError) as caught:
        watch(_Error(KafkaError._AUTHENTICATION, "sasl_ssl://h:9093/bootstrap: SASL authentication error: "
                                                 "Authentication failed (after 3ms in state AUTH_REQ)"))
    message = str(caught.value)
    assert "\n" not in message
    assert "h:9093" in message and "SCRAM-SHA-512" in message and "sasl.jaas.config" in message


def test_a_refused_oauthbearer_token_request_fails_at_once_naming_the_client_credentials() -> None:
    watch = AuthenticationWatch({"bootstrap.servers": "h:9093", "security.protocol": "SASL_SSL",
                                 "sasl.mechanism": "OAUTHBEARER"}, timeout_s=60.0)
    with pytest.raises(AuthenticationFailedError) as caught:  # librdkafka reports it once: no run to time
        watch(_Error(KafkaError._AUTHENTICATION, 'Failed to acquire SASL OAUTHBEARER token: {"error": '
                                                 '"invalid_client"}'))
    message = str(caught.value)
    assert message == ('Cannot authenticate to the Kafka cluster at h:9093 (SASL_SSL OAUTHBEARER): {"error": '
                       '"invalid_client"}; check clientId and clientSecret in sasl.jaas.config, '
                       'sasl.oauthbearer.token.endpoint.url, and that the cluster accepts the identity '
                       "provider's tokens (audience, issuer)")


def test_the_oauthbearer_jaas_line_written_for_a_client_reads_back_unchanged() -> None:
    line = oauthbearer_jaas_config("my-app", 'se"cr\\et', "kafka")
    entry = parse_jaas_config(line)
    assert entry.simple_name == "OAuthBearerLoginModule" and entry.flag == "required"
    assert entry.options == {"clientId": "my-app", "clientSecret": 'se"cr\\et', "scope": "kafka"}


def test_authorization_errors_fail_at_once_naming_the_missing_acl() -> None:
    watch = AuthenticationWatch({"bootstrap.servers": "h:9093", "security.protocol": "SASL_SSL",
                                 "sasl.mechanism": "PLAIN", "sasl.username": "bob"}, timeout_s=60.0)
    with pytest.raises(AuthorizationFailedError, match="User:bob.*Read operation on the consumer group"):
        watch(_Error(KafkaError.GROUP_AUTHORIZATION_FAILED, "Group authorization failed"))


def test_a_refused_idempotent_producer_id_is_explained_as_a_missing_idempotent_write_acl() -> None:
    fatal = KafkaException(KafkaError(KafkaError.CLUSTER_AUTHORIZATION_FAILED,
                                      "Failed to acquire idempotence PID from broker: Cluster authorization failed",
                                      fatal=True))
    explained = explain_client_error(fatal)
    assert isinstance(explained, AuthorizationFailedError) and "IdempotentWrite" in str(explained)
    assert explain_client_error(KafkaException(KafkaError(KafkaError._TIMED_OUT))) is None


def test_a_refused_transactional_id_is_explained_as_the_acls_kip_618_needs() -> None:
    fatal = KafkaException(KafkaError(KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                      "Failed to find transaction coordinator: Transactional Id authorization failed",
                                      fatal=True))
    explained = str(explain_client_error(fatal))
    assert "KIP-618" in explained and "TransactionalId" in explained and "IdempotentWrite" in explained


def test_a_pem_truststore_file_is_read_and_a_file_without_certificates_is_refused(tmp_path: Path) -> None:
    from kopycat.dev.certificates import make_certificates

    certs = make_certificates(tmp_path / "certs", password="changeit")
    config = translate_security({"ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs.ca_pem)})
    assert Path(config["ssl.ca.location"]).read_bytes() == certs.ca_pem.read_bytes()
    (tmp_path / "empty.pem").write_text("nothing here\n")
    with pytest.raises(ConfigError, match="holds no PEM certificate"):
        translate_security({"ssl.truststore.type": "PEM", "ssl.truststore.location": str(tmp_path / "empty.pem")})
