"""The offsets topic's bytes must be Kafka Connect's, or a Java worker will not find them.

Golden bytes were captured from Kafka 4.1.1's ``JsonConverter`` (schemas.enable=false, JDK 17)
with ``java/OffsetOracle.java`` (``goldens`` command), which builds each partition map the way
its connector does; ``test_java_oracle.py`` re-checks them when a JVM and the jars are present.
"""

from __future__ import annotations

import pytest

from kopycat.api.errors import DataError
from kopycat.storage.offset_codec import (
    canonical_key,
    decode_key,
    decode_value,
    default_partition,
    encode_key,
    encode_value,
    java_hash_map_order,
    java_ordered,
    java_string_hash,
    murmur2,
    to_positive,
    validate_format,
)

JDBC_KEY = b'["jdbc-orders",{"protocol":"1","table":"db.public.orders"}]'
JDBC_VALUE = b'{"timestamp_nanos":123000000,"incrementing":4711,"timestamp":1714521600000}'
MIRROR_KEY = b'["mm2",{"cluster":"a","partition":0,"topic":"t"}]'
FILE_KEY = b'["local-file-source",{"filename":"/x"}]'
TEXT_KEY = (b'["conn\xc3\xa9",{"name":"caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \\uD83D\\uDE00 \\"q\\" \\\\ / '
            b'\\t\\n\\u0001\\u001F\x7f\xe2\x80\xa8"}]')
NUMBERS_VALUE = (b'{"d":1.0E10,"e":0.001,"f":1.5,"g":-0.0,"h":123456789012,"i":true,"j":null,'
                 b'"k":"AQID","l":1.0E-4,"m":100.0}')
TEXT = "caf\u00e9 \u65e5\u672c \U0001F600 \"q\" \\ / \t\n\x01\x1f\x7f\u2028"


# ------------------------------------------------------------------ golden bytes (Kafka 4.1.1)

def test_jdbc_partition_key_is_kafka_connects_bytes_whatever_the_python_order() -> None:
    # The JDBC connector puts "table" first, yet Java iterates "protocol" first (see below).
    assert encode_key("jdbc-orders", {"table": "db.public.orders", "protocol": "1"}) == JDBC_KEY
    assert encode_key("jdbc-orders", {"protocol": "1", "table": "db.public.orders"}) == JDBC_KEY


def test_jdbc_offset_value_is_kafka_connects_bytes() -> None:
    offset = {"incrementing": 4711, "timestamp": 1714521600000, "timestamp_nanos": 123000000}
    assert encode_value(offset) == JDBC_VALUE
    # TimestampIncrementingOffset.toMap presizes: new HashMap<>(3) has 4 buckets, same order here.
    assert encode_value(offset, initial_capacity=3) == JDBC_VALUE


def test_mirror_maker_partition_key_is_kafka_connects_bytes() -> None:
    # MirrorUtils.wrapPartition puts topic, partition, cluster into a HashMap.
    assert encode_key("mm2", {"topic": "t", "partition": 0, "cluster": "a"}) == MIRROR_KEY
    assert encode_value({"offset": 42}) == b'{"offset":42}'


def test_file_stream_source_key_and_value_are_kafka_connects_bytes() -> None:
    assert encode_key("local-file-source", {"filename": "/x"}) == FILE_KEY
    assert encode_value({"position": 1234}) == b'{"position":1234}'


def test_strings_are_escaped_as_jackson_writes_them() -> None:
    # Raw UTF-8 for BMP characters (also U+2028 and DEL), short escapes, upper-case \u001F,
    # and characters outside the BMP as an escaped surrogate pair.
    assert encode_key("conn\u00e9", {"name": TEXT}) == TEXT_KEY


def test_numbers_are_formatted_as_jackson_writes_them() -> None:
    offset = {"d": 1.0e10, "e": 0.001, "f": 1.5, "g": -0.0, "h": 123456789012, "i": True, "j": None,
              "k": b"\x01\x02\x03", "l": 1.0e-4, "m": 100.0}
    # ten keys are no more than one per bucket at 16: HashMap order is a..m order here
    assert encode_value(offset) == NUMBERS_VALUE


