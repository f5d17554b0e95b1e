"""Cohort studies: the generator, the KL score, the tools, the budget and the builtin policy's
gain (docs/clbench.md §4.5)."""

from __future__ import annotations

import importlib.util

import pytest

pytest.importorskip("lifelines", reason="needs the clbench extra: pip install 'clstream[clbench]'")

from clstream.cli import main  # noqa: E402
from clstream.core.environment import Turn, merge_notes  # noqa: E402
from clstream.protocols.clbench.envs.cohort import policy as cohort_policy  # noqa: E402
from clstream.protocols.clbench.envs.cohort.environment import CohortEnv  # noqa: E402
from clstream.protocols.clbench.envs.cohort.population import (  # noqa: E402
    STUDIES,
    STUDY_ORDER,
    Column,
    make_population,
)
from clstream.protocols.clbench.envs.cohort.scoring import (  # noqa: E402
    COHORTS,
    cohort_kl,
    kaplan_meier,
    kl_bits,
    score_report,
)
from clstream.protocols.clbench.policies import (  # noqa: E402
    PooledCohorts,
    play,
    play_instance,
    play_stateful,
    play_stateless,
    play_with_notes,
)


@pytest.fixture(scope="module")
def short_env() -> CohortEnv:
    return CohortEnv(0, "short")


def test_kl_by_hand() -> None:
    # Smoothing: s(p) = 0.99 (p, 1 - p) + 0.005.
    # p = 1, q = 0: s = (0.995, 0.005) vs (0.005, 0.995):
    #   0.995 log2(0.995/0.005) + 0.005 log2(0.005/0.995) = 0.99 log2(199) = 7.560258
    assert kl_bits(1.0, 0.0) == pytest.approx(7.560258, abs=1e-6)
    # p = 0.8, q = 0.5: (0.797, 0.203) vs (0.5, 0.5):
    #   0.797 log2(1.594) + 0.203 log2(0.406) = 0.536098 - 0.263986 = 0.272112
    assert kl_bits(0.8, 0.5) == pytest.approx(0.272112, abs=1e-6)
    # p = 0.5, q = 0.9: (0.5, 0.5) vs (0.896, 0.104):
    #   0.5 log2(0.5/0.896) + 0.5 log2(0.5/0.104) = -0.420727 + 1.132614 = 0.711887
    assert kl_bits(0.5, 0.9) == pytest.approx(0.711887, abs=1e-6)
    assert kl_bits(0.3, 0.3) == 0.0
    # A cohort averages its horizons: (0.272112 + 0 + 0.711887) / 3 = 0.328000
    assert cohort_kl((0.8, 0.5, 0.5), (0.5, 0.5, 0.9)) == pytest.approx(0.328000, abs=1e-6)


def test_report_score_by_hand() -> None:
    truth = {"C01": (0.8, 0.5, 0.5), "C02": (0.5, 0.5, 0.5)}
    reference = (0.5, 0.5, 0.9)
    # reference KL: C01 0.328000 (above), C02 (0 + 0 + 0.711887) / 3 = 0.237296; mean 0.282648
    perfect = score_report(truth, reference, {c: dict(zip((12, 24, 36), v, strict=True))
                                              for c, v in truth.items()})
    assert perfect.ceiling == pytest.approx(0.282648, abs=1e-6)
    assert perfect.reward == pytest.approx(perfect.ceiling) and perfect.missing == 0
    # nothing given: every horizon is the reference, reward 0
    assert score_report(truth, reference, {}).reward == 0.0
    # C01 right at 12 months only, C02 missing: estimate KL C01 = 0.711887 / 3, C02 = 0.237296;
    # reward = 0.282648 - (0.237296 + 0.237296) / 2 = 0.045352
    partial = score_report(truth, reference, {"C01": {12: 0.8}})
    assert partial.reward == pytest.approx(0.045352, abs=1e-6) and partial.missing == 5
    # a worse report than the reference is negative
    assert score_report(truth, reference, {"C02": {12: 0.0, 24: 0.0, 36: 0.0}}).reward < 0


def test_perfect_report_earns_the_reference_kl(short_env: CohortEnv) -> None:
    env = short_env
    env.reset()
    instance = env.schedule.instance_ids[0]
    env.begin(instance)
    truth = {c: {"s12": s[0], "s24": s[1], "s36": s[2]} for c, s in env.truth.items()}
    result = env.step({"tool": "submit", "estimates": truth})
    assert result.instance_complete and result.feedback == "Report submitted for HERALD."
    assert result.reward is not None and result.reward > 0
    assert result.reward == pytest.approx(env.ceiling(instance))
    assert result.info["reference_kl"] == pytest.approx(result.reward)


def test_generator_is_deterministic_by_seed() -> None:
    a, b, c = make_population(3, 2000), make_population(3, 2000), make_population(4, 2000)
    assert all((a[k] == b[k]).all() for k in a)
    assert not (a["time"] == c["time"]).all()
    one, two = CohortEnv(3, "short"), CohortEnv(3, "short")
    instance = "mosaic-urban-1"
    assert one.records(instance) == two.records(instance) and one.truth == two.truth
    assert one.records(instance) != CohortEnv(4, "short").records(instance)


def test_default_schedule_and_r_max() -> None:
    env = CohortEnv(0)
    assert env.schedule.sizes == (4, 4, 4, 4, 4)
    assert [s.variant for s in env.schedule.stages] == list(STUDY_ORDER)
    ceilings = [env.ceiling(i) for i in env.schedule.instance_ids]
    assert sum(ceilings) / len(ceilings) == pytest.approx(env.r_max) == pytest.approx(0.187757,
                                                                                 abs=1e-6)
    assert len(COHORTS) == 36 and [c.layer for c in COHORTS].count(3) == 16


