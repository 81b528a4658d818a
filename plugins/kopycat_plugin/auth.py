"""Airflow's login and DAG permissions in front of the mounted REST API.

Airflow does not guard the FastAPI apps that plugins mount, so every route depends on
:func:`airflow_dag_access`: the caller is Airflow's user (a bearer JWT from ``POST /auth/token``,
or the UI's session cookie, as Airflow's own API reads them), and a connector's routes need the
matching permission on its DAG: reads need GET, anything else PUT (what pausing or clearing a
DAG needs). Routes without a connector (listing, creating, plugins) check all DAGs.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from kopycat_airflow.dag_factory import connector_dag_id

__all__ = ["airflow_dag_access"]

_READS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
_bearer = HTTPBearer(auto_error=False)


async def airflow_dag_access(request: Request,
                             bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> None:
    """401 without an Airflow login, 403 without the permission on the connector's DAG."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import DagDetails
    from airflow.api_fastapi.core_api.security import get_user

    user: Any = await get_user(request, None, bearer)
    method = "GET" if request.method in _READS else "PUT"
    name = request.path_params.get("name")
    dag_id = connector_dag_id(name) if name else None
    if not get_auth_manager().is_authorized_dag(method=method, details=DagDetails(id=dag_id), user=user):
        raise HTTPException(status_code=403, detail=f"User {user.get_name()} may not {method} "
                                                    f"{'DAG ' + dag_id if dag_id else 'all DAGs'}, as this "
                                                    f"{request.method} {request.url.path} needs")
