"""The benchmark helpers: a child's own CPU is measured (not the parent's), tables are valid
Markdown, and a README section is rewritten between its markers and nowhere else."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from cli_timing import markdown_table, run_process, write_section  # noqa: E402


def test_a_child_process_is_timed_by_its_own_usage() -> None:
    busy = run_process([sys.executable, "-c", "sum(range(3_000_000))"])
    idle = run_process([sys.executable, "-c", "import time; time.sleep(0.3)"])
    assert busy.status == idle.status == 0
    assert busy.cpu_s > 0.02 and idle.wall_s >= 0.3
    assert idle.cpu_s < idle.wall_s  # sleeping costs wall time, not CPU
    assert run_process([sys.executable, "-c", "raise SystemExit(3)"]).status == 3


def test_markdown_table_aligns_columns() -> None:
    table = markdown_table(["a", "b"], [[1, "x"], [22, "y"]], "rl")
    assert table.splitlines() == ["| a | b |", "| ---: | --- |", "| 1 | x |", "| 22 | y |"]


def test_write_section_replaces_only_between_markers(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- bench:x -->\nold\n<!-- /bench:x -->\nafter\n")
    write_section("x", "new table\n", readme)
    write_section("x", "newer", readme)
    assert readme.read_text() == "intro\n<!-- bench:x -->\nnewer\n<!-- /bench:x -->\nafter\n"
    with pytest.raises(SystemExit, match="no <!-- bench:y -->"):
        write_section("y", "t", readme)