def test_null_and_empty_partitions_and_tombstones() -> None:
    assert encode_key("c", None) == b'["c",null]'
    assert encode_key("c", {}) == b'["c",{}]'
    assert encode_value(None) is None
    assert decode_value(None) is None


def test_keys_land_where_the_java_partitioner_puts_them() -> None:
    # Utils.toPositive(Utils.murmur2(key)) % 25, computed by Kafka 4.1.1 for these exact bytes.
    assert default_partition(JDBC_KEY, 25) == 1
    assert default_partition(MIRROR_KEY, 25) == 22
    assert default_partition(FILE_KEY, 25) == 24


# ------------------------------------------------------------------ HashMap iteration order

def test_string_hash_codes_match_java() -> None:
    # String.hashCode() values printed by Java.
    assert java_string_hash("protocol") == -989163880
    assert java_string_hash("table") == 110115790
    assert java_string_hash("partition") == -1799810326
    assert java_string_hash("caf\u00e9") == 3045921
    assert java_string_hash("\U0001F600") == 1772899  # two UTF-16 code units: 0xD83D, 0xDE00
    assert java_string_hash("") == 0


def test_hash_map_order_follows_buckets_not_insertion() -> None:
    # Bucket = (h ^ (h >>> 16)) & 15 in a default 16-bucket table:
    #   "protocol" h=0xc50a8e98 -> spread 0xc50a4b92 -> bucket 2
    #   "table"    h=0x06903bce -> spread 0x06903d5e -> bucket 14
    # so Java iterates protocol before table, whichever was put first.
    assert java_hash_map_order(["table", "protocol"]) == ["protocol", "table"]
    assert java_hash_map_order(["protocol", "table"]) == ["protocol", "table"]
    #   "topic" -> bucket 9, "partition" -> bucket 3, "cluster" -> bucket 1
    assert java_hash_map_order(["topic", "partition", "cluster"]) == ["cluster", "partition", "topic"]
    # "b" is 98 -> bucket 2, "a" is 97 -> bucket 1.
    assert java_hash_map_order(["b", "a"]) == ["a", "b"]


def test_hash_map_order_keeps_insertion_order_within_a_bucket() -> None:
    # "Aa" and "BB" have the same hashCode (2112) and share bucket 0; "a" (97) and "q" (113)
    # differ but share bucket 1 at 16 buckets: both pairs keep insertion order.
    assert java_hash_map_order(["Aa", "BB"]) == ["Aa", "BB"]
    assert java_hash_map_order(["BB", "Aa"]) == ["BB", "Aa"]
    assert java_hash_map_order(["q", "a"]) == ["q", "a"]


def test_hash_map_order_after_the_table_grows() -> None:
    # The 13th key passes 16 * 0.75: the table doubles to 32 buckets and bucket = spread & 31.
    # Expected order printed by Java 17 for these insertions.
    keys = [f"f{chr(ord('a') + 12 - i)}{i}" for i in range(13)]
    assert java_hash_map_order(keys) == [
        "fm0", "fl1", "fk2", "fj3", "fi4", "fh5", "fc10", "fb11", "fa12", "fg6", "ff7", "fe8", "fd9"]
    keys = [f"key{i}" for i in range(19, -1, -1)]
    assert java_hash_map_order(keys) == [
        "key1", "key2", "key0", "key5", "key6", "key3", "key4", "key9", "key7", "key8", "key11",
        "key10", "key15", "key14", "key13", "key12", "key19", "key18", "key17", "key16"]


def test_hash_map_order_with_a_presized_table() -> None:
    # new HashMap<>(2): 2 buckets, growing to 4 at the 2nd key (threshold 1), as Java prints.
    assert java_hash_map_order(["topic", "partition", "cluster"], initial_capacity=2) == [
        "topic", "cluster", "partition"]
    assert java_hash_map_order(["topic", "partition", "cluster", "a", "b"], initial_capacity=0) == [
        "topic", "cluster", "a", "b", "partition"]


