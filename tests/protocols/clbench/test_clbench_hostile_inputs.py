"""CL-Bench under hostile and malformed inputs at the command line, as a user's scripts
produce them: every case is one line on stderr naming what is wrong, exit status 2, no
traceback, and the results directory exactly as it was (no new run, no changed record).
(The loader's own record checks are in ``test_clbench_records.py``; here each goes through
the commands.)"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hostile_cli import check_one_line, digest, main, on_small_disk  # noqa: E402

TASK = "blind_spectrum_monitoring"



@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results directory with one short run, and its exported records."""
    root = tmp_path_factory.mktemp("hostile-clbench")
    assert main(["run", "clbench", "--task", TASK, "--schedule", "short", "--rollouts", "1",
                 "--system", "memory-free", "--model", "builtin", "--no-progress", "--out",
                 str(root / "res")]) == 0
    assert main(["export", str(root / "res"), "--system", "memory-free", "--out",
                 str(root / "records.jsonl")]) == 0
    return root




HUGE = "1" + "0" * 30
RUN_FLAGS: dict[str, tuple[list[str], str]] = {
    "rollouts zero": (["--rollouts", "0"], "--rollouts"),
    "rollouts negative": (["--rollouts", "-3"], "--rollouts"),
    "rollouts huge": (["--rollouts", HUGE], "--rollouts"),
    "rollouts not a number": (["--rollouts", "many"], "--rollouts"),
    "parallel zero": (["--parallel", "0"], "--parallel"),
    "parallel huge": (["--parallel", HUGE], "--parallel"),
    "samples huge": (["--samples", HUGE], "--samples"),
    "max tokens huge": (["--max-tokens", HUGE], "--max-tokens"),
    "max concurrency for a local model": (["--max-concurrency", "0"], "--max-concurrency"),
    "temperature negative": (["--temperature", "-0.5"], "--temperature"),
    "top-p above one": (["--top-p", "1.5"], "--top-p"),
    "schedule unknown": (["--schedule", "long"], "--schedule"),
    "task unknown": (["--task", "chess"], "chess"),
    "task with a surrogate": (["--task", "spec\udcfftrum"], "--task"),
    "task empty": (["--task", ""], "--task"),
    "system unknown": (["--system", "nope"], "nope"),
    "system argument unknown": (["--system", "notepad:zz=1"], "zz"),
    "model unknown": (["--model", "nowhere:thing"], "nowhere"),
    "reference above the ceiling": (["--reference", f"{TASK}=1000000"], "ceiling"),
    "reference not a number": (["--reference", f"{TASK}=lots"], "--reference"),
    "reference NaN": (["--reference", f"{TASK}=nan"], "--reference"),
    "reference of an unknown task": (["--reference", "chess=1"], "chess"),
    "reference without a value": (["--reference", f"{TASK}="], "--reference"),
    "reference run that is not there": (["--reference", "0123456789abcdef"], "0123456789abcdef"),
    "model args malformed": (["--model-args", "novalue"], "--model-args"),
}


@pytest.mark.parametrize("case", sorted(RUN_FLAGS))
def test_a_hostile_run_flag_is_one_line_and_registers_nothing(
        base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    extra, needle = RUN_FLAGS[case]
    res = tmp_path / "res"
    shutil.copytree(base / "res", res)
    before = digest(res)
    argv = ["run", "clbench", "--schedule", "short", "--no-progress", "--out", str(res)]
    argv += [] if "--task" in extra else ["--task", TASK]
    argv += [] if "--rollouts" in extra else ["--rollouts", "1"]
    argv += [] if "--system" in extra else ["--system", "memory-free"]
    argv += [] if "--model" in extra else ["--model", "builtin"]
    capsys.readouterr()
    check_one_line(capsys, main([*argv, *extra]), needle)
    assert digest(res) == before


def _rows(base: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (base / "records.jsonl").read_text().splitlines()]


def _task_edit(**changes: object) -> object:
    def edit(rows: list[dict[str, object]]) -> list[dict[str, object]]:
        return [{**rows[0], **changes}, *rows[1:]]
    return edit


def _reward(value: object) -> object:
    def edit(rows: list[dict[str, object]]) -> list[dict[str, object]]:
        return [rows[0], {**rows[1], "reward": value}, *rows[2:]]
    return edit


RECORDS: dict[str, tuple[object, str | None]] = {
    "r_max zero": (_task_edit(r_max=0), "r_max"),
    "r_max negative": (_task_edit(r_max=-2.5), "r_max"),
    "reward above the range": (_task_edit(reward_max=0.01), "reward"),
    "reference above the ceiling": (_task_edit(s_ext=1e6), "s_ext"),
    "reward a string": (_reward("high"), "reward"),
    "task name with a surrogate": (
        lambda rows: [{**r, "task": "spec\udcfftrum"} for r in rows], None),
}


@pytest.mark.parametrize("case", sorted(RECORDS))
def test_hostile_records_are_one_line(base: Path, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str], case: str) -> None:
    edit, needle = RECORDS[case]
    rows = edit(_rows(base))  # type: ignore[operator]
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code = main(["score", "clbench", str(path)])
    if needle is None:  # text, not an error: scored, the name kept as its escape
        out = capsys.readouterr().out
        assert code == 0 and "\\udcff" in out
        return
    check_one_line(capsys, code, needle)


RAW: dict[str, bytes] = {
    "deep nesting": b"[" * 100_000 + b"]" * 100_000,
    "NaN token": b'{"kind": "task", "task": "t", "r_max": NaN, "n_instances": 1}\n',
    "not utf-8": b'{"kind": "task", "task": "\xc3\x28"}\n',
    "empty": b"",
    "not json": b"{kind\n",
    "a huge integer": b'{"kind": "task", "task": "t", "r_max": 1, "n_instances": '
                      + b"9" * 5000 + b"}\n",
}


@pytest.mark.parametrize("case", sorted(RAW))
def test_hostile_record_files_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           case: str) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(RAW[case])
    check_one_line(capsys, main(["score", "clbench", str(path)]), str(path))


def test_a_missing_records_file_and_a_directory_instead(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    check_one_line(capsys, main(["score", "clbench", str(tmp_path / "none.jsonl")]), "none.jsonl")
    check_one_line(capsys, main(["score", "clbench", str(tmp_path)]), str(tmp_path))


def test_a_full_disk_during_a_run_is_one_line_and_leaves_the_run_resumable(
        tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    run = (f"{sys.executable} -m clstream run clbench --task {TASK} --schedule short "
           f"--rollouts 1 --system notepad --model builtin --no-progress --out {disk}/res")
    done = on_small_disk(disk, "600k", f"{{ {run}; echo rc=$?; }} && "
                         f"mount -o remount,size=16m {disk} && {run} > /dev/null && "
                         f"{sys.executable} -m clstream summary {disk}/res --json")
    assert "rc=2" in done.stdout, done.stdout
    failed = done.stderr.splitlines()[0]
    assert "no space left on device" in failed and "Traceback" not in done.stderr, done.stderr
    runs = json.loads(done.stdout[done.stdout.index("{"):])["runs"]  # resumed when space came
    assert [r["status"]["complete"] for r in runs] == [True], runs


def test_a_full_disk_while_generating_leaves_no_directory(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    done = on_small_disk(disk, "64k", f"{sys.executable} -m clstream generate clbench --task "
                         f"database_exploration --out {disk}/g; echo rc=$?; ls -A {disk}")
    assert "rc=2" in done.stdout and done.stdout.split("rc=2")[1].strip() == "", done.stdout
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "no space left on device" in lines[0], done.stderr
