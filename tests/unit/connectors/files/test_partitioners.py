"""Storage partitioners: Confluent's paths, time buckets across DST, config and data errors."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pytest

from kopycat.api.data import Schema, SchemaBuilder, Struct, Timestamp
from kopycat.api.errors import ConfigError, DataError
from kopycat.api.record_batch import SinkRecordBatch
from kopycat.api.records import SinkRecord
from kopycat.connectors.files.joda_time import time_bucket
from kopycat.connectors.files.partitioner_config import PARTITIONER_CONFIG
from kopycat.connectors.files.partitioners import (
    DailyPartitioner,
    DefaultPartitioner,
    FieldPartitioner,
    HourlyPartitioner,
    Partitioner,
    TimeBasedPartitioner,
    partitioner_from_config,
)
from kopycat.connectors.files.timestamp_extractors import (
    RecordFieldTimestampExtractor,
    RecordTimestampExtractor,
    WallclockTimestampExtractor,
)

HOURLY_BERLIN = {"partitioner.class": "HourlyPartitioner", "timezone": "Europe/Berlin",
                 "locale": "en-US", "timestamp.extractor": "Record"}
ADDRESS = SchemaBuilder.struct().field("country", Schema.STRING_SCHEMA).build()
ORDER = (SchemaBuilder.struct()
         .field("region", Schema.OPTIONAL_STRING_SCHEMA).field("shard", Schema.INT32_SCHEMA)
         .field("paid", Schema.BOOLEAN_SCHEMA).field("total", Schema.FLOAT64_SCHEMA)
         .field("created", Timestamp.SCHEMA).field("address", ADDRESS).build())


def ms(iso: str) -> int:
    return Timestamp.from_logical(Timestamp.SCHEMA, dt.datetime.fromisoformat(iso))


def record(value: Any = None, *, timestamp: int | None = None, partition: int = 3,
           offset: int = 42) -> SinkRecord:
    schema = value.schema if isinstance(value, Struct) else None
    return SinkRecord(topic="orders", kafka_partition=partition, kafka_offset=offset,
                      value_schema=schema, value=value, timestamp=timestamp)


def order(region: str | None = "eu", shard: int = 7, paid: bool = True) -> Struct:
    return (Struct(ORDER).put("region", region).put("shard", shard).put("paid", paid)
            .put("total", 9.5).put("created", dt.datetime(2026, 11, 23, 5, tzinfo=dt.UTC))
            .put("address", Struct(ADDRESS).put("country", "DE")))


def at(iso: str) -> SinkRecord:
    return record(timestamp=ms(iso))


def paths(partitioner: Partitioner, *isos: str) -> list[str]:
    return partitioner.encode_partitions([at(iso) for iso in isos], now_ms=0)


def time_based(duration_ms: int, path_format: str, zone: str) -> TimeBasedPartitioner:
    return TimeBasedPartitioner(duration_ms, path_format, zone, RecordTimestampExtractor())


# --- configuration ---------------------------------------------------------------------------

def test_config_defines_confluents_keys_and_defaults() -> None:
    assert PARTITIONER_CONFIG.parse({}) == {
        "partitioner.class": "io.confluent.connect.storage.partitioner.DefaultPartitioner",
        "partition.field.name": [], "partition.duration.ms": -1, "path.format": "",
        "locale": "", "timezone": "", "timestamp.extractor": "Wallclock",
        "timestamp.field": "timestamp", "directory.delim": "/"}
    assert PARTITIONER_CONFIG.groups() == ["Partitioner"]


@pytest.mark.parametrize(("name", "kind"), [
    ("DefaultPartitioner", DefaultPartitioner), ("FieldPartitioner", FieldPartitioner),
    ("TimeBasedPartitioner", TimeBasedPartitioner), ("HourlyPartitioner", HourlyPartitioner),
    ("DailyPartitioner", DailyPartitioner)])
@pytest.mark.parametrize("prefix", ["", "io.confluent.connect.storage.partitioner."])
def test_partitioner_class_takes_simple_and_confluent_class_names(name: str, kind: type,
                                                                  prefix: str) -> None:
    props = {"partitioner.class": prefix + name, "partition.field.name": "region",
             "path.format": "YYYY", "partition.duration.ms": "60000", "timezone": "UTC",
             "locale": "en"}
    assert type(partitioner_from_config(props)) is kind


@pytest.mark.parametrize("value", ["defaultpartitioner", "com.example.MyPartitioner",
                                   "io.confluent.connect.storage.partitioner.Nope"])
def test_unknown_partitioner_class_names_key_value_and_the_accepted_names(value: str) -> None:
    with pytest.raises(ConfigError) as error:
        partitioner_from_config({"partitioner.class": value})
    assert error.value.key == "partitioner.class"
    assert f"'{value}'" in str(error.value)
    assert "DefaultPartitioner, FieldPartitioner, TimeBasedPartitioner, HourlyPartitioner, " \
           "DailyPartitioner" in str(error.value)


def test_timestamp_extractor_takes_confluent_class_names_and_rejects_others() -> None:
    full = "io.confluent.connect.storage.partitioner.TimeBasedPartitioner$RecordTimestampExtractor"
    partitioner = partitioner_from_config({**HOURLY_BERLIN, "timestamp.extractor": full})
    assert isinstance(partitioner, HourlyPartitioner)
    assert isinstance(partitioner.extractor, RecordTimestampExtractor)
    with pytest.raises(ConfigError, match=r"'record' for configuration timestamp.extractor: "
                                          r"use one of Wallclock, Record, RecordField"):
        partitioner_from_config({**HOURLY_BERLIN, "timestamp.extractor": "record"})


@pytest.mark.parametrize(("props", "key", "value"), [
    ({"partitioner.class": "FieldPartitioner"}, "partition.field.name", "''"),
    ({"partitioner.class": "FieldPartitioner", "partition.field.name": "region,a..b"},
     "partition.field.name", "['region', 'a..b']"),
    ({"partitioner.class": "TimeBasedPartitioner", "partition.duration.ms": "3600000",
      "timezone": "UTC", "locale": "en"}, "path.format", "''"),
    ({"partitioner.class": "TimeBasedPartitioner", "partition.duration.ms": "3600000",
      "path.format": "/", "timezone": "UTC", "locale": "en"}, "path.format", "'/'"),
    ({"partitioner.class": "TimeBasedPartitioner", "path.format": "YYYY", "timezone": "UTC",
      "locale": "en"}, "partition.duration.ms", "-1"),
    ({"partitioner.class": "TimeBasedPartitioner", "path.format": "YYYY", "timezone": "UTC",
      "locale": "en", "partition.duration.ms": "0"}, "partition.duration.ms", "0"),
    ({**HOURLY_BERLIN, "timezone": "Europe/Berln"}, "timezone", "'Europe/Berln'"),
    ({**HOURLY_BERLIN, "timezone": "europe/berlin"}, "timezone", "'europe/berlin'"),
    ({**HOURLY_BERLIN, "timezone": "+25:00"}, "timezone", "'+25:00'"),
    ({**HOURLY_BERLIN, "timezone": ""}, "timezone", "''"),
    ({**HOURLY_BERLIN, "locale": ""}, "locale", "''"),
    ({**HOURLY_BERLIN, "timestamp.extractor": "RecordField", "timestamp.field": "meta."},
     "timestamp.field", "'meta.'"),
    ({**HOURLY_BERLIN, "timestamp.extractor": "RecordField", "timestamp.field": ""},
     "timestamp.field", "''"),
], ids=lambda p: p if isinstance(p, str) else None)
def test_each_config_error_names_its_key_and_value(props: dict[str, str], key: str,
                                                   value: str) -> None:
    with pytest.raises(ConfigError) as error:
        partitioner_from_config(props)
    assert error.value.key == key
    assert f"Invalid value {value} for configuration {key}:" in str(error.value)


@pytest.mark.parametrize(("path_format", "letter"), [("'hour'=HH/zzz", "'z'"),
                                                     ("YYYY/'q'=q", "'q'"), ("YYYYTHH", "'T'")])
def test_unsupported_path_format_letter_names_path_format_and_the_letter(
        path_format: str, letter: str) -> None:
    props = {"partitioner.class": "TimeBasedPartitioner", "path.format": path_format,
             "partition.duration.ms": "3600000", "timezone": "UTC", "locale": "en"}
    with pytest.raises(ConfigError) as error:
        partitioner_from_config(props)
    assert error.value.key == "path.format"
    assert f"Invalid value {path_format!r} for configuration path.format: pattern letter " \
           f"{letter}" in str(error.value)


def test_month_names_with_a_non_english_locale_name_the_locale() -> None:
    props = {"partitioner.class": "TimeBasedPartitioner", "path.format": "MMMM",
             "partition.duration.ms": "3600000", "timezone": "UTC", "locale": "fr-FR"}
    with pytest.raises(ConfigError, match=r"Invalid value 'fr-FR' for configuration locale: "
                                          r"path.format prints 'MMMM'"):
        partitioner_from_config(props)


def test_validate_shows_only_the_keys_of_the_chosen_partitioner() -> None:
    def visible(props: dict[str, str]) -> set[str]:
        return {name for name, value in PARTITIONER_CONFIG.validate_all(props).items()
                if value.visible and name in ("partition.field.name", "partition.duration.ms",
                                              "path.format", "locale", "timezone")}

    assert visible({}) == set()
    assert visible({"partitioner.class": "FieldPartitioner"}) == {"partition.field.name"}
    assert visible({"partitioner.class": "DailyPartitioner"}) == {"locale", "timezone"}
    assert visible({"partitioner.class": "TimeBasedPartitioner"}) == {
        "partition.duration.ms", "path.format", "locale", "timezone"}


# --- DefaultPartitioner and FieldPartitioner ---------------------------------------------------

def test_default_partitioner_encodes_the_kafka_partition_below_the_topic() -> None:
    partitioner = partitioner_from_config({})
    encoded = partitioner.encode_partitions([record(partition=3), record(partition=0),
                                             record(partition=3)], now_ms=0)
    assert encoded == ["partition=3", "partition=0", "partition=3"]
    assert partitioner.partitioned_path("orders", encoded[0]) == "orders/partition=3"
    assert partitioner.record_timestamp(record(), now_ms=5) is None


def test_directory_delim_joins_topic_and_fields() -> None:
    partitioner = partitioner_from_config({"partitioner.class": "FieldPartitioner",
                                           "partition.field.name": "region,shard",
                                           "directory.delim": "#"})
    encoded = partitioner.encode_partition(record(order()), now_ms=0)
    assert partitioner.partitioned_path("orders", encoded) == "orders#region=eu#shard=7"


def test_field_partitioner_prints_strings_ints_booleans_and_nested_fields() -> None:
    partitioner = FieldPartitioner(["region", "address.country", "shard", "paid"])
    assert partitioner.encode_partitions([record(order()), record(order("us", 12, False))], 0) == [
        "region=eu/address.country=DE/shard=7/paid=true",
        "region=us/address.country=DE/shard=12/paid=false"]
    assert partitioner.record_timestamp(record(order()), now_ms=5) is None


def test_field_partitioner_prints_null_for_a_null_field() -> None:
    assert FieldPartitioner(["region"]).encode_partition(record(order(None)), 0) == "region=null"


def test_field_partitioner_reads_schemaless_maps() -> None:
    value = {"region": "eu", "shard": 7, "paid": False, "meta": {"tenant": None}}
    assert FieldPartitioner(["region", "shard", "paid", "meta.tenant"]).encode_partition(
        record(value), 0) == "region=eu/shard=7/paid=false/meta.tenant=null"


@pytest.mark.parametrize(("fields", "value", "problem"), [
    (["country"], order(), ("field country is not in the value's schema (fields: region, shard, "
                            "paid, total, created, address)")),
    (["region.code"], order(), "field region.code: region is a STRING, not a struct"),
    (["total"], order(), "field total is a FLOAT64; a partition field must be an integer"),
    (["created"], order(), "field created is a org.apache.kafka.connect.data.Timestamp;"),
    (["region"], {"shard": 7}, "field region is missing from the value"),
    (["total"], {"total": 9.5}, "field total is a float;"),
    (["region"], "eu", "its value is str, not a Struct or a map"),
    (["region"], None, "its value is NoneType, not a Struct or a map"),
    (["region"], order("eu/../../etc"), ("field region is 'eu/../../etc', which holds the "
                                         "directory delimiter '/'")),
])
def test_field_partitioner_data_errors_name_the_record_and_the_field(
        fields: list[str], value: Any, problem: str) -> None:
    with pytest.raises(DataError) as error:
        FieldPartitioner(fields).encode_partitions([record(value, partition=5, offset=42)], 0)
    assert str(error.value).startswith(
        "Cannot partition the record at topic orders partition 5 offset 42: " + problem)


def test_a_batch_error_names_the_record_that_failed_not_the_first() -> None:
    batch = [record(order(), offset=41), record(order(), offset=42), record("eu", offset=43)]
    with pytest.raises(DataError, match="^Cannot partition the record at topic orders partition "
                                        "3 offset 43: its value is str"):
        FieldPartitioner(["region"]).encode_partitions(batch, 0)


def test_errors_name_where_the_record_was_consumed_before_a_transform_renamed_it() -> None:
    renamed = record("eu", partition=1, offset=9).new_record(topic="orders-eu", kafka_partition=0)
    with pytest.raises(DataError, match="^Cannot partition the record at topic orders partition "
                                        "1 offset 9: "):
        FieldPartitioner(["region"]).encode_partition(renamed, 0)


# --- time-based partitioners -------------------------------------------------------------------

def test_hourly_paths_skip_the_missing_hour_of_the_spring_dst_change() -> None:
    partitioner = partitioner_from_config(HOURLY_BERLIN)
    # 2026-03-29 in Berlin: 02:00 CET (01:00Z) jumps to 03:00 CEST.
    assert paths(partitioner, "2026-03-29T00:59:59.999Z", "2026-03-29T01:00Z",
                 "2026-03-29T01:59Z", "2026-03-29T02:00Z") == [
        "year=2026/month=03/day=29/hour=01", "year=2026/month=03/day=29/hour=03",
        "year=2026/month=03/day=29/hour=03", "year=2026/month=03/day=29/hour=04"]
    assert partitioner.partitioned_path("orders", "year=2026/month=03/day=29/hour=03") == \
        "orders/year=2026/month=03/day=29/hour=03"


def test_hourly_paths_share_the_repeated_hour_of_the_autumn_dst_change() -> None:
    # 2026-10-25 in Berlin: 03:00 CEST (01:00Z) falls back to 02:00 CET; 02:xx happens twice.
    assert paths(partitioner_from_config(HOURLY_BERLIN), "2026-10-24T23:59Z", "2026-10-25T00:30Z",
                 "2026-10-25T01:30Z", "2026-10-25T02:00Z") == [
        "year=2026/month=10/day=25/hour=01", "year=2026/month=10/day=25/hour=02",
        "year=2026/month=10/day=25/hour=02", "year=2026/month=10/day=25/hour=03"]


def test_daily_buckets_start_at_local_midnight_on_23_and_25_hour_days() -> None:
    daily = partitioner_from_config({**HOURLY_BERLIN, "partitioner.class": "DailyPartitioner"})
    assert paths(daily, "2026-03-28T22:59Z", "2026-03-28T23:00Z", "2026-03-29T21:59Z",
                 "2026-03-29T22:00Z", "2026-10-24T22:00Z", "2026-10-25T22:59Z",
                 "2026-10-25T23:00Z") == [
        "year=2026/month=03/day=28", "year=2026/month=03/day=29", "year=2026/month=03/day=29",
        "year=2026/month=03/day=30", "year=2026/month=10/day=25", "year=2026/month=10/day=25",
        "year=2026/month=10/day=26"]


def test_buckets_not_dividing_a_day_count_from_the_local_epoch_in_each_zone() -> None:
    # 2026-03-29T00:00 is hour 492984 after the epoch, 2 past a multiple of 7: local 7-hour
    # buckets start at 22:00 the day before, then 05:00, 12:00, ... in every zone's local time.
    instants = ("2026-03-29T00:30Z", "2026-03-29T01:30Z", "2026-03-29T05:00Z")
    expected = {
        "UTC": ["28/2200", "28/2200", "29/0500"],
        "Europe/Berlin": ["28/2200", "28/2200", "29/0500"],  # local 01:30, 03:30, 07:00
        "America/New_York": ["28/1500", "28/1500", "28/2200"],  # local 20:30, 21:30, 01:00
    }
    for zone, buckets in expected.items():
        partitioner = time_based(7 * 3_600_000, "'day'=dd/HHmm", zone)
        assert paths(partitioner, *instants) == [f"day={b}" for b in buckets], zone


def test_a_bucket_starting_in_a_dst_gap_prints_as_joda_does_in_both_hemispheres() -> None:
    # 61-minute buckets: one starts at local 02:29 on 2026-03-08 in New York and at 02:45 on
    # 2026-03-29 in Berlin, times that do not exist. Joda's convertLocalToUTC(local, false)
    # lands an hour later in both zones (the western one through its DST-gap branch).
    new_york = time_based(61 * 60_000, "YYYY-MM-dd/HHmm", "America/New_York")
    assert paths(new_york, "2026-03-08T07:10Z") == ["2026-03-08/0329"]
    berlin = time_based(61 * 60_000, "YYYY-MM-dd/HHmm", "Europe/Berlin")
    assert paths(berlin, "2026-03-29T01:30Z") == ["2026-03-29/0345"]


def test_changing_the_timezone_changes_the_paths_of_the_same_instant() -> None:
    instant = "2026-11-23T23:30Z"
    encoded = {zone: paths(partitioner_from_config({**HOURLY_BERLIN, "timezone": zone}),
                           instant)[0]
               for zone in ("UTC", "Europe/Berlin", "America/Los_Angeles", "+05:30")}
    assert encoded == {"UTC": "year=2026/month=11/day=23/hour=23",
                       "Europe/Berlin": "year=2026/month=11/day=24/hour=00",
                       "America/Los_Angeles": "year=2026/month=11/day=23/hour=15",
                       "+05:30": "year=2026/month=11/day=24/hour=05"}


def test_time_bucket_is_confluents_get_partition() -> None:
    berlin = TimeBasedPartitioner(1, "YYYY", "Europe/Berlin", WallclockTimestampExtractor()).zone
    assert time_bucket(86_400_000, ms("2026-10-25T12:00Z"), berlin) == ms("2026-10-24T22:00Z")
    assert time_bucket(3_600_000, ms("2026-03-29T01:30Z"), berlin) == ms("2026-03-29T01:00Z")


def test_instants_before_1970_truncate_toward_zero_as_java_division_does() -> None:
    daily = time_based(86_400_000, "YYYY-MM-dd", "UTC")
    assert paths(daily, "1969-12-31T23:00Z", "1969-12-30T12:00Z") == ["1970-01-01", "1969-12-31"]


def test_path_format_prints_joda_pattern_letters() -> None:
    pattern = ("YYYY yy y MM M MMM MMMM dd D HH kk hh KK a mm ss SSS S SSSS EEE EEEE e ww xxxx "
               "'it''s' '' Z ZZ ZZZ G C")
    partitioner = TimeBasedPartitioner(1, pattern, "Europe/Berlin", RecordTimestampExtractor())
    assert paths(partitioner, "2026-11-23T05:06:07.089Z") == [
        ("2026 26 2026 11 11 Nov November 23 327 06 06 06 06 AM 06 07 089 0 0890 Mon Monday 1 "
         "48 2026 it's ' +0100 +01:00 Europe/Berlin AD 20")]
    utc = time_based(1, "Z|ZZ|ZZZ|kk|hh a|xxxx-'W'ww-e", "UTC")
    assert paths(utc, "2026-01-01T00:00Z") == ["Z|Z|UTC|24|12 AM|2026-W01-4"]
    assert paths(time_based(1, "ZZ|ZZZ", "-03:30"), "2026-01-01T00:00Z") == ["-03:30|-03:30"]


def test_a_trailing_delimiter_in_path_format_is_dropped() -> None:
    partitioner = time_based(3_600_000, "'dt'=YYYYMMdd/", "UTC")
    assert partitioner.path_format == "'dt'=YYYYMMdd"
    assert paths(partitioner, "2026-11-23T05:00Z") == ["dt=20261123"]


def test_hourly_and_daily_ignore_duration_and_path_format_and_follow_the_delimiter() -> None:
    props = {**HOURLY_BERLIN, "path.format": "YYYY", "partition.duration.ms": "60000",
             "directory.delim": "-"}
    hourly = partitioner_from_config(props)
    assert isinstance(hourly, TimeBasedPartitioner)
    assert (hourly.duration_ms, hourly.path_format) == (3_600_000,
                                                        "'year'=YYYY-'month'=MM-'day'=dd-'hour'=HH")
    assert paths(hourly, "2026-11-23T05:00Z") == ["year=2026-month=11-day=23-hour=06"]
    daily = partitioner_from_config({**props, "partitioner.class": "DailyPartitioner"})
    assert paths(daily, "2026-11-23T05:00Z") == ["year=2026-month=11-day=23"]


def test_wallclock_puts_a_whole_batch_in_the_bucket_of_now() -> None:
    daily = partitioner_from_config({"partitioner.class": "DailyPartitioner", "timezone": "UTC",
                                     "locale": "en"})
    now = ms("2026-11-23T05:00Z")
    batch = [at("2020-01-01T00:00Z"), record(timestamp=None)]
    assert daily.encode_partitions(batch, now) == ["year=2026/month=11/day=23"] * 2
    assert daily.encode_partition(batch[0], now) == "year=2026/month=11/day=23"
    assert daily.record_timestamp(batch[1], now) == now


def test_record_extractor_uses_the_kafka_timestamp_and_names_a_record_without_one() -> None:
    hourly = partitioner_from_config(HOURLY_BERLIN)
    assert hourly.record_timestamp(at("2026-11-23T05:00Z"), now_ms=0) == ms("2026-11-23T05:00Z")
    batch = [at("2026-11-23T05:00Z"), record(timestamp=None, partition=1, offset=9)]
    for call in (lambda: hourly.encode_partitions(batch, 0),
                 lambda: hourly.record_timestamp(batch[1], 0)):
        with pytest.raises(DataError, match=r"^Cannot partition the record at topic orders "
                                            r"partition 1 offset 9: it has no Kafka timestamp.*"
                                            r"use timestamp.extractor=Wallclock or RecordField"):
            call()


@pytest.mark.parametrize("value", [
    {"meta": {"at": ms("2026-11-23T05:30Z")}},
    {"meta": {"at": str(ms("2026-11-23T05:30Z"))}},
    {"meta": {"at": "2026-11-23T06:30:00+01:00"}},
    {"meta": {"at": "2026-11-23T05:30:00"}},
    {"meta": {"at": dt.datetime(2026, 11, 23, 5, 30, tzinfo=dt.UTC)}},
], ids=["epoch-ms", "epoch-ms-text", "iso-offset", "iso-naive-utc", "datetime"])
def test_record_field_extractor_reads_ms_text_and_datetimes_in_nested_map_fields(
        value: dict[str, Any]) -> None:
    partitioner = partitioner_from_config({**HOURLY_BERLIN, "timestamp.extractor": "RecordField",
                                           "timestamp.field": "meta.at"})
    assert partitioner.encode_partition(record(value), 0) == "year=2026/month=11/day=23/hour=06"
    assert partitioner.record_timestamp(record(value), 0) == ms("2026-11-23T05:30Z")


def test_record_field_extractor_reads_struct_timestamps_ints_and_strings() -> None:
    assert RecordFieldTimestampExtractor("created").extract(record(order()), 0) == \
        ms("2026-11-23T05:00Z")
    event = SchemaBuilder.struct().field("ms", Schema.INT64_SCHEMA) \
        .field("iso", Schema.STRING_SCHEMA).build()
    value = Struct(event).put("ms", 1_000).put("iso", "1970-01-01T00:00:02Z")
    assert RecordFieldTimestampExtractor("ms").extract(record(value), 0) == 1_000
    assert RecordFieldTimestampExtractor("iso").extract(record(value), 0) == 2_000


@pytest.mark.parametrize(("field", "value", "problem"), [
    ("at", {"other": 1}, "field at (timestamp.field) is missing or null"),
    ("meta.at", {"meta": None}, "field meta.at (timestamp.field) is missing or null"),
    ("region", order(None), "field region (timestamp.field) is missing or null"),
    ("at", {"at": "yesterday"}, "field at is 'yesterday', neither epoch ms nor an ISO 8601 time"),
    ("paid", order(), "field paid is bool True; a timestamp field must hold epoch ms"),
    ("at", {"at": float("nan")}, "field at is float nan; a timestamp field must hold epoch ms"),
    ("at", b"raw", "its value is bytes, not a Struct or a map with the field at"),
])
def test_record_field_extractor_errors_name_the_record_and_the_field(
        field: str, value: Any, problem: str) -> None:
    partitioner = TimeBasedPartitioner(3_600_000, "HH", "UTC",
                                       RecordFieldTimestampExtractor(field))
    with pytest.raises(DataError) as error:
        partitioner.encode_partitions([record(value, partition=2, offset=7)], 0)
    assert str(error.value).startswith(
        "Cannot partition the record at topic orders partition 2 offset 7: " + problem)


@pytest.mark.parametrize("partitioner", [
    DefaultPartitioner(), FieldPartitioner(["region", "shard"]),
    HourlyPartitioner("Europe/Berlin", RecordTimestampExtractor()),
    DailyPartitioner("America/New_York", RecordTimestampExtractor()),
], ids=lambda p: type(p).__name__)
def test_the_batch_method_gives_what_the_record_method_gives(partitioner: Partitioner) -> None:
    start = ms("2026-10-24T20:00Z")
    batch = [record(order(region, n % 5), partition=n % 3, offset=n,
                    timestamp=start + n * 600_000)
             for n, region in enumerate(["eu", "us", None, "apac"] * 25)]
    assert partitioner.encode_partitions(batch, 0) == [
        partitioner.encode_partition(r, 0) for r in batch]
    assert len(set(partitioner.encode_partitions(batch, 0))) > 1


# --- batches (the columnar path) ------------------------------------------------------------


def batch_of(stamps: list[int | None], first_offset: int = 100) -> SinkRecordBatch:
    offsets = list(range(first_offset, first_offset + len(stamps)))
    return SinkRecordBatch("orders", 3, Schema.INT32_SCHEMA, None, offsets, stamps)


def grouped(partitioner: Partitioner, stamps: list[int]) -> list[tuple[str, int, int]]:
    """What the record path gives: each record's encoded partition, consecutive equal ones grouped."""
    runs: list[tuple[str, int, int]] = []
    for index, encoded in enumerate(partitioner.encode_partitions([record(timestamp=s) for s in stamps], 0)):
        runs = runs[:-1] + [(encoded, runs[-1][1], index + 1)] if runs and runs[-1][0] == encoded else [
            *runs, (encoded, index, index + 1)]
    return runs


