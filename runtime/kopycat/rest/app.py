"""The Kafka Connect compatible REST API as a FastAPI app.

Same paths, verbs, status codes and JSON as Kafka Connect 3.x/4.x (``RootResource``,
``ConnectorsResource``, ``ConnectorPluginsResource``), so ``curl`` scripts, UIs and operators
written for Kafka Connect work against Kopycat. Routes are thin: each calls one
:class:`~kopycat.rest.herder.RestHerder` method and picks the status code Kafka answers with.
Every error, FastAPI's own included, has Kafka's shape ``{"error_code": n, "message": "..."}``;
a malformed body is a 400 and a malformed path parameter a 404, as Jersey answers them.

With a ``token``, every request must carry ``Authorization: Bearer <token>`` (401 otherwise);
Kafka Connect delegates authentication to REST extensions instead. Unlike Kafka, which hides
secrets only from its logs, responses show passwords as ``[hidden]`` (:mod:`kopycat.rest.masking`).
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable, Sequence
from http import HTTPStatus
from typing import Annotated, Any, Final

from fastapi import Body, FastAPI, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from kopycat import __version__
from kopycat.api.errors import ConnectError
from kopycat.rest.bodies import connector_location
from kopycat.rest.errors import ConnectRestError, error_body, status_for
from kopycat.rest.herder import RestHerder
from kopycat.rest.ui import CONNECTORS_PAGE, TOKEN_CHALLENGE, UI_PATH

__all__ = ["create_app"]

log = logging.getLogger(__name__)

_EXAMPLE_CONFIG: Final = {"connector.class": "FileStreamSource", "tasks.max": "1", "file": "/tmp/test.txt",
                          "topic": "connect-test"}
ConfigBody = Annotated[dict[str, Any], Body(examples=[_EXAMPLE_CONFIG])]
CreateBody = Annotated[dict[str, Any], Body(examples=[{"name": "local-file-source", "config": _EXAMPLE_CONFIG}])]
OffsetsBody = Annotated[dict[str, Any], Body(examples=[{"offsets": [
    {"partition": {"filename": "/tmp/test.txt"}, "offset": {"position": 30}}]}])]


def create_app(herder: RestHerder, *, token: str | None = None, dependencies: Sequence[Any] = ()) -> FastAPI:
    """The REST API over ``herder``; with ``token``, only bearers of it are served.

    ``dependencies`` (FastAPI ``Depends``) run before every route: the Airflow plugin checks
    Airflow's login and DAG permissions there.
    """
    app = FastAPI(title="Kopycat REST API", version=__version__, dependencies=list(dependencies),
                  description="Kafka Connect's REST API over Kopycat's config, status and offset stores.")
    _add_error_handlers(app)
    if token:
        _add_token_check(app, token)
    _add_root_and_plugin_routes(app, herder)
    _add_connector_routes(app, herder)
    _add_control_routes(app, herder)
    _add_offset_routes(app, herder)
    return app


def _error(status: int, message: str | None, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(status, message), status_code=status, headers=headers)


def _add_error_handlers(app: FastAPI) -> None:
    """Kafka's ``ConnectExceptionMapper``: every failure answers ``{"error_code", "message"}``."""

    async def rest_error(request: Request, exc: Exception) -> JSONResponse:
        status = status_for(exc)
        if status >= 500:
            log.error("Uncaught exception in REST call to %s", request.url.path, exc_info=exc)
        return _error(status, exc.message if isinstance(exc, ConnectRestError) else str(exc))

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        phrase = HTTPStatus(exc.status_code).phrase
        message = exc.detail if exc.detail and exc.detail != phrase else f"HTTP {exc.status_code} {phrase}"
        return _error(exc.status_code, message, getattr(exc, "headers", None))

    async def invalid_request(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        errors = exc.errors()
        status = 404 if errors and all(e.get("loc", ("",))[0] == "path" for e in errors) else 400
        details = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in errors)
        return _error(status, f"Invalid request to {request.method} {request.url.path}: {details}")

    app.add_exception_handler(ConnectRestError, rest_error)
    app.add_exception_handler(ConnectError, rest_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(Exception, rest_error)


def _add_token_check(app: FastAPI, token: str) -> None:
    expected = token.encode()

    @app.middleware("http")
    async def check_token(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if request.url.path == UI_PATH:  # static HTML holding no data: it asks for the token itself
            return await call_next(request)
        scheme, _, supplied = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(supplied.strip().encode(), expected):
            return _error(401, "Missing or wrong bearer token: send the header 'Authorization: Bearer <token>' "
                               "with the token this server was started with (kopycat rest --token-file)",
                          {"WWW-Authenticate": TOKEN_CHALLENGE})
        return await call_next(request)


def _add_root_and_plugin_routes(app: FastAPI, herder: RestHerder) -> None:
    @app.get("/", summary="Get details about this Connect worker and the ID of the Kafka cluster it is "
                          "connected to")
    def server_info() -> dict[str, Any]:
        return herder.server_info()

    @app.get(UI_PATH, response_class=HTMLResponse, include_in_schema=False)
    def connectors_page() -> HTMLResponse:
        return HTMLResponse(CONNECTORS_PAGE)

    @app.get("/connector-plugins", summary="List all connector plugins installed")
    def list_connector_plugins(
            connectors_only: Annotated[bool, Query(alias="connectorsOnly")] = True) -> list[dict[str, str]]:
        return herder.connector_plugins(connectors_only)

    @app.get("/connector-plugins/{plugin}/config",
             summary="Get the configuration definition for the specified pluginName")
    def plugin_config(plugin: str) -> list[dict[str, Any]]:
        return herder.plugin_config(plugin)

    @app.put("/connector-plugins/{plugin}/config/validate",
             summary="Validate the provided configuration against the configuration definition for the "
                     "specified pluginName")
    def validate_configs(plugin: str, config: ConfigBody) -> dict[str, Any]:
        return herder.validate_plugin_config(plugin, config)


def _add_connector_routes(app: FastAPI, herder: RestHerder) -> None:
    @app.get("/connectors", summary="List all active connectors")
    @app.get("/connectors/", include_in_schema=False)  # Jersey serves both; no 307 redirect
    def list_connectors(expand: Annotated[list[str] | None, Query()] = None) -> Any:
        return herder.connectors(expand)

    @app.post("/connectors", status_code=201, summary="Create a new connector")
    @app.post("/connectors/", status_code=201, include_in_schema=False)
    def create_connector(request: CreateBody) -> JSONResponse:
        info = herder.create_connector(request)
        return JSONResponse(info, status_code=201, headers={"Location": connector_location(info["name"])})

    @app.get("/connectors/{name}", summary="Get the details for the specified connector")
    def get_connector(name: str) -> dict[str, Any]:
        return herder.connector_info(name)

    @app.delete("/connectors/{name}", status_code=204, summary="Delete the specified connector")
    def destroy_connector(name: str) -> Response:
        herder.delete_connector(name)
        return Response(status_code=204)

    @app.get("/connectors/{name}/config", summary="Get the configuration for the specified connector")
    def get_connector_config(name: str) -> dict[str, Any]:
        return herder.connector_config(name)

    @app.put("/connectors/{name}/config", summary="Create or reconfigure the specified connector")
    def put_connector_config(name: str, config: ConfigBody) -> JSONResponse:
        created, info = herder.put_connector_config(name, config)
        if created:
            return JSONResponse(info, status_code=201, headers={"Location": connector_location(name)})
        return JSONResponse(info)

    @app.patch("/connectors/{name}/config", summary="Patch the configuration of the specified connector")
    def patch_connector_config(name: str, patch: ConfigBody) -> dict[str, Any]:
        return herder.patch_connector_config(name, patch)

    @app.get("/connectors/{name}/tasks",
             summary="List all tasks and their configurations for the specified connector")
    def get_task_configs(name: str) -> list[dict[str, Any]]:
        return herder.task_configs(name)

    @app.get("/connectors/{name}/topics",
             summary="Get the list of topics actively used by the specified connector")
    def get_connector_active_topics(name: str) -> dict[str, Any]:
        return herder.connector_active_topics(name)

    @app.put("/connectors/{name}/topics/reset", status_code=202,
             summary="Reset the list of topics actively used by the specified connector")
    def reset_connector_active_topics(name: str) -> Response:
        herder.reset_connector_active_topics(name)
        return Response(status_code=202)


def _add_control_routes(app: FastAPI, herder: RestHerder) -> None:
    @app.get("/connectors/{name}/status", summary="Get the status for the specified connector")
    def get_connector_status(name: str) -> dict[str, Any]:
        return herder.connector_status(name)

    @app.get("/connectors/{name}/tasks/{task}/status",
             summary="Get the state of the specified task for the specified connector")
    def get_task_status(name: str, task: int) -> dict[str, Any]:
        return herder.task_status(name, task)

    @app.post("/connectors/{name}/restart", summary="Restart the specified connector")
    def restart_connector(
            name: str, include_tasks: Annotated[bool, Query(alias="includeTasks")] = False,
            only_failed: Annotated[bool, Query(alias="onlyFailed")] = False) -> Response:
        plan = herder.restart_connector(name, include_tasks=include_tasks, only_failed=only_failed)
        return Response(status_code=204) if plan is None else JSONResponse(plan, status_code=202)

    @app.post("/connectors/{name}/tasks/{task}/restart", status_code=204,
              summary="Restart the specified task for the specified connector")
    def restart_task(name: str, task: int) -> Response:
        herder.restart_task(name, task)
        return Response(status_code=204)

    @app.put("/connectors/{name}/pause", status_code=202, summary="Pause the specified connector")
    def pause_connector(name: str) -> Response:
        herder.pause_connector(name)
        return Response(status_code=202)

    @app.put("/connectors/{name}/resume", status_code=202, summary="Resume the specified connector")
    def resume_connector(name: str) -> Response:
        herder.resume_connector(name)
        return Response(status_code=202)

    @app.put("/connectors/{name}/stop", status_code=204, summary="Stop the specified connector")
    def stop_connector(name: str) -> Response:
        herder.stop_connector(name)
        return Response(status_code=204)


def _add_offset_routes(app: FastAPI, herder: RestHerder) -> None:
    @app.get("/connectors/{name}/offsets", summary="Get the current offsets for the specified connector")
    def get_offsets(name: str) -> dict[str, Any]:
        return herder.connector_offsets(name)

    @app.patch("/connectors/{name}/offsets", summary="Alter the offsets for the specified connector")
    def alter_connector_offsets(name: str, offsets: OffsetsBody) -> dict[str, str]:
        return herder.alter_connector_offsets(name, offsets)

    @app.delete("/connectors/{name}/offsets", summary="Reset the offsets for the specified connector")
    def reset_connector_offsets(name: str) -> dict[str, str]:
        return herder.reset_connector_offsets(name)

    @app.get("/connectors/{name}/lag", summary="Kopycat extension: how far the connector is behind its input "
             "topics (sinks and MirrorSourceConnector), per partition as kafka-consumer-groups shows it")
    def get_connector_lag(name: str) -> dict[str, Any]:
        return herder.connector_lag(name)
