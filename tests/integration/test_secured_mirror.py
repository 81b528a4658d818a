"""MirrorSourceConnector from a SASL_SSL cluster to a mutual-TLS cluster, configured as MM2 is.

Two secured brokers, each with its own CA (``secured_kafka`` is the source, over SASL_SSL/SCRAM;
``secured_kafka_b`` the target, over mTLS): a client given the other cluster's settings fails its
handshake, so the test shows each client used its own cluster's settings. The connector's
``source.cluster.*`` and ``target.cluster.*`` keys and the worker's keys are Java (JAAS line, JKS
stores). Driven as Airflow drives it (plan, then bounded runs), as in test_mirror_source.py.
"""

from __future__ import annotations

import uuid

import pytest

from kopycat.connectors.mirror.offset_sync import decode_offset_sync
from kopycat.dev.secured_kafka import SecuredKafkaBroker
from tests.integration.test_mirror_source import raw_offsets, read_raw, run_all
from tests.support.kafka import committed_offsets
from tests.support.mirror import PARTITIONS, create_topics, produce, read_partitions

pytestmark = pytest.mark.timeout(900)

COUNT = 2_000


def test_a_mirror_from_a_sasl_ssl_cluster_to_an_mtls_cluster_copies_exactly_and_syncs_offsets(
        secured_kafka: SecuredKafkaBroker, secured_kafka_b: SecuredKafkaBroker) -> None:
    source, target = secured_kafka.librdkafka_sasl_settings(), secured_kafka_b.librdkafka_mtls_settings()
    run = uuid.uuid4().hex[:8]
    topics = [f"smir{run}-orders", f"smir{run}-users"]
    create_topics(source["bootstrap.servers"], topics, client=source)
    produce(source["bootstrap.servers"], topics, COUNT, client=source)
    source_java = secured_kafka.java_sasl_settings(mechanism="SCRAM-SHA-256")
    target_java = secured_kafka_b.java_mtls_settings()
    name = f"smirror-{run}"
    connector = {"name": name, "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
                 "tasks.max": "2", "source.cluster.alias": "b", "target.cluster.alias": "a",
                 "topics": f"smir{run}-.*", "replication.factor": "1", "offset-syncs.topic.replication.factor": "1",
                 **{f"source.cluster.{key}": value for key, value in source_java.items()},
                 **{f"target.cluster.{key}": value for key, value in target_java.items()}}
    security = {key: value for key, value in target_java.items() if key != "bootstrap.servers"}
    worker = {"bootstrap.servers": target_java["bootstrap.servers"], "offset.storage.topic": f"offsets-{run}",
              "offset.storage.replication.factor": "1", "offset.storage.partitions": "5",
              **security, **{f"producer.{key}": value for key, value in security.items()}}

    first = run_all(connector, worker)

    assert sum(s.records for s in first) == len(topics) * COUNT
    for topic in topics:
        assert read_partitions(target["bootstrap.servers"], f"b.{topic}", client=target) == read_partitions(
            source["bootstrap.servers"], topic, client=source), topic
    offsets = raw_offsets(target["bootstrap.servers"], f"offsets-{run}", name, client=target)
    key = f'["{name}",{{"cluster":"b","partition":1,"topic":"{topics[0]}"}}]'.encode()  # Java HashMap order
    per_partition = COUNT // PARTITIONS
    assert offsets[key] == {"offset": per_partition - 1}
    assert len(offsets) == len(topics) * PARTITIONS
    assert committed_offsets(source["bootstrap.servers"], f"kopycat-mirror-{name}", topics[0], PARTITIONS,
                             client=source) == {p: per_partition for p in range(PARTITIONS)}
    syncs = [sync for sync in (decode_offset_sync(k, v) for k, v in read_raw(
        source["bootstrap.servers"], "mm2-offset-syncs.a.internal", client=source)) if sync.topic in topics]
    assert {(s.topic, s.partition) for s in syncs} == {(t, p) for t in topics for p in range(PARTITIONS)}
    assert all(s.upstream_offset == s.downstream_offset for s in syncs)

    produce(source["bootstrap.servers"], topics, 100, start=COUNT, client=source)
    second = run_all(connector, worker)

    assert sum(s.records for s in second) == len(topics) * 100  # only what is new, resumed from the offsets
    for topic in topics:
        assert read_partitions(target["bootstrap.servers"], f"b.{topic}", client=target) == read_partitions(
            source["bootstrap.servers"], topic, client=source), topic
    assert raw_offsets(target["bootstrap.servers"], f"offsets-{run}", name, client=target)[key] == {
        "offset": per_partition + 100 // PARTITIONS - 1}
