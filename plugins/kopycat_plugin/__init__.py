"""Kopycat inside Airflow's API server: the Kafka Connect REST API and the connectors page.

Registered under the ``airflow.plugins`` entry point (pyproject.toml), so installing Kopycat is
enough; :class:`~kopycat_plugin.plugin.KopycatPlugin` is the plugin.
"""

from __future__ import annotations

from kopycat_plugin.plugin import KopycatPlugin

__all__ = ["KopycatPlugin"]