def test_hash_map_order_when_a_crowded_bucket_forces_a_resize() -> None:
    # Nine keys with one hashCode fill one bucket; a 9th node in a table smaller than 64 makes
    # treeifyBin double the table instead, which moves "y" (121) and "x" (120) behind them.
    colliding = ["AaAaAaAa", "AaAaAaBB", "AaAaBBAa", "AaAaBBBB", "AaBBAaAa", "AaBBAaBB", "AaBBBBAa",
                 "AaBBBBBB", "BBAaAaAa"]
    assert java_hash_map_order(["y", *colliding, "x"]) == [*colliding, "x", "y"]


def test_java_ordered_reorders_a_dict_and_leaves_values() -> None:
    assert list(java_ordered({"table": "t", "protocol": "1"}).items()) == [("protocol", "1"), ("table", "t")]


# ------------------------------------------------------------------ murmur2

@pytest.mark.parametrize(("data", "expected"), [
    # Kafka's UtilsTest.testMurmur2
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (bytes([ord("a"), ord("b"), ord("c")]), 479470107),
], ids=lambda v: v.decode() if isinstance(v, bytes) else str(v))
def test_murmur2_matches_kafkas_test_vectors(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


def test_to_positive_clears_the_sign_bit_like_kafka() -> None:
    assert to_positive(-973932308) == 1173551340
    assert to_positive(-(2**31)) == 0
    assert to_positive(5) == 5


# ------------------------------------------------------------------ reading back

def test_keys_decode_in_any_order_to_one_identity() -> None:
    java_order = b'["c",{"protocol":"1","table":"t"}]'
    other_order = b'["c",{"table":"t","protocol":"1"}]'
    assert decode_key(other_order) == ("c", {"table": "t", "protocol": "1"})
    assert canonical_key(java_order) == canonical_key(other_order)


def test_canonical_keys_keep_java_types_apart() -> None:
    assert canonical_key(b'["c",{"p":1}]') != canonical_key(b'["c",{"p":1.0}]')
    assert canonical_key(b'["c",{"p":1}]') != canonical_key(b'["c",{"p":true}]')
    assert canonical_key(b'["c",{"p":1}]') != canonical_key(b'["d",{"p":1}]')


def test_values_written_by_java_decode() -> None:
    assert decode_value(NUMBERS_VALUE) == {
        "d": 1.0e10, "e": 0.001, "f": 1.5, "g": -0.0, "h": 123456789012, "i": True, "j": None,
        "k": "AQID", "l": 1.0e-4, "m": 100.0}
    assert decode_key(TEXT_KEY) == ("conn\u00e9", {"name": TEXT})


@pytest.mark.parametrize("data", [b'{"a":1}', b'["c"]', b'[1,{}]', b'["c",[1]]', b"not json"],
                         ids=["object", "one element", "number name", "list partition", "not json"])
def test_keys_of_another_shape_are_refused_and_have_no_identity(data: bytes) -> None:
    with pytest.raises(DataError):
        decode_key(data)
    assert canonical_key(data) is None


def test_a_value_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(DataError, match="JSON object"):
        decode_value(b"[1]")


# ------------------------------------------------------------------ format checks

@pytest.mark.parametrize(("data", "message"), [
    (["not", "a", "dict"], "must be specified as a dict"),
    ({1: "x"}, "str keys"),
    ({"k": [1, 2]}, "field 'k' contains list"),
    ({"k": {"nested": 1}}, "field 'k' contains dict"),
    ({"k": 2**63}, "outside Java's long range"),
], ids=["list", "int key", "list value", "dict value", "too big"])
def test_offsets_that_kafka_connect_could_not_hold_are_refused(data: object, message: str) -> None:
    with pytest.raises(DataError, match=message):
        validate_format(data)
    with pytest.raises(DataError, match=message):
        encode_key("c", data)  # type: ignore[arg-type]


def test_primitive_values_and_none_are_valid() -> None:
    validate_format(None)
    validate_format({"s": "x", "i": -(2**63), "f": 1.5, "b": False, "y": b"\x00", "n": None})
