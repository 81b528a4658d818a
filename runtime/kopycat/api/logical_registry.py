"""Logical types by schema name: where a schema's value check finds the class of its logical type.

A logical type (Kafka's ``Decimal``, ``Date``, ``Time``, ``Timestamp``) is a class over
:class:`~kopycat.api.schema.Schema` and :class:`~kopycat.api.schema_builder.SchemaBuilder`,
while :func:`~kopycat.api.schema.validate_value` must recognise its schemas by name. Kafka
hard-codes the four classes in ``ConnectSchema``; here :mod:`kopycat.api.logical` registers
them in this module, which imports nothing, so the schema core and the logical types need not
import each other. Registration happens when :mod:`kopycat.api` loads (it imports the logical
types), so every schema check sees all four.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Final

__all__ = ["LOGICAL_TYPES", "register_logical_type"]

_BY_NAME: dict[str, Any] = {}

LOGICAL_TYPES: Final = MappingProxyType(_BY_NAME)
"""Logical type classes by schema name, for converters that special-case them."""


def register_logical_type(cls: Any) -> None:
    """Make ``cls`` the logical type of schemas named ``cls.LOGICAL_NAME``.

    ``cls`` has Kafka's conversions as class methods: ``validate(schema, value, path)``,
    ``from_logical(schema, value)`` and ``to_logical(schema, value)``.
    """
    _BY_NAME[cls.LOGICAL_NAME] = cls
