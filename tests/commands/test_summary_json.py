"""`clstream summary DIR --json` follows the schema documented in docs/summary-json.md, for a
results directory holding runs of all four protocols made with the builtin model.

The schema is written here as pydantic models that forbid unknown keys; the test reads the
document's tables and checks that each section lists exactly its model's keys, and that the
keys the document calls "or absent" are exactly the optional ones.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from clstream.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "protocols"))
from clbench_short_results import full_and_memory_free  # noqa: E402

DOC = Path(__file__).parents[2] / "docs" / "summary-json.md"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Tokens(Strict):
    prompt: int
    cached: int
    completion: int
    reasoning: int


class StageUsage(Tokens):
    latency_s: float
    records: int
    cache_hits: int


class Meta(Strict):
    clstream_version: str | None
    prompt_template_hash: str | None
    tokenizer: dict[str, Any] | None
    spec: dict[str, Any]
    seed: int | None


class Training(Strict):
    updates: int
    reused: int
    tokens: int
    seconds: float


class Empty(Strict):
    """``{}``: nothing scored yet."""


class OaksCi(Strict):
    accuracy: list[float]
    acquisition_latency: list[float]
    distraction_susceptibility: list[float]
    phase_miss: list[float]
    accuracy_by_interval: list[list[float]]


class SeqmemCi(Strict):
    online_acc: list[float]
    online_curve: list[list[float]]


class Run(Strict):
    run_id: str
    protocol: str
    system: str
    model: str
    model_info: dict[str, Any]
    tokens: Tokens
    tokens_by_stage: dict[str, StageUsage]
    training: Training | None
    wall_s: float
    cost_usd: float | None
    meta: Meta
    transport: list[dict[str, Any]]


# -- OAKS --------------------------------------------------------------------------------------
class OaksDataset(Strict):
    path: str
    sha256: str
    n_documents: int
    n_questions: int
    n_intervals: int


class OaksStatus(Strict):
    probes_done: int
    probes_total: int
    errors: int
    complete: bool
    hit_token_cap: int


class OaksCoverage(Strict):
    unit: Literal["questions"]
    scored: int
    total: int
    share: float
    probes_scored: int
    probes_done: int
    probes_total: int
    over: str


class OaksRun(Run):
    protocol: Literal["oaks"]
    dataset: OaksDataset
    status: OaksStatus
    coverage: OaksCoverage
    metrics: dict[str, Any] | None
    ci: OaksCi | Empty


# -- SeqMem-Eval -------------------------------------------------------------------------------
class SeqmemDataset(Strict):
    path: str | None
    sha256: str
    source: str | None
    n_tasks: int
    n_holdout: int


class SeqmemPlan(Strict):
    checkpoints: list[int] | None
    horizons: list[int] | None
    retro_sample: float | None


class SeqmemStatus(Strict):
    online_done: int
    holdout_done: int
    retro_done: int
    calls: int
    errors: int
    online_total: int
    complete: bool
    hit_token_cap: int


class SeqmemCoverage(Strict):
    unit: Literal["tasks"]
    scored: int
    total: int
    share: float
    holdout_checkpoints: list[int]
    holdout_checkpoints_scored: int
    holdout_checkpoints_total: int | None
    retro_scored: int
    retro_total: int | None
    over: str
    complete: bool


class SeqmemEfficiency(Strict):
    tokens: int
    tokens_per_task: float | None
    tokens_by_stage: dict[str, Tokens]
    time_s_by_stage: dict[str, float]


class SeqmemRadar(Strict):
    online_utility: float | None
    holdout_generalization: float | None
    backward_transfer: float | None
    forgetting: float | None
    efficiency: float | None


class HoldoutPoint(Strict):
    checkpoint: int
    accuracy: float
    items: int


class ProbeCost(Strict):
    tokens: int
    tokens_by_stage: dict[str, Tokens]
    time_s_by_stage: dict[str, float]


class SeqmemRun(Run):
    protocol: Literal["seqmem"]
    dataset: SeqmemDataset
    plan: SeqmemPlan
    status: SeqmemStatus
    coverage: SeqmemCoverage
    metrics: dict[str, Any] | None
    online_curve: list[float]
    ci: SeqmemCi | Empty
    holdout_curve: list[HoldoutPoint]
    bwt: dict[str, float]
    forgetting: dict[str, float]
    efficiency: SeqmemEfficiency
    probe_cost: ProbeCost
    radar: SeqmemRadar


# -- CL-Bench ----------------------------------------------------------------------------------
class ClbenchDataset(Strict):
    path: str
    sha256: str
    tasks: list[str]
    schedule: str | None
    seed: int | None
    n_tasks: int
    n_instances: int


class ClbenchPlan(Strict):
    rollouts: int
    tasks: list[str]


class ClbenchStatus(Strict):
    instances_done: int
    instances_total: int
    errors: int
    steps: int
    tokens: int
    complete: bool
    hit_token_cap: int


class ClbenchCoverage(Strict):
    unit: Literal["instances"]
    scored: int
    total: int
    share: float
    complete: bool
    tasks_scored: list[str]
    tasks_withheld: list[str]
    over: str


class ClbenchTask(Strict):
    n_instances: int
    stateless_complete: bool
    rollouts_complete: list[int]
    rollouts_total: int
    scored: bool
    stateless_done: int
    stateful_done: dict[str, int]
    errors: int
    tokens: int
    steps: int
    instances_total: int
    r_max: float | None
    curve: dict[str, list[float]]
    by_stage: list[dict[str, Any]]


class ClbenchRun(Run):
    protocol: Literal["clbench"]
    dataset: ClbenchDataset
    plan: ClbenchPlan
    status: ClbenchStatus
    coverage: ClbenchCoverage
    metrics: dict[str, Any] | None
    reference: dict[str, Any] | None
    tasks: dict[str, ClbenchTask]


# -- ImprintBench ------------------------------------------------------------------------------
class ImprintDataset(Strict):
    setting: str | None
    items: int
    instances: int


class ImprintJudge(Strict):
    model: str | None
    strict_abstention: bool


class ImprintCoverage(Strict):
    scored: int
    total: int
    unit: Literal["items"]
    errors: int


class ImprintStatus(Strict):
    complete: bool
    hit_token_cap: int


class ImprintContext(Strict):
    tokens_in_context: float | None
    corpus_tokens: float | None
    compression_ratio: float | None


class ImprintAnswers(Strict):
    completion_tokens_mean: float | None
    hit_token_cap: int


class ImprintRun(Run):
    protocol: Literal["imprint"]
    dataset: ImprintDataset
    supervision: str | None
    judge: ImprintJudge
    coverage: ImprintCoverage
    status: ImprintStatus
    metrics: dict[str, Any] | None = None
    details: dict[str, Any] | None = None
    context: ImprintContext | None = None
    answers: ImprintAnswers | None = None


# -- Cross-protocol view -----------------------------------------------------------------------
class CrossColumn(Strict):
    key: str
    protocol: str
    metric: str
    label: str
    better: Literal["higher", "lower"]
    dataset: str | None
    dataset_sha256: str
    interval: str | None


class CrossCell(Strict):
    value: float | None
    interval: list[float] | None
    rank: int | None
    run_id: str


class CrossCost(Strict):
    runs: int
    tokens: int
    training_tokens: int | None
    training_s: float | None
    wall_s: float
    cost_usd: float | None


class CrossMethod(Strict):
    label: str
    system: str
    model: str
    seeds: list[int]
    cells: dict[str, CrossCell | None]
    cost: CrossCost


class CrossProtocol(Strict):
    protocols: list[str]
    columns: list[CrossColumn]
    methods: list[CrossMethod]
    notes: list[str]


# -- Seeds and paired differences ---------------------------------------------------------------
class SeedMetric(Strict):
    label: str
    better: Literal["higher", "lower"]
    n: int
    mean: float | None
    sd: float | None
    interval: list[float] | None


class SeedGroup(Strict):
    protocol: str
    system: str
    model: str
    seeds: list[int]
    run_ids: list[str]
    datasets: list[str]
    metrics: dict[str, SeedMetric]


class Seeds(Strict):
    confidence: float
    groups: list[SeedGroup]


class Pair(Strict):
    protocol: str
    metric: str
    label: str
    better: Literal["higher", "lower"]
    dataset_sha256: str
    seed: int
    model: str
    a: str
    b: str
    run_a: str
    run_b: str
    items: int
    difference: float
    interval: list[float]
    p_value: float
    p_holm: float
    exact: bool


class Paired(Strict):
    confidence: float
    resamples: int
    permutations: int
    exact_up_to: int
    adjustment: str
    pairs: list[Pair]


class Summary(Strict):
    dir: str
    generated_at: str
    clstream_version: str
    runs: list[Annotated[OaksRun | SeqmemRun | ClbenchRun | ImprintRun,
                         Field(discriminator="protocol")]]
    cross_protocol: CrossProtocol | None = None
    seeds: Seeds | None = None
    paired: Paired | None = None


# The document's sections and the model each one lists; a protocol's runs list only the keys
# they add to "Every run".
SECTIONS: dict[str, tuple[type[BaseModel], type[BaseModel] | None]] = {
    "Top level": (Summary, None),
    "Cross-protocol view": (CrossProtocol, None),
    "Seeds": (Seeds, None),
    "Paired differences": (Paired, None),
    "Every run": (Run, None),
    "Every run: `meta`": (Meta, None),
    "OAKS runs": (OaksRun, Run),
    "OAKS runs: `dataset`": (OaksDataset, None),
    "OAKS runs: `status`": (OaksStatus, None),
    "OAKS runs: `coverage`": (OaksCoverage, None),
    "SeqMem-Eval runs": (SeqmemRun, Run),
    "SeqMem-Eval runs: `dataset`": (SeqmemDataset, None),
    "SeqMem-Eval runs: `plan`": (SeqmemPlan, None),
    "SeqMem-Eval runs: `status`": (SeqmemStatus, None),
    "SeqMem-Eval runs: `coverage`": (SeqmemCoverage, None),
    "SeqMem-Eval runs: `efficiency`": (SeqmemEfficiency, None),
    "SeqMem-Eval runs: `radar`": (SeqmemRadar, None),
    "CL-Bench runs": (ClbenchRun, Run),
    "CL-Bench runs: `dataset`": (ClbenchDataset, None),
    "CL-Bench runs: `plan`": (ClbenchPlan, None),
    "CL-Bench runs: `status`": (ClbenchStatus, None),
    "CL-Bench runs: `coverage`": (ClbenchCoverage, None),
    "CL-Bench runs: `tasks` entries": (ClbenchTask, None),
    "ImprintBench runs": (ImprintRun, Run),
    "ImprintBench runs: `dataset`": (ImprintDataset, None),
    "ImprintBench runs: `judge`": (ImprintJudge, None),
    "ImprintBench runs: `coverage`": (ImprintCoverage, None),
    "ImprintBench runs: `status`": (ImprintStatus, None),
    "ImprintBench runs: `context`": (ImprintContext, None),
    "ImprintBench runs: `answers`": (ImprintAnswers, None),
}


def documented_sections() -> dict[str, dict[str, str]]:
    """Each ``## `` section of the document: its table's keys and their type column."""
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line[3:].strip(), {})
        row = re.match(r"\|\s*`([a-z_0-9]+)`\s*\|([^|]*)\|", line)
        if row and current is not None:
            current[row.group(1)] = row.group(2).strip()
    return sections


