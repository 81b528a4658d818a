"""Kopycat: Kafka Connect's model in Python, run by Apache Airflow.

`kopycat.api` is the connector SPI (like Kafka's connect/api); everything else is the engine.
"""

from __future__ import annotations

__version__ = "0.1.0"
