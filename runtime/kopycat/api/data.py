"""Kafka Connect's data model in one import: schemas, structs, the builder and the logical types.

Follows Kafka's package ``org.apache.kafka.connect.data`` (``Schema``, ``ConnectSchema``,
``SchemaBuilder``, ``Field``, ``Struct``, ``Decimal``, ``Date``, ``Time``, ``Timestamp``),
which is one package in Kafka and three modules here, each importing only the ones before it:

- :mod:`kopycat.api.schema`: ``Type``, ``Field``, ``Schema``, ``Struct``, :func:`validate_value`
  (and the Python values each schema type accepts);
- :mod:`kopycat.api.schema_builder`: ``SchemaBuilder``;
- :mod:`kopycat.api.logical`: ``Decimal``, ``Date``, ``Time``, ``Timestamp``, registered by
  schema name in :mod:`kopycat.api.logical_registry`.

This module only re-exports them, so ``from kopycat.api.data import Schema, Decimal`` works
as Kafka's single package does. Mapping to Arrow lives in :mod:`kopycat.api.arrow`.
"""

from __future__ import annotations

from kopycat.api.logical import LOGICAL_TYPES, MILLIS_PER_DAY, Date, Decimal, Time, Timestamp
from kopycat.api.schema import INT_RANGES, Field, Schema, Struct, Type, validate_value
from kopycat.api.schema_builder import SchemaBuilder

__all__ = [
    "INT_RANGES", "LOGICAL_TYPES", "MILLIS_PER_DAY", "Date", "Decimal", "Field", "Schema", "SchemaBuilder",
    "Struct", "Time", "Timestamp", "Type", "validate_value",
]
