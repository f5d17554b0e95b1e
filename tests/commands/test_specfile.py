"""Run spec files: ``run --spec`` runs all four protocols from one file into one directory,
each run under the id the same run gets from flags; ``runs DIR --spec`` writes a file that
reruns a directory; a malformed file is one line naming the file, the entry and the field."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from clstream.cli import main
from clstream.store.db import ResultsStore


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("specdata")
    paths = {"oaks": root / "oaks.json", "seqmem": root / "seqmem.json",
             "imprint": root / "news"}
    assert main(["generate", "oaks-babi", "--docs", "1", "--chunks", "4", "--chunk-tokens",
                 "150", "--max-questions", "4", "--out", str(paths["oaks"])]) == 0
    assert main(["generate", "seqmem-synthetic", "--tasks", "8", "--holdout", "2",
                 "--out", str(paths["seqmem"])]) == 0
    assert main(["generate", "imprint", "--setting", "news", "--size", "small",
                 "--out", str(paths["imprint"])]) == 0
    return paths


def _flag_runs(data: dict[str, Path], out: Path) -> None:
    common = ["--out", str(out), "--no-progress"]
    assert main(["run", "oaks", str(data["oaks"]), "--system", "full", "--system", "rag:k=2",
                 *common]) == 0
    assert main(["run", "seqmem", str(data["seqmem"]), "--system", "exp-rag",
                 "--temperature", "0.3", *common]) == 0
    assert main(["run", "clbench", "--task", "sales_prediction", "--schedule", "short",
                 "--rollouts", "1", "--system", "full", *common]) == 0
    assert main(["run", "imprint", str(data["imprint"]), "--system", "rag", "--samples", "2",
                 *common]) == 0


SPEC = """
out = "results"

[defaults]
no_progress = true

[[run]]
protocol = "oaks"
data = "oaks.json"
systems = ["full", "rag:k=2"]

[[run]]
protocol = "seqmem"
data = "seqmem.json"
systems = ["exp-rag"]
temperature = 0.3

[[run]]
protocol = "clbench"
task = ["sales_prediction"]
schedule = "short"
rollouts = 1
systems = ["full"]

