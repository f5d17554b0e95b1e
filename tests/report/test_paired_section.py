"""The report's section on seeds and paired differences (docs/statistics.md §1, §2)."""

from __future__ import annotations

from typing import Any

from clstream.report.paired_section import render_paired_section

GROUP: dict[str, Any] = {
    "protocol": "seqmem", "system": "rag", "model": "builtin", "seeds": [0, 1],
    "run_ids": ["a", "b"], "datasets": ["d"],
    "metrics": {"online_acc": {"label": "SeqMem online acc", "better": "higher", "n": 2,
                               "mean": 0.5, "sd": 0.1, "interval": [0.1, 0.9]}}}
SEEDS = {"confidence": 0.95, "groups": [GROUP]}
PAIRED = {"confidence": 0.95, "resamples": 2000, "permutations": 10000, "exact_up_to": 16,
          "pairs": [{"protocol": "oaks", "metric": "accuracy", "label": "OAKS accuracy",
                     "better": "higher", "dataset_sha256": "d", "seed": 0, "model": "builtin",
                     "a": "full", "b": "rag:k=2", "run_a": "r1", "run_b": "r2", "items": 12,
                     "difference": 0.25, "interval": [0.05, 0.4], "p_value": 0.03125,
                     "p_holm": 0.0625, "exact": True}]}


def _texts(summary: dict[str, Any]) -> list[list[str]]:
    section = render_paired_section(summary)
    assert section is not None
    return [[cell.text for cell in row] for table in section.tables for row in table.rows]


def test_no_seeds_and_no_pairs_give_no_section() -> None:
    assert render_paired_section({"runs": []}) is None


def test_tables_per_protocol_in_the_registry_order() -> None:
    section = render_paired_section({"seeds": SEEDS, "paired": PAIRED})
    assert section is not None
    assert [t.caption for t in section.tables] == ["oaks: paired differences",
                                                   "seqmem: headline metrics over seeds"]
    rows = _texts({"seeds": SEEDS, "paired": PAIRED})
    assert rows[0] == ["OAKS accuracy", "0", "full", "rag:k=2", "+0.250", "[+0.050, +0.400]",
                       "0.0625", "12"]
    pairs = section.tables[0]
    assert "p (Holm)" in [c.header for c in pairs.columns]
    assert pairs.rows[0][6].title == "unadjusted 0.0312, exact"
    assert rows[1] == ["rag", "builtin", "0, 1", "SeqMem online acc", "0.500", "0.100",
                       "[0.100, 0.900]"]


def test_one_seed_shows_no_interval() -> None:
    one = {"confidence": 0.95, "groups": [{**GROUP, "metrics": {
        "online_acc": {"label": "x", "better": "higher", "n": 1, "mean": 0.5, "sd": None,
                       "interval": None}}}]}
    assert _texts({"seeds": one})[0][-2:] == ["\u2013", "\u2013"]
