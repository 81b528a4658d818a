"""dlt's filesystem source as a connector, run as a user runs it (``kopycat run``): CSV files in a local
directory (a factory module's ``filesystem | read_csv`` pipe) and in an S3 bucket (moto in server mode,
dlt's ``readers`` source). Run 1 copies every file's rows; files added after it, run 2 copies only
theirs (duplicates = 0); the cursor on the files' modification_date is in the offsets topic.

dlt reads ``s3://`` through s3fs, which the environment may lack (see the how-to): the S3 case is
skipped without it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dlt.common import json as dlt_json

from kopycat.dev.s3 import ACCESS_KEY, REGION, SECRET_KEY
from tests.support.kafka import consume_records


def _properties(path: Path, props: dict[str, str]) -> Path:
    path.write_text("".join(f"{key}={value}\n" for key, value in props.items()))
    return path


def _kopycat_run(worker: Path, connector: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kopycat.cli", "run", str(worker), str(connector), "--no-progress"],
                          capture_output=True, text=True, timeout=300)


def _csv(ids: range) -> bytes:
    return ("id,amount\n" + "".join(f"{i},{i * 10}\n" for i in ids)).encode()


def _local(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[dict[str, str], Callable[[str, bytes], None]]:
    files = tmp_path / "incoming"
    files.mkdir()
    return ({"dlt.source": "tests.support.dlt_sources:csv_orders", "dlt.args.bucket_url": files.as_uri()},
            lambda name, data: (files / name).write_bytes(data))


def _s3(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[dict[str, str], Callable[[str, bytes], None]]:
    server, bucket = request.getfixturevalue("s3_server"), request.getfixturevalue("s3_bucket")
    client = server.client()
    credentials = {"aws_access_key_id": ACCESS_KEY, "aws_secret_access_key": SECRET_KEY,
                   "endpoint_url": server.endpoint_url, "region_name": REGION}
    return ({"dlt.source": "dlt.sources.filesystem:readers", "dlt.resources": "read_csv",
             "dlt.args.incremental": '{"cursor_path": "modification_date"}',
             "dlt.args.bucket_url": f"s3://{bucket}/incoming", "dlt.args.credentials": json.dumps(credentials)},
            lambda name, data: client.put_object(Bucket=bucket, Key=f"incoming/{name}", Body=data))


@pytest.mark.parametrize("where", [_local, _s3], ids=["local", "s3"])
def test_second_run_copies_only_the_files_added_since_the_first(
        where: Callable[..., Any], tmp_path: Path, request: pytest.FixtureRequest, worker: dict[str, str],
        bootstrap_servers: str, topic_name: str) -> None:
    source, put = where(tmp_path, request)
    put("a.csv", _csv(range(1, 4)))
    put("b.csv", _csv(range(4, 6)))
    put("notes.txt", b"not a csv")
    name = f"{topic_name}-files"
    worker_file = _properties(tmp_path / "worker.properties", {
        **worker, "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false"})
    connector_file = _properties(tmp_path / "files.properties", {
        "name": name, "connector.class": "kopycat.connectors.dlt.DltSourceConnector", **source,
        "dlt.args.file_glob": "*.csv", "topic.prefix": f"{topic_name}."})

    first = _kopycat_run(worker_file, connector_file)
    assert first.returncode == 0, first.stderr[-3000:]
    put("c.csv", _csv(range(6, 9)))
    second = _kopycat_run(worker_file, connector_file)
    assert second.returncode == 0, second.stderr[-3000:]

    resource = "orders" if where is _local else "read_csv"
    values = [json.loads(m.value()) for m in consume_records(bootstrap_servers, f"{topic_name}.{resource}")]
    ids = [value["id"] for value in values]
    assert sorted(ids[:5]) == [1, 2, 3, 4, 5] and sorted(ids[5:]) == [6, 7, 8]  # run 2: c.csv only
    assert max(Counter(ids).values()) == 1 and values[0]["amount"] == values[0]["id"] * 10

    offsets = [(json.loads(m.key()), json.loads(m.value()))
               for m in consume_records(bootstrap_servers, worker["offset.storage.topic"])]
    [*_, (key, offset)] = [(key, value) for key, value in offsets if key[0] == name]
    assert key[1]["resource"] == resource
    [step] = dlt_json.typed_loads(offset["pipe"]).values()  # the filesystem step's cursor
    assert step["incremental"]["modification_date"]["last_value"] is not None
    assert len(step["incremental"]["modification_date"]["unique_hashes"]) >= 1