@pytest.mark.parametrize("partitioner", [
    DailyPartitioner("Europe/Berlin", RecordTimestampExtractor(), locale="en-US"),
    HourlyPartitioner("America/New_York", RecordTimestampExtractor(), locale="en-US"),
    time_based(15 * 60_000, "'t'=HH-mm", "Asia/Kolkata"),
], ids=["daily-berlin", "hourly-new-york", "quarter-kolkata"])
def test_a_time_based_partitioner_places_a_batch_as_the_record_path_places_its_records(
        partitioner: TimeBasedPartitioner) -> None:
    rng = random.Random(11)
    start = ms("2026-03-28T20:00:00+00:00")  # across Berlin's and, a few batches on, New York's DST changes
    for size in (1, 7, 500):
        for _ in range(40):
            first = start + rng.randrange(0, 40 * 86_400_000)
            stamps = sorted(first + rng.randrange(0, 3 * 3_600_000) for _ in range(size))
            if rng.random() < 0.3:
                rng.shuffle(stamps)  # Kafka timestamps need not rise with the offsets
            assert partitioner.encode_batch(batch_of(stamps), now_ms=0) == grouped(partitioner, stamps)


def test_a_batch_inside_one_bucket_is_one_run_and_the_wall_clock_places_a_batch_at_now() -> None:
    daily = DailyPartitioner("UTC", RecordTimestampExtractor(), locale="en-US")
    stamps = [ms("2026-11-24T00:00:00+00:00"), ms("2026-11-24T23:59:59.999+00:00")]
    assert daily.encode_batch(batch_of(stamps), now_ms=0) == [("year=2026/month=11/day=24", 0, 2)]
    clock = DailyPartitioner("UTC", WallclockTimestampExtractor(), locale="en-US")
    assert clock.encode_batch(batch_of([None, None]), now_ms=ms("2026-01-02T03:00:00+00:00")) == [
        ("year=2026/month=01/day=02", 0, 2)]
    assert daily.partitions_batches and clock.partitions_batches and DefaultPartitioner().partitions_batches
    field_time = DailyPartitioner("UTC", RecordFieldTimestampExtractor("created"), locale="en-US")
    assert not field_time.partitions_batches and not FieldPartitioner(["region"]).partitions_batches


def test_a_batch_record_without_a_kafka_timestamp_is_named_as_the_record_path_names_it() -> None:
    daily = DailyPartitioner("UTC", RecordTimestampExtractor(), locale="en-US")
    with pytest.raises(DataError) as from_batch:
        daily.encode_batch(batch_of([ms("2026-11-24T01:00:00+00:00"), None], first_offset=41), now_ms=0)
    with pytest.raises(DataError) as from_records:
        daily.encode_partitions([record(timestamp=None)], now_ms=0)
    assert str(from_batch.value) == str(from_records.value)
