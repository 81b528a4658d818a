"""Chains from connector properties, after Kafka's ConnectorConfigTest."""

from __future__ import annotations

import sys
import types
from collections.abc import Mapping
from typing import Any

import pytest

from kopycat.api.config import ConfigDef, ConfigType, Importance, Range
from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.errors import ConfigError, DataError
from kopycat.api.records import SinkRecord, SourceRecord
from kopycat.api.transforms import Predicate, Transformation
from kopycat.transforms import (
    InsertField,
    RegexRouter,
    TransformationChain,
    enrich,
    transforms_config_def,
)

DUMMY = SinkRecord(topic="t", kafka_partition=0)


class SimpleTransformation(Transformation):
    """Sets the partition to magic.number (ConnectorConfigTest.SimpleTransformation)."""

    closed = 0

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.magic = int(configs["magic.number"])

    def apply(self, record):
        return record.new_record(kafka_partition=self.magic)

    def config(self) -> ConfigDef:
        return ConfigDef().define("magic.number", ConfigType.INT, validator=Range.at_least(42),
                                  importance=Importance.HIGH)

    def close(self) -> None:
        SimpleTransformation.closed += 1


class PartitionIs(Predicate):
    """True when the partition equals int (ConnectorConfigTest.TestPredicate)."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.param = int(configs["int"])

    def test(self, record) -> bool:
        return record.kafka_partition == self.param

    def config(self) -> ConfigDef:
        return ConfigDef().define("int", ConfigType.INT, 80, Range.at_least(80), Importance.MEDIUM, "A test parameter")


class HasDuplicateConfig(Transformation):
    """Defines predicate/negate itself; the chain's implicit keys mask them."""

    def configure(self, configs: Mapping[str, Any]) -> None:
        pass

    def apply(self, record):
        return record

    def config(self) -> ConfigDef:
        return (ConfigDef().define("predicate", ConfigType.INT, importance=Importance.MEDIUM)
                .define("negate", ConfigType.INT, 123, importance=Importance.MEDIUM)
                .define("must.exist.key", ConfigType.BOOLEAN, True, importance=Importance.MEDIUM))


class Boom(Transformation):
    def configure(self, configs: Mapping[str, Any]) -> None:
        pass

    def apply(self, record):
        raise DataError("boom")

    def config(self) -> ConfigDef:
        return ConfigDef()


@pytest.fixture(autouse=True)
def user_smts(monkeypatch):
    """The classes above, importable as ``user_smts.<Name>`` like a user's own plugin module."""
    module = types.ModuleType("user_smts")
    for cls in (SimpleTransformation, PartitionIs, HasDuplicateConfig, Boom):
        setattr(module, cls.__name__, cls)
    monkeypatch.setitem(sys.modules, "user_smts", module)


def simple(**extra: str) -> dict[str, str]:
    return {"name": "test", "connector.class": "x.Y", "transforms": "a",
            "transforms.a.type": "user_smts.SimpleTransformation", "transforms.a.magic.number": "42", **extra}


def test_no_transforms_is_an_empty_chain_that_passes_records_through():
    # noTransforms
    chain = TransformationChain.from_props({"name": "test"})
    assert len(chain) == 0
    assert chain.apply_batch([DUMMY]) == [DUMMY]


def test_a_dangling_alias_names_the_type_key_and_the_known_transformations():
    # danglingTransformAlias
    with pytest.raises(ConfigError, match="Not a Transformation") as info:
        TransformationChain.from_props({"transforms": "dangler"})
    message = str(info.value)
    assert "transforms.dangler.type" in message
    assert "InsertField$Value" in message and "RegexRouter" in message
    assert info.value.key == "transforms.dangler.type"


def test_an_unknown_class_names_the_key_the_value_and_the_known_transformations():
    # wrongTransformationType
    with pytest.raises(ConfigError) as info:
        TransformationChain.from_props({"transforms": "a", "transforms.a.type": "uninstantiable"})
    message = str(info.value)
    assert "Invalid value uninstantiable for configuration transforms.a.type" in message
    assert "Class uninstantiable could not be found" in message
    assert "org.apache.kafka.connect.transforms.<name>" in message and "Cast$Key" in message


