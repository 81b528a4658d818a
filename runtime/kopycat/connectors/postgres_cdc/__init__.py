"""PostgreSQL change data capture with Debezium's topics, events and offsets (``PostgresConnector``).

Modules, each importing only the ones before it: :mod:`.pgoutput` (the logical replication
messages), :mod:`.config` (Debezium's keys), :mod:`.values` (column types to Connect schemas and
values), :mod:`.defaults` (column DEFAULTs as field defaults), :mod:`.events` (the change-event
envelope), :mod:`.transactions` (BEGIN/END events and the transaction block),
:mod:`.replication` (slot, publication and the WAL read over SQL), :mod:`.heartbeat`,
:mod:`.java_keys` and :mod:`.signals` (signal rows; key arrays as Debezium stores them),
:mod:`.incremental_snapshot` (chunks between watermarks on an execute-snapshot signal),
:mod:`.change_stream` (WAL messages to records and offsets), :mod:`.snapshot` (the initial
snapshot, and blocking ones by signal), :mod:`.blocking_snapshot` (a cut blocking snapshot resumed
from its offset), :mod:`.source_task` and :mod:`.source_connector`.

Not yet: the kafka/file/jmx signal channels, column comments in the schemas, and types beyond
those :mod:`.values` lists.
"""
