"""Celery 5.7 compatibility for apache-airflow-providers-celery 3.26 in the deployment's processes only.

The provider's ``celery_executor_utils`` imports ``retry`` from ``celery.backends.database``, which
Celery 5.7 removed (its DatabaseBackend now retries through ``result_backend_always_retry``), so
neither the scheduler's CeleryExecutor nor ``airflow celery worker`` can start with the pinned pair.
:class:`tests.support.celery_deployment.CeleryDeployment` puts this directory first on the
PYTHONPATH of its processes; Python imports ``sitecustomize`` at start-up, before any Airflow code,
and this puts back Celery 5.6's decorator (three tries on a database error). Remove it once the
provider supports Celery 5.7 or Celery is pinned below 5.7.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any


def _retry(fun: Callable[..., Any]) -> Callable[..., Any]:
    """Celery 5.6's ``celery.backends.database.retry``: call ``fun`` up to ``max_retries`` (3) times."""
    from sqlalchemy.exc import DatabaseError, InvalidRequestError
    from sqlalchemy.orm.exc import StaleDataError

    @functools.wraps(fun)
    def inner(*args: Any, **kwargs: Any) -> Any:
        max_retries = kwargs.pop("max_retries", 3)
        for tries in range(1, max_retries + 1):
            try:
                return fun(*args, **kwargs)
            except (DatabaseError, InvalidRequestError, StaleDataError):
                logging.getLogger(__name__).warning("%s failed, %d tries left", fun.__name__, max_retries - tries,
                                                    exc_info=True)
                if tries >= max_retries:
                    raise
        return None

    return inner


def _patch() -> None:
    try:
        import celery.backends.database as database
    except ImportError:
        return
    if not hasattr(database, "retry"):
        database.retry = _retry  # type: ignore[attr-defined]


_patch()
