"""MirrorMaker 2 in Kopycat: copy topics from another Kafka cluster into the worker's.

``MirrorSourceConnector`` (alias of Kafka's ``org.apache.kafka.connect.mirror.MirrorSourceConnector``)
keeps MM2's config keys, remote topic names, source partitions and offsets and offset-sync
records, so a mirror can move between Kafka Connect's MM2 and Kopycat without copying again.
It also accepts the keys of the Kafka source connector proposal (Comcast's MirrorTool). See
``source_connector``, ``source_task`` and ``source_config``.
"""
