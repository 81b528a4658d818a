"""A throwaway Airflow for DAG tests: one metadata DB and one dag.test server per session.

DAG runs are ``dag.test()`` in one served child process per session (``LocalAirflow.serve``), so
Airflow's 15-30 s start is paid once, not per run; each test has its own DAGs folder, and the
real broker and databases of tests/conftest.py reach the runs through the environment.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kopycat.dev.kafka_broker import LocalKafkaBroker
from kopycat_airflow.local import LocalAirflow


@pytest.fixture(scope="session")
def served_airflow(tmp_path_factory: pytest.TempPathFactory,
                   kafka_broker: LocalKafkaBroker) -> Iterator[LocalAirflow]:
    """A migrated Airflow home (about a minute) and the session's dag.test server."""
    home = tmp_path_factory.mktemp("airflow-home")
    airflow = LocalAirflow(home, home / "dags", env={"KOPYCAT_BOOTSTRAP_SERVERS": kafka_broker.bootstrap_servers})
    airflow.migrate()
    with airflow.serve() as served:
        yield served


@pytest.fixture
def local_airflow(served_airflow: LocalAirflow, tmp_path: Path) -> LocalAirflow:
    """The session's Airflow with this test's own DAGs folder (``.dags_folder``)."""
    dags = tmp_path / "dags"
    dags.mkdir()
    return served_airflow.with_dags(dags)
