"""JDBC connectors on SQLAlchemy: a database into Kafka and topics into tables.

Config keys, source partitions and offsets are those of Confluent's ``kafka-connect-jdbc``
(``io.confluent.connect.jdbc.JdbcSourceConnector`` / ``JdbcSinkConnector``, which are aliases
of these classes), so a table can move between Confluent's connector and Kopycat's without
being copied again. See ``source_connector`` and ``sink_connector``.
"""
