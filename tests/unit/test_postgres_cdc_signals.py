"""Signal rows, the incremental snapshot's keys and its config keys, without a database.

The Java bytes below were written by ``ObjectOutputStream.writeObject(new Object[]{...})`` on
OpenJDK 17, which is how Debezium's ``AbstractIncrementalSnapshotContext`` stores
``incremental_snapshot_primary_key``: a Debezium taking over must read Kopycat's bytes and the reverse.
"""

from __future__ import annotations

import pytest

from kopycat.api.errors import ConfigError, ConnectError
from kopycat.connectors.postgres_cdc.config import CdcSettings
from kopycat.connectors.postgres_cdc.incremental_snapshot import IncrementalSnapshot
from kopycat.connectors.postgres_cdc.java_keys import JavaKeyError, read_keys, write_keys
from kopycat.connectors.postgres_cdc.signals import (
    Signal,
    SignalError,
    additional_conditions,
    snapshot_collections,
    snapshot_type,
)

_ARRAY = "aced0005757200135b4c6a6176612e6c616e672e4f626a6563743b90ce589f1073296c0200007870"
_INTEGER = ("737200116a6176612e6c616e672e496e746567657212e2a0a4f781873802000149000576616c756578"
            "7200106a6176612e6c616e672e4e756d62657286ac951d0b94e08b0200007870")
JAVA = {
    "int 42": ([42], ["Integer"], f"{_ARRAY}00000001{_INTEGER}0000002a"),
    "long 42": ([42], ["Long"], f"{_ARRAY}000000017372000e6a6176612e6c616e672e4c6f6e673b8be490cc8f23df0200014a0005"
                                "76616c7565787200106a6176612e6c616e672e4e756d62657286ac951d0b94e08b0200007870"
                                "000000000000002a"),
    "string": (["ab"], ["String"], f"{_ARRAY}000000017400026162"),
    "two ints": ([1, 2], ["Integer", "Integer"], f"{_ARRAY}00000002{_INTEGER}000000017371007e000200000002"),
    "int long string": ([1, 2, "x"], ["Integer", "Long", "String"],
                        f"{_ARRAY}00000003{_INTEGER}000000017372000e6a6176612e6c616e672e4c6f6e673b8be490cc8f23df"
                        "0200014a000576616c75657871007e0003000000000000000274000178"),
    "same cached int twice": ([1, 1], ["Integer", "Integer"], f"{_ARRAY}00000002{_INTEGER}0000000171007e0004"),
}


@pytest.mark.parametrize("case", list(JAVA))
def test_keys_are_written_and_read_as_java_serializes_an_object_array(case: str) -> None:
    values, kinds, java = JAVA[case]
    assert write_keys(values, kinds) == java
    assert read_keys(java) == values


def test_a_null_key_array_and_large_ints_round_trip() -> None:
    assert write_keys(None, ["Integer"]) == "aced000570"
    assert read_keys("aced000570") is None
    assert read_keys(write_keys([1000, 1000, -5], ["Integer", "Integer", "Long"])) == [1000, 1000, -5]
    with pytest.raises(JavaKeyError, match="not a serialized key array"):
        read_keys("aced0005deadbeef")


def test_execute_snapshot_selects_names_and_patterns_of_captured_tables_in_signal_order() -> None:
    captured = ["public.a", "public.b", "sales.c"]
    data = '{"data-collections": ["sales.c", "public\\\\..*"], "type": "incremental"}'
    signal = Signal("s1", "execute-snapshot", data)
    assert snapshot_collections(signal, captured) == ["sales.c", "public.a", "public.b"]
    assert snapshot_collections(Signal("s2", "stop-snapshot", '{"type": "incremental"}'), captured) == captured


