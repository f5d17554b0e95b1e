"""``make demo`` without a browser: the viewer's screenshots are skipped with one line saying
what to install, and the demo still succeeds (its screenshots with one are checked in
tests/view/test_browser.py)."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

import clstream.demo as demo


def test_without_chromium_the_line_names_the_debian_package(
        monkeypatch: pytest.MonkeyPatch) -> None:
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",  # playwright installed or not
                        lambda name: find_spec("json" if name == "playwright" else name))
    monkeypatch.setattr(shutil, "which", lambda name: None)
    missing = demo.browser_missing()
    assert missing is not None and "'chromium' package" in missing


def test_without_playwright_the_line_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name: None if name == "playwright" else find_spec(name))
    missing = demo.browser_missing()
    assert missing is not None and "'.[test]'" in missing and "playwright" in missing


def test_screenshots_are_skipped_in_one_line_without_a_browser(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(demo, "browser_missing", lambda: "install something")
    assert demo.write_screenshots(tmp_path / "results", tmp_path) == []
    captured = capsys.readouterr()
    assert captured.err == "viewer screenshots skipped: install something\n"
    assert captured.out == ""
    assert list(tmp_path.iterdir()) == []


def test_a_viewer_that_does_not_start_leaves_one_line_and_no_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if demo.browser_missing() is not None:
        pytest.skip(str(demo.browser_missing()))
    # Not a results directory: `clstream view` exits 2 before printing its URL.
    assert demo.write_screenshots(tmp_path / "missing", tmp_path) == []
    err = capsys.readouterr().err
    assert err.startswith("viewer screenshots not written: clstream view exited with status 2")
    assert len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []
