"""Primary keys in the incremental snapshot's offsets: a Java-serialized ``Object[]`` in hexadecimal.

Debezium's ``AbstractIncrementalSnapshotContext`` stores ``incremental_snapshot_primary_key`` and
``incremental_snapshot_maximum_key`` as ``ObjectOutputStream.writeObject(Object[])`` bytes in hex
(``HexConverter``), so a Debezium taking over a Kopycat offset (and the reverse) must read the same
bytes. The key values are what Debezium 3.6's ``PostgresConnection.getColumnValue`` returns for the
key columns, by the Java class named in ``JavaKind``:

- ``Integer`` (int2, int4), ``Long`` (int8): ``java.lang.Integer``/``Long``, the boxes of
  ``valueOf`` (one shared object for -128..127, written once and referenced after);
- ``String``: ``java.lang.String`` (text, varchar, char; and timestamp, timestamptz, time, timetz,
  which Debezium reads with ``getString``);
- ``UUID``: ``java.util.UUID`` (uuid);
- ``Date``: ``java.sql.Date`` (date), see below;
- ``Decimal``: ``java.math.BigDecimal`` (numeric: the ``SpecialValueDecimal`` Debezium reads is
  unwrapped by ``keyFromRow`` before the key is kept); a ``SpecialValueDecimal`` is read too.

A ``java.sql.Date`` depends on the JVM's default zone (``user.timezone``, from ``TZ``): pgjdbc's
``getObject`` returns the day's local midnight there (``TimestampUtils.convertToDate``; on a day
whose midnight a DST change skips, the first instant after it), and when Debezium binds the key
back into its chunk query, ``setDate`` sends the local date of those milliseconds in that same
zone. So a date key written as UTC midnight reads back as the day before in a JVM west of UTC
(America/New_York: 2024-02-29T00:00Z is 2024-02-28 19:00 there): its chunk would start one row
early and its maximum key would end one row short, silently losing the table's last row. No
instant reads back as the same day in every zone (zones span UTC-12 to UTC+14), and the
milliseconds alone do not name the zone (UTC-10 and UTC+14 write the same ones), so the zone is
configured: ``kopycat.cdc.jvm.time.zone`` (default UTC), the zone of the Debezium worker that
shares the offsets. :func:`write_keys` writes local midnight there and :func:`read_keys` reads the
local date there, as that JVM does, and refuses milliseconds that are not a local midnight there:
a key another zone's JVM wrote, named by the UTC offset it ran at, rather than a date off by one.
(Dates before the Gregorian reform of 1582, which the JVM counts in the Julian calendar, are out
of scope: such keys are written proleptic Gregorian.)

A null array is ``aced000570``. Only that subset of the Java serialization stream protocol is
written and read: handles, class descriptors with fields, block data of ``writeObject`` classes
and enums; other key types are refused by the incremental snapshot before anything is stored.
"""

from __future__ import annotations

import datetime as dt
import decimal
import struct
import uuid
from collections.abc import Sequence
from datetime import tzinfo
from typing import Any, Final, Literal

__all__ = ["JavaKeyError", "JavaKind", "KeyValue", "read_keys", "write_keys"]

JavaKind = Literal["Integer", "Long", "String", "UUID", "Date", "Decimal"]
KeyValue = int | str | uuid.UUID | dt.date | decimal.Decimal

_HEADER: Final = bytes.fromhex("aced0005")
_NULL, _REFERENCE, _CLASS_DESC, _OBJECT, _STRING, _ARRAY = 0x70, 0x71, 0x72, 0x73, 0x74, 0x75
_BLOCK, _END, _ENUM = 0x77, 0x78, 0x7E
_BASE_HANDLE: Final = 0x7E0000
_SERIALIZABLE, _WRITE_METHOD, _ENUM_FLAG = 0x02, 0x01, 0x10
_CACHED: Final = range(-128, 128)  # Integer.valueOf / Long.valueOf return one shared object for these
_DAY_MS: Final = 86_400_000


class _Desc:
    """A class descriptor as ``ObjectStreamClass`` writes it: fields in the stream's order, then the superclass."""

    def __init__(self, name: str, uid: int, flags: int, fields: tuple[tuple[str, str, str], ...] = (),
                 parent: _Desc | None = None) -> None:
        self.name, self.uid, self.flags, self.fields, self.parent = name, uid, flags, fields, parent


