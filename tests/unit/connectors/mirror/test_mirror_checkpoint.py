"""MirrorCheckpointConnector pieces: MM2's checkpoint bytes, OffsetSyncStore translation, filters, split."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from kopycat.api.errors import ConfigError, DataError
from kopycat.connectors.mirror.checkpoint import (
    Checkpoint,
    CheckpointStore,
    decode_checkpoint,
    encode_checkpoint_key,
    encode_checkpoint_value,
)
from kopycat.connectors.mirror.checkpoint_config import CheckpointSettings
from kopycat.connectors.mirror.checkpoint_connector import MirrorCheckpointConnector
from kopycat.connectors.mirror.checkpoint_task import MirrorCheckpointTask
from kopycat.connectors.mirror.offset_sync import OffsetSync
from kopycat.connectors.mirror.offset_sync_store import SYNCS_PER_PARTITION, OffsetSyncStore
from kopycat.plugins import connector_class

PROPS = {"name": "cp", "connector.class": "MirrorCheckpointConnector", "source.cluster.alias": "us",
         "target.cluster.alias": "eu", "source.cluster.bootstrap.servers": "src:9092",
         "target.cluster.bootstrap.servers": "tgt:9092"}
TOPIC, PARTITION = "topic1", 2


# ------------------------------------------------------------------------------------ encoding

def test_the_key_is_group_and_topic_as_protocol_strings_then_the_partition_as_int32() -> None:
    key = encode_checkpoint_key(Checkpoint("g1", "us.t", 3, 5, 7, "m"))
    assert key == b"\x00\x02g1" + b"\x00\x04us.t" + b"\x00\x00\x00\x03"


def test_the_value_is_version_0_upstream_downstream_and_metadata() -> None:
    value = encode_checkpoint_value(Checkpoint("g1", "us.t", 3, 0x0102030405060708, 258, "m"))
    assert value == (b"\x00\x00" + bytes([1, 2, 3, 4, 5, 6, 7, 8]) + b"\x00\x00\x00\x00\x00\x00\x01\x02"
                     + b"\x00\x01m")
    assert encode_checkpoint_value(Checkpoint("g", "t", 0, 0, 0))[-2:] == b"\x00\x00"  # no metadata: ""


def test_a_checkpoint_decodes_back_to_itself_and_garbage_is_a_data_error() -> None:
    checkpoint = Checkpoint("gr\u00fcppe", "us.orders", 11, 2**40, 17, "meta")
    assert decode_checkpoint(encode_checkpoint_key(checkpoint), encode_checkpoint_value(checkpoint)) == checkpoint
    assert checkpoint.connect_partition() == {"group": "gr\u00fcppe", "topic": "us.orders", "partition": 11}
    with pytest.raises(DataError, match="Not an MM2 checkpoint"):
        decode_checkpoint(b"\x00\x02g1", b"\x00")
    with pytest.raises(DataError, match="version 1"):
        decode_checkpoint(b"\x00\x01g\x00\x01t\x00\x00\x00\x00", struct.pack(">hqq", 1, 1, 1) + b"\x00\x00")


# ------------------------------------------------------------------------------------ translation

def loaded(initial: list[tuple[int, int]], must_read_to_end: bool = True) -> OffsetSyncStore:
    """A store that read ``initial`` (upstream, downstream) syncs while starting, as from the topic."""
    store = OffsetSyncStore()
    store.initialization_must_read_to_end = must_read_to_end
    for upstream, downstream in initial:
        store.handle(OffsetSync(TOPIC, PARTITION, upstream, downstream))
    store.start(must_read_to_end)
    return store


def sync(store: OffsetSyncStore, upstream: int, downstream: int) -> None:
    store.handle(OffsetSync(TOPIC, PARTITION, upstream, downstream))


def translate(store: OffsetSyncStore, upstream: int) -> int | None:
    return store.translate_downstream("g", TOPIC, PARTITION, upstream)


def test_nothing_is_translated_before_the_initial_read_or_without_a_sync() -> None:
    store = OffsetSyncStore()
    sync(store, 100, 200)
    assert translate(store, 100) is None  # initial read unfinished
    store.start(True)
    assert translate(store, 100) == 200
    assert store.translate_downstream("g", "other", 0, 100) is None


def test_translation_never_skips_a_record_before_at_between_and_after_syncs() -> None:
    store = loaded([])
    sync(store, 100, 200)
    assert translate(store, 5) == -1  # before the first sync: too old to translate
    assert translate(store, 100) == 200  # equal to a sync
    assert translate(store, 150) == 201  # after the last sync: one past it, never further
    sync(store, 150, 251)
    assert translate(store, 150) == 251
    assert translate(store, 120) == 201  # between syncs: one past the sync below
    assert translate(store, 10_000) == 252


def test_a_downstream_or_upstream_reset_starts_over_from_the_new_sync() -> None:
    store = loaded([(100, 200), (150, 251)])
    sync(store, 200, 10)
    assert translate(store, 200) == 10
    sync(store, 20, 20)  # upstream rewind: older syncs are all invalid
    assert translate(store, 20) == 20 and translate(store, 19) == -1 and translate(store, 150) == 21


def assert_sparse_sync(store: OffsetSyncStore, sync_offset: int, previous: int) -> None:
    """Kafka's ``assertSparseSync``: the translation around one stored sync."""
    assert translate(store, sync_offset - 1) == (previous if previous == -1 else previous + 1)
    assert translate(store, sync_offset) == sync_offset
    assert translate(store, sync_offset + 1) == sync_offset + 1
    assert translate(store, sync_offset + 2) == sync_offset + 1