def test_a_missing_smt_key_is_named_with_its_prefix():
    # unconfiguredTransform
    props = simple()
    del props["transforms.a.magic.number"]
    with pytest.raises(ConfigError, match='Missing required configuration "transforms.a.magic.number"'):
        TransformationChain.from_props(props)


def test_a_bad_smt_value_is_named_with_its_prefix():
    # misconfiguredTransform
    with pytest.raises(ConfigError, match="Value must be at least 42") as info:
        TransformationChain.from_props(simple(**{"transforms.a.magic.number": "40"}))
    assert "transforms.a.magic.number" in str(info.value)


def test_a_builtin_smt_config_error_names_the_prefixed_key():
    props = {"transforms": "cast", "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value",
             "transforms.cast.spec": "age:decimal"}
    expected = r"configuration transforms\.cast\.spec: Invalid type found in casting spec: decimal"
    with pytest.raises(ConfigError, match=expected):
        TransformationChain.from_props(props)


def test_a_configure_time_error_names_the_prefixed_key():
    props = {"transforms": "ins", "transforms.ins.type": "InsertField$Value", "transforms.ins.static.field": "f"}
    with pytest.raises(ConfigError, match=r"configuration transforms\.ins\.static\.value") as info:
        TransformationChain.from_props(props)
    assert info.value.key == "transforms.ins.static.value"
    expected = r"transformation 'ins' \(transforms\.ins\.type=InsertField\$Value\): No field insertion"
    with pytest.raises(ConfigError, match=expected):
        TransformationChain.from_props({"transforms": "ins", "transforms.ins.type": "InsertField$Value"})


def test_single_and_multiple_transforms_apply_in_order():
    # singleTransform, multipleTransforms
    chain = TransformationChain.from_props(simple())
    assert chain.stages[0].transform_class is SimpleTransformation
    assert chain.apply(DUMMY).kafka_partition == 42
    chain = TransformationChain.from_props(simple(**{
        "transforms": "a, b", "transforms.b.type": "user_smts.SimpleTransformation",
        "transforms.b.magic.number": "84"}))
    assert [s.alias for s in chain.stages] == ["a", "b"]
    assert chain.stages[0].apply(DUMMY).kafka_partition == 42
    assert chain.stages[1].apply(DUMMY).kafka_partition == 84
    assert chain.apply(DUMMY).kafka_partition == 84


def test_one_dangling_among_several_is_an_error():
    # multipleTransformsOneDangling
    with pytest.raises(ConfigError, match="transforms.b.type"):
        TransformationChain.from_props(simple(transforms="a, b"))


def test_duplicate_aliases_are_an_error():
    with pytest.raises(ConfigError, match="Duplicate alias provided: a"):
        TransformationChain.from_props(simple(transforms="a,a"))


@pytest.mark.parametrize("type_name", ["org.apache.kafka.connect.transforms.InsertField",
                                       "kopycat.transforms.InsertField"])
def test_an_abstract_family_suggests_its_key_and_value_classes(type_name):
    # abstractTransform, abstractKeyValueTransform
    with pytest.raises(ConfigError, match="This class is abstract and cannot be created") as info:
        TransformationChain.from_props({"transforms": "a", "transforms.a.type": type_name})
    assert "InsertField$Key" in str(info.value) and "InsertField$Value" in str(info.value)


def test_a_non_predicate_class_as_predicate_is_an_error():
    # wrongPredicateType
    props = simple(**{"transforms.a.predicate": "my-pred", "predicates": "my-pred",
                      "predicates.my-pred.type": "user_smts.SimpleTransformation"})
    with pytest.raises(ConfigError, match="does not implement the Predicate interface") as info:
        TransformationChain.from_props(props)
    assert info.value.key == "predicates.my-pred.type"


@pytest.mark.parametrize(("negate", "expected"), [(None, (0, 42)), ("false", (0, 42)), ("true", (42, 84))])
def test_a_conditional_transform_applies_when_the_predicate_holds_or_negated_when_not(negate, expected):
    # singleConditionalTransform, predicateNegationDefaultsToFalse (assertTransformationStageWithPredicate)
    props = simple(**{"transforms.a.predicate": "my-pred", "predicates": "my-pred",
                      "predicates.my-pred.type": "user_smts.PartitionIs", "predicates.my-pred.int": "84"})
    if negate is not None:
        props["transforms.a.negate"] = negate
    chain = TransformationChain.from_props(props)
    stage = chain.stages[0]
    matching = DUMMY.new_record(kafka_partition=84)
    assert (stage.apply(DUMMY).kafka_partition, stage.apply(matching).kafka_partition) == expected
    assert [r.kafka_partition for r in chain.apply_batch([DUMMY, matching])] == list(expected)


