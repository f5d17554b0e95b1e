"""Every registered memory method runs on every protocol: each system of the registry that
answers from its context (parametric methods need weights to train: their own test runs them
with a tiny HF model, tests/systems/test_parametric_protocols.py), with the builtin model, over a tiny generated OAKS stream, a tiny SeqMem synthetic stream, a
short CL-Bench task (both arms, one rollout) and a few ImprintBench news items (every family),
stores its records and no error."""

from __future__ import annotations

from pathlib import Path

import pytest

from clstream.cli import main
from clstream.core.registry import names, resolve
from clstream.protocols.imprint.schema import Item, load_dataset, write_dataset
from clstream.store.db import ResultsStore

PROTOCOL_KINDS = {
    "oaks": ("probe",),
    "seqmem": ("online", "holdout", "retro", "call", "update"),
    "clbench": ("instance", "step", "call"),
    "imprint": ("item", "call"),
}
STORED = {"oaks": "probe", "seqmem": "online", "clbench": "instance", "imprint": "item"}
# CL-Bench needs no stream file: the environment is built from the seed.
CLBENCH_ARGS = ["--task", "sales_prediction", "--schedule", "short", "--rollouts", "1",
                "--seed", "5"]


@pytest.fixture(scope="module")
def streams(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("streams")
    oaks, seqmem = root / "oaks.json", root / "seqmem.json"
    assert main(["generate", "oaks-babi", "--seed", "5", "--docs", "1", "--chunks", "4",
                 "--chunk-tokens", "120", "--max-questions", "3", "--out", str(oaks)]) == 0
    assert main(["generate", "seqmem-synthetic", "--seed", "5", "--tasks", "8", "--holdout", "2",
                 "--out", str(seqmem)]) == 0
    news = root / "news"
    assert main(["generate", "imprint", "--setting", "news", "--size", "small", "--seed", "5",
                 "--out", str(news)]) == 0
    data = load_dataset(news)
    first: dict[str, list[Item]] = {}
    for item in data.items:
        first.setdefault(item.family, []).append(item)
    data.items = [i for items in first.values() for i in items[:2]]
    keep = {d for i in data.items for d in i.source_doc_ids} | {d.doc_id for d in data.corpus[:4]}
    data.corpus = [d for d in data.corpus if d.doc_id in keep]
    data.qa = [q for q in data.qa if q.doc_id in keep]
    imprint = write_dataset(root / "imprint", data)
    return {"oaks": oaks, "seqmem": seqmem, "imprint": imprint}


@pytest.mark.parametrize("protocol", ["oaks", "seqmem", "clbench", "imprint"])
def test_every_system_runs_on_the_protocol(protocol: str, streams: dict[str, Path],
                                           tmp_path: Path) -> None:
    systems = [n for n in names("system")
               if not getattr(resolve("system", n), "answers_with_weights", False)]
    assert len(systems) >= 12
    out = tmp_path / "results"
    data = CLBENCH_ARGS if protocol == "clbench" else [str(streams[protocol])]
    argv = ["run", protocol, *data, "--model", "builtin", "--out", str(out), "--no-progress"]
    if protocol == "imprint":
        argv += ["--samples", "2", "--supervision", "C+Q"]
    for name in systems:
        argv += ["--system", name]
    assert main(argv) == 0
    with ResultsStore(out) as store:
        runs = {run.spec["system"]["name"]: run for run in store.runs()}
        assert sorted(runs) == systems
        for name, run in runs.items():
            stored = store.count(run.run_id, STORED[protocol], errors=False)
            assert stored > 0, f"{name} on {protocol} stored no {STORED[protocol]} record"
            errors = {kind: store.count(run.run_id, kind, errors=True)
                      for kind in PROTOCOL_KINDS[protocol]}
            assert not any(errors.values()), f"{name} on {protocol}: error records {errors}"
