"""ConfigDef, Config and validators: parsing as Kafka's ConfigDef, the REST validate shape, docs.

Expected strings come from Kafka's ConfigDef / AbstractHerder (messages, ``[1,...]``,
``ConfigKeyInfo`` field names), so a drift from Kafka Connect's behaviour fails here.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import pytest

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
    NonNullValidator,
    Password,
    Range,
    Regex,
    Validator,
    ValidList,
    ValidString,
    Width,
    convert_to_string,
)
from kopycat.api.config_types import java_string
from kopycat.api.errors import ConfigError

SECRET = "s3cret-pw-7781"


class Nested:
    """A class with an inner class, to resolve Java's ``Outer$Inner`` names against."""

    class Inner:
        pass


def one(config_type: ConfigType, **kwargs: Any) -> ConfigDef:
    return ConfigDef().define("k", config_type, importance=Importance.LOW, doc="A key.", **kwargs)


def parse_one(config_type: ConfigType, value: Any) -> Any:
    return one(config_type).parse({"k": value})["k"]


def jdbc_def() -> ConfigDef:
    return (ConfigDef()
            .define("connection.url", ConfigType.STRING, importance=Importance.HIGH,
                    doc="JDBC URL of the database to copy from.", group="Database",
                    order_in_group=1, width=Width.LONG, display_name="JDBC URL")
            .define("connection.password", ConfigType.PASSWORD, default=None,
                    importance=Importance.HIGH, doc="Password of the database user.",
                    group="Database", order_in_group=2, width=Width.MEDIUM, display_name="Password")
            .define("batch.max.rows", ConfigType.INT, default=100, validator=Range(min=1),
                    importance=Importance.LOW, doc="Maximum rows a single poll() returns per table.",
                    group="Connector", order_in_group=1, width=Width.SHORT,
                    display_name="Max rows per batch", dependents=(), recommender=None)
            .define("decimal.format", ConfigType.STRING, default="BASE64",
                    validator=ValidString.in_("BASE64", "NUMERIC"), importance=Importance.MEDIUM,
                    doc="How decimals are written.", group="Connector", order_in_group=2,
                    width=Width.SHORT, display_name="Decimal format")
            .define("table.whitelist", ConfigType.LIST, default="", importance=Importance.MEDIUM,
                    doc="Tables to copy.", group="Connector", order_in_group=3, width=Width.LONG,
                    display_name="Tables")
            .define("poll.backoff.factor", ConfigType.DOUBLE, default=1.5,
                    importance=Importance.LOW, doc="Backoff multiplier.")
            .define("validate.non.null", ConfigType.BOOLEAN, default=True,
                    importance=Importance.LOW, doc="Check NOT NULL columns."))


# --- parsing each type -------------------------------------------------------------------


@pytest.mark.parametrize(("config_type", "given", "expected"), [
    (ConfigType.INT, " 42 ", 42), (ConfigType.INT, 42, 42), (ConfigType.INT, "-7", -7),
    (ConfigType.INT, "+7", 7), (ConfigType.SHORT, "32767", 32767), (ConfigType.LONG, 5, 5),
    (ConfigType.LONG, "9223372036854775807", 2**63 - 1),
    (ConfigType.DOUBLE, "1.5", 1.5), (ConfigType.DOUBLE, 2, 2.0), (ConfigType.DOUBLE, "1e3", 1000.0),
    (ConfigType.DOUBLE, "2.5f", 2.5), (ConfigType.DOUBLE, "-Infinity", float("-inf")),
    (ConfigType.BOOLEAN, "TRUE", True), (ConfigType.BOOLEAN, " false ", False),
    (ConfigType.BOOLEAN, True, True),
    (ConfigType.STRING, "  orders  ", "orders"),
    (ConfigType.LIST, " a , b,c ", ["a", "b", "c"]), (ConfigType.LIST, "", []),
    (ConfigType.LIST, "  ", []), (ConfigType.LIST, ["x", " y "], ["x", " y "]),
    (ConfigType.LIST, ("x",), ["x"]), (ConfigType.LIST, "a,,b", ["a", "", "b"]),
    (ConfigType.CLASS, " kopycat.api.errors.ConfigError ", "kopycat.api.errors.ConfigError"),
    (ConfigType.CLASS, ConfigError, ConfigError),
    (ConfigType.INT, None, None), (ConfigType.STRING, None, None),
], ids=lambda v: repr(v))
def test_values_parse_from_text_and_from_typed_values_as_kafka_does(
        config_type: ConfigType, given: Any, expected: Any) -> None:
    assert parse_one(config_type, given) == expected