def test_a_bad_predicate_value_is_named_with_its_prefix():
    # misconfiguredPredicate
    props = simple(**{"transforms.a.predicate": "my-pred", "transforms.a.negate": "true", "predicates": "my-pred",
                      "predicates.my-pred.type": "user_smts.PartitionIs", "predicates.my-pred.int": "79"})
    with pytest.raises(ConfigError, match="Value must be at least 80") as info:
        TransformationChain.from_props(props)
    assert "predicates.my-pred.int" in str(info.value)


def test_a_predicate_missing_from_the_predicates_list_still_works():
    # missingPredicateAliasProperty
    props = simple(**{"transforms.a.predicate": "my-pred", "predicates.my-pred.type": "user_smts.PartitionIs",
                      "predicates.my-pred.int": "84"})
    assert TransformationChain.from_props(props).stages[0].predicate is not None


def test_a_listed_predicate_without_type_is_not_a_predicate():
    # missingPredicateConfig
    props = simple(**{"transforms.a.predicate": "my-pred", "predicates": "my-pred"})
    with pytest.raises(ConfigError, match="Not a Predicate") as info:
        TransformationChain.from_props(props)
    assert "predicates.my-pred.type" in str(info.value)
    assert "TopicNameMatches" in str(info.value)


def test_a_predicate_alias_without_a_predicate_names_the_key_and_the_configured_predicates():
    props = simple(**{"transforms.a.predicate": "typo", "predicates": "isTombstone",
                      "predicates.isTombstone.type": "RecordIsTombstone"})
    with pytest.raises(ConfigError) as info:
        TransformationChain.from_props(props)
    assert str(info.value) == (
        "Invalid value 'typo' for configuration transforms.a.predicate: no predicate 'typo' is configured "
        "(predicates.typo.type is not set); configured predicates: isTombstone")
    assert info.value.key == "transforms.a.predicate"


def test_negate_without_predicate_is_an_error():
    # negatedButNoPredicate
    expected = "there is no config 'transforms.a.predicate' defining a predicate to be negated"
    with pytest.raises(ConfigError, match=expected):
        TransformationChain.from_props(simple(**{"transforms.a.negate": "true"}))


def test_enrich_defines_prefixed_keys_and_masks_an_smts_own_predicate_and_negate():
    # testEnrichedConfigDef
    props = {"transforms": "hdt", "transforms.hdt.type": "user_smts.HasDuplicateConfig"}
    definition = enrich(ConfigDef(), props, require_full_config=False)
    types_ = {name: key.type for name, key in definition.keys.items()}
    assert types_["transforms.hdt.must.exist.key"] is ConfigType.BOOLEAN
    assert types_["transforms.hdt.predicate"] is ConfigType.STRING
    assert types_["transforms.hdt.negate"] is ConfigType.BOOLEAN
    assert types_["transforms.hdt.type"] is ConfigType.CLASS
    assert "must.exist.key" not in types_ and "predicate" not in types_


def test_the_rest_validation_shape_lists_transform_keys_and_their_errors():
    props = {"transforms": "route,bad", "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
             "transforms.route.regex": "(.*)", "transforms.bad.type": "nope.Nothing"}
    result = transforms_config_def(props).validate_response("x.Connector", props)
    configs = {c["definition"]["name"]: c for c in result["configs"] if c["definition"]}
    assert set(configs) >= {"transforms", "predicates", "transforms.route.type", "transforms.route.regex",
                            "transforms.route.replacement", "transforms.route.predicate", "transforms.bad.type"}
    assert configs["transforms.route.replacement"]["value"]["errors"] == [
        'Missing required configuration "transforms.route.replacement" which has no default value. '
        "transforms.route.replacement: Replacement string."]
    assert any("nope.Nothing" in e for e in configs["transforms.bad.type"]["value"]["errors"])
    recommended = configs["transforms.route.type"]["value"]["recommended_values"]
    assert "org.apache.kafka.connect.transforms.RegexRouter" in recommended
    assert "Transforms: route" in result["groups"]
    assert result["error_count"] == 2


