"""Date primary keys in incremental snapshot offsets as a Debezium JVM outside UTC writes and binds them.

Each expected value is what pgjdbc 42.7.11 (Debezium 3.6.1's driver) gives for a DATE column in a
JVM started with ``TZ=<zone>``: ``TimestampUtils.toDate(null, "<day>")`` (what ``getObject``
returns) has these milliseconds, serialized in ``Object[]`` as the ``date`` case of
test_postgres_cdc_java_keys; ``TimestampUtils.toString(null, date)`` (what ``setDate`` binds)
printed the same day. A UTC midnight bound in America/New_York printed the day before.
"""

from __future__ import annotations

import datetime as dt
import json
import zoneinfo

import pytest

from kopycat.api.errors import ConfigError, ConnectError
from kopycat.connectors.postgres_cdc.blocking_snapshot import (
    COLLECTIONS_KEY,
    PRIMARY_KEY,
    BlockingSnapshot,
    without_progress,
)
from kopycat.connectors.postgres_cdc.config import JVM_TIME_ZONE, CdcSettings
from kopycat.connectors.postgres_cdc.java_keys import JavaKeyError, read_keys, write_keys

_DATE = ("aced0005757200135b4c6a6176612e6c616e672e4f626a6563743b90ce589f1073296c0200007870"
         "000000017372000d6a6176612e73716c2e4461746514fa46683f3566970200007872000e6a617661"
         "2e7574696c2e44617465686a81014b5974190300007870")
JVM = [  # zone, day, java.sql.Date milliseconds printed by the JVM
    ("America/New_York", "2024-02-29", 1709182800000),
    ("America/New_York", "1969-12-31", -68400000),
    ("America/New_York", "2018-11-04", 1541304000000),  # EDT that day
    ("Asia/Tokyo", "2024-02-29", 1709132400000),
    ("Asia/Tokyo", "1969-12-31", -118800000),
    ("Pacific/Kiritimati", "2024-02-29", 1709114400000),  # UTC+14
    ("Pacific/Kiritimati", "1969-12-31", -48000000),  # UTC-10:40 then
    ("America/Havana", "2024-03-10", 1710046800000),  # DST begins at midnight: the day starts at 01:00
    ("America/Sao_Paulo", "2018-11-04", 1541300400000),  # the same, at -03 to -02
]


def date_key(millis: int) -> str:
    return f"{_DATE}7708{millis & (2**64 - 1):016x}78"


@pytest.mark.parametrize(("zone", "day", "millis"), JVM, ids=lambda v: str(v))
def test_date_keys_are_written_and_read_as_a_jvm_in_the_configured_zone(zone: str, day: str, millis: int) -> None:
    tz = zoneinfo.ZoneInfo(zone)
    assert write_keys([dt.date.fromisoformat(day)], ["Date"], tz) == date_key(millis)
    assert read_keys(date_key(millis), tz) == [dt.date.fromisoformat(day)]


def test_a_date_key_from_a_jvm_in_another_zone_is_refused_naming_its_offset_and_the_key_to_set() -> None:
    with pytest.raises(JavaKeyError) as new_york:
        read_keys(date_key(1709182800000))  # New York's 2024-02-29 read as UTC
    assert "2024-02-29T05:00Z" in str(new_york.value) and "UTC-05:00 (the key 2024-02-29)" in str(new_york.value)
    assert JVM_TIME_ZONE in str(new_york.value)
    with pytest.raises(JavaKeyError) as kiritimati:  # UTC+14 and UTC-10 write the same milliseconds
        read_keys(date_key(1709114400000))
    assert "UTC+14:00 (the key 2024-02-29) or UTC-10:00 (the key 2024-02-28)" in str(kiritimati.value)
    with pytest.raises(JavaKeyError, match="not a midnight in America/New_York"):  # not the day before
        read_keys(write_keys([dt.date(2024, 2, 29)], ["Date"]), zoneinfo.ZoneInfo("America/New_York"))


PROPS = {"topic.prefix": "p", "database.hostname": "h", "database.user": "u", "database.dbname": "d"}


def test_the_jvm_zone_is_utc_by_default_and_a_bad_one_is_refused_with_the_fix() -> None:
    assert CdcSettings.parse(PROPS).jvm_zone == dt.UTC
    assert CdcSettings.parse({**PROPS, JVM_TIME_ZONE: "Asia/Tokyo"}).jvm_zone == zoneinfo.ZoneInfo("Asia/Tokyo")
    with pytest.raises(ConfigError) as error:
        CdcSettings.parse({**PROPS, JVM_TIME_ZONE: "Mars/Olympus"})
    assert error.value.key == JVM_TIME_ZONE and "'Mars/Olympus'" in str(error.value)
    assert "America/New_York" in str(error.value) and "user.timezone" in str(error.value)


def test_a_cut_blocking_snapshot_is_loaded_from_its_offset_and_a_completed_one_is_not() -> None:
    stored = {"lsn": 10, "lsn_commit": 10, "snapshot": "BLOCKING", "snapshot_completed": False,
              COLLECTIONS_KEY: json.dumps(["public.a", "public.b"]), PRIMARY_KEY: write_keys([41], ["Integer"])}
    resumed = BlockingSnapshot(dt.UTC)
    resumed.load(stored)
    assert (resumed.tables, resumed.after) == (["public.a", "public.b"], [41])
    assert resumed.resumed == without_progress(stored)
    assert resumed.resumed is not None and COLLECTIONS_KEY not in resumed.resumed and resumed.resumed["lsn"] == 10
    done = BlockingSnapshot(dt.UTC)
    done.load({**stored, "snapshot_completed": True})
    assert (done.tables, done.resumed) == ([], None)
    with pytest.raises(ConnectError) as error:
        BlockingSnapshot(dt.UTC).load({**stored, COLLECTIONS_KEY: '{"public.a": 1}'})
    assert COLLECTIONS_KEY in str(error.value) and "new execute-snapshot signal" in str(error.value)
