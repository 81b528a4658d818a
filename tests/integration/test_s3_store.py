"""The S3 store on moto's S3 server: writes in ``s3.part.size`` parts, commits by multipart copy.

What is checked is what S3 holds afterwards (bytes, ``PartsCount``, open multipart uploads), so a
store that quietly fell back to single requests, or completed a half-written file, fails here.
"""

from __future__ import annotations

import io
import os
import random
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kopycat.api.errors import RetriableError
from kopycat.connectors.files.s3_store import S3Store
from kopycat.connectors.files.store import Store
from kopycat.connectors.files.store_factory import open_store
from kopycat.dev.ports import free_port
from kopycat.dev.s3 import ACCESS_KEY, REGION, SECRET_KEY, LocalS3

MIB = 1024 * 1024
PART = 5 * MIB


def s3_store(server: LocalS3, bucket: str, part_size: int = PART) -> Store:
    return open_store({"store.url": f"s3://{bucket}/exports", "s3.endpoint.url": server.endpoint_url,
                       "s3.region": REGION, "aws.access.key.id": ACCESS_KEY, "aws.secret.access.key": SECRET_KEY,
                       "s3.part.size": str(part_size)})


def parts_count(client: Any, bucket: str, key: str) -> int | None:
    """S3's ``PartsCount`` of an object: its number of parts if it was uploaded (or copied) in parts."""
    return client.head_object(Bucket=bucket, Key=key, PartNumber=1).get("PartsCount")


def open_uploads(client: Any, bucket: str) -> list[str]:
    return [upload["Key"] for upload in client.list_multipart_uploads(Bucket=bucket).get("Uploads", [])]


def write_in_odd_chunks(stream: pa.NativeFile, data: bytes) -> None:
    rng, position = random.Random(5), 0
    while position < len(data):
        size = rng.randint(1, 700_000)
        stream.write(data[position:position + size])
        position += size


def test_a_file_over_two_parts_is_uploaded_and_committed_in_parts(s3_server: LocalS3, s3_bucket: str) -> None:
    store, client = s3_store(s3_server, s3_bucket), s3_server.client()
    data = os.urandom(12 * MIB + 12345)
    temp, final = store.path("topics/t/+tmp/t+0+abc.bin"), store.path("topics/t/partition=0/t+0+0000000000.bin")

    with store.open_output(temp) as stream:
        write_in_odd_chunks(stream, data)
    uploaded_parts = parts_count(client, s3_bucket, "exports/topics/t/+tmp/t+0+abc.bin")
    store.move(temp, final)

    committed = client.get_object(Bucket=s3_bucket, Key="exports/topics/t/partition=0/t+0+0000000000.bin")
    assert committed["Body"].read() == data
    assert uploaded_parts == 3
    assert parts_count(client, s3_bucket, "exports/topics/t/partition=0/t+0+0000000000.bin") == 3
    assert not store.exists(temp)
    assert open_uploads(client, s3_bucket) == []


def test_a_file_smaller_than_a_part_is_one_put(s3_server: LocalS3, s3_bucket: str) -> None:
    store, client = s3_store(s3_server, s3_bucket), s3_server.client()
    data = os.urandom(PART - 1)

    with store.open_output(store.path("small.bin")) as stream:
        write_in_odd_chunks(stream, data)

    assert client.get_object(Bucket=s3_bucket, Key="exports/small.bin")["Body"].read() == data
    assert parts_count(client, s3_bucket, "exports/small.bin") is None
    assert "-" not in client.head_object(Bucket=s3_bucket, Key="exports/small.bin")["ETag"]  # no multipart ETag
    assert open_uploads(client, s3_bucket) == []


def test_a_write_that_fails_mid_file_leaves_no_object_and_no_open_upload(s3_server: LocalS3, s3_bucket: str) -> None:
    store, client = s3_store(s3_server, s3_bucket), s3_server.client()
    temp = store.path("topics/t/+tmp/t+0+broken.bin")

    with pytest.raises(RuntimeError, match="the converter broke"):
        with store.open_output(temp) as stream:
            write_in_odd_chunks(stream, os.urandom(PART + MIB))
            assert open_uploads(client, s3_bucket) == ["exports/topics/t/+tmp/t+0+broken.bin"]
            raise RuntimeError("the converter broke")

    assert not store.exists(temp)
    assert "Contents" not in client.list_objects_v2(Bucket=s3_bucket)
    assert open_uploads(client, s3_bucket) == []


def test_a_parquet_file_over_a_part_reads_back_whole(s3_server: LocalS3, s3_bucket: str) -> None:
    store, client = s3_store(s3_server, s3_bucket), s3_server.client()
    table = pa.table({"id": pa.array(range(400_000), pa.int64()),
                      "blob": pa.array([os.urandom(16) for _ in range(400_000)], pa.binary())})

    with store.open_output(store.path("t.parquet")) as stream:
        pq.write_table(table, stream, compression=None)

    body = client.get_object(Bucket=s3_bucket, Key="exports/t.parquet")["Body"].read()
    assert pq.read_table(io.BytesIO(body)).equals(table)
    assert parts_count(client, s3_bucket, "exports/t.parquet") == len(body) // PART + 1


def test_listing_lookups_and_deletes_behave_as_on_the_other_stores(s3_server: LocalS3, s3_bucket: str) -> None:
    store = s3_store(s3_server, s3_bucket)
    for name in ("topics/t/partition=0/a.json", "topics/t/partition=1/b.json", "topics/u/c.json"):
        store.write_bytes(store.path(name), name.encode())

    assert sorted(store.list_files(store.path("topics/t"))) == [
        f"{s3_bucket}/exports/topics/t/partition=0/a.json", f"{s3_bucket}/exports/topics/t/partition=1/b.json"]
    assert list(store.list_files(store.path("topics/missing"))) == []
    assert store.exists(store.path("topics/t")) and store.exists(store.path("topics/u/c.json"))
    assert not store.exists(store.path("topics/v"))
    assert store.read_bytes(store.path("topics/u/c.json")) == b"topics/u/c.json"
    store.delete(store.path("topics/u/c.json"))
    store.delete(store.path("topics/u/c.json"))  # a second delete (recovery running twice) is fine
    with pytest.raises(FileNotFoundError):
        store.read_bytes(store.path("topics/u/c.json"))


def test_many_listed_objects_come_back_across_pages(s3_server: LocalS3, s3_bucket: str) -> None:
    client = s3_server.client()
    for n in range(1005):
        client.put_object(Bucket=s3_bucket, Key=f"exports/many/{n:04d}", Body=b"")

    listed = list(s3_store(s3_server, s3_bucket).list_files(f"{s3_bucket}/exports/many"))

    assert listed == [f"{s3_bucket}/exports/many/{n:04d}" for n in range(1005)]


def test_an_unreachable_endpoint_is_retriable_and_names_store_and_path_but_not_the_secret() -> None:
    store = open_store({"store.url": "s3://nowhere/exports", "s3.endpoint.url": f"http://127.0.0.1:{free_port()}",
                        "s3.region": REGION, "aws.access.key.id": ACCESS_KEY, "aws.secret.access.key": SECRET_KEY})
    assert isinstance(store, S3Store)

    with pytest.raises(RetriableError) as raised:
        store.write_bytes(store.path("a.json"), b"{}")

    assert "s3://nowhere/exports" in str(raised.value) and "nowhere/exports/a.json" in str(raised.value)
    assert SECRET_KEY not in str(raised.value) and SECRET_KEY not in repr(store)