def assert_invariants(store: OffsetSyncStore) -> None:
    syncs = store.syncs(TOPIC, PARTITION)
    for j in range(SYNCS_PER_PARTITION):
        for i in range(j):
            up_i, up_j = syncs[i].upstream_offset, syncs[j].upstream_offset
            if up_i == up_j:
                continue
            lower = up_j + (1 << max(i - 2, 0))
            assert up_i >= lower, (i, j)
            upper = up_j + (1 << j) - (1 << i)
            if upper < 2**63:
                assert up_i <= upper, (i, j)


def test_many_syncs_keep_kafkas_exponentially_spaced_history() -> None:
    """The exact syncs Kafka's ``testPastOffsetTranslation`` expects to be kept."""
    store = loaded([(offset, offset) for offset in range(0, 1001, 10)], must_read_to_end=True)
    assert_sparse_sync(store, 1000, -1)
    for offset in range(1010, 10_001, 10):
        sync(store, offset, offset)
        assert_invariants(store)
    assert_sparse_sync(store, 1000, -1)
    for sync_offset, previous in [(4840, 1000), (6760, 4840), (8680, 6760), (9160, 8680), (9640, 9160),
                                  (9880, 9640), (9940, 9880), (9970, 9940), (9990, 9970), (10000, 9990)]:
        assert_sparse_sync(store, sync_offset, previous)
    sync(store, 1500, 11_000)
    assert translate(store, 1499) == -1 and translate(store, 1500) == 11_000 and translate(store, 2000) == 11_001


def test_without_previous_checkpoints_the_initial_read_keeps_history_as_kafka_does() -> None:
    """Kafka's ``testPastOffsetTranslationWithoutInitializationReadToEnd``."""
    store = loaded([(offset, offset) for offset in range(0, 1001, 10)], must_read_to_end=False)
    assert_sparse_sync(store, 480, 0)
    assert_sparse_sync(store, 720, 480)
    assert_sparse_sync(store, 1000, 990)
    for offset in range(1000, 10_001, 10):
        sync(store, offset, offset)
    for sync_offset, previous in [(3840, 0), (7680, 3840), (8640, 7680), (9120, 8640), (9600, 9120),
                                  (9840, 9600), (9900, 9840), (9960, 9900), (9990, 9960), (10000, 9990)]:
        assert_sparse_sync(store, sync_offset, previous)


def test_regularly_spaced_syncs_expire_at_most_one_kept_sync_each() -> None:
    for step in (1, 7, 100, 2**40 + 1):
        store = loaded([])
        sync(store, 3, 3)
        offset, last_count = 3, 1
        for _ in range(200):
            offset += step
            sync(store, offset, offset)
            syncs = store.syncs(TOPIC, PARTITION)
            assert syncs[0].upstream_offset == offset and syncs[-1].upstream_offset == 3  # invariants A and D
            count = 1 + sum(syncs[i - 1] is not syncs[i] for i in range(1, SYNCS_PER_PARTITION))
            assert last_count - count + 1 <= 1
            last_count = count


