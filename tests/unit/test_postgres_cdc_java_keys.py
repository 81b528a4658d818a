"""Key values beyond Integer/Long/String in the incremental snapshot's offsets, byte for byte as the JVM.

Each expected hex below is ``ObjectOutputStream.writeObject(new Object[]{...})`` printed by OpenJDK
17.0.15 (``TZ=UTC``) with Debezium 3.6.1's jars on the class path, for the values Debezium's
``PostgresConnection.getColumnValue`` returns for those key columns: ``java.util.UUID`` (uuid),
``java.sql.Date`` (date), ``String`` (timestamp/timestamptz text), ``Long`` (int8) and
``java.math.BigDecimal`` (numeric: Debezium's ``keyFromRow`` unwraps its ``SpecialValueDecimal``). The
Java calls are named in each case; the bytes after the common ``Object[]`` header are listed.
"""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

import pytest

from kopycat.connectors.postgres_cdc.events import ColumnInfo, TableEvents
from kopycat.connectors.postgres_cdc.java_keys import JavaKeyError, KeyValue, read_keys, write_keys
from kopycat.connectors.postgres_cdc.snapshot_keys import UnsupportedKeyError, key_kinds, key_values

_ARRAY = "aced0005757200135b4c6a6176612e6c616e672e4f626a6563743b90ce589f1073296c0200007870"
_U1, _U2 = uuid.UUID("123e4567-e89b-12d3-a456-426614174000"), uuid.UUID("ffffffff-0000-0000-0000-000000000001")
VALUES: dict[str, tuple[list[KeyValue], list[str]]] = {
    "uuid": ([_U1], ["UUID"]),  # UUID.fromString("123e4567-...")
    "uuid2": ([_U1, _U2], ["UUID", "UUID"]),  # the second UUID's class is a reference
    "date": ([dt.date(2024, 2, 29)], ["Date"]),  # java.sql.Date.valueOf("2024-02-29")
    "date2": ([dt.date(1969, 12, 31), dt.date(2024, 2, 29)], ["Date", "Date"]),  # a negative time
    "ts": (["2024-01-01 10:00:00.5+00", 7], ["String", "Long"]),  # a timestamptz as getString, then 7L
    "long composite": ([5_000_000_000, -3, 5_000_000_000], ["Long", "Long", "Long"]),  # uncached boxes
    "dec": ([Decimal("12.50")], ["Decimal"]),  # new BigDecimal("12.50")
    "dec2": ([Decimal("-123456789012345678901234.5"), Decimal("0")], ["Decimal", "Decimal"]),
}
JVM = {
    "uuid": "000000017372000e6a6176612e7574696c2e55554944bc9903f7986d852f0200024a000c6c656173"
        "74536967426974734a000b6d6f7374536967426974737870a456426614174000123e4567e89b12d3",
    "uuid2": "000000027372000e6a6176612e7574696c2e55554944bc9903f7986d852f0200024a000c6c656173"
        "74536967426974734a000b6d6f7374536967426974737870a456426614174000123e4567e89b12d3"
        "7371007e00020000000000000001ffffffff00000000",
    "date": "000000017372000d6a6176612e73716c2e4461746514fa46683f3566970200007872000e6a617661"
        "2e7574696c2e44617465686a81014b597419030000787077080000018df229280078",
    "date2": "000000027372000d6a6176612e73716c2e4461746514fa46683f3566970200007872000e6a617661"
        "2e7574696c2e44617465686a81014b59741903000078707708fffffffffad9a400787371007e0002"
        "77080000018df229280078",
    "ts": "00000002740018323032342d30312d30312031303a30303a30302e352b30307372000e6a6176612e"
        "6c616e672e4c6f6e673b8be490cc8f23df0200014a000576616c7565787200106a6176612e6c616e"
        "672e4e756d62657286ac951d0b94e08b02000078700000000000000007",
    "long composite": "000000037372000e6a6176612e6c616e672e4c6f6e673b8be490cc8f23df0200014a000576616c75"
        "65787200106a6176612e6c616e672e4e756d62657286ac951d0b94e08b0200007870000000012a05"
        "f2007371007e0002fffffffffffffffd7371007e0002000000012a05f200",
    "dec": "00000001737200146a6176612e6d6174682e426967446563696d616c54c71557f981284f03000249"
        "00057363616c654c0006696e7456616c7400164c6a6176612f6d6174682f426967496e7465676572"
        "3b787200106a6176612e6c616e672e4e756d62657286ac951d0b94e08b0200007870000000027372"
        "00146a6176612e6d6174682e426967496e74656765728cfc9f1fa93bfb1d03000649000862697443"
        "6f756e744900096269744c656e67746849001366697273744e6f6e7a65726f427974654e756d4900"
        "0c6c6f776573745365744269744900067369676e756d5b00096d61676e69747564657400025b4278"
        "71007e0004fffffffffffffffffffffffefffffffe00000001757200025b42acf317f8060854e002"
        "000078700000000204e27878",
    "dec2": "00000002737200146a6176612e6d6174682e426967446563696d616c54c71557f981284f03000249"
        "00057363616c654c0006696e7456616c7400164c6a6176612f6d6174682f426967496e7465676572"
        "3b787200106a6176612e6c616e672e4e756d62657286ac951d0b94e08b0200007870000000017372"
        "00146a6176612e6d6174682e426967496e74656765728cfc9f1fa93bfb1d03000649000862697443"
        "6f756e744900096269744c656e67746849001366697273744e6f6e7a65726f427974654e756d4900"
        "0c6c6f776573745365744269744900067369676e756d5b00096d61676e69747564657400025b4278"
        "71007e0004fffffffffffffffffffffffefffffffeffffffff757200025b42acf317f8060854e002"
        "000078700000000b01056e0f36a6443de2df7978787371007e0002000000007371007e0006ffffff"
        "fffffffffffffffffefffffffe000000007571007e0009000000007878",
}


