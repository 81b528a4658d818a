"""The connector SPI: what a connector author writes against (like Kafka's connect/api).

Small and stable on purpose: connectors, tasks, records, the data model, configuration,
converters and transforms. The engine (kopycat.runtime) imports this package; this package
never imports the engine. Everything here is re-exported from its module, so
``from kopycat.api import SourceTask, SourceRecord, Schema`` is all a connector needs.
"""

from __future__ import annotations

from kopycat.api.config import (
    Config,
    ConfigDef,
    ConfigKey,
    ConfigType,
    ConfigValue,
    Importance,
    NonEmptyString,
    Password,
    Range,
    Regex,
    ValidList,
    ValidString,
    Width,
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
    Date,
    Decimal,
    Field,
    Schema,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
    Type,
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

__all__ = [
    "AlreadyExistsError", "Config", "ConfigDef", "ConfigError", "ConfigKey", "ConfigType",
    "ConfigValue", "ConnectError", "ConnectRecord", "Connector", "ConnectorContext",
    "ConnectorTransactionBoundaries", "Converter", "DataError", "Date", "Decimal",
    "ExactlyOnceSupport", "Field", "Header", "HeaderConverter", "Headers", "Importance",
    "NonEmptyString", "NotFoundError", "OffsetStorageReader", "Password", "Predicate", "Range",
    "RecordMetadata", "Regex", "RetriableError", "Schema", "SchemaAndValue", "SchemaBuilder",
    "SchemaProjector",
    "SchemaBuilderError", "SinkConnector", "SinkConnectorContext", "SinkRecord", "SinkRecordBatch", "SinkTask",
    "SinkTaskContext", "SourceConnector", "SourceConnectorContext", "SourceRecord", "SourceRecordBatch",
    "SourceTask",
    "SourceTaskContext", "Struct", "Task", "Time", "Timestamp", "TimestampType", "TopicPartition",
    "TransactionContext", "Transformation", "Type", "ValidList", "ValidString", "Width",
]
