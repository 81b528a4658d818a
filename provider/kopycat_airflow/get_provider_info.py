"""What `airflow providers list` shows for Kopycat (entry point group apache_airflow_provider)."""

from __future__ import annotations

from typing import Any

from kopycat import __version__


def get_provider_info() -> dict[str, Any]:
    """Provider metadata shaped as Airflow's provider.yaml: connections, operators, sensors, triggers."""
    return {
        "package-name": "kopycat",
        "name": "Kopycat",
        "description": "Kafka Connect's model run by Airflow: plan connectors, copy mapped tasks.",
        "versions": [__version__],
        "integrations": [{"integration-name": "Kopycat", "external-doc-url": "https://kafka.apache.org/documentation/#connect",
                          "tags": ["software"]}],
        "operators": [{"integration-name": "Kopycat", "python-modules": [
            "kopycat_airflow.operators.plan", "kopycat_airflow.operators.copy",
            "kopycat_airflow.operators.spark_export"]}],
        "sensors": [{"integration-name": "Kopycat", "python-modules": ["kopycat_airflow.sensors.connector"]}],
        "triggers": [{"integration-name": "Kopycat", "python-modules": ["kopycat_airflow.triggers.connector"]}],
        "hooks": [{"integration-name": "Kopycat", "python-modules": ["kopycat_airflow.hooks.kopycat"]}],
        "connection-types": [{"hook-class-name": "kopycat_airflow.hooks.kopycat.KopycatHook",
                              "connection-type": "kopycat"}],
        "task-decorators": [],
    }
