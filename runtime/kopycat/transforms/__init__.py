"""Single message transforms (SMTs) and predicates, as Kafka Connect ships them.

Each SMT has Kafka's name, config keys and behaviour; field SMTs come as ``Key`` and
``Value`` variants nested like Kafka's ``InsertField$Value``. A connector config names them
in any of these ways (see :mod:`kopycat.transforms.registry`)::

    transforms.a.type=org.apache.kafka.connect.transforms.InsertField$Value   # Kafka's name
    transforms.a.type=kopycat.transforms.InsertField$Value                    # ours (or .Value)
    transforms.a.type=InsertField$Value                                       # short alias
    transforms.a.type=mypkg.smts.Redact                                       # your own class

Chains are built from connector properties by :class:`TransformationChain.from_props`.

=================  ==================================================================
SMT                Kafka class
=================  ==================================================================
Cast               ``org.apache.kafka.connect.transforms.Cast$Key`` / ``$Value``
DropHeaders        ``org.apache.kafka.connect.transforms.DropHeaders``
ExtractField       ``org.apache.kafka.connect.transforms.ExtractField$Key`` / ``$Value``
Filter             ``org.apache.kafka.connect.transforms.Filter``
Flatten            ``org.apache.kafka.connect.transforms.Flatten$Key`` / ``$Value``
HeaderFrom         ``org.apache.kafka.connect.transforms.HeaderFrom$Key`` / ``$Value``
HoistField         ``org.apache.kafka.connect.transforms.HoistField$Key`` / ``$Value``
InsertField        ``org.apache.kafka.connect.transforms.InsertField$Key`` / ``$Value``
InsertHeader       ``org.apache.kafka.connect.transforms.InsertHeader``
MaskField          ``org.apache.kafka.connect.transforms.MaskField$Key`` / ``$Value``
RegexRouter        ``org.apache.kafka.connect.transforms.RegexRouter``
ReplaceField       ``org.apache.kafka.connect.transforms.ReplaceField$Key`` / ``$Value``
SetSchemaMetadata  ``org.apache.kafka.connect.transforms.SetSchemaMetadata$Key`` / ``$Value``
TimestampConverter ``org.apache.kafka.connect.transforms.TimestampConverter$Key`` / ``$Value``
TimestampRouter    ``org.apache.kafka.connect.transforms.TimestampRouter``
ValueToKey         ``org.apache.kafka.connect.transforms.ValueToKey``
=================  ==================================================================

Predicates (``org.apache.kafka.connect.transforms.predicates.*``): TopicNameMatches,
HasHeaderKey, RecordIsTombstone, in :mod:`kopycat.transforms.predicates`.
"""

from __future__ import annotations

from kopycat.transforms.cast import Cast
from kopycat.transforms.chain import (
    TransformationChain,
    TransformationStage,
    enrich,
    transforms_config_def,
)
from kopycat.transforms.drop_headers import DropHeaders
from kopycat.transforms.extract_field import ExtractField
from kopycat.transforms.field_path import FieldSyntaxVersion, SingleFieldPath
from kopycat.transforms.filter import Filter
from kopycat.transforms.flatten import Flatten
from kopycat.transforms.header_from import HeaderFrom
from kopycat.transforms.hoist_field import HoistField
from kopycat.transforms.insert_field import InsertField
from kopycat.transforms.insert_header import InsertHeader
from kopycat.transforms.mask_field import MaskField
from kopycat.transforms.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches
from kopycat.transforms.regex_router import RegexRouter
from kopycat.transforms.replace_field import ReplaceField
from kopycat.transforms.set_schema_metadata import SetSchemaMetadata
from kopycat.transforms.timestamp_converter import TimestampConverter
from kopycat.transforms.timestamp_router import TimestampRouter
from kopycat.transforms.value_to_key import ValueToKey

__all__ = [
    "Cast", "DropHeaders", "ExtractField", "FieldSyntaxVersion", "Filter", "Flatten", "HasHeaderKey",
    "HeaderFrom", "HoistField", "InsertField", "InsertHeader", "MaskField", "RecordIsTombstone",
    "RegexRouter", "ReplaceField", "SetSchemaMetadata", "SingleFieldPath", "TimestampConverter",
    "TimestampRouter", "TopicNameMatches", "TransformationChain", "TransformationStage", "ValueToKey",
    "enrich", "transforms_config_def",
]
