"""Where the demo finds its DAGs: an explicit folder, KOPYCAT_DAGS_FOLDER, or the checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from kopycat.api.errors import ConnectError
from kopycat_airflow.demo import DAGS_FOLDER_ENV, demo_dags_folder

REPO_DAGS = Path(__file__).resolve().parents[3] / "dags"


def _dags(folder: Path) -> Path:
    folder.mkdir()
    for name in ("kopycat_shop_import.py", "kopycat_shop_export.py"):
        (folder / name).write_text("")
    return folder


def test_the_checkout_dags_are_found_without_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DAGS_FOLDER_ENV, raising=False)
    assert demo_dags_folder() == REPO_DAGS


def test_an_explicit_folder_wins_over_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DAGS_FOLDER_ENV, str(_dags(tmp_path / "from_env")))
    assert demo_dags_folder() == tmp_path / "from_env"
    assert demo_dags_folder(_dags(tmp_path / "explicit")) == tmp_path / "explicit"


def test_a_folder_without_the_demo_dags_names_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DAGS_FOLDER_ENV, str(tmp_path))
    with pytest.raises(ConnectError, match=f"kopycat_shop_import.py.*set {DAGS_FOLDER_ENV} to the dags/ folder"):
        demo_dags_folder()