@pytest.mark.parametrize("case", list(VALUES))
def test_key_values_are_written_and_read_as_the_jvm_serializes_them(case: str) -> None:
    values, kinds = VALUES[case]
    assert write_keys(values, kinds) == _ARRAY + JVM[case]  # type: ignore[arg-type]
    assert read_keys(_ARRAY + JVM[case]) == values


def test_decimals_keep_every_digit_and_their_scale() -> None:
    wide = Decimal("-" + "9" * 40 + ".000100")
    [back] = read_keys(write_keys([wide], ["Decimal"])) or []
    assert (back, str(back)) == (wide, str(wide))


def test_a_numeric_key_that_is_not_a_number_is_refused_before_anything_is_stored() -> None:
    with pytest.raises(JavaKeyError, match="NaN and infinities cannot be stored"):
        write_keys([Decimal("NaN")], ["Decimal"])


def _table(*columns: tuple[str, int], key: tuple[str, ...] = ("id",)) -> TableEvents:
    infos = [ColumnInfo(name, oid, -1, False) for name, oid in columns]
    return TableEvents("p", "d", "public", "items", infos, list(key), decimal_mode="precise", time_mode="adaptive")


def test_key_columns_map_to_debeziums_java_classes_and_their_texts_to_values() -> None:
    table = _table(("a", 2950), ("b", 1700), ("c", 1082), ("d", 1184), ("e", 20), ("f", 25),
                   key=("a", "b", "c", "d", "e"))
    kinds = key_kinds(table, str)
    assert kinds == ["UUID", "Decimal", "Date", "String", "Long"]
    texts = [str(_U1), "12.50", "2024-02-29", "2024-01-01 10:00:00.5+00", "5000000000", "x"]
    assert key_values(texts, table.key_index, kinds) == [_U1, Decimal("12.50"), dt.date(2024, 2, 29),
                                                          "2024-01-01 10:00:00.5+00", 5_000_000_000]


def test_a_key_the_offsets_cannot_carry_is_refused_naming_table_column_type_and_fix() -> None:
    with pytest.raises(UnsupportedKeyError) as error:
        key_kinds(_table(("id", 869)), lambda oid: {869: "inet"}[oid])
    assert str(error.value).startswith("table public.items: primary key column id has type inet (oid 869)")
    assert "snapshot.mode=initial under a new slot.name" in str(error.value)
    with pytest.raises(UnsupportedKeyError, match="public.items has no primary key.*ADD PRIMARY KEY"):
        key_kinds(_table(("id", 23), key=()), str)


# new Object[]{new SpecialValueDecimal(new BigDecimal("-7.125"))}: the wrapper a Debezium key held before keyFromRow
_SPECIAL_VALUE_DECIMAL = ("0000000173720024696f2e646562657a69756d2e646174612e5370656369616c56616c7565446563696d616c"
                          "00000000000000010200024c000c646563696d616c56616c75657400164c6a6176612f6d6174682f42696744"
                          "6563696d616c3b4c000c7370656369616c56616c75657400334c696f2f646562657a69756d2f646174612f53"
                          "70656369616c56616c7565446563696d616c245370656369616c56616c75653b7870737200146a6176612e6d"
                          "6174682e426967446563696d616c54c71557f981284f0300024900057363616c654c0006696e7456616c7400"
                          "164c6a6176612f6d6174682f426967496e74656765723b787200106a6176612e6c616e672e4e756d62657286"
                          "ac951d0b94e08b020000787000000003737200146a6176612e6d6174682e426967496e74656765728cfc9f1f"
                          "a93bfb1d030006490008626974436f756e744900096269744c656e67746849001366697273744e6f6e7a6572"
                          "6f427974654e756d49000c6c6f776573745365744269744900067369676e756d5b00096d61676e6974756465"
                          "7400025b427871007e0008fffffffffffffffffffffffefffffffeffffffff757200025b42acf317f8060854"
                          "e00200007870000000021bd5787870")


def test_a_key_wrapped_in_debeziums_special_value_decimal_reads_as_its_number() -> None:
    assert read_keys(_ARRAY + _SPECIAL_VALUE_DECIMAL) == [Decimal("-7.125")]
