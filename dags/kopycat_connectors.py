"""Every connector created through the REST API, as a DAG: ``kopycat_connector_<name>``.

``POST /connectors`` (Kafka Connect's API, served by ``kopycat rest`` or the Airflow plugin)
stores the connector in the config topic of the ``kopycat_default`` cluster; this file turns each
stored connector into plan -> mapped copy -> summary on its ``kopycat.schedule`` (default every
5 minutes). Pause, resume and stop through the API; delete the connector and its DAG goes away at
the next parse. See kopycat_airflow.dag_factory.
"""

from __future__ import annotations

from kopycat_airflow.dag_factory import connector_dags

globals().update(connector_dags())