def test_password_parses_from_text_to_a_trimmed_password_object() -> None:
    parsed = parse_one(ConfigType.PASSWORD, f"  {SECRET} ")
    assert isinstance(parsed, Password)
    assert parsed.value() == SECRET


@pytest.mark.parametrize(("config_type", "given", "problem"), [
    (ConfigType.INT, "2147483648", "Not a number of type INT"),
    (ConfigType.INT, 2**31, "Not a number of type INT"),
    (ConfigType.INT, "-2147483649", "Not a number of type INT"),
    (ConfigType.SHORT, "32768", "Not a number of type SHORT"),
    (ConfigType.LONG, 2**63, "Not a number of type LONG"),
    (ConfigType.INT, "1_000", "Not a number of type INT"),
    (ConfigType.INT, "12abc", "Not a number of type INT"),
    (ConfigType.INT, "1.0", "Not a number of type INT"),
    (ConfigType.INT, True, "Expected value to be a 32-bit integer, but it was a bool"),
    (ConfigType.INT, 1.0, "Expected value to be a 32-bit integer, but it was a float"),
    (ConfigType.DOUBLE, "fast", "Not a number of type DOUBLE"),
    (ConfigType.DOUBLE, False, "Expected value to be a double, but it was a bool"),
    (ConfigType.BOOLEAN, "yes", "Expected value to be either true or false"),
    (ConfigType.BOOLEAN, 1, "Expected value to be either true or false"),
    (ConfigType.STRING, 5, "Expected value to be a string, but it was a int"),
    (ConfigType.LIST, 5, "Expected a comma separated list."),
    (ConfigType.CLASS, "not a class", "Expected a class name such as pkg.module.Class"),
    (ConfigType.CLASS, 5, "Expected a Class instance or class name."),
], ids=lambda v: repr(v))
def test_bad_values_fail_with_a_message_naming_key_value_and_expectation(
        config_type: ConfigType, given: Any, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_one(config_type, given)
    assert str(caught.value).startswith(f"Invalid value {java_string(given)} for configuration k: {problem}")
    assert caught.value.key == "k"


def test_int_out_of_range_message_gives_the_bounds() -> None:
    with pytest.raises(ConfigError, match=r"between -2147483648 and 2147483647"):
        parse_one(ConfigType.INT, 2**31)


def test_class_is_kept_as_its_name_and_imported_only_by_get_class() -> None:
    definition = one(ConfigType.CLASS)
    config = Config(definition, {"k": "kopycat.api.errors.ConfigError"})
    assert config.get("k") == "kopycat.api.errors.ConfigError"
    assert config.get_class("k") is ConfigError


def test_get_class_resolves_java_style_inner_class_names() -> None:
    config = Config(one(ConfigType.CLASS), {"k": f"{__name__}.Nested$Inner"})
    assert config.get_class("k") is Nested.Inner


@pytest.mark.parametrize("name", ["kopycat.api.errors.NoSuchClass", "no_such_module_xyz.Thing",
                                  "kopycat.api.errors.ConfigError.for_key"])
def test_get_class_of_a_missing_or_non_class_name_says_so(name: str) -> None:
    config = Config(one(ConfigType.CLASS), {"k": name})
    with pytest.raises(ConfigError, match=r"for configuration k: .*(could not be found|is not a class)"):
        config.get_class("k")


def test_get_class_reports_a_module_that_fails_to_import_instead_of_not_found(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "kopycat_broken_plugin.py").write_text("import kopycat_missing_dependency\nclass C: pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    config = Config(one(ConfigType.CLASS), {"k": "kopycat_broken_plugin.C"})
    with pytest.raises(ConfigError, match=r"could not be loaded: No module named 'kopycat_missing_dependency'"):
        config.get_class("k")


def test_default_is_parsed_to_the_key_type_at_define_time() -> None:
    definition = (ConfigDef()
                  .define("n", ConfigType.INT, default="7", importance=Importance.LOW, doc="")
                  .define("l", ConfigType.LIST, default="a, b", importance=Importance.LOW, doc=""))
    assert definition.keys["n"].default == 7
    assert definition.parse({}) == {"n": 7, "l": ["a", "b"]}


# --- required keys, definitions ------------------------------------------------------------


def test_missing_required_key_names_the_key_and_what_it_is_for() -> None:
    with pytest.raises(ConfigError) as caught:
        jdbc_def().parse({})
    assert str(caught.value) == (
        'Missing required configuration "connection.url" which has no default value. '
        "connection.url: JDBC URL of the database to copy from.")
    assert caught.value.key == "connection.url"


def test_a_none_default_is_optional_and_no_default_is_required() -> None:
    keys = jdbc_def().keys
    assert keys["connection.url"].default is NO_DEFAULT and not keys["connection.url"].has_default
    assert keys["connection.password"].default is None and keys["connection.password"].has_default


def test_defining_a_key_twice_raises() -> None:
    with pytest.raises(ConfigError, match=re.escape("Configuration batch.max.rows is defined twice.")):
        jdbc_def().define("batch.max.rows", ConfigType.INT, default=1, doc="again")


def test_a_default_that_fails_its_validator_raises_at_define_time() -> None:
    with pytest.raises(ConfigError, match=r"default of batch\.max\.rows is invalid: Invalid value 0 "
                                          r"for configuration batch\.max\.rows: Value must be at least 1"):
        ConfigDef().define("batch.max.rows", ConfigType.INT, default=0, validator=Range(min=1))


# --- validators ----------------------------------------------------------------------------


@pytest.mark.parametrize(("validator", "value", "message"), [
    (Range(min=1), 0, "Invalid value 0 for configuration k: Value must be at least 1"),
    (Range.between(1, 10), 11, "Invalid value 11 for configuration k: Value must be no more than 10"),
    (Range.at_least(0), None, "Invalid value null for configuration k: Value must be non-null"),
    (ValidString.in_("BASE64", "NUMERIC"), "fast",
     "Invalid value fast for configuration k: String must be one of: BASE64, NUMERIC"),
    (ValidString.in_("BASE64", "NUMERIC"), "numeric",
     "Invalid value numeric for configuration k: String must be one of: BASE64, NUMERIC"),
    (CaseInsensitiveValidString.in_("base64", "NUMERIC"), "fast",
     "Invalid value fast for configuration k: String must be one of (case insensitive): BASE64, NUMERIC"),
    (ValidList.in_("none", "all"), ["all", "some"],
     "Invalid value some for configuration k: String must be one of: none, all"),
    (NonEmptyString(), "", "Invalid value  for configuration k: String must be non-empty"),
    (NonNullValidator(), None, "Invalid value null for configuration k: entry must be non null"),
    (ListSize.at_most_of_size(1), ["a", "b"],
     "Invalid value [a, b] for configuration k: exceeds maximum list size of [1]."),
    (Regex(), "*orders", "Invalid value *orders for configuration k: Invalid regex: nothing to repeat at position 0"),
    (Regex(r"[a-z]+"), "Orders", "Invalid value Orders for configuration k: Value must match regex [a-z]+"),
    (And(Range.at_least(1), Range.between(1, 5)), 9,
     "Invalid value 9 for configuration k: Value must be no more than 5"),
], ids=lambda v: v if isinstance(v, str) else repr(v))
def test_each_validator_message_names_key_value_and_what_is_allowed(
        validator: Any, value: Any, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        validator.ensure_valid("k", value)
    assert str(caught.value) == message
    assert caught.value.key == "k"


@pytest.mark.parametrize(("validator", "value"), [
    (Range.between(1, 10), 1), (Range.between(1, 10), 10), (Range(min=0.5), 0.5),
    (ValidString.in_("A"), "A"), (CaseInsensitiveValidString.in_("Numeric"), "nUmErIc"),
    (ValidList.in_("a", "b"), ["b", "a"]), (ValidList.in_("a"), []), (NonEmptyString(), None),
    (NonEmptyString(), "x"), (Regex(), r"^orders-(\d+)$"), (Regex(), None), (Regex(r"[a-z]+"), "abc"),
    (ListSize(2), ["a", "b"]), (NonNullValidator(), 0),
], ids=repr)
def test_validators_accept_allowed_values(validator: Any, value: Any) -> None:
    validator.ensure_valid("k", value)


@pytest.mark.parametrize(("validator", "text"), [
    (Range(min=1), "[1,...]"), (Range.between(1, 10), "[1,...,10]"), (Range(max=10), "[...,10]"),
    (Range(), "[...]"), (ValidString.in_("BASE64", "NUMERIC"), "[BASE64, NUMERIC]"),
    (CaseInsensitiveValidString.in_("a", "B"), "(case insensitive) [A, B]"),
    (ValidList.in_("x", "y"), "[x, y]"), (NonEmptyString(), "non-empty string"),
    (NonNullValidator(), "non-null string"), (Regex(), "valid regex"),
    (CompositeValidator.of(NonEmptyString(), ValidString.in_("a")), "non-empty string, [a]"),
    (LambdaValidator.with_(lambda n, v: None, "even numbers"), "even numbers"),
    (ListSize(3), "List containing maximum of 3 elements"),
], ids=lambda v: v if isinstance(v, str) else type(v).__name__)
def test_each_validator_describes_what_is_allowed_as_kafka_does(validator: Any, text: str) -> None:
    assert str(validator) == text


def test_a_validator_without_a_description_still_prints() -> None:
    class Odd(Validator):
        def ensure_valid(self, name: str, value: Any) -> None:
            pass

    assert (str(Odd()), repr(Odd()), repr(Range(min=1))) == ("", "Odd()", "Range([1,...])")


def test_lambda_validator_runs_its_check() -> None:
    def even(name: str, value: Any) -> None:
        if value % 2:
            raise ConfigError.for_key(name, value, "Value must be even")

    with pytest.raises(ConfigError, match="Invalid value 3 for configuration k: Value must be even"):
        one(ConfigType.INT, default=2, validator=LambdaValidator(even, "even")).parse({"k": "3"})


# --- passwords -----------------------------------------------------------------------------


def test_password_prints_hidden_everywhere_and_gives_the_secret_on_value() -> None:
    password = Password(SECRET)
    assert str(password) == repr(password) == f"{password}" == "[hidden]"
    assert "%s" % password == "[hidden]"  # noqa: UP031 - logging formats this way
    assert password.value() == SECRET
    assert password == Password(SECRET) and password != Password("other")


@pytest.mark.parametrize("validator", [ValidString.in_("a", "b"), Regex(r"[0-9]+"), Range(min=1)],
                         ids=lambda v: type(v).__name__)
def test_password_never_appears_in_validator_errors(validator: Any) -> None:
    definition = ConfigDef().define("pw", ConfigType.PASSWORD, doc="", validator=validator)
    with pytest.raises(ConfigError) as caught:
        definition.parse({"pw": SECRET})
    assert SECRET not in str(caught.value)
    assert "Invalid value [hidden] for configuration pw" in str(caught.value)


def test_password_of_the_wrong_type_is_not_quoted_in_the_error() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_one(ConfigType.PASSWORD, 98765432)
    assert str(caught.value) == ("Invalid value [hidden] for configuration k: "
                                 "Expected value to be a string, but it was a int")


def test_a_custom_validator_that_quotes_the_secret_has_its_message_withheld() -> None:
    def leaky(name: str, value: Any) -> None:
        raise ConfigError(f"{name} has bad value {value.value()}")

    definition = one(ConfigType.PASSWORD, validator=LambdaValidator(leaky, "anything"))
    with pytest.raises(ConfigError) as caught:
        definition.parse({"k": SECRET})
    assert SECRET not in str(caught.value) and "withheld" in str(caught.value)
    assert caught.value.__context__ is None and caught.value.__cause__ is None
    [result] = definition.validate({"k": SECRET})
    assert SECRET not in json.dumps(result.errors)


def test_password_is_masked_in_config_repr_values_log_and_validate_output(
        caplog: pytest.LogCaptureFixture) -> None:
    props = {"connection.url": "jdbc:sqlite://", "connection.password": SECRET,
             "consumer.sasl.mechanism": "PLAIN"}
    with caplog.at_level(logging.DEBUG):
        config = Config(jdbc_def(), props, log_values=True)
        logging.getLogger("test").info("built %s and %r", config, config)
    assert "connection.password=[hidden]" in repr(config)
    assert "\tconnection.password = [hidden]\n" in caplog.text
    assert SECRET not in caplog.text
    assert SECRET not in repr(config) and SECRET not in str(config)
    assert SECRET not in repr(config.values()) and SECRET not in repr(jdbc_def().validate(props))
    response = jdbc_def().validate_response("Jdbc", props)
    assert SECRET not in json.dumps(response)
    [password] = [c["value"] for c in response["configs"] if c["value"]["name"] == "connection.password"]
    assert password["value"] == "[hidden]"
    assert config.get_password("connection.password").value() == SECRET


# --- validate: all errors, recommenders ----------------------------------------------------


def test_validate_collects_every_error_instead_of_raising() -> None:
    results = {r.name: r for r in jdbc_def().validate(
        {"batch.max.rows": "0", "decimal.format": "fast", "validate.non.null": "maybe"})}
    assert list(results) == ["connection.url", "connection.password", "batch.max.rows",
                             "decimal.format", "table.whitelist", "poll.backoff.factor",
                             "validate.non.null"]
    assert [len(results[n].errors) for n in results] == [1, 0, 1, 1, 0, 0, 1]
    assert results["batch.max.rows"].value == 0
    assert results["validate.non.null"].value is None
    assert results["table.whitelist"] == ConfigValue("table.whitelist", [], [], [], True)


def test_an_unparseable_value_is_reported_once_not_again_as_null_by_its_validator() -> None:
    [result] = one(ConfigType.INT, default=1, validator=Range(min=1)).validate({"k": "abc"})
    assert result.errors == ["Invalid value abc for configuration k: Not a number of type INT"]
    response = one(ConfigType.INT, default=1, validator=Range(min=1)).validate_response("C", {"k": "abc"})
    assert response["error_count"] == 1


class TimestampColumns:
    """Recommends columns and shows the key only when mode=timestamp (a Kafka Recommender)."""

    def valid_values(self, name: str, parsed: dict[str, Any]) -> list[Any]:
        if parsed["mode"] == "broken":
            raise ConfigError.for_key(name, None, "cannot list columns")
        return ["updated_at", "created_at"]

    def visible(self, name: str, parsed: dict[str, Any]) -> bool:
        return parsed["mode"] == "timestamp"


def modes_def() -> ConfigDef:
    return (ConfigDef()
            .define("mode", ConfigType.STRING, default="bulk", importance=Importance.HIGH, doc="Mode.",
                    dependents=("timestamp.column.name",))
            .define("timestamp.column.name", ConfigType.STRING, default=None,
                    importance=Importance.MEDIUM, doc="Column.", recommender=TimestampColumns()))


@pytest.mark.parametrize(("mode", "visible"), [("timestamp", True), ("bulk", False)])
def test_recommender_sets_recommended_values_and_visibility(mode: str, visible: bool) -> None:
    results = modes_def().validate_all({"mode": mode})
    assert results["timestamp.column.name"].recommended_values == ["updated_at", "created_at"]
    assert results["timestamp.column.name"].visible is visible
    assert results["mode"].visible is True


def test_recommender_error_is_reported_against_its_key() -> None:
    results = modes_def().validate_all({"mode": "broken"})
    assert results["timestamp.column.name"].errors == [
        "Invalid value None for configuration timestamp.column.name: cannot list columns"]


def test_undefined_dependent_is_reported_by_validate_and_rejected_by_parse() -> None:
    definition = one(ConfigType.STRING, default="x", dependents=("ghost",))
    response = definition.validate_response("C", {})
    assert response["configs"][0] == {"definition": None, "value": {
        "name": "ghost", "value": None, "recommended_values": [],
        "errors": ["ghost is referred in the dependents, but not defined."], "visible": False}}
    assert response["error_count"] == 1
    with pytest.raises(ConfigError, match="dependents but not defined: ghost"):
        definition.parse({})


def test_null_values_get_kafka_connects_null_value_error() -> None:
    response = one(ConfigType.STRING, default="x").validate_response("C", {"k": None, "other": None})
    errors = {c["value"]["name"]: c["value"]["errors"] for c in response["configs"]}
    assert errors == {"other": ["Null value can not be supplied as the configuration value."],
                      "k": ["Null value can not be supplied as the configuration value."]}
    assert response["error_count"] == 2


# --- the REST shape -----------------------------------------------------------------------


def test_validate_response_is_kafka_connects_config_infos_field_by_field() -> None:
    response = jdbc_def().validate_response(
        "kopycat.connectors.jdbc.JdbcSourceConnector",
        {"connection.password": SECRET, "batch.max.rows": "0", "decimal.format": "fast",
         "table.whitelist": "orders, users", "validate.non.null": "FALSE",
         "consumer.max.poll.records": "10"})

    def key(name: str, type_: str, required: bool, default: str | None, importance: str, doc: str,
            group: str | None, width: str, display: str, order: int) -> dict[str, Any]:
        return {"name": name, "type": type_, "required": required, "default_value": default,
                "importance": importance, "documentation": doc, "group": group, "width": width,
                "display_name": display, "dependents": [], "order": order}

    def value(name: str, shown: str | None, *errors: str) -> dict[str, Any]:
        return {"name": name, "value": shown, "recommended_values": [], "errors": list(errors),
                "visible": True}

    assert response == {
        "name": "kopycat.connectors.jdbc.JdbcSourceConnector",
        "error_count": 3,
        "groups": ["Database", "Connector"],
        "configs": [
            {"definition": key("connection.url", "STRING", True, None, "HIGH",
                               "JDBC URL of the database to copy from.", "Database", "LONG",
                               "JDBC URL", 1),
             "value": value("connection.url", None,
                            'Missing required configuration "connection.url" which has no default '
                            "value. connection.url: JDBC URL of the database to copy from.")},
            {"definition": key("connection.password", "PASSWORD", False, None, "HIGH",
                               "Password of the database user.", "Database", "MEDIUM", "Password", 2),
             "value": value("connection.password", "[hidden]")},
            {"definition": key("batch.max.rows", "INT", False, "100", "LOW",
                               "Maximum rows a single poll() returns per table.", "Connector",
                               "SHORT", "Max rows per batch", 1),
             "value": value("batch.max.rows", "0",
                            "Invalid value 0 for configuration batch.max.rows: Value must be at least 1")},
            {"definition": key("decimal.format", "STRING", False, "BASE64", "MEDIUM",
                               "How decimals are written.", "Connector", "SHORT", "Decimal format", 2),
             "value": value("decimal.format", "fast",
                            "Invalid value fast for configuration decimal.format: "
                            "String must be one of: BASE64, NUMERIC")},
            {"definition": key("table.whitelist", "LIST", False, "", "MEDIUM", "Tables to copy.",
                               "Connector", "LONG", "Tables", 3),
             "value": value("table.whitelist", "orders,users")},
            {"definition": key("poll.backoff.factor", "DOUBLE", False, "1.5", "LOW",
                               "Backoff multiplier.", None, "NONE", "poll.backoff.factor", -1),
             "value": value("poll.backoff.factor", "1.5")},
            {"definition": key("validate.non.null", "BOOLEAN", False, "true", "LOW",
                               "Check NOT NULL columns.", None, "NONE", "validate.non.null", -1),
             "value": value("validate.non.null", "false")},
        ],
    }
    assert json.loads(json.dumps(response)) == response


def test_key_info_is_the_definition_kafka_lists_for_a_plugin() -> None:
    info = jdbc_def().keys["batch.max.rows"].info()
    assert list(info) == ["name", "type", "required", "default_value", "importance", "documentation",
                          "group", "width", "display_name", "dependents", "order"]


@pytest.mark.parametrize(("value", "config_type", "text"), [
    (1e10, ConfigType.DOUBLE, "1.0E10"), (1.5e-5, ConfigType.DOUBLE, "1.5E-5"),
    (100.0, ConfigType.DOUBLE, "100.0"), (0.001, ConfigType.DOUBLE, "0.001"),
    (-12345678.9, ConfigType.DOUBLE, "-1.23456789E7"), (float("nan"), ConfigType.DOUBLE, "NaN"),
    (True, ConfigType.BOOLEAN, "true"), (["a", "b"], ConfigType.LIST, "a,b"),
    (["a", "b"], None, "[a, b]"), (ConfigError, ConfigType.CLASS, "kopycat.api.errors.ConfigError"),
    (Password(SECRET), ConfigType.PASSWORD, "[hidden]"), (None, ConfigType.STRING, None),
], ids=repr)
def test_values_are_shown_as_javas_to_string_shows_them(value: Any, config_type: Any, text: Any) -> None:
    assert convert_to_string(value, config_type) == text


# --- docs ----------------------------------------------------------------------------------


def docs_def() -> ConfigDef:
    return (ConfigDef()
            .define("b.optional.low", ConfigType.STRING, default="", importance=Importance.LOW,
                    doc="Optional, low.")
            .define("a.optional.high", ConfigType.INT, default=5, validator=Range.between(1, 9),
                    importance=Importance.HIGH, doc="Optional, high.\n\nSecond | paragraph.")
            .define("z.required.low", ConfigType.LIST, importance=Importance.LOW, doc="Required, low.")
            .define("c.required.high", ConfigType.PASSWORD, importance=Importance.HIGH,
                    doc="Required, high.")
            .define("m.optional.high", ConfigType.LONG, default=300000, importance=Importance.HIGH,
                    doc="Timeout.")
            .define("internal.thing", ConfigType.STRING, default="x", doc="Hidden.", internal=True))


def test_docs_list_required_first_then_by_importance_then_by_name() -> None:
    assert [k.name for k in docs_def().sorted_keys()] == [
        "c.required.high", "z.required.low", "a.optional.high", "m.optional.high", "internal.thing",
        "b.optional.low"]


def test_docs_follow_group_and_order_in_group_before_anything_else_as_kafka_does() -> None:
    definition = (ConfigDef()
                  .define("late", ConfigType.STRING, importance=Importance.HIGH, doc="", group="G2",
                          order_in_group=1)
                  .define("second", ConfigType.STRING, default="", doc="", group="G1", order_in_group=2)
                  .define("first", ConfigType.STRING, default="", importance=Importance.LOW, doc="",
                          group="G1", order_in_group=1)
                  .define("loose", ConfigType.STRING, default="", doc=""))
    assert [k.name for k in definition.sorted_keys()] == ["loose", "late", "first", "second"]


def test_to_rst_writes_kafkas_format() -> None:
    assert docs_def().to_rst() == (
        "``c.required.high``\n  Required, high.\n\n  * Type: password\n  * Importance: high\n\n"
        "``z.required.low``\n  Required, low.\n\n  * Type: list\n  * Importance: low\n\n"
        "``a.optional.high``\n  Optional, high.\n\n  Second | paragraph.\n\n  * Type: int\n"
        "  * Default: 5\n  * Valid Values: [1,...,9]\n  * Importance: high\n\n"
        "``m.optional.high``\n  Timeout.\n\n  * Type: long\n  * Default: 300000\n  * Importance: high\n\n"
        "``b.optional.low``\n  Optional, low.\n\n  * Type: string\n  * Default: \"\"\n"
        "  * Importance: low\n\n")


def test_to_markdown_writes_one_row_per_public_key() -> None:
    assert docs_def().to_markdown() == (
        "| Name | Type | Default | Valid values | Importance | Description |\n"
        "|---|---|---|---|---|---|\n"
        "| `c.required.high` | password | (required) |  | high | Required, high. |\n"
        "| `z.required.low` | list | (required) |  | low | Required, low. |\n"
        "| `a.optional.high` | int | 5 | [1,...,9] | high | Optional, high.<br><br>Second \\| paragraph. |\n"
        "| `m.optional.high` | long | 300000 |  | high | Timeout. |\n"
        "| `b.optional.low` | string | \"\" |  | low | Optional, low. |\n")


@pytest.mark.parametrize(("name", "default", "shown"), [
    ("poll.interval.ms", 300000, "300000 (5 minutes)"), ("retry.backoff.ms", 1000, "1000 (1 second)"),
    ("buffer.bytes", 1048576, "1048576 (1 mebibyte)"), ("max.bytes", 3072, "3072 (3 kibibytes)"),
    ("odd.ms", 1500, "1500"), ("password.x", None, "null"),
])
def test_docs_default_shows_units_of_ms_and_bytes_as_kafka_does(name: str, default: Any, shown: str) -> None:
    config_type = ConfigType.STRING if default is None else ConfigType.LONG
    rst = ConfigDef().define(name, config_type, default=default, doc="d").to_rst()
    assert f"  * Default: {shown}\n" in rst


# --- composition ---------------------------------------------------------------------------


def common_def() -> ConfigDef:
    return (ConfigDef()
            .define("name", ConfigType.STRING, importance=Importance.HIGH, doc="Connector name.",
                    group="Common")
            .define("tasks.max", ConfigType.INT, default=1, validator=Range.at_least(1),
                    importance=Importance.HIGH, doc="Most tasks.", group="Common"))


def test_merge_returns_a_new_definition_with_both_key_sets_and_leaves_the_base_alone() -> None:
    base = common_def()
    merged = base.merge(jdbc_def())
    assert list(merged.names())[:3] == ["name", "tasks.max", "connection.url"]
    assert len(merged) == 2 + len(jdbc_def()) and len(base) == 2
    assert merged.groups() == ["Common", "Database", "Connector"]
    assert base.with_defs(ConfigDef()).keys == base.keys
    assert merged.parse({"name": "c", "connection.url": "u"})["tasks.max"] == 1


def test_merging_definitions_that_share_a_key_raises() -> None:
    with pytest.raises(ConfigError, match=re.escape("Configuration tasks.max is defined twice.")):
        common_def().merge(ConfigDef().define("tasks.max", ConfigType.INT, default=2, doc=""))


def test_embed_prefixes_names_groups_and_gives_recommenders_their_own_names() -> None:
    outer = ConfigDef().embed("transforms.route.", "Transforms: route", 0, modes_def())
    assert list(outer.names()) == ["transforms.route.mode", "transforms.route.timestamp.column.name"]
    assert outer.keys["transforms.route.mode"].dependents == ("transforms.route.timestamp.column.name",)
    assert outer.groups() == ["Transforms: route"]
    results = outer.validate_all({"transforms.route.mode": "timestamp"})
    assert results["transforms.route.timestamp.column.name"].visible is True


def test_names_keys_and_config_keys_read_in_definition_order_and_cannot_be_changed() -> None:
    definition = jdbc_def()
    assert "batch.max.rows" in definition.names() and "batch.max.rows" in definition
    assert list(definition.config_keys()) == list(definition.keys) == list(definition.names())
    assert isinstance(definition.keys["batch.max.rows"], ConfigKey)
    with pytest.raises(TypeError):
        definition.keys["x"] = definition.keys["batch.max.rows"]  # type: ignore[index]


# --- Config (AbstractConfig) ---------------------------------------------------------------


def test_config_typed_getters_return_parsed_values_and_defaults() -> None:
    config = Config(jdbc_def(), {"connection.url": "jdbc:x", "batch.max.rows": "7",
                                 "table.whitelist": "a,b", "validate.non.null": "false"})
    assert config.get_string("connection.url") == "jdbc:x"
    assert config.get_int("batch.max.rows") == 7
    assert config.get_list("table.whitelist") == ["a", "b"]
    assert config.get_boolean("validate.non.null") is False
    assert config.get_double("poll.backoff.factor") == 1.5
    assert config.get_password("connection.password") is None
    assert config.type_of("batch.max.rows") is ConfigType.INT and config.type_of("nope") is None
    assert config.documentation_of("table.whitelist") == "Tables to copy."


def test_a_getter_for_the_wrong_type_or_an_unknown_key_raises() -> None:
    config = Config(jdbc_def(), {"connection.url": "jdbc:x"})
    with pytest.raises(TypeError, match=re.escape("batch.max.rows is defined as INT, not LONG")):
        config.get_long("batch.max.rows")
    with pytest.raises(ConfigError, match=re.escape("Unknown configuration 'consumer.x'")):
        config.get("consumer.x")


def test_unknown_keys_are_kept_and_found_by_prefix() -> None:
    props = {"connection.url": "jdbc:x", "consumer.max.poll.records": "10",
             "consumer.auto.offset.reset": "earliest", "consumer.": "empty", "producer.acks": "all"}
    config = Config(jdbc_def(), props)
    assert "consumer.max.poll.records" not in config.values()
    assert config.originals() == props
    assert config.originals_with_prefix("consumer.") == {
        "max.poll.records": "10", "auto.offset.reset": "earliest"}
    assert config.originals_with_prefix("consumer.", strip=False) == {
        "consumer.max.poll.records": "10", "consumer.auto.offset.reset": "earliest"}


def test_values_with_prefix_override_parses_and_validates_the_override() -> None:
    config = Config(jdbc_def(), {"connection.url": "jdbc:x", "batch.max.rows": "7",
                                 "table.orders.batch.max.rows": "3"})
    values = config.values_with_prefix_override("table.orders.")
    assert values["batch.max.rows"] == 3 and config.get_int("batch.max.rows") == 7
    bad = Config(jdbc_def(), {"connection.url": "jdbc:x", "t.batch.max.rows": "0"})
    with pytest.raises(ConfigError, match="Value must be at least 1"):
        bad.values_with_prefix_override("t.")


def test_configs_with_the_same_originals_are_equal() -> None:
    assert Config(jdbc_def(), {"connection.url": "a"}) == Config(jdbc_def(), {"connection.url": "a"})
    assert Config(jdbc_def(), {"connection.url": "a"}) != Config(jdbc_def(), {"connection.url": "b"})


def test_config_raises_the_first_problem_when_built() -> None:
    with pytest.raises(ConfigError, match=re.escape("decimal.format")):
        Config(jdbc_def(), {"connection.url": "a", "decimal.format": "fast"})


def test_the_contracted_names_are_exported() -> None:
    import kopycat.api.config as module

    contracted = {"ConfigDef", "ConfigType", "Importance", "Width", "Range", "ValidString", "ValidList",
                  "NonEmptyString", "Regex", "ConfigKey", "ConfigValue", "Password", "Config",
                  "NO_DEFAULT", "CompositeValidator", "And", "NonNullValidator",
                  "CaseInsensitiveValidString", "Recommender"}
    assert contracted <= set(module.__all__)
    assert all(hasattr(module, name) for name in module.__all__)
