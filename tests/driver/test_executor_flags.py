"""The ``--executor`` flags (:func:`clstream.driver.flags.executor_from_args`): refused in one
line, exit 2, before anything is written, when ray is missing or the flags do not fit."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main as cli


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("oaks") / "stream.json"
    assert cli(["generate", "oaks-babi", "--seed", "3", "--docs", "1", "--chunks", "2",
                "--chunk-tokens", "100", "--out", str(path)]) == 0
    return path


def refused(data: Path, out: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> str:
    capsys.readouterr()
    code = cli(["run", "oaks", str(data), "--system", "full", "--out", str(out),
                "--no-progress", *flags])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert not out.exists()
    return err


def test_executor_ray_without_ray_is_one_line_naming_the_extra(
        data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    find = importlib.util.find_spec

    def without_ray(name: str, *args: Any) -> Any:
        return None if name == "ray" else find(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_ray)
    err = refused(data, tmp_path / "out", capsys, "--executor", "ray")
    assert "ray is not installed" in err and "clstream[ray]" in err


@pytest.mark.parametrize(("flags", "says"), [
    (["--ray-address", "127.0.0.1:6379"], "need --executor ray"),
    (["--ray-workers", "2"], "need --executor ray"),
    (["--executor", "ray", "--ray-workers", "0"], "--ray-workers: must be >= 1"),
])
def test_ray_flags_that_do_not_fit_are_refused(
        data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str],
        says: str) -> None:
    assert says in refused(data, tmp_path / "out", capsys, *flags)
