"""The connector SPI: what a connector author writes against (like Kafka's connect/api).

Small and stable on purpose. ``from kopycat.api import ...`` is all a connector needs:

- connectors and tasks: ``SourceConnector``, ``SinkConnector``, ``SourceTask``, ``SinkTask``
  and their contexts; ``OffsetStorageReader`` to resume from stored source offsets;
- records and batches: ``SourceRecord``, ``SinkRecord``, ``Headers``, ``TopicPartition``,
  ``SourceRecordBatch``/``SinkRecordBatch`` (the columnar path);
- the data model: ``Schema``, ``SchemaBuilder``, ``Struct``, the logical types ``Decimal``,
  ``Date``, ``Time``, ``Timestamp``, and the Arrow mapping (``to_arrow_schema``, ``to_arrow_batch``, ...);
- configuration: ``ConfigDef`` with its types, validators and recommenders;
- errors: ``ConnectError``, ``RetriableError``, ``DataError``, ``ConfigError``, ...;
- Airflow runs: ``is_bounded_run``/``RunComplete`` (a run that ends) and ``TimeWindow`` (a backfill);
- plugins of their own kind: ``Converter``/``HeaderConverter``, ``Transformation``, ``Predicate``.

A whole source connector to copy, in one short module: :mod:`kopycat.examples.counter_source`
(run it with ``kopycat run worker.properties counter.properties``; docs/connector-authors.md).

The engine (kopycat.runtime) imports this package; this package never imports the engine.
Each name lives in a submodule (``kopycat.api.task``, ``kopycat.api.data``, ...) and is
re-exported here. The Arrow mapping loads on first use, so that importing the SPI (as DAG
parsing and the CLI do) does not import pyarrow.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from kopycat.api.bounded import BOUNDED_RUN_CONFIG, RunComplete, is_bounded_run
from kopycat.api.config import (
    NO_DEFAULT,
    And,
    CaseInsensitiveValidString,
    CompositeValidator,
    Config,
    ConfigDef,
    ConfigKey,
    ConfigType,
    ConfigValue,
    Importance,
    LambdaValidator,
    ListSize,
    NonEmptyString,
    NonEmptyStringWithoutControlChars,
    NonNullValidator,
    Password,
    Range,
    Recommender,
    Regex,
    Validator,
    ValidList,
    ValidString,
    Width,
    convert_to_string,
    parse_type,
    resolve_class,
)
from kopycat.api.connector import (
    Connector,
    ConnectorContext,
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    SinkConnector,
    SinkConnectorContext,
    SourceConnector,
    SourceConnectorContext,
)
from kopycat.api.converter import Converter, HeaderConverter, SchemaAndValue
from kopycat.api.data import (
    INT_RANGES,
    LOGICAL_TYPES,
    Date,
    Decimal,
    Field,
    Schema,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
    Type,
    validate_value,
)
from kopycat.api.errors import (
    AlreadyExistsError,
    ConfigError,
    ConnectError,
    DataError,
    NotFoundError,
    RetriableError,
    SchemaBuilderError,
)
from kopycat.api.record_batch import SinkRecordBatch, SourceRecordBatch
from kopycat.api.records import (
    ConnectRecord,
    Header,
    Headers,
    RecordMetadata,
    SinkRecord,
    SourceRecord,
    TimestampType,
    TopicPartition,
)
from kopycat.api.schema_projector import SchemaProjector
from kopycat.api.task import (
    OffsetStorageReader,
    SinkTask,
    SinkTaskContext,
    SourceTask,
    SourceTaskContext,
    Task,
    TransactionContext,
)
from kopycat.api.transforms import Predicate, Transformation
from kopycat.api.window import WINDOW_END_MS_CONFIG, WINDOW_START_MS_CONFIG, TimeWindow

if TYPE_CHECKING:
    from kopycat.api.arrow import (
        PRECISION_PARAMETER,
        from_arrow_field,
        from_arrow_schema,
        from_arrow_type,
        to_arrow_field,
        to_arrow_schema,
        to_arrow_type,
    )
    from kopycat.api.arrow_values import from_arrow_array, struct_dict, to_arrow_batch

_ON_FIRST_USE = {
    "PRECISION_PARAMETER": "kopycat.api.arrow", "from_arrow_field": "kopycat.api.arrow",
    "from_arrow_schema": "kopycat.api.arrow", "from_arrow_type": "kopycat.api.arrow",
    "to_arrow_field": "kopycat.api.arrow", "to_arrow_schema": "kopycat.api.arrow",
    "to_arrow_type": "kopycat.api.arrow", "from_arrow_array": "kopycat.api.arrow_values",
    "struct_dict": "kopycat.api.arrow_values", "to_arrow_batch": "kopycat.api.arrow_values",
}
"""The names that need pyarrow, by the module that defines them."""


def __getattr__(name: str) -> Any:
    """Import an Arrow name's module when the name is first asked for (PEP 562)."""
    module = _ON_FIRST_USE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "BOUNDED_RUN_CONFIG",
    "INT_RANGES",
    "LOGICAL_TYPES",
    "NO_DEFAULT",
    "PRECISION_PARAMETER",
    "WINDOW_END_MS_CONFIG",
    "WINDOW_START_MS_CONFIG",
    "AlreadyExistsError",
    "And",
    "CaseInsensitiveValidString",
    "CompositeValidator",
    "Config",
    "ConfigDef",
    "ConfigError",
    "ConfigKey",
    "ConfigType",
    "ConfigValue",
    "ConnectError",
    "ConnectRecord",
    "Connector",
    "ConnectorContext",
    "ConnectorTransactionBoundaries",
    "Converter",
    "DataError",
    "Date",
    "Decimal",
    "ExactlyOnceSupport",
    "Field",
    "Header",
    "HeaderConverter",
    "Headers",
    "Importance",
    "LambdaValidator",
    "ListSize",
    "NonEmptyString",
    "NonEmptyStringWithoutControlChars",
    "NonNullValidator",
    "NotFoundError",
    "OffsetStorageReader",
    "Password",
    "Predicate",
    "Range",
    "Recommender",
    "RecordMetadata",
    "Regex",
    "RetriableError",
    "RunComplete",
    "Schema",
    "SchemaAndValue",
    "SchemaBuilder",
    "SchemaBuilderError",
    "SchemaProjector",
    "SinkConnector",
    "SinkConnectorContext",
    "SinkRecord",
    "SinkRecordBatch",
    "SinkTask",
    "SinkTaskContext",
    "SourceConnector",
    "SourceConnectorContext",
    "SourceRecord",
    "SourceRecordBatch",
    "SourceTask",
    "SourceTaskContext",
    "Struct",
    "Task",
    "Time",
    "TimeWindow",
    "Timestamp",
    "TimestampType",
    "TopicPartition",
    "TransactionContext",
    "Transformation",
    "Type",
    "ValidList",
    "ValidString",
    "Validator",
    "Width",
    "convert_to_string",
    "from_arrow_array",
    "from_arrow_field",
    "from_arrow_schema",
    "from_arrow_type",
    "is_bounded_run",
    "parse_type",
    "resolve_class",
    "struct_dict",
    "to_arrow_batch",
    "to_arrow_field",
    "to_arrow_schema",
    "to_arrow_type",
    "validate_value",
]