def test_studies_code_their_variables_differently() -> None:
    studies = [STUDIES[n] for n in STUDY_ORDER]
    assert len({frozenset(c.name for c in s.columns) for s in studies}) == 5
    def columns(variable: str) -> list[Column]:
        return [c for s in studies if (c := s.column_of(variable)) is not None]

    assert len({c.name for c in columns("time")}) == 5
    assert len({c.coding for c in columns("cognition")}) == 3  # MMSE, MoCA, AD8
    assert STUDIES["FORGE"].column_of("cognition") is None
    assert [c.coding.kind for c in columns("family_history")] == ["scale", "labels"]
    # layers: singles and pairs are measured together somewhere, triples nowhere
    for cohort in COHORTS:
        together = [s.name for s in studies if cohort.variables <= s.variables]
        assert bool(together) == (cohort.layer < 3), (cohort.cohort_id, together)


def test_sql_is_read_only(short_env: CohortEnv) -> None:
    env = short_env
    env.reset()
    env.begin("herald-suburban-1")
    ok = env.step({"tool": "sql", "query": "SELECT COUNT(*) FROM patients"})
    assert ok.valid and "19 tool calls left" in ok.feedback and "197" in ok.feedback
    for bad in ("DELETE FROM patients", "ATTACH DATABASE ':memory:' AS other"):
        refused = env.step({"tool": "sql", "query": bad})
        assert not refused.valid and "read-only" in refused.feedback
        assert not refused.instance_complete
    count = env.step({"tool": "sql", "query": "SELECT COUNT(*) FROM patients"})
    assert count.valid and "197" in count.feedback and "18 tool calls left" in count.feedback


def test_survival_tool_matches_kaplan_meier(short_env: CohortEnv) -> None:
    env = short_env
    env.reset()
    instance = "meridian-rural-1"
    env.begin(instance)
    result = env.step({"tool": "survival", "group": "status = 'dead' OR 1"})
    row = result.feedback.split("\n")[2].split(" | ")
    assert [float(x) for x in row[3:]] == pytest.approx(env.reference(instance), abs=1e-4)
    by_sex = env.step({"tool": "survival", "group": "is_male"}).feedback.split("\n")
    assert by_sex[1].startswith("group | n") and len(by_sex) == 4
    rows = env.rows(instance)
    ours = cohort_policy.kaplan_meier(list(env.population["time"][rows]),
                                      list(env.population["event"][rows]))
    assert ours == pytest.approx(kaplan_meier(env.population["time"][rows],
                                              env.population["event"][rows]), abs=1e-12)


def test_budget_ends_the_instance(short_env: CohortEnv) -> None:
    env = short_env
    env.reset()
    env.begin("herald-rural-1")
    for _ in range(20):
        assert not env.step({"tool": "metadata"}).instance_complete
    last = env.step({"tool": "summary"})
    assert last.instance_complete and last.reward == 0.0 and last.info["ended"] == "budget"
    env.begin("herald-suburban-1")
    for _ in range(20):
        result = env.step({"tool": "summary"})
    assert result.next_query is not None and "No tool calls left" in result.next_query.observation
    report = env.step({"tool": "submit", "estimates": {"C01": {"s12": 0.7}}})
    assert report.instance_complete and report.info["ended"] == "submitted"


def test_malformed_reports_are_invalid(short_env: CohortEnv) -> None:
    env = short_env
    env.reset()
    env.begin("mosaic-urban-1")
    for bad in ({"C99": {"s12": 0.5}}, {"C01": {"s12": 1.5}}, {"C01": {"s48": 0.5}}, [0.5]):
        assert not env.step({"tool": "submit", "estimates": bad}).valid
        env.reset()
        env.begin("mosaic-urban-1")


@pytest.mark.parametrize("schedule", ["short", "default"])
def test_stateful_policy_gains(schedule: str) -> None:
    env = CohortEnv(0, schedule)
    policy = PooledCohorts()
    stateless = play_stateless(env, policy)
    s_sl = sum(r.reward for r in stateless)
    n = len(env.schedule)
    backwards = play(env, policy, list(reversed(env.schedule.instance_ids)), stateful=False)
    assert {r.instance_id: r.reward for r in backwards} == {
        r.instance_id: r.reward for r in stateless}
    for rollout in (0, 1):
        for runs in (play_stateful(env, policy, rollout), play_with_notes(env, policy, rollout)):
            s_sf = sum(r.reward for r in runs)
            gain = (s_sf - s_sl) / (n * env.r_max - s_sl)
            assert gain > 0.1, (schedule, rollout, s_sf, s_sl)


def test_notes_merge_idempotently_and_replace_memory(short_env: CohortEnv) -> None:
    env = short_env
    policy = PooledCohorts()
    env.reset()
    history: list[Turn] = []
    for instance in env.schedule.instance_ids[:4]:
        play_instance(env, policy, instance, history)
    notes = policy.notes(history)
    assert notes and all(n.startswith("cohort C") for n in notes)
    assert sum(len(n) for n in notes) < 8000
    for note in notes:
        assert policy.merge(note, note) == note
        assert policy.merge(policy.merge(note, note), note) == note
    halves = merge_notes(policy, [*policy.notes(history[:4]), *policy.notes(history[4:])])
    assert sorted(halves) == sorted(notes)
    query = env.begin(env.schedule.instance_ids[4])
    assert policy.act(tuple(history), query.observation) == policy.act_from_notes(
        notes, (), query.observation)


def test_missing_extra_exits_2(monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str], tmp_path: object) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "lifelines" else real(name, *a))
    code = main(["run", "clbench", "--task", "cohort_studies", "--system", "icl", "--model",
                 "builtin", "--schedule", "short", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "clstream[clbench]" in err
