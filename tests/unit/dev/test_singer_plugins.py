"""Singer plugins' venvs: where a pinned plugin goes, and an unpinned one refused with the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from kopycat.dev.singer_plugins import SingerPluginError, ensure_plugin, main, plugin_venv


def test_a_pinned_plugin_gets_its_own_venv_under_the_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KOPYCAT_CACHE", str(tmp_path))
    assert plugin_venv("meltanolabs-tap-postgres==0.10.0") == tmp_path / "singer" / "meltanolabs-tap-postgres-0.10.0"


def test_an_installed_venv_is_kept_as_it_is(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KOPYCAT_CACHE", str(tmp_path))
    venv = plugin_venv("tap-x==1.0")
    venv.mkdir(parents=True)
    (venv / ".kopycat-requirement").write_text("tap-x==1.0")
    (venv / "kept").write_text("")
    assert ensure_plugin("tap-x==1.0") == venv and (venv / "kept").exists()


@pytest.mark.parametrize("requirement", ["tap-postgres", "tap-postgres>=1", "tap-postgres==", "==1.0"])
def test_an_unpinned_plugin_is_refused_naming_it_and_the_form(requirement: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SingerPluginError, match=r"is not pinned as NAME==VERSION \(for example"):
        plugin_venv(requirement)
    assert main([requirement]) == 1
    assert f"Singer plugin {requirement!r} is not pinned" in capsys.readouterr().err
