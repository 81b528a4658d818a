"""The storage sink and the Spark export against a real HDFS (Hadoop's MiniDFSCluster).

The Python sink writes ``hdfs://`` through WebHDFS; ``kopycat run`` (a child process, as a user
runs it) is killed with SIGKILL while it writes, then run again: every offset must be in exactly
one committed file, each file holding exactly the offsets its name says, and the rerun removes what
the killed run left in the temp dir. The Spark export writes the same store through Spark's own
Hadoop client, with the same file names.
"""

from __future__ import annotations

import io
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kopycat.connectors.files.committed_files import TEMP_DIR, committed_name
from kopycat.connectors.files.partition_writer import MANIFEST_SUFFIX
from kopycat.connectors.files.spark_export import run_spark_export, spark_export_job
from kopycat.connectors.files.store import Store
from kopycat.connectors.files.store_factory import open_store
from kopycat.dev.hdfs import LocalHdfs
from tests.support.orders import assert_every_id_once, produce_orders, read_committed
from tests.support.standalone import REPO, write_props

pytestmark = pytest.mark.timeout(1800)


def hdfs_store(hdfs: LocalHdfs, root: str) -> Store:
    return open_store({"store.url": f"{hdfs.url}/{root}", "hdfs.webhdfs.url": hdfs.webhdfs_url})


def reader(store: Store, topic: str) -> tuple[Callable[[], list[str]], Callable[[str], pa.Table]]:
    return (lambda: sorted(store.list_files(store.path("topics", topic))),
            lambda path: pq.read_table(io.BytesIO(store.read_bytes(path))))


def start_run(worker: Path, connector: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", "kopycat.cli", "run", str(worker), str(connector),
                                 "--no-progress"], stdout=out, stderr=subprocess.STDOUT, cwd=REPO)


def test_a_run_killed_mid_file_on_hdfs_leaves_every_offset_once_after_a_rerun(
        bootstrap_servers: str, topic_name: str, hdfs_server: LocalHdfs, tmp_path: Path) -> None:
    count = 24_000
    produce_orders(bootstrap_servers, topic_name, count)
    root = f"sink-{topic_name}"
    store = hdfs_store(hdfs_server, root)
    worker = write_props(tmp_path / "worker.properties", {
        "bootstrap.servers": bootstrap_servers, "offset.storage.file.filename": str(tmp_path / "offsets"),
        "key.converter": "org.apache.kafka.connect.storage.StringConverter"})
    connector = write_props(tmp_path / "connector.properties", {
        "name": f"hdfs-{topic_name}", "connector.class": "io.confluent.connect.hdfs.HdfsSinkConnector",
        "topics": topic_name, "tasks.max": "1", "store.url": f"{hdfs_server.url}/{root}",
        "hdfs.webhdfs.url": hdfs_server.webhdfs_url, "flush.size": "700", "format.class": "parquet"})
    log = tmp_path / "run.log"
    committed = reader(store, topic_name)[0]

    def committed_and_writing() -> bool:
        """A file committed and the next one being written: the moment to kill."""
        paths = committed()
        return (any(f"/{TEMP_DIR}/" not in p for p in paths)
                and any(f"/{TEMP_DIR}/" in p and not p.endswith(MANIFEST_SUFFIX) for p in paths))

    process = start_run(worker, connector, log)
    deadline = time.monotonic() + 300
    while not committed_and_writing():
        assert process.poll() is None, f"the run ended before a file was committed: {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(30)
    after_kill = read_committed(*reader(store, topic_name), topic=topic_name)
    assert 0 < sum(map(len, after_kill.values())) < count, "the kill came after the copy was done"
    temp_dir = store.path("topics", topic_name, TEMP_DIR)
    left_by_kill = list(store.list_files(temp_dir))

    rerun = start_run(worker, connector, log)
    assert rerun.wait(600) == 0, log.read_text()[-3000:]

    files = read_committed(*reader(store, topic_name), topic=topic_name)
    assert_every_id_once(files, count)
    assert all(len(ids) <= 700 for ids in files.values())
    assert set(after_kill) <= set(files), "a rerun removed a file the killed run had committed"
    assert list(store.list_files(temp_dir)) == [], "the rerun left temp files behind"
    print(f"hdfs: {len(files)} files; the kill left {len(left_by_kill)} temp files, removed by the rerun")


def test_a_spark_export_to_hdfs_commits_the_python_sinks_file_names(
        bootstrap_servers: str, topic_name: str, hdfs_url: str, hdfs_server: LocalHdfs) -> None:
    count, name = 3_000, f"export-{uuid.uuid4().hex[:8]}"
    ranges = produce_orders(bootstrap_servers, topic_name, count)
    root = f"export-{topic_name}"
    job = spark_export_job(ranges, store_url=f"{hdfs_url}/{root}", connector_name=name,
                           bootstrap_servers=bootstrap_servers)

    result = run_spark_export(job, timeout=1500)

    store = hdfs_store(hdfs_server, root)
    files = read_committed(*reader(store, topic_name), topic=topic_name)
    assert_every_id_once(files, count)
    assert sorted(files) == [committed_name(topic_name, r.partition, 0, r.end - 1, "parquet") for r in ranges]
    assert [f.path for f in result.files] == [
        f"{hdfs_url}/{root}/topics/{topic_name}/partition={r.partition}/"
        f"{committed_name(topic_name, r.partition, 0, r.end - 1, 'parquet')}" for r in ranges]
    assert not [p for p in store.list_files(store.path("topics", topic_name, TEMP_DIR))]
