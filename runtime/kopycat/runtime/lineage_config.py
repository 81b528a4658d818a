"""The worker's ``openlineage.*`` keys: where the standalone worker sends its OpenLineage run events.

Kafka Connect has no lineage settings; these mirror the openlineage-python client's own configuration
(its ``openlineage.yml``: ``transport.type``, ``transport.url``, ``transport.log_file_path``...) under
the ``openlineage.`` prefix of a ``worker.properties``, as the Airflow provider's ``[openlineage]``
section does for Airflow. Every ``openlineage.transport.<key>`` the worker file sets goes to the
client's transport config, dots making nested keys (``openlineage.transport.auth.type=api_key``);
the keys declared here are the common ones, checked and documented.
"""

from __future__ import annotations

from typing import Final

from kopycat.api.config import CaseInsensitiveValidString, ConfigDef, ConfigType, Importance, NonEmptyString

__all__ = [
    "OPENLINEAGE_CONFIG", "OPENLINEAGE_NAMESPACE_CONFIG", "OPENLINEAGE_TRANSPORT_PREFIX",
    "OPENLINEAGE_TRANSPORT_TYPE_CONFIG",
]

OPENLINEAGE_TRANSPORT_PREFIX: Final = "openlineage.transport."
OPENLINEAGE_TRANSPORT_TYPE_CONFIG: Final = "openlineage.transport.type"
OPENLINEAGE_TRANSPORT_URL_CONFIG: Final = "openlineage.transport.url"
OPENLINEAGE_TRANSPORT_ENDPOINT_CONFIG: Final = "openlineage.transport.endpoint"
OPENLINEAGE_TRANSPORT_LOG_FILE_PATH_CONFIG: Final = "openlineage.transport.log_file_path"
OPENLINEAGE_TRANSPORT_APPEND_CONFIG: Final = "openlineage.transport.append"
OPENLINEAGE_NAMESPACE_CONFIG: Final = "openlineage.namespace"

TRANSPORT_TYPES: Final = ("", "console", "file", "http", "kafka", "noop")

OPENLINEAGE_CONFIG: Final = (
    ConfigDef()
    .define(OPENLINEAGE_TRANSPORT_TYPE_CONFIG, ConfigType.STRING, "", CaseInsensitiveValidString(TRANSPORT_TYPES),
            Importance.LOW,
            doc="Where `kopycat standalone` sends an OpenLineage run event (START, then COMPLETE or FAIL) per "
                "connector, with the datasets, schemas and column lineage the Airflow operators report: "
                "'http' (a lineage backend such as Marquez, at openlineage.transport.url), 'file' (JSON "
                "lines at openlineage.transport.log_file_path), 'console' (the log), 'kafka' or 'noop'. "
                "Empty (the default) sends none. Other openlineage.transport.* keys are passed to the "
                "openlineage-python transport as they are.")
    .define(OPENLINEAGE_TRANSPORT_URL_CONFIG, ConfigType.STRING, None, importance=Importance.LOW,
            doc="The lineage backend's base URL for the 'http' transport, e.g. http://marquez:5000.")
    .define(OPENLINEAGE_TRANSPORT_ENDPOINT_CONFIG, ConfigType.STRING, None, importance=Importance.LOW,
            doc="The path under openlineage.transport.url events are posted to (the client's default: "
                "api/v1/lineage).")
    .define(OPENLINEAGE_TRANSPORT_LOG_FILE_PATH_CONFIG, ConfigType.STRING, None, importance=Importance.LOW,
            doc="The file the 'file' transport writes events to.")
    .define(OPENLINEAGE_TRANSPORT_APPEND_CONFIG, ConfigType.BOOLEAN, None, importance=Importance.LOW,
            doc="For the 'file' transport: true appends every event as one line of "
                "openlineage.transport.log_file_path; false (the client's default) writes each event to "
                "its own file named after it with a timestamp.")
    .define(OPENLINEAGE_NAMESPACE_CONFIG, ConfigType.STRING, "kopycat", NonEmptyString(), Importance.LOW,
            doc="The OpenLineage job namespace of this worker's connectors; each connector is the job named "
                "after it.")
)
"""The ``openlineage.*`` keys, merged into the worker's ConfigDef."""
