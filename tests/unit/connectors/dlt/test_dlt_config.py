"""The dlt source connector's config: dlt.args typed by the function's annotations, and every mistake a
ConfigError from start() naming the key, the value and the fix."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from kopycat.api import ConfigError
from kopycat.connectors.dlt import DltSourceConnector
from kopycat.connectors.dlt.source_config import cursors, source_arguments

NUMBERS = "tests.support.dlt_sources:numbers"


def sample(count: int, name: str, mode: Literal["a", "b"], url: str | None, tags: list[str] | None,
           anything: Any = None, plain=None) -> None:  # noqa: ANN001 - a parameter without annotation
    """A function whose parameters cover every kind of annotation."""


def test_arguments_are_text_for_str_parameters_and_json_for_the_others() -> None:
    props = {"dlt.source": "m:sample", "dlt.args.count": "12", "dlt.args.name": "007", "dlt.args.mode": "a",
             "dlt.args.url": "http://x", "dlt.args.tags": '["a", "b"]', "dlt.args.anything": "true",
             "dlt.args.plain": "not json"}
    assert source_arguments(sample, props) == {"count": 12, "name": "007", "mode": "a", "url": "http://x",
                                               "tags": ["a", "b"], "anything": True, "plain": "not json"}


def test_a_non_json_value_for_a_typed_parameter_names_the_key_and_the_fix() -> None:
    with pytest.raises(ConfigError, match=r"dlt.args.count='lots' is not JSON.*give a JSON value") as error:
        source_arguments(sample, {"dlt.source": "m:sample", "dlt.args.count": "lots"})
    assert error.value.key == "dlt.args.count"


def test_a_json_object_for_an_incremental_parameter_becomes_a_dlt_incremental() -> None:
    from dlt.sources.filesystem import readers

    arguments = source_arguments(readers, {
        "dlt.source": "dlt.sources.filesystem:readers", "dlt.args.incremental": '{"cursor_path": "modification_date",'
                                                                                  ' "row_order": "asc"}'})
    incremental = arguments["incremental"]
    assert (type(incremental).__name__, incremental.cursor_path, incremental.row_order) == (
        "Incremental", "modification_date", "asc")
    with pytest.raises(ConfigError, match=r"dlt.args.incremental=\{\"column\": \"x\"\}: not arguments of "
                                          r"dlt.sources.incremental .*cursor_path") as error:
        source_arguments(readers, {"dlt.source": "dlt.sources.filesystem:readers",
                                   "dlt.args.incremental": '{"column": "x"}'})
    assert error.value.key == "dlt.args.incremental"


def test_incremental_pairs() -> None:
    assert cursors(["orders:updated_at", " items : id "]) == {"orders": "updated_at", "items": "id"}
    with pytest.raises(ConfigError, match="'orders' is not <resource>:<cursor column>; write it as orders:updated_at"):
        cursors(["orders"])


@pytest.mark.parametrize(("props", "key", "message"), [
    ({"dlt.source": "no_such_package.sources:thing"}, "dlt.source",
     r"dlt.source='no_such_package.sources:thing': module 'no_such_package.sources' could not be imported .*"
     r"install the package that has it or correct the module path"),
    ({"dlt.source": "tests.support.dlt_sources:no_such_function"}, "dlt.source",
     r"module 'tests.support.dlt_sources' has no function 'no_such_function'; its functions: .*numbers"),
    ({"dlt.source": "tests.support.dlt_sources"}, "dlt.source",
     r"is not package.module:function; write it as dlt.sources.sql_database:sql_database"),
    ({"dlt.source": "tests.support.dlt_sources:order_rows", "dlt.args.ids": "[1]"}, "dlt.source",
     r"returned a list, not a dlt source or resource; name a @dlt.source or @dlt.resource function"),
    ({"dlt.source": NUMBERS, "dlt.args.count": "3", "dlt.args.label": "x", "dlt.args.colour": "red"},
     "dlt.args.colour", r"dlt.args.colour='red': tests.support.dlt_sources:numbers has no parameter 'colour'; "
                        r"its parameters are: count, label, step"),
    ({"dlt.source": NUMBERS, "dlt.args.count": "three", "dlt.args.label": "x"}, "dlt.args.count",
     r"dlt.args.count='three' is not JSON"),
    ({"dlt.source": NUMBERS, "dlt.args.count": "3", "dlt.args.label": "x", "dlt.resources": "letters"},
     "dlt.resources", r"has no resources \['letters'\]; its resources: numbers"),
    ({"dlt.source": NUMBERS, "dlt.args.count": "3", "dlt.args.label": "x", "dlt.incremental": "letters:n"},
     "dlt.incremental", r"has no resource 'letters'; its resources: numbers"),
    ({"dlt.source": NUMBERS, "dlt.args.count": "3", "dlt.args.label": "x", "dlt.incremental.row.order": "up"},
     "dlt.incremental.row.order", r"Invalid value up for configuration dlt.incremental.row.order: String must be "
                                  r"one of: , asc, desc"),
])
def test_bad_config_fails_start_naming_the_key_the_value_and_the_fix(props: dict[str, str], key: str,
                                                                      message: str) -> None:
    with pytest.raises(ConfigError, match=message) as error:
        DltSourceConnector().start(props)
    assert error.value.key == key


def test_a_missing_argument_dlt_cannot_resolve_names_the_dlt_args_key() -> None:
    with pytest.raises(ConfigError, match=r"could not resolve its arguments \['credentials'\]; give them as "
                                          r"dlt.args.credentials") as error:
        DltSourceConnector().start({"dlt.source": "dlt.sources.sql_database:sql_database"})
    assert error.value.key == "dlt.source"


def test_the_connector_is_a_builtin_plugin() -> None:
    from kopycat.plugins import connector_class, list_plugins

    assert connector_class("kopycat.connectors.dlt.DltSourceConnector") is DltSourceConnector
    assert [p.type for p in list_plugins() if p.class_name == "kopycat.connectors.dlt.DltSourceConnector"] == [
        "source"]


def test_validate_reports_a_bad_source_under_its_key_and_an_unknown_argument_under_dlt_source() -> None:
    results = {r.name: r.errors for r in DltSourceConnector().validate({"dlt.source": "no_such_package.mod:fn"})}
    assert len(results["dlt.source"]) == 1 and "could not be imported" in results["dlt.source"][0]
    results = {r.name: r.errors for r in DltSourceConnector().validate(
        {"dlt.source": NUMBERS, "dlt.args.count": "3", "dlt.args.label": "x", "dlt.resources": "letters"})}
    assert results["dlt.source"] == [] and "has no resources ['letters']" in results["dlt.resources"][0]
    results = {r.name: r.errors for r in DltSourceConnector().validate(
        {"dlt.source": NUMBERS, "dlt.args.count": "3", "dlt.args.label": "x", "dlt.args.colour": "red"})}
    assert "has no parameter 'colour'" in results["dlt.source"][0]
    good = DltSourceConnector().validate({"dlt.source": NUMBERS, "dlt.args.count": "3", "dlt.args.label": "x"})
    assert [r.errors for r in good if r.errors] == []


@pytest.mark.parametrize(("setting", "airflow_imported"), [("false", False), ("true", True)])
def test_dlt_looks_in_airflow_variables_only_when_asked(setting: str, airflow_imported: bool) -> None:
    """A fresh process (dlt reads the switch once per process): loading the source with the key off leaves
    Airflow unimported (no metastore query per config value); on, dlt's Airflow provider imports it."""
    import subprocess
    import sys

    script = ("import os, sys\n"
              "os.environ.pop('PROVIDERS__ENABLE_AIRFLOW_SECRETS', None)\n"
              "from kopycat.connectors.dlt import DltSourceConnector\n"
              "connector = DltSourceConnector()\n"
              f"connector.start({{'dlt.source': {NUMBERS!r}, 'dlt.args.count': '1', 'dlt.args.label': 'x', "
              f"'dlt.airflow.secrets.enable': {setting!r}}})\n"
              "print(os.environ['PROVIDERS__ENABLE_AIRFLOW_SECRETS'], 'airflow' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300)
    assert result.stdout.split()[-2:] == [setting, str(airflow_imported)]
