"""Mirror the shop topics of the primary cluster into the Kopycat cluster every hour: MM2 on a schedule.

Two connectors in MirrorMaker 2's configuration, one after the other in each run:

- ``shop-mirror-source`` (MirrorSourceConnector) copies every partition of the matching topics up
  to the end offsets it snapshotted when it planned, as ``primary.<topic>``, and writes the
  offset syncs; each run resumes from the offsets it stored in ``connect-offsets`` (MM2's own
  format, so a Kafka Connect MM2 can take over, and back);
- ``shop-mirror-checkpoint`` (MirrorCheckpointConnector) then translates the primary cluster's
  consumer group offsets through those syncs into checkpoints, and commits them to the same
  groups on the Kopycat cluster, so a consumer can fail over without skipping a record.

Environment: ``KOPYCAT_MIRROR_SOURCE_BOOTSTRAP`` (the primary cluster; default: the Kopycat cluster
itself, which then holds its copies beside the originals), ``KOPYCAT_MIRROR_TOPICS`` (a regex,
default ``shop_.*``), ``KOPYCAT_MIRROR_GROUPS`` (a regex, default ``.*``); the Kopycat cluster is
the ``kopycat_default`` connection (or ``KOPYCAT_BOOTSTRAP_SERVERS``, default 127.0.0.1:9092).
"""

from __future__ import annotations

import os
from pathlib import Path

import pendulum
from airflow.sdk import DAG
from airflow.timetables.interval import CronDataIntervalTimetable

from kopycat.properties import load_config_file
from kopycat_airflow.hooks.kopycat import default_cluster
from kopycat_airflow.task_group import connector_task_group

CONNECTORS = Path(__file__).resolve().parent.parent / "include" / "connectors"
TARGET = default_cluster()
SOURCE = os.environ.get("KOPYCAT_MIRROR_SOURCE_BOOTSTRAP", TARGET)
TOPICS = os.environ.get("KOPYCAT_MIRROR_TOPICS", "shop_.*")
GROUPS = os.environ.get("KOPYCAT_MIRROR_GROUPS", ".*")
CLUSTERS = {"source.cluster.bootstrap.servers": SOURCE, "target.cluster.bootstrap.servers": TARGET,
            "topics": TOPICS}

with DAG(
    dag_id="kopycat_shop_mirror",
    schedule=CronDataIntervalTimetable("0 * * * *", timezone="UTC"),
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,  # one writer per source partition's offsets
    tags=["kopycat", "mirrormaker", "replication"],
    doc_md=__doc__,
):
    mirror = connector_task_group({**load_config_file(CONNECTORS / "shop-mirror-source.properties"), **CLUSTERS})
    checkpoints = connector_task_group({**load_config_file(CONNECTORS / "shop-mirror-checkpoint.properties"),
                                       **CLUSTERS, "groups": GROUPS})
    mirror >> checkpoints  # checkpoints translate through the offset syncs this run's copy wrote