@pytest.mark.parametrize("type_name", [
    "org.apache.kafka.connect.transforms.RegexRouter", "kopycat.transforms.RegexRouter",
    "kopycat.transforms.regex_router.RegexRouter", "RegexRouter"])
def test_kafka_our_and_short_names_load_the_same_class(type_name):
    chain = TransformationChain.from_props({"transforms": "r", "transforms.r.type": type_name,
                                            "transforms.r.regex": ".*", "transforms.r.replacement": "x"})
    assert chain.stages[0].transform_class is RegexRouter


@pytest.mark.parametrize("type_name", ["org.apache.kafka.connect.transforms.InsertField$Value",
                                       "kopycat.transforms.InsertField$Value", "kopycat.transforms.InsertField.Value",
                                       "kopycat.transforms.insert_field.InsertField$Value", "InsertField$Value"])
def test_nested_key_value_names_load_the_same_class(type_name):
    chain = TransformationChain.from_props({"transforms": "i", "transforms.i.type": type_name,
                                            "transforms.i.topic.field": "t"})
    assert chain.stages[0].transform_class is InsertField.Value


KAFKA_PIPELINE = {
    "transforms": "dropTombstones,key,extract,route,stamp",
    "transforms.dropTombstones.type": "org.apache.kafka.connect.transforms.Filter",
    "transforms.dropTombstones.predicate": "isTombstone",
    "transforms.key.type": "org.apache.kafka.connect.transforms.ValueToKey",
    "transforms.key.fields": "id",
    "transforms.extract.type": "org.apache.kafka.connect.transforms.ExtractField$Key",
    "transforms.extract.field": "id",
    "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.route.regex": "db\\.(.*)",
    "transforms.route.replacement": "mirror.$1",
    "transforms.route.predicate": "isAudit",
    "transforms.route.negate": "true",
    "transforms.stamp.type": "org.apache.kafka.connect.transforms.InsertField$Value",
    "transforms.stamp.topic.field": "source_topic",
    "predicates": "isTombstone,isAudit",
    "predicates.isTombstone.type": "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
    "predicates.isAudit.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
    "predicates.isAudit.pattern": ".*audit.*",
}


def test_a_kafka_connect_pipeline_transforms_a_batch_exactly():
    schema = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("name", Schema.STRING_SCHEMA).build()
    records = [
        SourceRecord(topic="db.users", value_schema=schema, value=Struct(schema).put("id", 1).put("name", "ann")),
        SourceRecord(topic="db.users", key=9),
        SourceRecord(topic="db.audit", value={"id": 2, "name": "bob"}),
    ]
    chain = TransformationChain.from_props(KAFKA_PIPELINE)
    out = chain.apply_batch(records)

    stamped = (SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("name", Schema.STRING_SCHEMA)
               .field("source_topic", Schema.OPTIONAL_STRING_SCHEMA).build())
    assert out == [
        SourceRecord(topic="mirror.users", key_schema=Schema.INT64_SCHEMA, key=1, value_schema=stamped,
                     value=Struct(stamped).put("id", 1).put("name", "ann").put("source_topic", "mirror.users")),
        SourceRecord(topic="db.audit", key=2, value={"id": 2, "name": "bob", "source_topic": "db.audit"}),
    ]
    assert [r for r in (chain.apply(record) for record in records) if r is not None] == out


def test_a_failing_stage_is_named_in_the_exception_notes():
    chain = TransformationChain.from_props({"transforms": "x", "transforms.x.type": "user_smts.Boom"})
    with pytest.raises(DataError, match="boom") as info:
        chain.apply_batch([DUMMY])
    assert any("'x'" in note and "Boom" in note for note in info.value.__notes__)


def test_close_closes_every_stage():
    SimpleTransformation.closed = 0
    props = simple(**{"transforms": "a,b", "transforms.b.type": "user_smts.SimpleTransformation",
                      "transforms.b.magic.number": "50"})
    with TransformationChain.from_props(props):
        pass
    assert SimpleTransformation.closed == 2
