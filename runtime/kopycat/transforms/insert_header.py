"""InsertHeader: add a header with a literal value to every record.

Follows Kafka's ``org.apache.kafka.connect.transforms.InsertHeader``: the literal is typed as
``Values.parseString`` types it (``42`` is an INT8 header, ``true`` a BOOLEAN, other text a
STRING; see :mod:`kopycat.values`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final, TypeVar

from kopycat.api.config import ConfigDef, ConfigType, Importance, NonNullValidator
from kopycat.api.converter import SchemaAndValue
from kopycat.api.records import ConnectRecord
from kopycat.api.transforms import Transformation
from kopycat.transforms._util import DeclaredConfig
from kopycat.values import parse_string

__all__ = ["InsertHeader"]

R = TypeVar("R", bound=ConnectRecord)

HEADER_FIELD: Final = "header"
VALUE_LITERAL_FIELD: Final = "value.literal"


class InsertHeader(DeclaredConfig, Transformation[R]):
    """Append header ``header`` with the parsed ``value.literal``; headers already there stay."""

    OVERVIEW_DOC: ClassVar[str] = "Add a header to each record."
    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(HEADER_FIELD, ConfigType.STRING, validator=NonNullValidator(), importance=Importance.HIGH,
                doc="The name of the header.")
        .define(VALUE_LITERAL_FIELD, ConfigType.STRING, validator=NonNullValidator(), importance=Importance.HIGH,
                doc="The literal value that is to be set as the header value on all records."))

    def __init__(self) -> None:
        self.header = ""
        self.literal = SchemaAndValue(None, None)

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        self.header = parsed[HEADER_FIELD]
        self.literal = parse_string(parsed[VALUE_LITERAL_FIELD])

    def apply(self, record: R) -> R:
        updated: R = record.new_record()  # a copy whose headers are its own
        updated.headers.add(self.header, self.literal.value, self.literal.schema)
        return updated

    def apply_batch(self, records: Sequence[R]) -> list[R]:
        apply = self.apply
        return [apply(record) for record in records]