_NUMBER: Final = _Desc("java.lang.Number", 0x86AC951D0B94E08B, _SERIALIZABLE)
_DESCS: Final = {
    "Integer": _Desc("java.lang.Integer", 0x12E2A0A4F7818738, _SERIALIZABLE, (("I", "value", ""),), _NUMBER),
    "Long": _Desc("java.lang.Long", 0x3B8BE490CC8F23DF, _SERIALIZABLE, (("J", "value", ""),), _NUMBER),
    "UUID": _Desc("java.util.UUID", 0xBC9903F7986D852F, _SERIALIZABLE,
                  (("J", "leastSigBits", ""), ("J", "mostSigBits", ""))),
    "Date": _Desc("java.sql.Date", 0x14FA46683F356697, _SERIALIZABLE, (),
                  _Desc("java.util.Date", 0x686A81014B597419, _SERIALIZABLE | _WRITE_METHOD)),
}
_ARRAY_DESC: Final = _Desc("[Ljava.lang.Object;", 0x90CE589F1073296C, _SERIALIZABLE)
_BIG_DECIMAL: Final = _Desc("java.math.BigDecimal", 0x54C71557F981284F, _SERIALIZABLE | _WRITE_METHOD,
                            (("I", "scale", ""), ("L", "intVal", "Ljava/math/BigInteger;")), _NUMBER)
_BIG_INTEGER: Final = _Desc("java.math.BigInteger", 0x8CFC9F1FA93BFB1D, _SERIALIZABLE | _WRITE_METHOD, (
    ("I", "bitCount", ""), ("I", "bitLength", ""), ("I", "firstNonzeroByteNum", ""), ("I", "lowestSetBit", ""),
    ("I", "signum", ""), ("[", "magnitude", "[B")), _NUMBER)
_BYTES: Final = _Desc("[B", 0xACF317F8060854E0, _SERIALIZABLE)


class JavaKeyError(ValueError):
    """Bytes that are not a serialized ``Object[]`` of the key classes, or a value Java cannot hold there."""


def write_keys(values: Sequence[KeyValue] | None, kinds: Sequence[JavaKind], zone: tzinfo = dt.UTC) -> str:
    """``values`` (one per key column, of the Java class in ``kinds``) as a Debezium whose JVM runs in ``zone``
    stores them."""
    if values is None:
        return (_HEADER + bytes([_NULL])).hex()
    writer = _Writer(zone)
    writer.out += bytes([_ARRAY])
    writer.class_desc(_ARRAY_DESC)
    writer.handles += 1  # the array itself
    writer.out += struct.pack(">i", len(values))
    for value, kind in zip(values, kinds, strict=True):
        writer.value(value, kind)
    return (_HEADER + bytes(writer.out)).hex()


