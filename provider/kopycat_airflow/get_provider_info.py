"""What `airflow providers list` shows for Kopycat (entry point group apache_airflow_provider)."""

from __future__ import annotations

from typing import Any

from kopycat import __version__


def get_provider_info() -> dict[str, Any]:
    """Provider metadata; operators, hooks and connection types are added as they land."""
    return {
        "package-name": "kopycat",
        "name": "Kopycat",
        "description": "Kafka Connect's model run by Airflow: plan connectors, copy mapped tasks.",
        "versions": [__version__],
    }
