"""The provider without services: plans' JSON shape, passwords, windows, config files, errors."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from types import SimpleNamespace

import pytest
from airflow.sdk.api.datamodels._generated import DagRunType as SdkDagRunType
from airflow.sdk.exceptions import AirflowFailException

from kopycat.api.errors import ConfigError
from kopycat.api.window import WINDOW_END_MS_CONFIG, WINDOW_START_MS_CONFIG, TimeWindow
from kopycat.runtime.bounded_plan import PlannedTask, plan_bounded_run, with_passwords
from kopycat_airflow.connector_config import resolve_connector_config
from kopycat_airflow.get_provider_info import get_provider_info
from kopycat_airflow.operators.copy import CopyTaskOperator, window_of
from kopycat_airflow.operators.plan import config_errors
from kopycat_airflow.operators.spark_export import SparkExportOperator

UTC = dt.timezone.utc


def test_a_planned_task_round_trips_through_json() -> None:
    task = PlannedTask(2, "orders", {"tables": "orders"}, {"t:0": 5, "my:topic:1": 7})
    again = PlannedTask.from_dict(task.to_dict())
    assert again == task
    assert {(tp.topic, tp.partition): o for tp, o in again.end_offsets_by_partition().items()} == {
        ("t", 0): 5, ("my:topic", 1): 7}


def test_the_plan_of_a_source_lists_its_task_configs_with_labels(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.log").write_text("x\n")
    planned = plan_bounded_run({"name": "f", "connector.class": "FileStreamSource",
                                "files": str(tmp_path / "*.log"), "topic": "t", "tasks.max": "2"}, {})
    assert [p.index for p in planned] == [0, 1]
    assert all(p.label == str(tmp_path / "*.log") for p in planned)
    assert all("task.class" in p.config for p in planned)


def test_passwords_stay_out_of_the_plan_and_come_back_for_the_run() -> None:
    props = {"name": "db", "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
             "connection.password": "s3cret"}
    config = {"tables": "orders"}
    assert with_passwords(config, props) == {"tables": "orders", "connection.password": "s3cret"}


def test_a_windowed_run_is_a_backfill_or_asked_for_in_the_run_conf() -> None:
    start, end = dt.datetime(2026, 11, 20, 1, tzinfo=UTC), dt.datetime(2026, 11, 20, 2, tzinfo=UTC)

    def context(run_type: object, conf: dict[str, object] | None = None) -> dict[str, object]:
        return {"dag_run": SimpleNamespace(run_type=run_type, conf=conf or {}),
                "data_interval_start": start, "data_interval_end": end}

    expected = TimeWindow(int(start.timestamp() * 1000), int(end.timestamp() * 1000))
    assert window_of(context("scheduled"), "auto") is None
    assert window_of(context("backfill"), "auto") == expected
    assert window_of(context(SdkDagRunType.BACKFILL), "auto") == expected  # what a task's dag_run carries
    assert window_of(context(SdkDagRunType.SCHEDULED), "auto") is None
    assert window_of(context("manual", {"kopycat_window": True}), "auto") == expected
    assert window_of(context("scheduled"), "always") == expected
    assert window_of(context("backfill"), "never") is None


def test_a_window_needs_a_data_interval() -> None:
    at = dt.datetime(2026, 11, 20, tzinfo=UTC)
    with pytest.raises(Exception, match="data interval"):
        window_of({"dag_run": SimpleNamespace(run_type="backfill", conf={}), "data_interval_start": at,
                   "data_interval_end": at}, "auto")


def test_a_spark_export_backfill_of_a_layout_it_cannot_overwrite_fails_with_the_fix_before_the_plan() -> None:
    start, end = dt.datetime(2026, 11, 20, 1, tzinfo=UTC), dt.datetime(2026, 11, 20, 2, tzinfo=UTC)
    context = {"dag_run": SimpleNamespace(run_type="backfill", conf={}), "data_interval_start": start,
               "data_interval_end": end}
    export = SparkExportOperator(task_id="export", connector_config={
        "name": "lake", "connector.class": "FileSinkConnector", "topics": "orders", "store.url": "file:///lake"})
    with pytest.raises(AirflowFailException, match="partitioner.class: windowed .*TimeBasedPartitioner"):
        export.execute(context)  # type: ignore[arg-type]  # no Kafka, no plan: refused first
    assert SparkExportOperator(task_id="always", connector_config={}, window="always").window == "always"


def test_the_window_keys_must_come_in_pairs_of_integers() -> None:
    assert TimeWindow.of({}) is None
    assert TimeWindow.of({WINDOW_START_MS_CONFIG: "1", WINDOW_END_MS_CONFIG: "5"}) == TimeWindow(1, 5)
    with pytest.raises(ConfigError, match=WINDOW_END_MS_CONFIG):
        TimeWindow.of({WINDOW_START_MS_CONFIG: "1"})
    with pytest.raises(ConfigError, match="epoch milliseconds"):
        TimeWindow.of({WINDOW_START_MS_CONFIG: "yesterday", WINDOW_END_MS_CONFIG: "5"})
    with pytest.raises(ConfigError, match="before"):
        TimeWindow(5, 1)


def test_connector_configs_come_from_dicts_or_files(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text("name=c\nconnector.class=FileStreamSource\n")
    assert resolve_connector_config(path) == {"name": "c", "connector.class": "FileStreamSource"}
    assert resolve_connector_config({"tasks.max": 3, "x": True, "l": ["a", "b"], "n": None}) == {
        "tasks.max": "3", "x": "true", "l": "a,b"}
    with pytest.raises(FileNotFoundError, match="missing.properties"):
        resolve_connector_config("missing.properties")


def test_config_errors_name_every_bad_key() -> None:
    errors = config_errors({"name": "f", "connector.class": "FileStreamSource", "tasks.max": "zero"})
    assert any(e.startswith("tasks.max:") and "zero" in e for e in errors)
    assert any(e.startswith("topic:") for e in errors)
    assert config_errors({"name": "f", "connector.class": "NoSuchConnector"})[0].find("NoSuchConnector") >= 0


def test_the_provider_registers_its_hook_and_connection_type() -> None:
    info = get_provider_info()
    assert info["connection-types"][0]["connection-type"] == "kopycat"
    assert "kopycat_airflow.operators.copy" in info["operators"][0]["python-modules"]


@pytest.mark.parametrize("interval", [0, -1.5])
def test_a_copy_task_refuses_a_progress_interval_that_is_not_positive(interval: float) -> None:
    with pytest.raises(ValueError, match=rf"progress_interval_s={interval}: give a number of seconds > 0"):
        CopyTaskOperator(task_id="copy", connector_config={"name": "c"}, task_config={}, progress_interval_s=interval)
