"""ImprintBench under hostile and malformed inputs, as a user's scripts produce them: every case
is one line on stderr naming what is wrong, exit status 2, no traceback, and the results
directory exactly as it was (no new run, no changed record). A lone surrogate in a text is
text, not an error: it is kept as its escape and the run completes."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hostile_cli import check_one_line, digest, main, on_small_disk  # noqa: E402

Mutation = Callable[[Path], None]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small news dataset, its results directory with one finished run, and predictions."""
    root = tmp_path_factory.mktemp("hostile-imprint")
    assert main(["generate", "imprint", "--setting", "news", "--size", "small", "--seed", "0",
                 "--out", str(root / "data")]) == 0
    assert main(["run", "imprint", str(root / "data"), "--model", "builtin", "--samples", "2",
                 "--no-progress", "--out", str(root / "res"), "--system", "oracle"]) == 0
    assert main(["export", str(root / "res"), "--system", "oracle", "--out",
                 str(root / "p.jsonl")]) == 0
    return root




def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write(path: Path, rows: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _edit_first(name: str, change: Callable[[dict[str, object]], object]) -> Mutation:
    def mutate(data: Path) -> None:
        rows = _lines(data / name)
        change(rows[0])
        _write(data / name, rows)
    return mutate


def _raw(name: str, content: bytes) -> Mutation:
    def mutate(data: Path) -> None:
        (data / name).write_bytes(content)
    return mutate


def _remove(name: str) -> Mutation:
    def mutate(data: Path) -> None:
        (data / name).unlink()
    return mutate


def _duplicate_item(data: Path) -> None:
    rows = _lines(data / "items.jsonl")
    _write(data / "items.jsonl", [*rows, rows[0]])


def _directory_for(name: str) -> Mutation:
    def mutate(data: Path) -> None:
        (data / name).unlink()
        (data / name).mkdir()
    return mutate


def _manifest(change: Callable[[dict[str, object]], object]) -> Mutation:
    def mutate(data: Path) -> None:
        manifest = json.loads((data / "manifest.json").read_text(encoding="utf-8"))
        change(manifest)
        (data / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return mutate


DATASETS: dict[str, tuple[Mutation, str]] = {
    "items missing": (_remove("items.jsonl"), "items.jsonl"),
    "corpus missing": (_remove("corpus.jsonl"), "corpus.jsonl"),
    "manifest missing": (_remove("manifest.json"), "manifest.json"),
    "items deep nesting": (_raw("items.jsonl", b"[" * 100_000 + b"]" * 100_000), "items.jsonl"),
    "items NaN": (_raw("items.jsonl", b'{"item_id": NaN}\n'), "items.jsonl"),
    "items not utf-8": (_raw("items.jsonl", b'{"item_id": "\xc3\x28"}\n'), "items.jsonl"),
    "items not json": (_raw("items.jsonl", b"{item\n"), "items.jsonl"),
    "items empty": (_raw("items.jsonl", b""), "items"),
    "item a list": (_raw("items.jsonl", b"[1, 2]\n"), "items.jsonl"),
    "corpus a number": (_raw("corpus.jsonl", b"7\n"), "corpus.jsonl"),
    "manifest not json": (_raw("manifest.json", b"{"), "manifest.json"),
    "manifest setting unknown": (_manifest(lambda m: m.update(setting="weather")),
                                 "setting"),
    "items a directory": (_directory_for("items.jsonl"), "items.jsonl"),
    "item without question": (_edit_first("items.jsonl", lambda r: r.pop("question")),
                              "question"),
    "item empty question": (_edit_first("items.jsonl", lambda r: r.update(question="")),
                            "question"),
    "item unknown family": (_edit_first("items.jsonl", lambda r: r.update(family="Trivia")),
                            "family"),
    "item unknown judge": (_edit_first("items.jsonl", lambda r: r.update(judge="vibes")),
                           "judge"),
    "item gold a number": (_edit_first("items.jsonl", lambda r: r.update(gold=7)), "gold"),
    "item unknown source": (_edit_first("items.jsonl",
                                        lambda r: r.update(source_doc_ids=["nowhere"])),
                            "source_doc_ids"),
    "item other setting": (_edit_first("items.jsonl", lambda r: r.update(setting="code")),
                           "setting"),
    "choice gold not an option": (_edit_first("items.jsonl", lambda r: r.update(
        judge="choice", options=["tea", "coffee"], gold="D")), "gold"),
    "duplicate item": (_duplicate_item, "item_id"),
    "doc without text": (_edit_first("corpus.jsonl", lambda r: r.pop("text")), "text"),
}



@pytest.mark.parametrize("case", sorted(DATASETS))
def test_a_hostile_dataset_is_one_line_and_leaves_the_results_as_they_were(
        base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    mutate, needle = DATASETS[case]
    data, res = tmp_path / "data", tmp_path / "res"
    shutil.copytree(base / "data", data)
    shutil.copytree(base / "res", res)
    mutate(data)
    before = digest(res)
    capsys.readouterr()
    code = main(["run", "imprint", str(data), "--model", "builtin", "--samples", "2",
                 "--no-progress", "--out", str(res), "--system", "memory-free"])
    check_one_line(capsys, code, needle)
    assert digest(res) == before


FLAGS: dict[str, tuple[list[str], str]] = {
    "samples zero": (["--samples", "0"], "--samples"),
    "samples huge": (["--samples", "1" + "0" * 30], "--samples"),
    "max tokens huge": (["--max-tokens", "1" + "0" * 30], "--max-tokens"),
    "batch zero": (["--batch", "0"], "--batch"),
    "parallel huge": (["--parallel", "1" + "0" * 30], "--parallel"),
    "temperature negative": (["--temperature", "-1"], "--temperature"),
    "top-p above one": (["--top-p", "2"], "--top-p"),
    "supervision unknown": (["--supervision", "X"], "--supervision"),
    "prompt unknown": (["--prompt", "loud"], "--prompt"),
    "system unknown": (["--system", "nope"], "nope"),
    "system argument unknown": (["--system", "rag:zz=1"], "zz"),
    "system argument negative": (["--system", "rag:k=-1"], "k"),
}


@pytest.mark.parametrize("case", sorted(FLAGS))
def test_a_hostile_flag_is_one_line_before_anything_is_registered(
        base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    extra, needle = FLAGS[case]
    res = tmp_path / "res"
    shutil.copytree(base / "res", res)
    before = digest(res)
    systems = [] if "--system" in extra else ["--system", "memory-free"]
    argv = ["run", "imprint", str(base / "data"), "--model", "builtin", "--no-progress",
            "--out", str(res), *systems, *extra]
    if "--samples" not in extra:
        argv += ["--samples", "2"]
    capsys.readouterr()
    check_one_line(capsys, main(argv), needle)
    assert digest(res) == before


def test_data_that_is_not_there_and_an_out_that_is_a_file(
        base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nothing"
    check_one_line(capsys, main(["run", "imprint", str(missing), "--system", "oracle", "--out",
                         str(tmp_path / "r")]), str(missing))
    assert not (tmp_path / "r").exists()
    blocker = tmp_path / "file"
    blocker.write_text("mine")
    check_one_line(capsys, main(["run", "imprint", str(base / "data"), "--system", "oracle", "--out",
                         str(blocker), "--no-progress"]), str(blocker))
    assert blocker.read_text() == "mine"


PREDICTIONS: dict[str, tuple[bytes, str]] = {
    "predictions not json": (b"{\n", "p.jsonl"),
    "predictions sample a number": (b'{"item_id": "news-diracq-0001", "samples": [7]}\n',
                                    "samples"),
    "predictions no samples": (b'{"item_id": "news-diracq-0001", "samples": []}\n', "samples"),
    "predictions NaN": (b'{"item_id": NaN, "samples": ["Yes"]}\n', "p.jsonl"),
}


@pytest.mark.parametrize("case", sorted(PREDICTIONS))
def test_hostile_predictions_are_one_line(base: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str], case: str) -> None:
    content, needle = PREDICTIONS[case]
    (tmp_path / "p.jsonl").write_bytes(content)
    check_one_line(capsys, main(["score", "imprint", str(base / "data" / "items.jsonl"),
                         str(tmp_path / "p.jsonl"), "--allow-missing"]), needle)


@pytest.mark.parametrize("k", ["0", "1,x", "1" + "0" * 5000])
def test_score_k_that_is_no_count_is_one_short_line(
        base: Path, capsys: pytest.CaptureFixture[str], k: str) -> None:
    code = main(["score", "imprint", str(base / "data" / "items.jsonl"),
                 str(base / "p.jsonl"), "--k", k])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--k" in err and len(err) < 200, err


def test_generate_from_hostile_inputs_leaves_no_directory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "old.whl").write_bytes(b"not a zip")
    out = tmp_path / "out"
    check_one_line(capsys, main(["generate", "imprint", "--setting", "code", "--old-wheel",
                         str(tmp_path / "old.whl"), "--new-wheel", str(tmp_path / "old.whl"),
                         "--package", "x", "--out", str(out)]), "old.whl")
    assert not out.exists()
    check_one_line(capsys, main(["generate", "imprint", "--setting", "news", "--articles",
                         str(tmp_path / "none.jsonl"), "--model", "builtin", "--out",
                         str(out)]), "none.jsonl")


def test_a_lone_surrogate_in_a_text_is_kept_as_text(
        base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    shutil.copytree(base / "data", data)
    rows = _lines(data / "corpus.jsonl")
    rows[0]["title"] = "Harbour \ud800 news"
    rows[0]["text"] = str(rows[0]["text"]) + " A stray \udfff mark."
    _write(data / "corpus.jsonl", rows)
    assert main(["run", "imprint", str(data), "--model", "builtin", "--samples", "1",
                 "--no-progress", "--out", str(tmp_path / "res"), "--system", "oracle",
                 "--system", "rag:k=2"]) == 0
    assert main(["summary", str(tmp_path / "res")]) == 0
    assert main(["report", str(tmp_path / "res"), "--out", str(tmp_path / "r.html")]) == 0


def test_a_lone_surrogate_in_an_item_is_kept_as_its_escape(
        base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from clstream.protocols.imprint.schema import load_items

    data = tmp_path / "data"
    shutil.copytree(base / "data", data)
    rows = _lines(data / "items.jsonl")
    rows[0]["question"] = "Which \ud800 harbour?"
    rows[0]["meta"] = {"note \udfff": ["x \udfff"]}
    _write(data / "items.jsonl", rows)
    item = load_items(data / "items.jsonl")[0]
    assert item.question == "Which \\ud800 harbour?"
    assert item.meta == {"note \\udfff": ["x \\udfff"]}
    assert main(["run", "imprint", str(data), "--model", "builtin", "--samples", "1",
                 "--no-progress", "--out", str(tmp_path / "res"), "--system", "oracle"]) == 0
    assert main(["export", str(tmp_path / "res"), "--system", "oracle", "--out",
                 str(tmp_path / "p.jsonl")]) == 0
    assert main(["score", "imprint", str(data / "items.jsonl"), str(tmp_path / "p.jsonl")]) == 0


def test_a_full_disk_while_generating_leaves_no_dataset(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    done = on_small_disk(disk, "96k", f"{sys.executable} -m clstream generate imprint "
                         f"--setting news --out {disk}/news; echo rc=$?; ls -A {disk}")
    assert "rc=2" in done.stdout and done.stdout.split("rc=2")[1].strip() == "", done.stdout
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "no space left on device" in lines[0], done.stderr
    assert f"{disk}/news/" in lines[0]
