"""SparkExportOperator without Spark or a broker: which ranges a mapped task hands to the job, and stale items."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import pytest
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from kopycat.api.records import TopicPartition
from kopycat.api.window import TimeWindow
from kopycat.connectors.files.spark_export import ExportedFile, ExportResult, OffsetRange
from kopycat.runtime.bounded_plan import PlannedTask
from kopycat_airflow.operators import spark_export
from kopycat_airflow.operators.spark_export import SparkExportOperator
from kopycat_airflow.task_group import run_totals

SINK = {"name": "lake", "connector.class": "io.confluent.connect.s3.S3SinkConnector", "topics": "orders",
        "store.url": "file:///lake", "format.class": "parquet", "flush.size": "1000", "tasks.max": "2"}
DAY_START = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
DAY = TimeWindow(int(DAY_START.timestamp() * 1000), int(DAY_START.timestamp() * 1000) + 86_400_000)
DAILY_SINK = {**SINK, "partitioner.class": "DailyPartitioner", "timezone": "UTC", "locale": "en",
              "timestamp.extractor": "Record"}
PLAN = [PlannedTask(0, "orders[0,2]", dict(SINK), {"orders:0": 10, "orders:2": 30}),
        PlannedTask(1, "orders[1]", dict(SINK), {"orders:1": 20})]


class _Handed(Exception):
    """Stops execute() where the job would be planned, carrying what it was handed."""


class _Hook:
    """The KopycatHook's two members the operator uses before Spark: a plan, the worker keys."""

    worker_props = {"bootstrap.servers": "127.0.0.1:9"}

    def __init__(self, plan: list[PlannedTask] | None) -> None:
        self._plan = plan

    def plan(self, props: Mapping[str, Any]) -> list[PlannedTask]:
        if self._plan is None:
            raise AssertionError("a mapped export must take its item's ranges, not plan again")
        return self._plan


def _handed(monkeypatch: pytest.MonkeyPatch, task_config: Mapping[str, Any] | None,
            plan: list[PlannedTask] | None = None,
            config: Mapping[str, str] = SINK, run_type: str = "manual",
            window: str = "auto") -> tuple[dict[str, Any], dict[str, Any]]:
    """Run execute() up to the job's planning; what it handed over, and the task's context."""
    def plan_spark_export(props: Mapping[str, Any], worker_props: Mapping[str, Any],
                          ends: Mapping[TopicPartition, int], **kwargs: Any) -> None:
        raise _Handed({"ends": dict(ends), **kwargs})

    monkeypatch.setattr(spark_export, "plan_spark_export", plan_spark_export)
    monkeypatch.setattr(SparkExportOperator, "_master", lambda self: "local[2]")
    op = SparkExportOperator(task_id="export", connector_config=config, task_config=task_config, window=window)
    op.__dict__["hook"] = _Hook(plan)
    context: dict[str, Any] = {"run_id": "manual__1", "ti": SimpleNamespace(try_number=2),
                               "dag_run": SimpleNamespace(run_type=run_type, conf={}),
                               "data_interval_start": DAY_START, "data_interval_end": DAY_START + dt.timedelta(days=1)}
    with pytest.raises(_Handed) as handed:
        op.execute(context)  # type: ignore[arg-type]
    return handed.value.args[0], context


def test_a_planned_item_restricts_the_export_to_its_own_partitions_and_planned_ends(
        monkeypatch: pytest.MonkeyPatch) -> None:
    handed, context = _handed(monkeypatch, PLAN[0].to_dict())
    assert handed["ends"] == {TopicPartition("orders", 0): 10, TopicPartition("orders", 2): 30}
    assert handed["run_id"] == "manual__1-task0-2", "side-by-side jobs of one run need their own temp dirs"
    assert context["kopycat_task_label"] == "orders[0,2]"
    handed, _ = _handed(monkeypatch, PLAN[1].to_dict())
    assert handed["ends"] == {TopicPartition("orders", 1): 20}
    assert handed["run_id"] == "manual__1-task1-2"


def test_without_a_planned_item_the_export_plans_every_partition_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    handed, context = _handed(monkeypatch, None, plan=PLAN)
    assert handed["ends"] == {TopicPartition("orders", 0): 10, TopicPartition("orders", 1): 20,
                              TopicPartition("orders", 2): 30}
    assert handed["run_id"] == "manual__1-2"
    assert "kopycat_task_label" not in context


def test_an_item_planned_for_another_connector_fails_naming_the_name_and_the_fix(
        monkeypatch: pytest.MonkeyPatch) -> None:
    item = PlannedTask(0, "orders[0]", {**SINK, "name": "old-lake"}, {"orders:0": 10}).to_dict()
    with pytest.raises(AirflowFailException,
                       match=r"task 0, orders\[0\]\): config.name is 'old-lake', but this task exports connector "
                             r"'lake'; expand the task over the output of a plan of the same connector config"):
        _handed(monkeypatch, item)


def test_an_item_naming_partitions_the_connector_no_longer_reads_fails_naming_them_and_the_fix(
        monkeypatch: pytest.MonkeyPatch) -> None:
    item = PlannedTask(1, "orders[1], refunds[0]", dict(SINK), {"orders:1": 20, "refunds:0": 5}).to_dict()
    with pytest.raises(AirflowFailException,
                       match=r"end_offsets names refunds:0, which connector 'lake' no longer reads "
                             r"\(topics='orders', topics.regex=''\); re-run the plan"):
        _handed(monkeypatch, item)


