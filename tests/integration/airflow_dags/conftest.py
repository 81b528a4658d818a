"""A throwaway Airflow for DAG tests: one metadata DB per session, DAG files per test module.

DAG runs are ``dag.test()`` in child processes (kopycat_airflow.local.LocalAirflow), with the
real broker and databases of tests/conftest.py passed through the environment.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kopycat_airflow.local import LocalAirflow


@pytest.fixture(scope="session")
def airflow_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated Airflow home shared by the session (migration takes about a minute)."""
    home = tmp_path_factory.mktemp("airflow-home")
    LocalAirflow(home, home / "dags").migrate()
    return home


@pytest.fixture
def local_airflow(airflow_home: Path, tmp_path: Path, bootstrap_servers: str) -> Iterator[LocalAirflow]:
    """Airflow on the session's metadata DB with this test's own DAGs folder (``.dags_folder``)."""
    dags = tmp_path / "dags"
    dags.mkdir()
    yield LocalAirflow(airflow_home, dags, env={"KOPYCAT_BOOTSTRAP_SERVERS": bootstrap_servers})
