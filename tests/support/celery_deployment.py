"""Distributed Airflow on loopback: the CeleryExecutor, PostgreSQL, Redis and two Celery workers.

What users deploy once one machine is not enough (Airflow's docker-compose, its Helm chart):
the scheduler queues each task's workload on a Celery broker (Redis) and Celery workers run it;
the metadata DB is PostgreSQL. Here every part is a process of its own on this machine: the
api-server, scheduler and dag-processor of :class:`AirflowProcesses`, and two
``airflow celery worker`` nodes with distinct Celery node names, each recording its own
``hostname`` on the task instances it runs (``[core] hostname_callable`` = :func:`worker_hostname`),
as two machines would.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from kopycat.dev.ports import free_port
from kopycat.dev.postgres import LocalPostgres
from kopycat.dev.redis_server import LocalRedis
from kopycat_airflow.local import LocalAirflow
from tests.support.airflow_scheduler import AirflowProcesses

__all__ = ["HOSTNAME_VARIABLE", "CeleryDeployment", "worker_hostname"]

HOSTNAME_VARIABLE = "KOPYCAT_WORKER_HOSTNAME"
"""The environment variable naming the host a worker's task processes report."""


def worker_hostname() -> str:
    """``[core] hostname_callable`` of the workers: the name their environment gives them.

    Two workers on one machine would both report its FQDN; real deployments run them on two hosts.
    """
    return os.environ[HOSTNAME_VARIABLE]


class CeleryDeployment(AirflowProcesses):
    """Airflow with the CeleryExecutor: metadata in database ``database`` of ``postgres``, Redis as the
    broker, and ``workers`` Celery workers named ``worker1``, ``worker2``... of ``concurrency`` slots each.

    :param airflow: the home, DAGs folder and extra environment (the metadata DB is PostgreSQL's).
    :param postgres: the server the metadata DB (and Celery's result backend) is created on.
    :param redis: the broker; started and stopped by the caller.
    """

    def __init__(self, airflow: LocalAirflow, postgres: LocalPostgres, redis: LocalRedis, *,
                 database: str = "airflow_celery", workers: int = 2, concurrency: int = 2) -> None:
        self.database_url = postgres.create_database(database)
        self.worker_names = [f"worker{n}" for n in range(1, workers + 1)]
        self.concurrency = concurrency
        super().__init__(airflow, {
            "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
            "AIRFLOW__CORE__PARALLELISM": str(workers * concurrency),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.database_url,
            # psycopg 3 is async too: without this Airflow swaps in asyncpg, which Kopycat does not install.
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC": self.database_url,
            "AIRFLOW__CELERY__BROKER_URL": redis.url,
            "AIRFLOW__CELERY__RESULT_BACKEND": "db+" + self.database_url,
            "AIRFLOW__CELERY__WORKER_CONCURRENCY": str(concurrency),
        })

    @property
    def metadata_url(self) -> str:
        return self.database_url

    def start_workers(self, timeout_s: float = 180) -> None:
        """One ``airflow celery worker`` per name (its own Celery node name, pid file, log server port
        and reported hostname); returns once every one consumes the queue, so that the first tasks
        queued can go to any of them."""
        for name in self.worker_names:
            self.spawn(name, ["celery", "worker", "--celery-hostname", f"{name}@%h",
                              "--concurrency", str(self.concurrency),
                              "--pid", str(self.airflow.home / f"{name}.pid")], env=self._worker_env(name))
        self.wait_for(lambda: all(self._ready(name) for name in self.worker_names), timeout_s,
                      "every Celery worker ready")

    def _ready(self, name: str) -> bool:
        """Celery's worker logs ``<node name> ready.`` once it consumes."""
        log = self.airflow.home / f"{name}.log"
        return log.exists() and re.search(rf"\b{name}@\S+ ready\.", log.read_text(errors="replace")) is not None

    def _worker_env(self, name: str) -> Mapping[str, str]:
        return {"AIRFLOW__CORE__HOSTNAME_CALLABLE": f"{__name__}.worker_hostname", HOSTNAME_VARIABLE: name,
                "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port())}