def test_an_item_of_a_topics_regex_sink_is_checked_against_the_regex(monkeypatch: pytest.MonkeyPatch) -> None:
    regex_sink = {k: v for k, v in SINK.items() if k != "topics"} | {"topics.regex": "orders|refunds"}
    item = PlannedTask(0, "refunds[0]", regex_sink, {"refunds:0": 5}).to_dict()
    handed, _ = _handed(monkeypatch, item, config=regex_sink)
    assert handed["ends"] == {TopicPartition("refunds", 0): 5}
    with pytest.raises(AirflowFailException, match="end_offsets names audit:0"):
        _handed(monkeypatch, PlannedTask(0, "audit[0]", regex_sink, {"audit:0": 5}).to_dict(), config=regex_sink)


def test_an_item_that_is_not_a_plan_item_fails_saying_what_to_map_over(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AirflowFailException, match=r"not an item of PlanConnectorOperator's output.*plan.output"):
        _handed(monkeypatch, {"label": "orders[0]", "end_offsets": {"orders:0": 10}})
    with pytest.raises(AirflowFailException, match="end_offsets is empty"):
        _handed(monkeypatch, PlannedTask(0, "task 0", dict(SINK)).to_dict())


def test_the_run_summary_totals_spark_exports_and_copies_alike() -> None:
    spark = {"task": 0, "records": 70, "read": [], "files": [], "offsets": {}, "topics": ["orders"]}
    copy = {"task": 1, "records": 30, "skipped": 2, "bytes": 900, "topics": ["refunds"]}
    assert run_totals([spark, copy]) == {"tasks": 2, "records": 100, "skipped": 2, "bytes": 900,
                                                     "topics": ["orders", "refunds"]}


@pytest.mark.parametrize(("run_type", "window", "expected"), [
    ("backfill", "auto", DAY), ("scheduled", "auto", None), ("manual", "auto", None),
    ("backfill", "never", None), ("scheduled", "always", DAY)])
def test_a_backfill_run_exports_its_data_interval_as_a_window_and_others_the_live_range(
        monkeypatch: pytest.MonkeyPatch, run_type: str, window: str, expected: TimeWindow | None) -> None:
    handed, _ = _handed(monkeypatch, PLAN[0].to_dict(), run_type=run_type, window=window, config=DAILY_SINK)
    assert handed["window"] == expected
    assert handed["ends"] == {TopicPartition("orders", 0): 10, TopicPartition("orders", 2): 30}


def test_an_unknown_window_mode_is_refused_naming_the_three() -> None:
    with pytest.raises(ValueError, match="use 'auto', 'always' or 'never'"):
        SparkExportOperator(task_id="export", connector_config=SINK, window="backfill")  # type: ignore[arg-type]


def test_a_windowed_summary_counts_rows_written_and_filtered_and_keeps_the_group_offsets() -> None:
    ends = {TopicPartition("orders", 0): 10}
    result = ExportResult("lake", "r", [ExportedFile("orders", 0, 3, 8, 4, "file:/lake/topics/orders/d/x.parquet")],
                          [OffsetRange("orders", 0, 3, 10)], [], {TopicPartition("orders", 0): 7}, filtered=3,
                          window=DAY)
    op = SparkExportOperator(task_id="export", connector_config=SINK)
    summary = op._windowed_summary("lake", ends, result, PLAN[0], DAY)
    assert summary == {"task": 0, "records": 4, "filtered": 3, "read": [["orders", 0, 3, 10]],
                       "files": ["file:/lake/topics/orders/d/x.parquet"], "offsets": {"orders-0": 7},
                       "topics": ["orders"], "window": [DAY.start_ms, DAY.end_ms]}
    with pytest.raises(AirflowException, match="copied the window None"):
        op._windowed_summary("lake", ends, ExportResult("lake", "r", [], [], [], {}), PLAN[0], DAY)


def test_a_backfill_the_layout_cannot_overwrite_fails_with_the_fix_before_the_plan(
        monkeypatch: pytest.MonkeyPatch) -> None:
    refused = (r"cannot export this window with Spark: Invalid value 'Wallclock' for configuration "
               r"timestamp.extractor: .*timestamp.extractor=Record")
    with pytest.raises(AirflowFailException, match=refused):
        _handed(monkeypatch, None, plan=None, run_type="backfill",
                config={**DAILY_SINK, "timestamp.extractor": "Wallclock"})


@pytest.mark.parametrize(("uri", "master"), [
    ("spark://local%5B2%5D", "local[2]"),
    ("spark://spark-master:7077", "spark://spark-master:7077"),
    ("yarn://", "yarn://"),
], ids=["local", "standalone", "yarn"])
def test_the_master_is_read_from_the_spark_connection_as_the_spark_provider_reads_it(
        uri: str, master: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_TEST", uri)
    op = SparkExportOperator(task_id="export", connector_config=SINK, spark_conn_id="spark_test")
    assert op._master() == master


def test_without_a_spark_connection_the_master_is_yarn_as_for_the_spark_provider() -> None:
    op = SparkExportOperator(task_id="export", connector_config=SINK, spark_conn_id="kopycat_no_such_spark")
    assert op._master() == "yarn"
