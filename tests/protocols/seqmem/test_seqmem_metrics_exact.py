"""SeqMem-Eval scores are exact: the same bits for any order of the records, and Trend_HO the
correctly rounded least-squares slope (SPECS §2.2)."""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

from clstream.protocols.seqmem.metrics import bwt, forgetting, score_seqmem, trend_ho

GOLDEN = Path(__file__).parents[2] / "golden"


def test_trend_ho_is_the_rounded_exact_slope() -> None:
    # H(k) in sixths at these checkpoints of T = 24: the exact slope is 254/633.
    hits = {0: 0, 3: 0, 5: 0, 8: 0, 11: 1, 13: 1, 16: 1, 19: 1, 21: 2, 24: 2}
    exact = trend_ho({k: Fraction(h, 6) for k, h in hits.items()}, 24)
    rounded = trend_ho({k: h / 6 for k, h in hits.items()}, 24)
    assert exact == rounded == float(Fraction(254, 633)) == 0.40126382306477093
    assert trend_ho({1: 0.5}, 4) is None


def test_trend_ho_does_not_depend_on_checkpoint_order() -> None:
    curve = {k: (k * 7 % 11) / 11 for k in range(1, 40)}
    items = list(curve.items())
    for seed in range(5):
        random.Random(seed).shuffle(items)
        assert trend_ho(dict(items), 39) == trend_ho(curve, 39)


def test_bwt_and_forgetting_by_hand() -> None:
    online = [1, 0, 1, 1, 0, 1, 0]
    retro = {1: {1: 1, 2: 1, 3: 0, 4: 0, 5: 1, 6: 0}, 2: {1: 0, 2: 1, 3: 1}}
    assert bwt(online, retro[1]) == -1 / 6  # diffs 0, 1, -1, -1, 1, -1
    assert forgetting(online, retro, 1) == 0.5  # drops at tau 3, 4 and 6
    assert forgetting(online, retro, 2) == 1 / 3  # tau 1 drops from 1 to 0


def test_score_is_the_same_bits_for_shuffled_records() -> None:
    path = GOLDEN / "seqmem_exp-recent_k2.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    expected = json.dumps(score_seqmem(rows))
    for seed in range(3):
        shuffled = list(rows)
        random.Random(seed).shuffle(shuffled)
        assert json.dumps(score_seqmem(shuffled)) == expected
    assert score_seqmem(rows)["trend_ho"] == 0.40126382306477093
