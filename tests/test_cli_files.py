"""Hostile input files and machines that cannot take the output: one line on stderr naming the
path and the cause, exit status 2, no traceback, no partial file, nothing stored damaged."""

from __future__ import annotations

import argparse
import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clstream import cli
from clstream.cli import main

HOSTILE = {
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "long-int": b'{"t": ' + b"7" * 5000 + b"}",
    "nan": b'{"t": NaN}',
    "infinity": b'{"t": Infinity}',
    "not-utf8": b'{"output": "\xc3\x28"}',
    "empty": b"",
}


def _one_line(capsys: pytest.CaptureFixture[str], code: int, *needles: str) -> str:
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("clstream: error: ") and "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small OAKS stream, its predictions, a SeqMem stream and a results directory."""
    root = tmp_path_factory.mktemp("files")
    assert main(["generate", "oaks-babi", "--seed", "2", "--docs", "1", "--chunks", "4",
                 "--chunk-tokens", "200", "--out", str(root / "s.json")]) == 0
    assert main(["generate", "seqmem-synthetic", "--seed", "0", "--tasks", "12", "--holdout",
                 "2", "--out", str(root / "t.json")]) == 0
    assert main(["run", "oaks", str(root / "s.json"), "--system", "full", "--out",
                 str(root / "res"), "--no-progress"]) == 0
    assert main(["export", str(root / "res"), "--system", "full", "--out",
                 str(root / "p.jsonl")]) == 0
    return root


def _hostile(tmp_path: Path, name: str, suffix: str) -> Path:
    path = tmp_path / f"{name}{suffix}"
    path.write_bytes(HOSTILE[name])
    return path


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_oaks_data(work: Path, tmp_path: Path, name: str,
                           capsys: pytest.CaptureFixture[str]) -> None:
    path = _hostile(tmp_path, name, ".json")
    _one_line(capsys, main(["score", "oaks", str(path), str(work / "p.jsonl")]), str(path))


@pytest.mark.parametrize("name", sorted(set(HOSTILE) - {"empty"}))
def test_hostile_predictions(work: Path, tmp_path: Path, name: str,
                             capsys: pytest.CaptureFixture[str]) -> None:
    path = _hostile(tmp_path, name, ".jsonl")
    _one_line(capsys, main(["score", "oaks", str(work / "s.json"), str(path)]),
              str(path), "line 1")


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_seqmem_records(tmp_path: Path, name: str,
                                capsys: pytest.CaptureFixture[str]) -> None:
    path = _hostile(tmp_path, name, ".jsonl")
    _one_line(capsys, main(["score", "seqmem", str(path)]), str(path))


@pytest.mark.parametrize("source", ["synthetic", "humaneval"])
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_seqmem_streams(tmp_path: Path, name: str, source: str,
                                capsys: pytest.CaptureFixture[str]) -> None:
    path = _hostile(tmp_path, name, ".json" if source == "synthetic" else ".jsonl")
    out = tmp_path / "res"
    code = main(["run", "seqmem", str(path), "--source", source, "--system", "memory-free",
                 "--out", str(out), "--no-progress"])
    _one_line(capsys, code, str(path))
    assert not (out / "results.sqlite").exists()


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_prices(work: Path, tmp_path: Path, name: str,
                        capsys: pytest.CaptureFixture[str]) -> None:
    path = _hostile(tmp_path, name, ".json")
    _one_line(capsys, main(["summary", str(work / "res"), "--prices", str(path)]), str(path))