[[run]]
protocol = "imprint"
data = "news"
systems = ["rag"]
samples = 2
"""


def _ids(out: Path) -> dict[tuple[str, str], str]:
    with ResultsStore(out) as store:
        return {(r.protocol, r.system): r.run_id for r in store.runs()}


def test_a_spec_file_runs_every_protocol_with_the_ids_flags_give(
    data: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _flag_runs(data, tmp_path / "flags")
    capsys.readouterr()
    spec = data["oaks"].parent / "all.toml"
    spec.write_text(SPEC)
    assert main(["run", "--spec", str(spec), "--out", str(tmp_path / "spec")]) == 0
    err = capsys.readouterr().err
    assert err.count("no --model given") == 1  # one note for the whole file
    by_flags, by_spec = _ids(tmp_path / "flags"), _ids(tmp_path / "spec")
    assert len(by_flags) == 5 and by_spec == by_flags
    # Without --out, the file's own directory (relative to the file).
    assert main(["run", "--spec", str(spec)]) == 0
    assert _ids(data["oaks"].parent / "results") == by_flags
    # A rerun resumes: nothing new, exit 0.
    assert main(["run", "--spec", str(spec), "--out", str(tmp_path / "spec")]) == 0
    assert "resumed full" in capsys.readouterr().err


def test_runs_dir_spec_writes_a_file_that_reruns_the_directory(
    data: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _flag_runs(data, tmp_path / "flags")
    capsys.readouterr()
    assert main(["runs", str(tmp_path / "flags"), "--spec"]) == 0
    text = capsys.readouterr().out
    assert text.count("[[run]]") == 4  # oaks' two systems share one entry
    spec = tmp_path / "again.toml"
    spec.write_text(text)
    assert main(["run", "--spec", str(spec), "--out", str(tmp_path / "again")]) == 0
    assert _ids(tmp_path / "again") == _ids(tmp_path / "flags")


def test_seeds_run_every_entry_once_per_seed(data: dict[str, Path], tmp_path: Path) -> None:
    spec = tmp_path / "seeds.toml"
    spec.write_text(f'out = "r"\nseeds = [0, 1, 2]\n[[run]]\nprotocol = "oaks"\n'
                    f'data = "{data["oaks"]}"\nsystems = ["full"]\nno_progress = true\n')
    assert main(["run", "--spec", str(spec)]) == 0
    with ResultsStore(tmp_path / "r") as store:
        seeds = sorted(r.spec["seed"] for r in store.runs())
    assert seeds == [0, 1, 2]


@pytest.mark.parametrize(("body", "needles"), [
    ('out = "r"\n[[run]]\nprotocol = "oaks"\ndata = "x.json"\nsystems = ["full"]\n'
     'docs_in_flights = 2\n', ("run 1 (oaks)", "field 'docs_in_flights'", "not a setting")),
    ('out = "r"\n[[run]]\nprotocol = "oak"\nsystems = ["full"]\n',
     ("run 1", "field 'protocol'", "'oak'")),
    ('out = "r"\n[[run]]\nprotocol = "oaks"\ndata = "x.json"\nsystems = ["full"]\n'
     'samples = "two"\n', ("run 1 (oaks)", "field 'samples'", "expected an integer")),
    ('out = "r"\n[[run]]\nprotocol = "seqmem"\ndata = "x.json"\nsystems = ["full"]\n'
     'source = "nope"\n', ("run 1 (seqmem)", "field 'source'", "invalid choice")),
    ('out = "r"\n[[run]]\nprotocol = "oaks"\ndata = "x.json"\n',
     ("run 1 (oaks)", "field 'systems'",)),
    ('out = "r"\n[[run]]\nprotocol = "oaks"\ndata = "x.json"\nsystems = ["full"]\n'
     'no_progress = "yes"\n', ("field 'no_progress'", "true or false")),
    ('out = "r"\nrun = 3\n', ("field 'run'", "[[run]]")),
    ('out = "r"\nseeds = [0, "1"]\n[[run]]\nprotocol = "oaks"\n', ("field 'seeds'",)),
    ('out = "r"\n[[run]\n', ("not a TOML spec file",)),
    ('outdir = "r"\n', ("field 'outdir'", "not a spec setting")),
    ('[[run]]\nprotocol = "oaks"\ndata = "x.json"\nsystems = ["full"]\n', ("field 'out'",)),
])
def test_a_malformed_spec_file_is_one_line_naming_file_entry_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, needles: tuple[str, ...]
) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_text(body)
    assert main(["run", "--spec", str(spec)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith(f"clstream: error: {spec}")
    for needle in needles:
        assert needle in err, err
    assert not (tmp_path / "r").exists()  # nothing was run or registered


def test_run_needs_a_protocol_or_a_spec(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run"]) == 2
    assert "give a protocol" in capsys.readouterr().err
    spec = tmp_path / "s.toml"
    spec.write_text('out = "r"\n')
    with pytest.raises(SystemExit) as exc:
        main(["run", "--spec", str(spec), "oaks", "x.json", "--system", "full", "--out", "r"])
    assert exc.value.code == 2


def test_the_spec_file_failure_line_resumes_with_the_file(
    data: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "remote.toml"
    spec.write_text(f'out = "r"\n[[run]]\nprotocol = "oaks"\ndata = "{data["oaks"]}"\n'
                    'systems = ["full"]\nmodel = "openai:m"\nbase_url = "http://127.0.0.1:9/v1"\n'
                    'max_retries = 0\nno_progress = true\n')
    code = main(["run", "--spec", str(spec)])
    err = capsys.readouterr().err
    assert code == 2 and "127.0.0.1:9" in err  # the endpoint check, before anything is written
    assert not (tmp_path / "r").exists()
    assert json.dumps(str(spec))  # the path is printable


def test_run_flags_are_recorded_with_each_run(data: dict[str, Path], tmp_path: Path) -> None:
    assert main(["run", "oaks", str(data["oaks"]), "--system", "full", "--out",
                 str(tmp_path), "--top-k", "5", "--no-progress"]) == 0
    with ResultsStore(tmp_path) as store:
        (run,) = store.runs()
    flags = run.info["run_flags"]
    assert flags == {"data": str(data["oaks"].resolve()), "top_k": 5}
    assert not any(re.search("progress|system|out", key) for key in flags)


def test_recorded_flags_never_hold_an_endpoint_password() -> None:
    from clstream.arguments.requests import recorded_flags
    from clstream.protocols.oaks.arguments import add_run_oaks_arguments

    parser = argparse.ArgumentParser()
    add_run_oaks_arguments(parser)
    args = parser.parse_args(["data.json", "--system", "full", "--out", "r", "--base-url",
                              "http://user:hunter2secret@127.0.0.1:8000/v1"])
    flags = recorded_flags(args, add_run_oaks_arguments)
    assert flags["base_url"] == "http://127.0.0.1:8000/v1"
    assert "hunter2" not in json.dumps(flags)


def test_replicas_are_a_list_in_flags_and_spec_files_and_one_url_stays_a_string(
        tmp_path: Path) -> None:
    from clstream.arguments.requests import recorded_flags
    from clstream.commands.specfile import load_spec
    from clstream.protocols.oaks.arguments import add_run_oaks_arguments

    parser = argparse.ArgumentParser()
    add_run_oaks_arguments(parser)
    base = ["data.json", "--system", "full", "--out", "r"]
    one = parser.parse_args([*base, "--base-url", "http://a:1/v1"])
    assert one.base_url == "http://a:1/v1"
    two = parser.parse_args([*base, "--base-url", "http://a:1/v1", "--base-url",
                             "http://u:hunter2secret@b:2/v1"])
    assert recorded_flags(two, add_run_oaks_arguments)["base_url"] == ["http://a:1/v1",
                                                                  "http://b:2/v1"]
    spec = tmp_path / "spec.toml"
    (tmp_path / "d.json").write_text("[]")  # the entry's data is there (not read here)
    spec.write_text('out = "res"\n[[run]]\nprotocol = "oaks"\ndata = "d.json"\n'
                    'systems = ["full"]\nbase_url = ["http://a:1/v1", "http://b:2/v1"]\n')
    ((_, args),) = load_spec(spec)
    assert args.base_url == ["http://a:1/v1", "http://b:2/v1"]


def test_missing_data_says_what_a_relative_path_was_resolved_against(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "specs").mkdir()
    spec = tmp_path / "specs" / "s.toml"
    spec.write_text('out = "r"\n[[run]]\nprotocol = "oaks"\ndata = "gone.json"\n'
                    'systems = ["full"]\n')
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--spec", str(spec)]) == 2
    assert capsys.readouterr().err == (
        f"clstream: error: {spec}, record run 1 (oaks), field 'data': no such file or "
        f"directory: gone.json (resolved against {spec.parent}, the spec file's directory, "
        f"and then the working directory {tmp_path})\n")
    assert not (tmp_path / "specs" / "r").exists()


def _spec_of(tmp_path: Path, data: dict[str, Path], body: str) -> Path:
    spec = tmp_path / "spec.toml"
    spec.write_text(f'out = "r"\n{body}'.replace("DATA", json.dumps(str(data["oaks"]))))
    return spec


ENTRY = '[[run]]\nprotocol = "oaks"\ndata = DATA\nsystems = ["full"]\n'


def test_entries_that_name_the_same_run_are_planned_once(data: dict[str, Path],
                                                         tmp_path: Path) -> None:
    from clstream.commands.specfile import load_spec

    spec = _spec_of(tmp_path, data, "seeds = [1, 1, 2]\n" + ENTRY * 3
                    + ENTRY.replace('["full"]', '["rag"]'))
    planned = load_spec(spec)
    assert [(args.system, args.seed) for _, args in planned] == [
        (["full"], 1), (["full"], 2), (["rag"], 1), (["rag"], 2)]


def _refused_in_one_line(data: dict[str, Path], tmp_path: Path,
                         capsys: pytest.CaptureFixture[str], body: str, needle: str) -> None:
    """``run --spec`` of a file holding ``body``: exit 2, one line holding ``needle``, no
    results directory."""
    spec = _spec_of(tmp_path, data, body)
    assert main(["run", "--spec", str(spec)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err, err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(("body", "needle"), [
    (ENTRY + "top_k = " + "[" * 40 + "]" * 40 + "\n", "nested deeper than 32"),
    (ENTRY + "top_k = " + "[" * 3000 + "]" * 3000 + "\n", "nested deeper than 32"),
    (ENTRY + "seed = 1" + "0" * 5000 + "\n", "integer of more than"),
    ("seeds = [-1]\n" + ENTRY, "field 'seeds'"),
    ("seeds = [9223372036854775808]\n" + ENTRY, "field 'seeds'"),
    (ENTRY + "temperature = inf\n", "finite"),
    (ENTRY + "temperature = 2.5\n", "[0, 2]"),
    (ENTRY * 10_001, "10,001 entries; at most 10,000"),
])
def test_a_spec_file_beyond_its_bounds_is_one_line(
        data: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str,
        needle: str) -> None:
    _refused_in_one_line(data, tmp_path, capsys, body, needle)


@pytest.mark.parametrize("text", ["plain", "a\nb", 'q"\\x', "\x7f\x00\x1b\t\r\f\b", "é ☃"])
def test_toml_strings_read_back_as_themselves(text: str) -> None:
    import tomllib

    from clstream.commands.specfile import toml_string

    assert tomllib.loads(f"v = {toml_string(text)}")["v"] == text


def test_a_lone_surrogate_is_written_as_its_escape_text() -> None:
    import tomllib

    from clstream.commands.specfile import toml_string

    text = "x\udcffy"
    assert tomllib.loads("v = " + toml_string(text))["v"] == "x\\udcffy"


def test_the_spec_of_a_directory_whose_name_holds_a_newline_parses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import tomllib

    out = tmp_path / 'we"ird\n# out = "elsewhere"\ndir'
    with ResultsStore(out, writer=True) as store:
        store.ensure_run("r1", "oaks", "full", "builtin", "sha", {"a": 1},
                         {"run_flags": {"data": "x\ny.json", "odd key": 1}})
        store.conn.commit()
    assert main(["runs", str(out), "--spec"]) == 0
    doc = tomllib.loads(capsys.readouterr().out)
    assert doc["out"] == str(out)
    assert doc["run"] == [{"protocol": "oaks", "systems": ["full"], "data": "x\ny.json",
                           "odd key": 1}]


def test_entries_spelt_differently_that_name_one_run_run_it_once(
        data: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec_of(tmp_path, data, "[defaults]\nno_progress = true\nmodel = \"builtin\"\n"
                    + ENTRY.replace('["full"]', '["full", "rag"]')
                    + ENTRY.replace('["full"]', '["rag:k=8"]') + "temperature = 0.7\n"
                    + ENTRY)
    assert main(["run", "--spec", str(spec)]) == 0
    done = capsys.readouterr()
    lines = (done.out + done.err).splitlines()
    assert [line.split()[1] for line in lines if line.startswith("ran ")] == [
        "full", "rag"], lines
    with ResultsStore(tmp_path / "r") as store:
        assert sorted(r.system for r in store.runs()) == ["full", "rag"]


def test_an_entry_runs_every_seed_its_own_seeds_name(data: dict[str, Path],
                                                     tmp_path: Path) -> None:
    spec = _spec_of(tmp_path, data, ENTRY + 'seeds = "0,2"\nno_progress = true\n')
    assert main(["run", "--spec", str(spec)]) == 0
    with ResultsStore(tmp_path / "r") as store:
        assert sorted(r.spec["seed"] for r in store.runs()) == [0, 2]


@pytest.mark.parametrize(("body", "needle"), [
    ("seeds = [0, 1]\n" + ENTRY + 'seeds = "0,1"\n', "field 'seeds': flags --seed and --seeds"),
    (ENTRY + 'seeds = "0-9"\n', "field 'seeds': flag --seeds: must be an integer"),
    ("".join(ENTRY + 'seeds = "' + ",".join(map(str, range(i, i + 1000))) + '"\n'
             for i in range(11)),
     "run 11 (oaks): more than 10,000 runs (entries times seeds)"),
    (ENTRY.replace("DATA", json.dumps("x" * 5000)), "no such file or directory: xxx"),
])
def test_an_entry_s_seeds_are_checked_with_the_file(
        data: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str,
        needle: str) -> None:
    _refused_in_one_line(data, tmp_path, capsys, body, needle)
