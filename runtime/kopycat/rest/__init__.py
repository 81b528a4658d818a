"""Kafka Connect's REST API for Kopycat: a FastAPI app over the config, status and offset stores.

:func:`create_app` builds the app over a :class:`RestHerder`; :func:`kopycat.rest.server.serve`
runs it standalone (``kopycat rest worker.properties``); the Airflow plugin mounts the same app.
"""

from __future__ import annotations

from kopycat.rest.app import create_app
from kopycat.rest.errors import ConnectRestError
from kopycat.rest.herder import RestHerder

__all__ = ["ConnectRestError", "RestHerder", "create_app"]
