"""The AvroConverter against a real Schema Registry (Apicurio) that serves HTTPS only.

The registry's certificate is signed by a throwaway CA; ``schema.registry.ssl.truststore.*`` names
that CA in a JKS, PKCS12 or PEM trust store. Oracle: Confluent's ``AvroDeserializer`` and
``AvroSerializer`` over the same HTTPS registry (``ssl.ca.location``). Mutual TLS, which this
Apicurio build cannot require, is tested in tests/unit/converters/test_registry_tls.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kopycat.api.errors import DataError
from kopycat.converters.avro import AvroConverter
from kopycat.dev.certificates import make_certificates
from kopycat.dev.schema_registry import LocalSchemaRegistry
from tests.integration.test_avro_converter import ORDER, _oracle_dict, _order

pytestmark = pytest.mark.integration


def _converter(registry: LocalSchemaRegistry, **extra: str) -> AvroConverter:
    converter = AvroConverter()
    converter.configure({"schema.registry.url": registry.url, **extra}, False)
    return converter


@pytest.mark.parametrize("store_type", ["JKS", "PKCS12", "PEM"])
def test_avro_round_trips_over_https_with_each_trust_store_type(
        schema_registry_tls: LocalSchemaRegistry, topic_name: str, store_type: str) -> None:
    assert schema_registry_tls.url.startswith("https://") and schema_registry_tls.certificates is not None
    topic = f"{topic_name}-{store_type}"
    converter = _converter(schema_registry_tls, **schema_registry_tls.tls_config(store_type))
    confluent = ConfluentRegistryClient({"url": schema_registry_tls.url,
                                         "ssl.ca.location": str(schema_registry_tls.certificates.ca_pem)})
    context = SerializationContext(topic, MessageField.VALUE)
    ours = [converter.from_connect_data(topic, ORDER, _order(i)) for i in range(3)]
    assert [AvroDeserializer(confluent)(data, context) for data in ours] == [_oracle_dict(_order(i)) for i in range(3)]

    schema_text = confluent.get_latest_version(f"{topic}-value").schema.schema_str
    theirs = [AvroSerializer(confluent, schema_text)(_oracle_dict(_order(i)), context) for i in range(3)]
    assert theirs == ours
    reader = _converter(schema_registry_tls, **schema_registry_tls.tls_config(store_type))
    assert [reader.to_connect_data(topic, data) for data in theirs] == [(ORDER, _order(i)) for i in range(3)]


def test_an_unknown_ca_fails_naming_the_url_and_the_trust_store_key(
        schema_registry_tls: LocalSchemaRegistry, topic_name: str, tmp_path: Path) -> None:
    system_trust = _converter(schema_registry_tls, **{"max.retries": "4", "retries.wait.ms": "2000"})
    with pytest.raises(DataError, match=rf"certificate at {schema_registry_tls.base_url}\S* is not trusted.*"
                                        rf"schema\.registry\.ssl\.truststore\.location") as failure:
        system_trust.from_connect_data(topic_name, ORDER, _order(1))
    assert "attempts" not in str(failure.value)  # final at once: retrying cannot make the CA trusted

    other = make_certificates(tmp_path / "other-ca", password="other-pw")  # a CA of the same name, another key
    wrong_ca = _converter(schema_registry_tls, **{"schema.registry.ssl.truststore.location": str(other.ca_pem),
                                                  "schema.registry.ssl.truststore.type": "PEM"})
    with pytest.raises(DataError, match=r"is not trusted: certificate signature failure"):
        wrong_ca.to_connect_data(topic_name, b"\x00\x00\x00\x00\x01\x02")
    trusted = _converter(schema_registry_tls, **schema_registry_tls.tls_config())
    assert trusted.to_connect_data(topic_name, trusted.from_connect_data(topic_name, ORDER, _order(1))) \
        == (ORDER, _order(1))
