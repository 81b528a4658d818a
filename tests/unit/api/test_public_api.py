"""The SPI's public surface is what we mean to export, and it never reaches into the engine."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import kopycat.api

API_DIR = Path(kopycat.api.__file__).parent

EXPECTED = {
    # connectors and tasks
    "Connector", "SourceConnector", "SinkConnector", "ConnectorContext", "SourceConnectorContext",
    "SinkConnectorContext", "ExactlyOnceSupport", "ConnectorTransactionBoundaries", "Task",
    "SourceTask", "SinkTask", "SourceTaskContext", "SinkTaskContext", "OffsetStorageReader",
    "TransactionContext",
    # Airflow runs: bounded runs and backfill windows
    "BOUNDED_RUN_CONFIG", "RunComplete", "is_bounded_run", "TimeWindow", "WINDOW_START_MS_CONFIG",
    "WINDOW_END_MS_CONFIG",
    # records
    "ConnectRecord", "SourceRecord", "SinkRecord", "SinkRecordBatch", "SourceRecordBatch", "Header", "Headers",
    "RecordMetadata",
    "TimestampType", "TopicPartition",
    # data
    "Schema", "SchemaBuilder", "SchemaProjector", "Struct", "Field", "Type", "Decimal", "Date", "Time",
    "Timestamp", "LOGICAL_TYPES", "INT_RANGES", "validate_value",
    # data as Arrow (loaded on first use)
    "PRECISION_PARAMETER", "to_arrow_type", "to_arrow_field", "to_arrow_schema", "from_arrow_type",
    "from_arrow_field", "from_arrow_schema", "to_arrow_batch", "from_arrow_array", "struct_dict",
    # configuration
    "Config", "ConfigDef", "ConfigKey", "ConfigType", "ConfigValue", "Importance", "Width",
    "Password", "Range", "Regex", "NonEmptyString", "ValidList", "ValidString",
    "NO_DEFAULT", "Validator", "Recommender", "And", "CompositeValidator", "CaseInsensitiveValidString",
    "LambdaValidator", "ListSize", "NonEmptyStringWithoutControlChars", "NonNullValidator",
    "convert_to_string", "parse_type", "resolve_class",
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


def _isort_order(name: str) -> tuple[int, str]:
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_api_all_is_sorted_constants_then_classes_then_functions() -> None:
    assert kopycat.api.__all__ == sorted(kopycat.api.__all__, key=_isort_order)


def test_importing_the_api_does_not_import_pyarrow_until_an_arrow_name_is_used() -> None:
    probe = ("import sys, kopycat.api; before = 'pyarrow' in sys.modules; "
             "from kopycat.api import to_arrow_schema; print(before, 'pyarrow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)

    assert out.stdout.split() == ["False", "True"]


def _api_imports(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kopycat.api."):
            modules.add(node.module or "")
    return modules


def test_api_modules_import_each_other_without_cycles() -> None:
    graph = {f"kopycat.api.{path.stem}": _api_imports(path) for path in API_DIR.glob("*.py")
             if path.stem != "__init__"}
    cycles = []
    for start in graph:
        seen, todo = set(), list(graph[start])
        while todo:
            module = todo.pop()
            if module not in seen:
                seen.add(module)
                todo += graph.get(module, ())
        if start in seen:
            cycles.append(start)

    assert cycles == []
