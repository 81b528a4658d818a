"""ArrowStore.list_files over fsspec's pyarrow handler, the path the WebHDFS store takes."""

from __future__ import annotations

from typing import Any

import pyarrow.fs as pafs
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from kopycat.api.errors import RetriableError
from kopycat.connectors.files.store import ArrowStore


class DirectoryAppearingFileSystem(MemoryFileSystem):  # type: ignore[misc]
    """A memory filesystem whose first ``isdir`` answers before another writer's mkdir landed."""

    cachable = False  # fsspec would hand every test the same instance

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.store = {}
        self.pseudo_dirs = [""]
        self.stale_isdir_answers = 1

    def isdir(self, path: str) -> bool:
        if self.stale_isdir_answers:
            self.stale_isdir_answers -= 1
            return False
        return bool(super().isdir(path))


def memory_store(filesystem: MemoryFileSystem) -> ArrowStore:
    return ArrowStore("/root", "memory://root", pafs.PyFileSystem(pafs.FSSpecHandler(filesystem)))


def test_a_directory_created_during_the_listing_is_listed_instead_of_failing() -> None:
    filesystem = DirectoryAppearingFileSystem()
    filesystem.pipe("/root/topics/t/partition=0/t+0+0000000000.parquet", b"x")

    assert list(memory_store(filesystem).list_files("/root/topics/t")) == [
        "/root/topics/t/partition=0/t+0+0000000000.parquet"]


def test_a_file_where_the_directory_should_be_still_fails_naming_the_path() -> None:
    filesystem = DirectoryAppearingFileSystem()
    filesystem.pipe("/root/topics/t", b"not a directory")

    with pytest.raises(RetriableError, match="listing /root/topics/t failed"):
        list(memory_store(filesystem).list_files("/root/topics/t"))