# ------------------------------------------------------------------------------------ config and split

def test_group_filter_defaults_are_mm2s() -> None:
    settings = CheckpointSettings.parse(PROPS)
    accepts = settings.group_filter.should_replicate_group
    assert accepts("orders-app") and accepts("kopycat-mirror-x")
    assert not accepts("console-consumer-123") and not accepts("connect-sink") and not accepts("__internal")
    assert settings["emit.checkpoints.interval.seconds"] == 60 and settings["sync.group.offsets.enabled"] is False
    assert settings["checkpoints.topic.replication.factor"] == 3
    assert settings.checkpoints_topic == "us.checkpoints.internal"


def test_groups_and_groups_exclude_are_whole_name_regexes_with_excludes_winning() -> None:
    settings = CheckpointSettings.parse({**PROPS, "groups": "app-.*, billing", "groups.exclude": "app-test.*"})
    accepts = settings.group_filter.should_replicate_group
    assert accepts("app-1") and accepts("billing") and not accepts("billing-2") and not accepts("app-test-1")


def test_the_target_cluster_is_required_and_checkpoints_need_offset_syncs() -> None:
    without_target = {k: v for k, v in PROPS.items() if k != "target.cluster.bootstrap.servers"}
    with pytest.raises(ConfigError, match="target.cluster.bootstrap.servers is missing"):
        CheckpointSettings.parse(without_target)
    results = {r.name: r for r in MirrorCheckpointConnector().validate({**PROPS, "emit.offset-syncs.enabled": "false"})}
    assert results["emit.offset-syncs.enabled"].errors == ["MirrorCheckpointConnector can't run without offset syncs"]


def test_the_kafka_class_name_resolves_to_the_connector() -> None:
    assert connector_class("org.apache.kafka.connect.mirror.MirrorCheckpointConnector") is MirrorCheckpointConnector
    assert connector_class("MirrorCheckpoint") is MirrorCheckpointConnector


def planned(groups: list[str], max_tasks: int, **props: Any) -> list[dict[str, str]]:
    connector = MirrorCheckpointConnector()
    connector._props = {**PROPS, **props}
    connector._settings = CheckpointSettings.parse(connector._props)
    connector._groups.replace(groups)
    return connector.task_configs(max_tasks)


def test_groups_are_dealt_round_robin_over_at_most_tasks_max_tasks() -> None:
    configs = planned(["a", "b", "c", "d", "e"], 2)
    assert [(c["task.assigned.groups"], c["task.index"]) for c in configs] == [("a,c,e", "0"), ("b,d", "1")]
    assert all(c["source.cluster.alias"] == "us" for c in configs)
    assert [c["task.assigned.groups"] for c in planned(["a", "b"], 8)] == ["a", "b"]
    assert planned([], 3) == [] and planned(["a"], 3, **{"emit.checkpoints.enabled": "false"}) == []
    assert CheckpointSettings.parse(configs[0]).task_groups == ["a", "c", "e"]


# ------------------------------------------------------------------------------------ task pieces

def test_topics_are_renamed_as_mm2_and_a_topic_from_the_target_goes_back_to_its_name() -> None:
    task = MirrorCheckpointTask()
    task._settings = CheckpointSettings.parse(PROPS)
    assert task.rename_topic("orders") == "us.orders"
    assert task.rename_topic("eu.orders") == "orders"
    assert task.rename_topic("ap.orders") == "us.ap.orders"


def test_checkpoints_only_move_forward_unless_the_group_rewound_upstream() -> None:
    store = CheckpointStore({"g"})
    assert store.load(None) is True
    first = Checkpoint("g", "us.t", 0, 100, 90)
    assert store.is_more_recent(first)
    store.update("g", {("us.t", 0): first})
    assert not store.is_more_recent(first)  # repeated
    assert not store.is_more_recent(Checkpoint("g", "us.t", 0, 120, 80))  # would move downstream back
    assert store.is_more_recent(Checkpoint("g", "us.t", 0, 120, 95))
    assert store.is_more_recent(Checkpoint("g", "us.t", 0, 50, 40))  # the group was reset upstream
    assert store.converted_upstream_offsets() == {"g": {("us.t", 0): (90, "")}}