def test_directories_where_files_belong(work: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    cases = [
        ["score", "oaks", str(folder), str(work / "p.jsonl")],
        ["score", "oaks", str(work / "s.json"), str(folder)],
        ["score", "seqmem", str(folder)],
        ["run", "seqmem", str(folder), "--system", "memory-free", "--out", str(tmp_path / "r")],
        ["run", "seqmem", str(folder), "--source", "humaneval", "--system", "memory-free",
         "--out", str(tmp_path / "r")],
        ["summary", str(work / "res"), "--prices", str(folder)],
        ["generate", "oaks-babi", "--out", str(folder)],
        ["export", str(work / "res"), "--system", "full", "--out", str(folder)],
    ]
    for argv in cases:
        _one_line(capsys, main(argv), str(folder), "is a directory")


def test_report_never_creates_directories(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = Path("/nonexistent-dir-xyz/r.html")
    assert not target.parent.exists()
    _one_line(capsys, main(["report", str(work / "res"), "--out", str(target)]),
              str(target), "missing parent directory")
    assert not target.parent.exists()


def test_a_full_disk_while_writing_leaves_nothing_partial(
    work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    for name in ("s.json", "p.jsonl", "report.html", "t.json"):
        (tmp_path / name).write_text("old")
    monkeypatch.setattr(os, "fsync", full)
    commands = [
        ["generate", "oaks-babi", "--seed", "3", "--out", str(tmp_path / "s.json"), "--force"],
        ["generate", "seqmem-synthetic", "--tasks", "12", "--holdout", "2",
         "--out", str(tmp_path / "t.json"), "--force"],
        ["export", str(work / "res"), "--system", "full", "--out", str(tmp_path / "p.jsonl"),
         "--force"],
        ["report", str(work / "res"), "--out", str(tmp_path / "report.html"), "--force"],
    ]
    for argv in commands:
        _one_line(capsys, main(argv), str(tmp_path), "no space left on device")
    assert sorted(os.listdir(tmp_path)) == ["p.jsonl", "report.html", "s.json", "t.json"]
    assert all((tmp_path / n).read_text() == "old" for n in os.listdir(tmp_path))


@pytest.mark.parametrize(
    ("code", "words"),
    [(errno.EROFS, "read-only file system"), (errno.ENOSPC, "no space left on device"),
     (errno.EACCES, "permission denied"), (errno.ENOTDIR, "not a directory"),
     (errno.EISDIR, "is a directory"), (errno.ENOENT, "no such file")],
)
def test_cli_maps_os_errors_of_the_environment(
    code: int, words: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def handler(args: argparse.Namespace) -> int:
        raise OSError(code, os.strerror(code), "/somewhere/file")

    class Parser:
        def __init__(self, argv: object = None) -> None:
            pass

        def parse_args(self, argv: object) -> argparse.Namespace:
            return argparse.Namespace(handler=handler)

    monkeypatch.setattr(cli, "build_parser", Parser)
    _one_line(capsys, main([]), "/somewhere/file: ", words)


# -- a real read-only mount and a real full disk (Linux, root, mount namespaces) -------------

def _namespace_ok(tmp_path: Path) -> bool:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    probe = tmp_path / "probe"
    probe.mkdir()
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                           f"mount -t tmpfs -o size=64k tmpfs {probe}"],
                          capture_output=True, timeout=30)
    probe.rmdir()
    return done.returncode == 0


def _clstream(mount: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """``clstream ARGV`` in a private mount namespace after the shell command ``mount``."""
    command = " ".join([sys.executable, "-m", "clstream", *(f"'{a}'" for a in argv)])
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                           f"{mount} && exec {command}"],
                          capture_output=True, text=True, timeout=120)


def _check(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_read_only_mount(work: Path, tmp_path: Path) -> None:
    if not _namespace_ok(tmp_path):
        pytest.skip("needs root and mount namespaces (unshare -m)")
    ro = tmp_path / "ro"
    shutil.copytree(work / "res", ro / "res")
    (ro / "p.jsonl").write_text("old")
    before = (ro / "res" / "results.sqlite").read_bytes()
    bind = f"mount -o bind,ro {ro} {ro}"
    cause = "read-only file system"
    _check(_clstream(bind, "generate", "oaks-babi", "--out", f"{ro}/s.json"), f"{ro}/s.json", cause)
    _check(_clstream(bind, "run", "oaks", str(work / "s.json"), "--system", "window", "--out",
                     f"{ro}/res"), f"{ro}/res", cause)
    _check(_clstream(bind, "run", "oaks", str(work / "s.json"), "--system", "full", "--out",
                     f"{ro}/new"), f"{ro}/new", cause)
    _check(_clstream(bind, "export", f"{ro}/res", "--system", "full", "--out", f"{ro}/p.jsonl",
                     "--force"), f"{ro}/p.jsonl", cause)
    _check(_clstream(bind, "report", f"{ro}/res"), f"{ro}/res/report.html", cause)
    summary = _clstream(bind, "summary", f"{ro}/res", "--json")  # reading still works
    assert summary.returncode == 0, summary.stderr
    assert [r["system"] for r in json.loads(summary.stdout)["runs"]] == ["full"]
    assert sorted(os.listdir(ro)) == ["p.jsonl", "res"]
    assert (ro / "p.jsonl").read_text() == "old"
    assert (ro / "res" / "results.sqlite").read_bytes() == before


def test_full_disk(work: Path, tmp_path: Path) -> None:
    if not _namespace_ok(tmp_path):
        pytest.skip("needs root and mount namespaces (unshare -m)")
    disk = tmp_path / "disk"
    disk.mkdir()
    tiny = f"mount -t tmpfs -o size=96k tmpfs {disk}"
    cause = "no space left on device"
    _check(_clstream(tiny, "generate", "oaks-babi", "--docs", "2", "--chunks", "20",
                     "--out", f"{disk}/big.json"), f"{disk}/big.json", cause)
    _check(_clstream(tiny, "run", "oaks", str(work / "s.json"), "--system", "full",
                     "--out", f"{disk}/res"), f"{disk}/res", cause)
    # Fill the disk between runs: the first run's records survive the failed second one.
    script = (f"{sys.executable} -m clstream run oaks {work / 's.json'} --system full "
              f"--out {disk}/res --no-progress && "
              f"(head -c 2000000 /dev/zero > {disk}/filler 2>/dev/null || true) && "
              f"{{ {sys.executable} -m clstream run oaks {work / 's.json'} --system "
              f"rag:k=2 --out {disk}/res --no-progress 2> {tmp_path}/err; "
              f"echo $? > {tmp_path}/rc; }} && rm {disk}/filler && "
              f"{sys.executable} -m clstream summary {disk}/res --json")
    big = f"mount -t tmpfs -o size=1m tmpfs {disk} && {script} && true"
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", big],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "rc").read_text().strip() == "2"
    err = (tmp_path / "err").read_text()
    assert len(err.splitlines()) == 1 and cause in err and "Traceback" not in err, err
    runs = json.loads(done.stdout[done.stdout.index("{"):])["runs"]  # after run's own output
    full = next(r for r in runs if r["system"] == "full")
    assert full["status"]["probes_done"] == full["status"]["probes_total"] > 0
