"""ConnectorSensor and ConnectorLagTrigger without services: arguments, serialization, refusals."""

from __future__ import annotations

import asyncio

import pytest
from airflow.sdk.exceptions import AirflowFailException

from kopycat.api.errors import ConfigError
from kopycat.runtime.lag import ConnectorLag, PartitionLag, lag_input_kind
from kopycat_airflow.connector_config import StoredConnector
from kopycat_airflow.get_provider_info import get_provider_info
from kopycat_airflow.sensors.connector import ConnectorSensor
from kopycat_airflow.triggers.connector import ConnectorLagTrigger, lag_condition_met

JDBC_SOURCE = {"name": "orders-import", "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
               "connection.url": "jdbc:sqlite:/tmp/none.db", "topic.prefix": "db-", "mode": "bulk"}
FILE_SINK = {"name": "orders-export", "connector.class": "FileSinkConnector", "topics": "orders"}


def test_a_trigger_round_trips_through_serialize_with_every_argument() -> None:
    trigger = ConnectorLagTrigger(connector_config=FILE_SINK, kopycat_conn_id="kafka_prod",
                                  worker_overrides={"offset.storage.topic": "offsets"}, mode="new_data",
                                  poke_interval=15)
    classpath, kwargs = trigger.serialize()
    assert classpath == "kopycat_airflow.triggers.connector.ConnectorLagTrigger"
    assert kwargs == {"connector_config": FILE_SINK, "stored_connector": None, "kopycat_conn_id": "kafka_prod",
                      "worker_overrides": {"offset.storage.topic": "offsets"}, "mode": "new_data",
                      "poke_interval": 15.0}
    again = ConnectorLagTrigger(**kwargs)
    assert again.serialize() == (classpath, kwargs)


def test_a_stored_connector_travels_to_the_trigger_by_name_only() -> None:
    sensor = ConnectorSensor(task_id="wait", connector_config=StoredConnector("orders-export"), poke_interval=5)
    _, kwargs = sensor.trigger().serialize()
    assert kwargs["stored_connector"] == "orders-export"
    assert kwargs["connector_config"] is None
    assert kwargs["poke_interval"] == 5.0 and kwargs["mode"] == "caught_up"


def test_the_trigger_takes_a_config_or_a_stored_name_but_not_both() -> None:
    with pytest.raises(ValueError, match="either connector_config or stored_connector"):
        ConnectorLagTrigger(connector_config=FILE_SINK, stored_connector="orders-export")
    with pytest.raises(ValueError, match="either connector_config or stored_connector"):
        ConnectorLagTrigger()


def test_the_sensor_refuses_a_jdbc_source_naming_its_class_and_the_supported_connectors() -> None:
    sensor = ConnectorSensor(task_id="wait", connector_config=JDBC_SOURCE, kopycat_conn_id="kopycat_default")
    with pytest.raises(AirflowFailException) as caught:
        sensor.poke(context={})  # type: ignore[arg-type]
    message = str(caught.value)
    assert "io.confluent.connect.jdbc.JdbcSourceConnector" in message
    assert "orders-import" in message
    assert "sink connectors" in message and "MirrorSourceConnector" in message


def test_the_trigger_reports_an_unsupported_connector_as_an_error_event() -> None:
    trigger = ConnectorLagTrigger(connector_config=JDBC_SOURCE, poke_interval=0.01)

    async def first_event() -> dict[str, object]:
        async for event in trigger.run():
            return dict(event.payload)
        raise AssertionError("the trigger yielded nothing")

    event = asyncio.run(first_event())
    assert event["status"] == "error"
    assert "JdbcSourceConnector" in str(event["message"])


def test_a_connector_without_kafka_input_is_a_config_error_on_connector_class() -> None:
    with pytest.raises(ConfigError) as caught:
        lag_input_kind(JDBC_SOURCE)
    assert caught.value.key == "connector.class"
    assert lag_input_kind(FILE_SINK) == "sink"
    assert lag_input_kind({"connector.class": "MirrorSourceConnector"}) == "mirror"


@pytest.mark.parametrize("mode", ["catchup", "poke", "reschedule", ""])
def test_a_wrong_mode_names_the_field_the_value_and_the_fix(mode: str) -> None:
    with pytest.raises(ValueError) as caught:
        ConnectorSensor(task_id="wait", connector_config=FILE_SINK, mode=mode)  # type: ignore[arg-type]
    message = str(caught.value)
    assert f"mode={mode!r}" in message
    assert "mode='caught_up'" in message and "mode='new_data'" in message
    assert "sensor_mode=" in message


def test_airflow_poke_or_reschedule_goes_in_sensor_mode() -> None:
    sensor = ConnectorSensor(task_id="wait", connector_config=FILE_SINK, mode="new_data", sensor_mode="reschedule",
                             poke_interval=30, timeout=600)
    assert (sensor.mode, sensor.lag_mode, sensor.poke_interval, sensor.timeout) == ("reschedule", "new_data", 30, 600)


def test_caught_up_needs_lag_zero_and_new_data_needs_lag_above_zero() -> None:
    assert lag_condition_met("caught_up", 0) and not lag_condition_met("caught_up", 3)
    assert lag_condition_met("new_data", 3) and not lag_condition_met("new_data", 0)


def test_the_lag_summary_lists_topics_and_shortens_long_lists_to_the_most_lagging() -> None:
    rows = tuple(PartitionLag(f"t{i:03d}", 0, None if i % 2 else i, 10, i) for i in range(6))
    lag = ConnectorLag("c", "sink", rows)
    assert lag.total == 15
    assert lag.summary() == {"total_lag": 15, "topics": {f"t{i:03d}": i for i in range(6)}}
    assert lag.summary(max_topics=2) == {"total_lag": 15, "topics": {"t004": 4, "t005": 5}, "topics_left_off": 4}
    assert lag.rows()[1] == {"topic": "t001", "partition": 0, "committed": None, "end": 10, "lag": 1}


def test_the_sensor_and_trigger_are_registered_with_the_provider() -> None:
    info = get_provider_info()
    assert info["sensors"][0]["python-modules"] == ["kopycat_airflow.sensors.connector"]
    assert info["triggers"][0]["python-modules"] == ["kopycat_airflow.triggers.connector"]