@pytest.mark.parametrize(("data", "message"), [
    ('{"data-collections": ["public.a"], "type": "snapshot-all"}', "type 'snapshot-all' is not supported"),
    ('{"data-collections": []}', "give a non-empty list of <schema>.<table> names"),
    ('{"data-collections": ["public.zzz"]}', "match no captured table"),
    ("not json", "is not JSON"),
])
def test_a_bad_execute_snapshot_signal_names_the_field_the_value_and_the_fix(data: str, message: str) -> None:
    with pytest.raises(SignalError, match=message):
        snapshot_collections(Signal("s9", "execute-snapshot", data), ["public.a"])


BASE = {"topic.prefix": "p", "database.hostname": "h", "database.user": "u", "database.dbname": "d"}


def test_signal_and_chunk_keys_parse_with_debezium_defaults() -> None:
    settings = CdcSettings.parse({**BASE, "signal.data.collection": "public.dbz_signal"})
    assert (settings.signal_table, settings.chunk_size) == (("public", "dbz_signal"), 1024)
    assert CdcSettings.parse(BASE).signal_table is None


@pytest.mark.parametrize(("key", "value", "message"), [
    ("signal.data.collection", "dbz_signal", "give the signal table as <schema>.<table>"),
    ("signal.data.collection", "db.public.dbz_signal", "give the signal table as <schema>.<table>"),
    ("signal.enabled.channels", "source,kafka", "set signal.enabled.channels=source"),
    ("incremental.snapshot.chunk.size", "0", "incremental.snapshot.chunk.size"),
    ("incremental.snapshot.watermarking.strategy", "insert_delete", "insert_delete"),
])
def test_a_bad_signal_or_chunk_value_names_the_key_and_the_value(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as error:
        CdcSettings.parse({**BASE, key: value})
    assert key in str(error.value) and value.split(",")[-1] in str(error.value)


def test_a_stored_incremental_snapshot_resumes_after_its_key_and_a_bad_one_says_how_to_drop_it() -> None:
    settings = CdcSettings.parse({**BASE, "signal.data.collection": "public.dbz_signal"})
    stored = {"lsn": 10, "incremental_snapshot_collections":
              '[{"incremental_snapshot_collections_id":"public.items",'
              '"incremental_snapshot_collections_additional_condition":null,'
              '"incremental_snapshot_collections_surrogate_key":null}]',
              "incremental_snapshot_primary_key": JAVA["int 42"][2], "incremental_snapshot_maximum_key": "aced000570"}
    snapshot = IncrementalSnapshot(settings, {"server": "p"}, ["public.items"], stored)
    assert (snapshot.collections, snapshot.position, snapshot.maximum, snapshot.start_due) == (
        ["public.items"], [42], None, True)
    with pytest.raises(ConnectError, match="store the offset without the incremental_snapshot_\\* keys"):
        IncrementalSnapshot(settings, {"server": "p"}, [], {**stored, "incremental_snapshot_primary_key": "zz"})


def test_execute_snapshot_types_are_incremental_by_default_or_blocking() -> None:
    assert snapshot_type(Signal("s1", "execute-snapshot", '{"data-collections": ["public.a"]}')) == "incremental"
    assert snapshot_type(Signal("s2", "execute-snapshot", '{"data-collections": ["public.a"], "type": "BLOCKING"}')) \
        == "blocking"


def test_additional_conditions_match_tables_case_insensitively_and_bad_entries_say_how() -> None:
    data = ('{"data-collections": ["public.a", "public.b"], "additional-conditions": '
            '[{"data-collection": "PUBLIC\\\\.A", "filter": "x > 1"}, {"data-collection": ".*", "filter": "y = 2"}]}')
    assert additional_conditions(Signal("s1", "execute-snapshot", data), ["public.a", "public.b"]) == \
        {"public.a": "x > 1", "public.b": "y = 2"}
    with pytest.raises(SignalError, match="needs a data-collection and a non-empty filter"):
        additional_conditions(Signal("s2", "execute-snapshot", '{"additional-conditions": [{"filter": "x"}]}'), [])
    with pytest.raises(SignalError, match="surrogate-key 'k' is not supported"):
        additional_conditions(Signal("s3", "execute-snapshot", '{"surrogate-key": "k"}'), [])
