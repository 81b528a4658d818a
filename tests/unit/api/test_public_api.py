"""The SPI's public surface is what we mean to export, and it never reaches into the engine."""

from __future__ import annotations

import ast
from pathlib import Path

import kopycat.api

API_DIR = Path(kopycat.api.__file__).parent

EXPECTED = {
    # connectors and tasks
    "Connector", "SourceConnector", "SinkConnector", "ConnectorContext", "SourceConnectorContext",
    "SinkConnectorContext", "ExactlyOnceSupport", "ConnectorTransactionBoundaries", "Task",
    "SourceTask", "SinkTask", "SourceTaskContext", "SinkTaskContext", "OffsetStorageReader",
    "TransactionContext",
    # records
    "ConnectRecord", "SourceRecord", "SinkRecord", "SinkRecordBatch", "SourceRecordBatch", "Header", "Headers",
    "RecordMetadata",
    "TimestampType", "TopicPartition",
    # data
    "Schema", "SchemaBuilder", "SchemaProjector", "Struct", "Field", "Type", "Decimal", "Date", "Time",
    "Timestamp",
    # configuration
    "Config", "ConfigDef", "ConfigKey", "ConfigType", "ConfigValue", "Importance", "Width",
    "Password", "Range", "Regex", "NonEmptyString", "ValidList", "ValidString",
    # converters and transforms
    "Converter", "HeaderConverter", "SchemaAndValue", "Transformation", "Predicate",
    # errors
    "ConnectError", "RetriableError", "DataError", "SchemaBuilderError", "ConfigError",
    "NotFoundError", "AlreadyExistsError",
}


def test_api_exports_exactly_the_intended_names() -> None:
    assert set(kopycat.api.__all__) == EXPECTED
    assert all(hasattr(kopycat.api, name) for name in EXPECTED)


def test_api_modules_import_nothing_from_the_engine_or_airflow() -> None:
    forbidden = ("kopycat.runtime", "kopycat.storage", "kopycat.connectors", "kopycat.dev",
                 "kopycat_airflow", "airflow", "confluent_kafka")
    offenders = []
    for path in API_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.name}: {n}" for n in names if n.startswith(forbidden)]

    assert offenders == []
