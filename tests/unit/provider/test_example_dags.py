"""The example DAGs in dags/ import cleanly and have the shape their docs promise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

_PARSE = """
import json
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder={folder!r})
print(json.dumps({{"errors": {{k: v.splitlines()[-1] for k, v in bag.import_errors.items()}},
                  "dags": {{d: sorted(t.task_id for t in dag.tasks) for d, dag in bag.dags.items()}}}}))
"""


def _parse(tmp_path: Path) -> dict[str, dict[str, object]]:
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
           "AIRFLOW__CORE__UNIT_TEST_MODE": "True"}
    done = subprocess.run([sys.executable, "-c", _PARSE.format(folder=str(REPO / "dags"))], env=env,
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_example_dags_import_without_errors_as_plan_copy_summary_groups(tmp_path: Path) -> None:
    parsed = _parse(tmp_path)
    assert parsed["errors"] == {}
    assert parsed["dags"]["kopycat_shop_import"] == [
        "shop-jdbc-source.copy", "shop-jdbc-source.plan", "shop-jdbc-source.summary"]
    assert parsed["dags"]["kopycat_shop_export"] == [
        "shop-lake-sink.copy", "shop-lake-sink.plan", "shop-lake-sink.summary",
        "shop-reporting-sink.copy", "shop-reporting-sink.plan", "shop-reporting-sink.summary"]
    assert parsed["dags"]["kopycat_shop_lake_spark"] == [
        "shop-lake-sink.export", "shop-lake-sink.plan", "shop-lake-sink.summary"]
    assert parsed["dags"]["kopycat_shop_mirror"] == [
        "shop-mirror-checkpoint.copy", "shop-mirror-checkpoint.plan", "shop-mirror-checkpoint.summary",
        "shop-mirror-source.copy", "shop-mirror-source.plan", "shop-mirror-source.summary"]
