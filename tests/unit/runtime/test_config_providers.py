"""Config providers (KIP-297): Kafka's syntax and lookups, refusals that name the key to change,
and placeholders that stay placeholders everywhere but in a starting connector or task."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from kopycat.api.errors import ConfigError
from kopycat.config_providers import DirectoryConfigProvider, EnvVarConfigProvider, FileConfigProvider
from kopycat.plugins import config_provider_class
from kopycat.runtime.bounded_plan import plan_bounded_run
from kopycat.runtime.config_transformer import (
    ConfigTransformer,
    config_providers,
    resolve_task_configs,
    resolve_worker_config,
    reverse_transform,
)
from kopycat.runtime.config_transformer import resolve_connector_config as resolve_connector
from kopycat.runtime.connector_config import validate_connector_config
from kopycat.runtime.planning import plan_connector

KAFKA = "org.apache.kafka.common.config.provider."


def file_provider(**params: str) -> FileConfigProvider:
    provider = FileConfigProvider()
    provider.configure(params)
    return provider


@pytest.fixture
def secrets(tmp_path: Path) -> Path:
    (tmp_path / "db.properties").write_text("password=s3cret\nuser = app\nurl=jdbc\\:postgresql://h/db\n")
    return tmp_path / "db.properties"


def worker(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"config.providers": "file,env,directory",
            "config.providers.file.class": KAFKA + "FileConfigProvider",
            "config.providers.env.class": KAFKA + "EnvVarConfigProvider",
            "config.providers.directory.class": KAFKA + "DirectoryConfigProvider", **extra}


def test_kafkas_provider_class_names_resolve_to_the_built_in_providers() -> None:
    assert config_provider_class(KAFKA + "FileConfigProvider") is FileConfigProvider
    assert config_provider_class("EnvVarConfigProvider") is EnvVarConfigProvider
    assert config_provider_class("kopycat.config_providers.DirectoryConfigProvider") is DirectoryConfigProvider
    with pytest.raises(ConfigError, match="config.providers.x.class.*Known ConfigProvider plugins"):
        config_provider_class("NoSuchProvider", "config.providers.x.class")


def test_the_file_provider_reads_keys_of_a_properties_file(secrets: Path) -> None:
    data = file_provider().get(str(secrets), {"password", "user", "url", "absent"}).data
    assert data == {"password": "s3cret", "user": "app", "url": "jdbc:postgresql://h/db"}
    assert file_provider().get("", {"password"}).data == {}


def test_a_missing_file_is_an_error_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"Could not read properties from file .*nope.properties"):
        file_provider().get(str(tmp_path / "nope.properties"), {"password"})


def test_allowed_paths_refuse_a_file_outside_them_naming_the_parameter(tmp_path: Path, secrets: Path) -> None:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "ok.properties").write_text("k=v\n")
    provider = file_provider(**{"allowed.paths": str(allowed), "provider.name": "file"})
    assert provider.get(str(allowed / "ok.properties"), {"k"}).data == {"k": "v"}
    with pytest.raises(ConfigError, match=r"not allowed .*config.providers.file.param.allowed.paths") as caught:
        provider.get(str(secrets), {"password"})
    assert caught.value.key == "config.providers.file.param.allowed.paths"
    with pytest.raises(ConfigError, match="not allowed"):  # no escaping through ..
        provider.get(str(allowed / ".." / "db.properties"), {"password"})


def test_allowed_paths_must_be_absolute_and_exist() -> None:
    with pytest.raises(ConfigError, match="relative/dir in config.providers.file.param.allowed.paths is not valid"):
        file_provider(**{"allowed.paths": "relative/dir"})
    with pytest.raises(ConfigError, match="/no/such/dir in config.providers.file.param.allowed.paths is not valid"):
        file_provider(**{"allowed.paths": "/no/such/dir"})


def test_the_directory_provider_reads_whole_files_of_a_directory(tmp_path: Path) -> None:
    (tmp_path / "pg_password").write_text("s3cret\n")
    (tmp_path / "sub").mkdir()
    provider = DirectoryConfigProvider()
    provider.configure({"allowed.paths": str(tmp_path)})
    data = provider.get(str(tmp_path), {"pg_password", "sub", "absent", "../x"}).data
    assert data == {"pg_password": "s3cret\n"}
    assert provider.get(str(tmp_path / "pg_password"), {"x"}).data == {}  # not a directory: nothing
    with pytest.raises(ConfigError, match="config.providers.directory.param.allowed.paths"):
        provider.get("/etc", {"passwd"})


def test_the_env_provider_reads_variables_and_refuses_paths() -> None:
    provider = EnvVarConfigProvider({"PG_PASSWORD": "s3cret", "HOME": "/root"})
    provider.configure({})
    assert provider.get("", {"PG_PASSWORD", "UNSET"}).data == {"PG_PASSWORD": "s3cret"}
    with pytest.raises(ConfigError, match="Path is not supported.*invalid value '/x'"):
        provider.get("/x", {"PG_PASSWORD"})


def test_the_env_allowlist_refuses_other_variables_naming_the_parameter() -> None:
    provider = EnvVarConfigProvider({"PG_PASSWORD": "s3cret", "AWS_SECRET": "no"})
    provider.configure({"allowlist.pattern": "^PG_.*", "provider.name": "env"})
    assert provider.get("", {"PG_PASSWORD"}).data == {"PG_PASSWORD": "s3cret"}
    with pytest.raises(ConfigError, match=r"AWS_SECRET may not be read.*config.providers.env.param.allowlist.pattern"):
        provider.get("", {"AWS_SECRET"})
    with pytest.raises(ConfigError, match="not a regular expression"):
        EnvVarConfigProvider({}).configure({"allowlist.pattern": "("})


def test_the_transformer_follows_kafkas_syntax(secrets: Path) -> None:
    env = EnvVarConfigProvider({"A": "1", "B": "2"})
    env.configure({})
    transformer = ConfigTransformer({"file": file_provider(), "env": env})
    out = transformer.transform({
        "password": f"${{file:{secrets}:password}}",
        "two": "${env:A}-${env:B}!",
        "unknown.provider": "${vault:secret/db:password}",
        "unknown.key": "${env:UNSET}",
        "plain": "no placeholders", "number": 5,
    })
    assert out == {"password": "s3cret", "two": "1-2!", "unknown.provider": "${vault:secret/db:password}",
                   "unknown.key": "${env:UNSET}", "plain": "no placeholders", "number": 5}


def test_a_kept_placeholder_is_logged_by_key_never_with_a_value(caplog: pytest.LogCaptureFixture,
                                                                 secrets: Path) -> None:
    transformer = ConfigTransformer({"file": file_provider()})
    with caplog.at_level(logging.WARNING):
        transformer.transform({"a": f"${{file:{secrets}:nokey}}", "b": f"${{file:{secrets}:password}}"})
    assert "Config a keeps its placeholder" in caplog.text and "has no key 'nokey'" in caplog.text
    assert "s3cret" not in caplog.text


def test_providers_come_from_config_providers_with_their_params(tmp_path: Path) -> None:
    providers = config_providers(worker(tmp_path, **{"config.providers.env.param.allowlist.pattern": "^X$"}))
    assert set(providers) == {"file", "env", "directory"}
    with pytest.raises(ConfigError, match="config.providers.env.param.allowlist.pattern"):
        providers["env"].get("", {"Y"})
    with pytest.raises(ConfigError, match="config.providers.vault.class is not set"):
        config_providers({"config.providers": "vault"})


def test_a_worker_resolves_its_own_placeholders(tmp_path: Path, secrets: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KOPYCAT_TEST_JAAS", "jaas-secret")
    props = worker(tmp_path, **{"sasl.jaas.config": "${env:KOPYCAT_TEST_JAAS}",
                                "producer.ssl.key.password": f"${{file:{secrets}:password}}"})
    resolved = resolve_worker_config(props)
    assert resolved["sasl.jaas.config"] == "jaas-secret"
    assert resolved["producer.ssl.key.password"] == "s3cret"
    assert resolved["config.providers.file.class"] == props["config.providers.file.class"]
    no_providers = {"sasl.jaas.config": "${env:KOPYCAT_TEST_JAAS}"}
    assert resolve_worker_config(no_providers) == no_providers


def test_a_connector_config_uses_the_workers_providers_not_its_own(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KOPYCAT_TEST_PW", "pw")
    connector = {"connection.password": "${env:KOPYCAT_TEST_PW}", "config.providers": "env",
                 "config.providers.env.class": KAFKA + "EnvVarConfigProvider"}
    assert resolve_connector({}, connector) == [connector]
    [resolved] = resolve_connector(worker(tmp_path), connector)
    assert resolved["connection.password"] == "pw"


def test_task_configs_get_the_connectors_placeholders_back() -> None:
    raw = {"connection.password": "${env:PW}", "topic": "t"}
    configs = [{"connection.password": "pw", "topic": "t", "tables": "a"}, {"tables": "b"}]
    assert reverse_transform(raw, configs) == [
        {"connection.password": "${env:PW}", "topic": "t", "tables": "a"}, {"tables": "b"}]


def test_a_plan_starts_the_connector_resolved_and_keeps_placeholders_in_task_configs(
        tmp_path: Path, secrets: Path) -> None:
    props = {"name": "c", "connector.class": "tests.support.counting.CountingSourceConnector", "topic": "t",
             "tasks.max": "2", "secret.key": f"${{file:{secrets}:password}}"}
    plan = plan_connector(props, worker_props=worker(tmp_path))
    try:
        assert plan.connector.props["secret.key"] == "s3cret"  # type: ignore[attr-defined]
        assert {c["secret.key"] for c in plan.task_configs} == {props["secret.key"]}
        assert plan.props["secret.key"] == props["secret.key"]
    finally:
        plan.connector.stop()
    planned = plan_bounded_run(props, worker(tmp_path))
    assert all(p.config["secret.key"] == props["secret.key"] for p in planned)


def test_a_task_about_to_start_gets_every_config_resolved(tmp_path: Path, secrets: Path) -> None:
    placeholder = f"${{file:{secrets}:password}}"
    worker_props, connector, task = resolve_task_configs(
        worker(tmp_path, **{"producer.sasl.jaas.config": placeholder}),
        {"connection.password": placeholder}, {"connection.password": placeholder, "tables": "a"})
    assert worker_props["producer.sasl.jaas.config"] == "s3cret"
    assert connector == {"connection.password": "s3cret"}
    assert task == {"connection.password": "s3cret", "tables": "a"}


def test_validate_resolves_with_the_workers_providers_and_shows_only_placeholders(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KOPYCAT_TEST_URL", "not-a-url-s3cret")
    props = {"name": "j", "connector.class": "JdbcSourceConnector", "connection.url": "${env:KOPYCAT_TEST_URL}",
             "mode": "bulk", "topic.prefix": "p-"}
    response = validate_connector_config(props, worker(tmp_path))
    [url] = [e["value"] for e in response["configs"] if e["value"]["name"] == "connection.url"]
    assert url["value"] == "${env:KOPYCAT_TEST_URL}"
    assert url["errors"] and all("${env:KOPYCAT_TEST_URL}" in message for message in url["errors"])
    assert "s3cret" not in json.dumps(response)


def test_a_connector_refusing_a_resolved_value_names_the_placeholder_not_the_value(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KOPYCAT_TEST_MAX", "many-s3cret")
    props = {"name": "c", "connector.class": "tests.support.counting.CountingSourceConnector", "topic": "t",
             "tasks.max": "${env:KOPYCAT_TEST_MAX}"}
    with pytest.raises(ConfigError, match=r"tasks.max") as caught:
        plan_connector(props, worker_props=worker(tmp_path))
    assert "${env:KOPYCAT_TEST_MAX}" in str(caught.value) and "s3cret" not in str(caught.value)