def test_the_document_lists_exactly_the_schema() -> None:
    documented = documented_sections()
    assert set(documented) == set(SECTIONS)
    for title, (model, base) in SECTIONS.items():
        inherited = set(base.model_fields) if base is not None else set()
        own = {name: field for name, field in model.model_fields.items()
               if name not in inherited}
        assert set(documented[title]) == set(own), title
        for name, field in own.items():
            assert ("or absent" in documented[title][name]) == (not field.is_required()), \
                f"{title}: {name}"


@pytest.fixture(scope="module")
def summary_json(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One results directory with brief runs of all four protocols (builtin model)."""
    root = tmp_path_factory.mktemp("summary")
    results = str(root / "results")
    # The CL-Bench runs (short schedule, seed 3, memory-free and full) are the session's
    # shared ones, copied here.
    shutil.copytree(full_and_memory_free(tmp_path_factory), results)
    commands = [
        ["generate", "oaks-babi", "--seed", "3", "--docs", "1", "--chunks", "4",
         "--chunk-tokens", "250", "--out", str(root / "babi.json")],
        ["run", "oaks", str(root / "babi.json"), "--out", results, "--no-progress",
         "--system", "full", "--system", "rag:k=2"],
        ["generate", "seqmem-synthetic", "--seed", "2", "--tasks", "8", "--holdout", "3",
         "--out", str(root / "syn.json")],
        ["run", "seqmem", str(root / "syn.json"), "--out", results, "--no-progress",
         "--system", "memory-free", "--system", "exp-recent:k=2"],
        ["generate", "imprint", "--setting", "news", "--size", "small", "--seed", "3",
         "--out", str(root / "imprint")],
        ["run", "imprint", str(root / "imprint"), "--model", "builtin", "--samples", "2",
         "--out", results, "--no-progress", "--system", "memory-free", "--system", "oracle"],
    ]
    for argv in commands:
        assert main(argv) == 0, argv
    return {"results": results}


def test_summary_json_of_every_protocol_follows_the_schema(
    summary_json: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["summary", summary_json["results"], "--json"]) == 0
    raw = json.loads(capsys.readouterr().out)
    summary = Summary.model_validate(raw)
    by_protocol: dict[str, list[Run]] = {}
    for run in summary.runs:
        by_protocol.setdefault(run.protocol, []).append(run)
    assert {p: len(r) for p, r in by_protocol.items()} == {
        "oaks": 2, "seqmem": 2, "clbench": 2, "imprint": 2}
    # Every run here is complete, so every protocol's metrics are present.
    for run in summary.runs:
        assert run.metrics is not None, run.system
        assert run.status.complete, run.system
    assert summary.dir == summary_json["results"]
    # Every protocol's headline columns, a rank in each, and both systems on all four.
    cross = summary.cross_protocol
    assert cross is not None and cross.protocols == ["clbench", "imprint", "oaks", "seqmem"]
    assert {c.protocol for c in cross.columns} == set(cross.protocols)
    memory_free = next(m for m in cross.methods if m.label == "memory-free")
    assert {k.split(".")[0] for k, c in memory_free.cells.items() if c is not None} == {
        "clbench", "imprint", "seqmem"}
    assert all(c is None or c.rank is not None for m in cross.methods
               for c in m.cells.values())
    # Two systems on every protocol: one pair each, compared on the items of their headline
    # mean (CL-Bench: the per-instance gains its headline gain is built from).
    assert summary.paired is not None
    assert {(p.protocol, p.metric) for p in summary.paired.pairs} == {
        ("oaks", "accuracy"), ("seqmem", "online_acc"), ("imprint", "boundabs_pass_at_1"),
        ("clbench", "instance_gain")}
    assert all(p.items > 0 and 0.0 < p.p_value <= p.p_holm <= 1.0 for p in summary.paired.pairs)
    assert summary.seeds is None  # one seed per run here


def test_an_undocumented_key_fails_the_schema(
    summary_json: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["summary", summary_json["results"], "--json"]) == 0
    raw = json.loads(capsys.readouterr().out)
    raw["runs"][0]["status"]["surprise"] = 1
    with pytest.raises(ValueError, match="surprise"):
        Summary.model_validate(raw)
