"""`kopycat rest worker.properties [--host] [--port] [--token-file]`: arguments reach the server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import kopycat.rest.server
import kopycat.rest.worker_server
from kopycat.cli import main


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    return int(exit_info.value.code or 0), capsys.readouterr().err


def test_rest_serves_on_loopback_by_default_with_the_token_from_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    served: list[dict[str, Any]] = []
    monkeypatch.setattr(kopycat.rest.server, "serve",
                        lambda props, **kwargs: served.append({"props": props, **kwargs}))
    worker, token = tmp_path / "worker.properties", tmp_path / "token"
    worker.write_text("bootstrap.servers=127.0.0.1:9092\n")
    token.write_text("  s3cret\n")
    assert run_cli(["rest", str(worker), "--token-file", str(token)], capsys)[0] == 0
    assert served == [{"props": {"bootstrap.servers": "127.0.0.1:9092"}, "host": "127.0.0.1", "port": 8083,
                       "token": "s3cret"}]
    assert run_cli(["rest", str(worker), "--host", "0.0.0.0", "--port", "18083"], capsys)[0] == 0
    assert served[-1]["host"] == "0.0.0.0" and served[-1]["port"] == 18083 and served[-1]["token"] is None


@pytest.mark.parametrize("content,problem", [(None, "Cannot read the token file"), ("\n", "is empty")])
def test_a_missing_or_empty_token_file_exits_with_one_clear_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, problem: str) -> None:
    worker, token = tmp_path / "worker.properties", tmp_path / "token"
    worker.write_text("bootstrap.servers=127.0.0.1:9092\n")
    if content is not None:
        token.write_text(content)
    code, err = run_cli(["rest", str(worker), "--token-file", str(token)], capsys)
    assert code == 2 and problem in err and err.count("\n") == 1


def test_worker_serves_the_api_and_runs_connectors_with_the_same_arguments(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    served: list[dict[str, Any]] = []
    monkeypatch.setattr(kopycat.rest.worker_server, "serve_worker",
                        lambda props, **kwargs: served.append({"props": props, **kwargs}))
    worker = tmp_path / "worker.properties"
    worker.write_text("bootstrap.servers=127.0.0.1:9092\n")
    assert run_cli(["worker", str(worker), "--port", "18083"], capsys)[0] == 0
    assert served == [{"props": {"bootstrap.servers": "127.0.0.1:9092"}, "host": "127.0.0.1", "port": 18083,
                       "token": None}]
