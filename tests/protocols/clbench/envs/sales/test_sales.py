"""Sales prediction: generator, WAPE skill, tools, workspace persistence and wiping."""

from __future__ import annotations

from typing import Any

import pytest

from clstream.protocols.clbench.envs.sales.environment import STORES, SalesEnv, wape_skill


def cells(env: SalesEnv, instance_id: str, scale: float = 1.0) -> list[dict[str, Any]]:
    return [{"locality": c, "furniture_name": n, "year": y, "items_sold": a * scale}
            for (c, n, y), a in env.actuals(instance_id).items()]


def test_same_seed_same_world_other_seed_other_world() -> None:
    a, b, c = SalesEnv(4), SalesEnv(4), SalesEnv(5)
    assert a.world.sales == b.world.sales and a.world.products == b.world.products
    assert a.world.sales != c.world.sales
    a.reset()
    b.reset()
    assert a.begin("year-2030").observation == b.begin("year-2030").observation
    assert a.files == b.files


def test_latent_growth_is_shared_across_stores() -> None:
    world = SalesEnv(1).world
    for p in world.products:
        rates = {round(world.expected[(s.city, p.name, 2031)] / world.expected[(s.city, p.name,
                                                                                  2030)], 9)
                 for s in STORES}
        assert rates == {round(world.growth[p.category], 9)}
    assert len(world.targets) == 5 and len({t.category for t in world.targets}) == 5


def test_store_schemas_rotate_and_distractors_change_by_stage() -> None:
    env = SalesEnv(0)
    headers = {}
    for instance_id in env.schedule.instance_ids:
        env.reset_to(instance_id)
        env.begin(instance_id)
        headers[instance_id] = env.files[env.data_path(instance_id)].decode().split("\n", 1)[0]
    assert headers["year-2027"].startswith("product_id,store_id,sale_year,quantity")
    assert headers["year-2028"].startswith("item_code,branch_id,txn_year,units_sold")
    assert headers["year-2029"].startswith("furniture_id,location_id,year,items_sold")
    assert [env.visible_store(i).code for i in env.schedule.instance_ids] == [
        "sf", "ny", "chi"] * 4
    assert headers["year-2027"].split(",")[4:] != headers["year-2031"].split(",")[4:]


def test_wape_skill_unclipped() -> None:
    actual = {"a": 10.0, "b": 30.0}
    assert wape_skill({"a": 12.0, "b": 27.0}, actual) == pytest.approx(1 - 5 / 40)
    assert wape_skill({}, actual) == 0.0
    assert wape_skill({"a": 40.0, "b": 120.0}, actual) == pytest.approx(-2.0)


@pytest.mark.parametrize(("scale", "expected"), [(1.0, 1.0), (0.0, 0.0), (3.0, -1.0)])
@pytest.mark.parametrize("feedback", ["paper", "rich"])
def test_reward_on_hand_made_submissions(scale: float, expected: float, feedback: str) -> None:
    env = SalesEnv(0, "short", options={"feedback": feedback})
    env.reset()
    env.begin("year-2027")
    res = env.step({"tool": "submit", "predictions": cells(env, "year-2027", scale)})
    assert res.instance_complete and res.reward == pytest.approx(expected)
    lines = res.feedback.split("\n")
    first = SalesEnv(0, "short").actuals("year-2027", [2027])
    score = 1.0 - sum(abs(scale * a - a) for a in first.values()) / sum(first.values())
    assert lines[0] == f"Predictions recorded for year 2027. Composite score: {score:.3f}."
    revealed = [ln for ln in lines if ln.count(" | ") == 2 and ln[-1].isdigit()]
    # the paper's feedback is the composite score alone; rich feedback adds the year 2027
    # actuals of the 15 targets
    assert len(revealed) == (15 if feedback == "rich" else 0)
    assert len(lines) == (17 if feedback == "rich" else 1)


def test_missing_cells_count_as_zero_and_bad_cells_are_refused() -> None:
    env = SalesEnv(0, "short")
    env.reset()
    env.begin("year-2027")
    full = cells(env, "year-2027")
    bad = env.step({"tool": "submit", "predictions": [{**full[0], "year": 2040}]})
    assert not bad.valid and "year" in bad.feedback
    bad = env.step({"tool": "submit", "predictions": [full[0], full[0]]})
    assert not bad.valid and "repeats" in bad.feedback
    res = env.step({"tool": "submit", "predictions": full[:15]})
    assert res.valid and res.instance_complete and "60 cells had no prediction" in res.feedback
    assert res.reward is not None and 0.0 < res.reward < 0.5


def test_workspace_persists_in_the_stateful_run_and_is_wiped_for_stateless() -> None:
    env = SalesEnv(0, "short")
    env.reset()
    env.begin("year-2027")
    assert env.step({"tool": "write_file", "path": "notes/panel.csv",
                     "content": "sf,2026,413"}).valid
    refused = env.step({"tool": "write_file", "path": "data/hack.csv", "content": "x"})
    assert not refused.valid and "read-only" in refused.feedback
    env.step({"tool": "submit", "predictions": cells(env, "year-2027")})
    assert env.snapshot()["state"]["files"] == {"notes/panel.csv": "sf,2026,413"}
    query = env.begin("year-2028")
    assert "notes/panel.csv" in query.observation
    assert env.step({"tool": "read_file", "path": "notes/panel.csv"}).feedback.endswith(
        "sf,2026,413")
    gone = env.step({"tool": "read_file", "path": "data/sales_sf_2026.csv"})
    assert gone.valid and gone.feedback.startswith("No file")  # older exports discarded
    env.reset_to("year-2028")
    query = env.begin("year-2028")
    assert "Your own files: (none)" in query.observation
    assert sorted(env.files) == ["data/furniture.json", "data/locations.json",
                                 "data/sales_ny_2027.csv"]


def test_the_last_step_must_be_a_submit() -> None:
    env = SalesEnv(0, "short")
    env.reset()
    env.begin("year-2027")
    for _ in range(env.max_steps - 1):
        res = env.step({"tool": "list_files"})
        assert res.valid and not res.instance_complete
    assert res.next_query is not None and "must be a submit" in res.next_query.observation
    res = env.step({"tool": "list_files"})
    assert not res.valid and "only submit" in res.feedback
    res = env.step({"tool": "submit", "predictions": cells(env, "year-2027")})
    assert res.instance_complete and res.reward == pytest.approx(1.0)
