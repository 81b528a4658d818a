"""The development tooling: jar versions named once, free ports, bench lines, the CLI."""

from __future__ import annotations

import re
import shutil
import socket
from pathlib import Path

import pytest

from bench.common import BenchResult
from kopycat.cli import build_parser
from kopycat.dev import jars
from kopycat.dev.kafka_broker import cluster_id
from kopycat.dev.ports import free_port
from kopycat.dev.redis_server import LocalRedis, RedisStartError


def test_kafka_version_comes_from_the_pom_and_names_the_cache_dir() -> None:
    pom = (jars.POMS_DIR / "kafka" / "pom.xml").read_text()
    declared = re.search(r"<kafka.version>([^<]+)<", pom).group(1)

    assert jars.pom_version("kafka") == declared
    assert declared.startswith("4.")
    assert jars.libs_dir("kafka").parent.name == f"kafka-{declared}"


def test_cache_root_follows_kopycat_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KOPYCAT_CACHE", str(tmp_path))

    assert jars.libs_dir("kafka").is_relative_to(tmp_path)


def test_unknown_jar_set_names_the_known_ones() -> None:
    with pytest.raises(jars.JarsError, match="the sets are: .*kafka"):
        jars.pom_version("no-such-set")


def test_free_port_can_be_bound_on_loopback() -> None:
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        assert sock.getsockname()[1] == port


def test_bench_line_prints_value_anchor_and_ratio() -> None:
    assert BenchResult("json", 80_000, 100_000).line() == (
        "json: kopycat 80,000 records/s, anchor 100,000 records/s, ratio 0.80")
    assert BenchResult("raw", 1_234_567).line() == "raw: anchor 1,234,567 records/s"


def test_cli_knows_the_dev_commands() -> None:
    parser = build_parser()

    assert parser.parse_args(["dev", "demo", "--orders", "5"]).orders == 5
    assert parser.parse_args(["dev", "redis"]).func.__name__ == "_dev_redis"
    with pytest.raises(SystemExit):
        parser.parse_args(["dev", "no-such-command"])


def test_redis_without_redis_server_installed_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    server = LocalRedis(name="no-redis")

    with pytest.raises(RedisStartError,
                       match=r"no `redis-server` on PATH: run `make setup` \(or apt-get install redis-server\)"):
        server.start()
    assert server.workdir is None  # nothing was created


def test_kafka_connect_golden_jars_match_the_broker_version() -> None:
    assert jars.pom_version("connect") == jars.pom_version("kafka")


def test_cluster_ids_never_start_with_a_dash_the_storage_tool_would_read_as_an_option() -> None:
    ids = [cluster_id() for _ in range(2000)]

    assert not [i for i in ids if i.startswith("-")]
    assert all(len(i) == 22 for i in ids)
    assert len(set(ids)) == 2000


def test_new_demo_orders_are_never_stamped_before_the_orders_already_there(tmp_path: Path) -> None:
    """timestamp+incrementing skips a new row stamped before what it copied: the demo lost 49 orders
    when its second batch (stamped over the minute before) came less than a minute after the seed."""
    import datetime as dt

    from sqlalchemy import select

    from kopycat.dev.shop_db import add_orders, seed_shop, shop_metadata

    seeded_at = dt.datetime(2026, 11, 24, 0, 43, 46)
    engine = seed_shop(f"sqlite:///{tmp_path / 'shop.db'}", customers=5, orders=50, now=seeded_at)
    ids = add_orders(engine, 250, now=seeded_at + dt.timedelta(seconds=12))
    orders = shop_metadata().tables["orders"]
    with engine.connect() as conn:
        stamps = [row.updated_at for row in conn.execute(select(orders.c.id, orders.c.updated_at)
                                                         .where(orders.c.id.in_(ids)).order_by(orders.c.id))]
    assert len(stamps) == 250 and stamps == sorted(stamps)
    assert stamps[0] >= seeded_at and stamps[-1] == seeded_at + dt.timedelta(seconds=12)
    engine.dispose()


def test_dev_shop_db_creates_the_shop_the_example_dags_read_and_never_overwrites_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kopycat.cli import main
    from kopycat.dev.shop_db import row_counts

    path = tmp_path / "demo" / "shop.db"
    with pytest.raises(SystemExit) as created:
        main(["dev", "shop-db", str(path)])
    assert created.value.code == 0
    assert row_counts(f"sqlite:///{path}") == {"customers": 200, "products": 8, "orders": 2_000}
    assert "customers 200, products 8, orders 2,000" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        main(["dev", "shop-db", str(path)])
    assert refused.value.code != 0 and "exists already" in capsys.readouterr().err
    assert row_counts(f"sqlite:///{path}")["orders"] == 2_000


def test_every_jvm_logs_to_its_file_with_only_the_named_loggers_changed() -> None:
    from kopycat.dev.processes import file_log4j2_properties

    text = file_log4j2_properties("kopycat.x.log", {"org.apache.kafka.clients": "WARN", "my.logger": "DEBUG"})
    lines = text.splitlines()
    assert "appender.file.fileName = ${sys:kopycat.x.log}" in lines and "rootLogger.level = INFO" in lines
    assert lines[-4:] == ["logger.clients.name = org.apache.kafka.clients", "logger.clients.level = WARN",
                          "logger.logger1.name = my.logger", "logger.logger1.level = DEBUG"]