class _Writer:
    def __init__(self, zone: tzinfo) -> None:
        self.zone = zone
        self.out = bytearray()
        self.handles = 0
        self.seen: dict[object, int] = {}  # class names, strings and cached boxes -> their handle

    def reference(self, known: object) -> bool:
        if known not in self.seen:
            return False
        self.out += bytes([_REFERENCE]) + struct.pack(">I", _BASE_HANDLE + self.seen[known])
        return True

    def new_handle(self, known: object | None = None) -> None:
        if known is not None:
            self.seen[known] = self.handles
        self.handles += 1

    def string(self, text: str) -> None:
        if not self.reference(("string", text)):
            self.out += bytes([_STRING]) + _utf(text)
            self.new_handle(("string", text))

    def class_desc(self, desc: _Desc | None) -> None:
        if desc is None:
            self.out += bytes([_NULL])
            return
        if self.reference(("class", desc.name)):
            return
        self.out += bytes([_CLASS_DESC]) + _utf(desc.name) + struct.pack(">QBH", desc.uid, desc.flags,
                                                                        len(desc.fields))
        self.new_handle(("class", desc.name))
        for code, field, type_name in desc.fields:
            self.out += code.encode() + _utf(field)
            if type_name:
                self.string(type_name)
        self.out += bytes([_END])
        self.class_desc(desc.parent)

    def new_object(self, desc: _Desc, known: object | None = None) -> None:
        self.out += bytes([_OBJECT])
        self.class_desc(desc)
        self.new_handle(known)

    def value(self, value: KeyValue, kind: JavaKind) -> None:
        if kind == "String":
            self.string(str(value))
        elif kind in ("Integer", "Long"):
            self.number(int(value), kind)  # type: ignore[arg-type]
        elif kind == "UUID":
            bits = (value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))).int
            self.new_object(_DESCS["UUID"])
            self.out += struct.pack(">qq", _signed(bits & (2**64 - 1)), _signed(bits >> 64))
        elif kind == "Date":
            day = value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value))
            self.new_object(_DESCS["Date"])  # java.util.Date.writeObject: its time as one long of block data
            self.out += bytes([_BLOCK, 8]) + struct.pack(">q", _midnight_ms(day, self.zone))
            self.out += bytes([_END])
        else:
            self.big_decimal(decimal.Decimal(value))  # type: ignore[arg-type]

    def number(self, number: int, kind: Literal["Integer", "Long"]) -> None:
        if self.reference((kind, number)):
            return
        self.new_object(_DESCS[kind], (kind, number) if number in _CACHED else None)
        self.out += struct.pack(">i" if kind == "Integer" else ">q", number)

    def big_decimal(self, number: decimal.Decimal) -> None:
        if not number.is_finite():
            raise JavaKeyError(f"numeric key {number} has no BigDecimal: NaN and infinities cannot be stored")
        sign, digits, exponent = number.as_tuple()
        unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        self.new_object(_BIG_DECIMAL)
        self.out += struct.pack(">i", -int(exponent))
        self.new_object(_BIG_INTEGER)  # BigInteger.writeObject: the legacy fields as -1/-2, signum, magnitude
        magnitude = abs(unscaled).to_bytes((abs(unscaled).bit_length() + 7) // 8, "big")
        self.out += struct.pack(">iiiii", -1, -1, -2, -2, (unscaled > 0) - (unscaled < 0))
        self.out += bytes([_ARRAY])
        self.class_desc(_BYTES)
        self.new_handle()
        self.out += struct.pack(">i", len(magnitude)) + magnitude
        self.out += bytes([_END, _END])  # BigInteger's, then BigDecimal's writeObject ends


_EPOCH_DAY: Final = dt.date(1970, 1, 1).toordinal()


def _midnight_ms(day: dt.date, zone: tzinfo) -> int:
    """The day's first instant in ``zone`` as epoch milliseconds: ``java.sql.Date`` of a JVM there.

    A wall time a DST change skips takes the offset before the change (``fold=0``), as a lenient
    ``GregorianCalendar`` does: midnight skipped to 01:00 is the instant at 01:00.
    """
    offset = zone.utcoffset(dt.datetime.combine(day, dt.time())) or dt.timedelta()
    return (day.toordinal() - _EPOCH_DAY) * _DAY_MS - int(offset.total_seconds()) * 1000


def _local_day(millis: int, zone: tzinfo) -> dt.date:
    """The date a JVM in ``zone`` binds a ``java.sql.Date`` of ``millis`` as; refuses a non-midnight."""
    day = (_EPOCH + dt.timedelta(milliseconds=millis)).astimezone(zone).date()
    if _midnight_ms(day, zone) != millis:
        ahead = -millis % _DAY_MS // 60_000  # minutes ahead of UTC, modulo a day
        writers = " or ".join(f"UTC{'+' if m >= 0 else '-'}{abs(m) // 60:02d}:{abs(m) % 60:02d} (the key "
                              f"{dt.date.fromordinal(_EPOCH_DAY + (millis + m * 60_000) // _DAY_MS)})"
                              for m in (ahead, ahead - 1440) if -12 * 60 <= m <= 14 * 60)
        raise JavaKeyError(f"java.sql.Date {millis} ms ({_EPOCH + dt.timedelta(milliseconds=millis):%Y-%m-%dT%H:%M}Z)"
                           f" is not a midnight in {zone}: a JVM at {writers} wrote it; set "
                           f"kopycat.cdc.jvm.time.zone to that Debezium worker's zone (its user.timezone)")
    return day


_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _signed(bits: int) -> int:
    return bits - 2**64 if bits >= 2**63 else bits


def _utf(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">H", len(data)) + data


def read_keys(text: str, zone: tzinfo = dt.UTC) -> list[KeyValue] | None:
    """The key values of a stored ``incremental_snapshot_*_key`` (None for a null array), as a JVM in ``zone``
    binds them."""
    try:
        return _Reader(bytes.fromhex(text), zone).keys()
    except JavaKeyError:
        raise
    except (ValueError, IndexError, struct.error, KeyError, TypeError) as exc:
        raise JavaKeyError(f"not a serialized key array of Integer, Long, String, UUID, Date or "
                           f"SpecialValueDecimal values: {text!r} ({exc})") from None


class _Reader:
    """Reads the stream back: each object as its class name and its fields (superclass first)."""

    def __init__(self, data: bytes, zone: tzinfo) -> None:
        self.data, self.pos, self.zone = data, 4, zone
        self.handles: list[Any] = []
        if data[:4] != _HEADER:
            raise ValueError("no Java serialization header")

    def take(self, size: int) -> bytes:
        chunk = self.data[self.pos:self.pos + size]
        if len(chunk) != size:
            raise ValueError("truncated")
        self.pos += size
        return chunk

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def utf(self) -> str:
        return self.take(self.unpack(">H")).decode()

    def keys(self) -> list[KeyValue] | None:
        tag = self.take(1)[0]
        if tag == _NULL:
            return None
        if tag != _ARRAY or self.class_desc().name != _ARRAY_DESC.name:
            raise ValueError("not an Object[]")
        self.handles.append(None)
        return [_key_value(self.content(), self.zone) for _ in range(self.unpack(">i"))]

    def class_desc(self) -> _Desc:
        tag = self.take(1)[0]
        if tag == _REFERENCE:
            found = self.handles[self.unpack(">I") - _BASE_HANDLE]
            if not isinstance(found, _Desc):
                raise ValueError("a reference to a non-class")
            return found
        if tag != _CLASS_DESC:
            raise ValueError(f"unexpected class tag {tag:#x}")
        name, uid, flags = self.utf(), self.unpack(">Q"), self.take(1)[0]
        desc = _Desc(name, uid, flags)
        self.handles.append(desc)
        fields = []
        for _ in range(self.unpack(">H")):
            code, field = chr(self.take(1)[0]), self.utf()
            fields.append((code, field, str(self.content()) if code in "L[" else ""))
        desc.fields = tuple(fields)
        if self.take(1)[0] != _END:
            raise ValueError("class annotations are not supported")
        desc.parent = None if self.data[self.pos] == _NULL and self.take(1) else self.class_desc()
        return desc

    def content(self) -> Any:
        """The next object: a str, None, a referenced object, or (class name, fields) of a new one."""
        tag = self.take(1)[0]
        if tag == _NULL:
            return None
        if tag == _REFERENCE:
            return self.handles[self.unpack(">I") - _BASE_HANDLE]
        if tag == _STRING:
            self.handles.append(self.utf())
            return self.handles[-1]
        if tag == _ARRAY:
            desc = self.class_desc()
            self.handles.append(None)
            if desc.name != "[B":
                raise ValueError(f"arrays of {desc.name} are not supported")
            self.handles[-1] = self.take(self.unpack(">i"))
            return self.handles[-1]
        if tag == _ENUM:
            desc, index = self.class_desc(), len(self.handles)
            self.handles.append(None)
            self.handles[index] = (desc.name, {"name": self.content()})
            return self.handles[index]
        if tag != _OBJECT:
            raise ValueError(f"unsupported tag {tag:#x}")
        return self.new_object()

    def new_object(self) -> tuple[str, dict[str, Any]]:
        desc, index = self.class_desc(), len(self.handles)
        self.handles.append(None)
        chain = []
        while desc is not None:
            chain.insert(0, desc)
            desc = desc.parent  # type: ignore[assignment]
        fields: dict[str, Any] = {}
        for part in chain:
            for code, field, _ in part.fields:
                fields[field] = self.content() if code in "L[" else self.unpack(">" + _PRIMITIVES[code])
            if part.flags & _WRITE_METHOD:
                fields[f"{part.name}#data"] = self.block_data()
        self.handles[index] = (chain[-1].name, fields)
        return self.handles[index]

    def block_data(self) -> bytes:
        """What a ``writeObject`` method wrote after its fields, up to its end marker."""
        data = bytearray()
        while (tag := self.take(1)[0]) != _END:
            if tag != _BLOCK:
                raise ValueError(f"objects in custom data are not supported (tag {tag:#x})")
            data += self.take(self.take(1)[0])
        return bytes(data)


_PRIMITIVES: Final = {"B": "b", "C": "H", "D": "d", "F": "f", "I": "i", "J": "q", "S": "h", "Z": "?"}


def _key_value(found: Any, zone: tzinfo) -> KeyValue:
    """A read object as the Python value of its key column."""
    if isinstance(found, str):
        return found
    name, fields = found
    if name in ("java.lang.Integer", "java.lang.Long", "java.lang.Short"):
        return int(fields["value"])
    if name == "java.util.UUID":
        return uuid.UUID(int=((fields["mostSigBits"] % 2**64) << 64) | (fields["leastSigBits"] % 2**64))
    if name == "java.sql.Date":
        (millis,) = struct.unpack(">q", fields["java.util.Date#data"])
        return _local_day(millis, zone)
    if name == "io.debezium.data.SpecialValueDecimal":
        if fields["specialValue"] is not None:
            raise ValueError(f"a special numeric value {fields['specialValue'][1]['name']}")
        return _decimal(fields["decimalValue"])
    if name == "java.math.BigDecimal":
        return _decimal(found)
    raise ValueError(f"key values of class {name} are not supported")


def _decimal(found: tuple[str, dict[str, Any]]) -> decimal.Decimal:
    fields = found[1]
    integer = fields["intVal"][1]
    digits = tuple(int(d) for d in str(int.from_bytes(integer["magnitude"], "big")))
    return decimal.Decimal((int(integer["signum"] < 0), digits, -fields["scale"]))  # exact: no context rounding
