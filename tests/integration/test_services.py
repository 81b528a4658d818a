"""The real services the other tests stand on: each asserts on data, not on "it ran"."""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from kopycat.dev.kafka_broker import LocalKafkaBroker
from kopycat.dev.redis_server import LocalRedis
from kopycat.dev.s3 import LocalS3


def _create_topic(bootstrap: str, topic: str, partitions: int = 1,
                  config: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, config=config or {})])[topic].result(30)


def _consume_all(bootstrap: str, topic: str, expected: int, **overrides: str) -> list:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         **overrides})
    consumer.subscribe([topic])
    messages: list = []
    idle_polls = 0
    try:
        while idle_polls < 5 or len(messages) < expected and idle_polls < 30:
            batch = consumer.consume(num_messages=2000, timeout=1.0)
            idle_polls = 0 if batch else idle_polls + 1
            for message in batch:
                if message.error() is not None:
                    raise KafkaException(message.error())
                messages.append(message)
    finally:
        consumer.close()
    return messages


def test_ten_thousand_keyed_records_with_headers_arrive_once_each(
        bootstrap_servers: str, topic_name: str) -> None:
    _create_topic(bootstrap_servers, topic_name, partitions=3)
    producer = Producer({"bootstrap.servers": bootstrap_servers, "linger.ms": 10})
    for i in range(10_000):
        producer.produce(topic_name, key=f"k{i}".encode(), value=f"value-{i}".encode(),
                         headers=[("seq", str(i).encode()), ("src", b"smoke")])
    assert producer.flush(30) == 0

    messages = _consume_all(bootstrap_servers, topic_name, 10_000)

    keys = [m.key().decode() for m in messages]
    assert len(messages) == 10_000
    assert len(set(keys)) == 10_000
    assert set(keys) == {f"k{i}" for i in range(10_000)}
    for message in messages:
        seq = message.key().decode()[1:]
        assert message.value() == f"value-{seq}".encode()
        assert message.headers() == [("seq", seq.encode()), ("src", b"smoke")]
    assert {m.partition() for m in messages} == {0, 1, 2}


def test_aborted_transaction_is_invisible_to_read_committed_consumer(
        bootstrap_servers: str, topic_name: str) -> None:
    _create_topic(bootstrap_servers, topic_name)
    producer = Producer({"bootstrap.servers": bootstrap_servers,
                         "transactional.id": f"smoke-{uuid.uuid4().hex}"})
    producer.init_transactions(30)
    for batch, outcome in (("a", "commit"), ("b", "abort"), ("c", "commit")):
        producer.begin_transaction()
        for i in range(100):
            producer.produce(topic_name, key=f"{batch}{i}".encode(), value=b"x")
        if outcome == "commit":
            producer.commit_transaction(30)
        else:
            producer.flush(30)
            producer.abort_transaction(30)

    committed = _consume_all(bootstrap_servers, topic_name, 200, **{"isolation.level": "read_committed"})
    everything = _consume_all(bootstrap_servers, topic_name, 300,
                              **{"isolation.level": "read_uncommitted"})

    committed_keys = {m.key().decode() for m in committed}
    assert len(committed) == 200
    assert committed_keys == {f"{b}{i}" for b in "ac" for i in range(100)}
    assert len(everything) == 300
    assert {m.key().decode() for m in everything} - committed_keys == {f"b{i}" for i in range(100)}


def test_compacted_topic_reports_cleanup_policy_compact(bootstrap_servers: str,
                                                        topic_name: str) -> None:
    _create_topic(bootstrap_servers, topic_name, partitions=25,
                  config={"cleanup.policy": "compact"})
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic_name)

    configs = admin.describe_configs([resource])[resource].result(30)
    partitions = admin.list_topics(topic_name, timeout=10).topics[topic_name].partitions

    assert configs["cleanup.policy"].value == "compact"
    assert len(partitions) == 25


def test_second_broker_is_an_independent_cluster(kafka_broker: LocalKafkaBroker,
                                                 kafka_broker_b: LocalKafkaBroker,
                                                 topic_name: str) -> None:
    _create_topic(kafka_broker.bootstrap_servers, topic_name)
    topics_a = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers}).list_topics(
        timeout=10).topics
    topics_b = AdminClient({"bootstrap.servers": kafka_broker_b.bootstrap_servers}).list_topics(
        timeout=10).topics

    assert kafka_broker.bootstrap_servers != kafka_broker_b.bootstrap_servers
    assert topic_name in topics_a
    assert topic_name not in topics_b


def test_postgres_round_trips_rows(postgres_url: str) -> None:
    engine = sa.create_engine(postgres_url)
    rows = [{"id": i, "name": f"n{i}", "amount": i * 1.5} for i in range(1000)]
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE orders (id int primary key, name text, amount float8)"))
        conn.execute(sa.text("INSERT INTO orders VALUES (:id, :name, :amount)"), rows)
    with engine.connect() as conn:
        count, total, last = conn.execute(
            sa.text("SELECT count(*), sum(amount), max(name) FROM orders")).one()
        version = conn.execute(sa.text("SHOW server_version")).scalar_one()
    engine.dispose()

    assert count == 1000
    assert total == sum(r["amount"] for r in rows)
    assert last == "n999"
    assert int(version.split(".")[0]) >= 13


def test_redis_queues_and_returns_a_thousand_messages_in_order_and_is_gone_after_stop() -> None:
    import redis

    with LocalRedis(name="redis-test") as server:
        client = redis.Redis.from_url(server.url)
        client.rpush("queue", *[f"m{i}".encode() for i in range(1000)])
        assert client.llen("queue") == 1000
        assert [client.lpop("queue") for _ in range(3)] == [b"m0", b"m1", b"m2"]
        client.close()
        workdir = server.workdir
    assert not server.ping()
    assert workdir is not None and not workdir.exists()


def test_moto_s3_stores_and_returns_object_bytes(s3_server: LocalS3, s3_bucket: str) -> None:
    client = s3_server.client()
    payload = bytes(range(256)) * 4096

    client.put_object(Bucket=s3_bucket, Key="topics/t/partition=0/a.bin", Body=payload)
    fetched = client.get_object(Bucket=s3_bucket, Key="topics/t/partition=0/a.bin")["Body"].read()
    listed = client.list_objects_v2(Bucket=s3_bucket, Prefix="topics/")["Contents"]

    assert fetched == payload
    assert [o["Key"] for o in listed] == ["topics/t/partition=0/a.bin"]
    assert listed[0]["Size"] == 256 * 4096
