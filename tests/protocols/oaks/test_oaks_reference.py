"""``score_oaks`` against a separate, plain-loop reading of SPECS §1.3-1.4 and §5.

The reference below shares no code with clstream except the data types: its own marker scan,
lowercase-letter rule, normalization, numeral table (counting questions only), equivalence
rule, phase count, subset bins and transition loops. Random datasets and random model outputs
must give the same JSON to 1e-6.
"""

from __future__ import annotations

import random
import string
from typing import Any

import pytest

from clstream.protocols.oaks.data import OaksDataset, OaksDocument, OaksQuestion
from clstream.protocols.oaks.metrics import per_question_table, score_oaks

# ---- reference judging --------------------------------------------------------------------

SKIP = " \t\"'*#"
EDGE = " \t\r\n\"'*`"


def ref_extract(output: str, mc: bool) -> str:
    low = output.lower()
    last_end = -1
    pos = low.find("answer")
    while pos != -1:
        before_ok = pos == 0 or not (low[pos - 1].isalnum() or low[pos - 1] == "_")
        j = pos + len("answer")
        while j < len(low) and low[j] in SKIP:
            j += 1
        if before_ok and j < len(low) and low[j] == ":":
            last_end = j + 1
        pos = low.find("answer", pos + 1)
    if last_end == -1:
        if mc:
            return ""
        text = output.strip(EDGE)
    else:
        rest = output[last_end:]
        while rest and rest[0] in EDGE:
            rest = rest[1:]
        line = rest.split("\n")[0]
        while line and line[-1] in EDGE + ",}]":
            line = line[:-1]
        text = line.strip(EDGE)
    if not mc:
        return text
    for i, ch in enumerate(text):
        if ch in string.ascii_uppercase:
            left = i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
            right = i + 1 == len(text) or not (text[i + 1].isalnum() or text[i + 1] == "_")
            if left and right:
                return ch
    # SPECS §1.3: a single lowercase letter that is the whole answer, alone or in brackets
    if len(text) == 1 and text in string.ascii_lowercase:
        return text.upper()
    if len(text) == 3 and text[0] == "(" and text[2] == ")" and text[1] in string.ascii_lowercase:
        return text[1].upper()
    return ""


PUNCT = set(string.punctuation) | set("“”‘’«»¿¡–—…")


def ref_normalize(text: str, mc: bool) -> str:
    out = "".join(ch for ch in text.lower() if ch not in PUNCT)
    words = out.split()
    if not mc:
        words = [w for w in words if w not in ("a", "an", "the")]
    return " ".join(words)


UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
         "eighteen", "nineteen"]
TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def count_table() -> dict[str, int]:
    words: dict[int, list[str]] = {n: [UNITS[n]] for n in range(20)}
    for i, tens in enumerate(TENS):
        base = 20 + 10 * i
        words[base] = [tens]
        for unit in range(1, 10):
            words[base + unit] = [f"{tens} {UNITS[unit]}", f"{tens}{UNITS[unit]}"]
    table: dict[str, int] = {}
    for n, forms in words.items():
        for form in [*forms, str(n)]:
            table[form] = n
            table[form + " time"] = n
            table[form + " times"] = n
    table.update({"once": 1, "twice": 2, "thrice": 3, "never": 0, "none": 0})
    return table


COUNTS = count_table()


def ref_canon(text: str, mc: bool, qtype: str | None = None) -> str:
    norm = ref_normalize(text, mc)
    if mc or (qtype or "").lower() != "counting":  # numerals fold for counting only
        return norm
    if norm in COUNTS:
        return str(COUNTS[norm])
    head = norm.removesuffix(" times").removesuffix(" time")
    if head.isdigit() and head.isascii():
        return str(int(head))
    return norm


def ref_golds(q: OaksQuestion) -> list[str]:
    if q.options:
        return [string.ascii_uppercase[q.options.index(g[0])].lower() for g in q.golds]
    return [ref_canon(g[0], False, q.question_type) for g in q.golds]


def ref_answer(q: OaksQuestion, output: str) -> str:
    mc = bool(q.options)
    return ref_canon(ref_extract(output, mc), mc, q.question_type)


def ref_correct(q: OaksQuestion, t: int, output: str) -> bool:
    if q.options:
        letter = ref_extract(output, True)
        return letter != "" and letter == string.ascii_uppercase[q.options.index(q.golds[t - 1][0])]
    answer = ref_answer(q, output)
    if answer in [ref_canon(g, False, q.question_type) for g in q.golds[t - 1]]:
        return True
    # "Before the counted event first happens" / "before evidence exists": every gold so far
    # is one of the pair; then both answers of the pair are right.
    kind = (q.question_type or "").lower()
    pair = {"counting": ("0", "unknown"), "comparison": ("unknown", "same")}.get(kind)
    if pair is None or answer not in pair:
        return False
    for earlier in range(t):
        for g in q.golds[earlier]:
            if ref_canon(g, False, q.question_type) not in pair:
                return False
    return True


# ---- reference metrics --------------------------------------------------------------------


def ref_question(correct: list[int], golds: list[str]) -> dict[str, float]:
    n = len(correct)
    acc = al = ds = pm = 0
    for c in correct:
        acc += c
    start = 0
    while start < n:
        end = start
        while end + 1 < n and golds[end + 1] == golds[start]:
            end += 1
        tau = 0
        for k in range(start, end + 1):
            if correct[k]:
                tau = k - start + 1
                break
        if tau == 0:
            pm += end - start + 1
        else:
            al += tau - 1
            for k in range(start + tau, end + 1):
                if not correct[k]:
                    ds += 1
        start = end + 1
    return {"accuracy": acc / n, "acquisition_latency": al / n,
            "distraction_susceptibility": ds / n, "phase_miss": pm / n}


def ref_subset(golds: list[str], mc: bool) -> str:
    # SPECS §1.4: bins count phases, 1 + the t in 2..C with gold_t != gold_{t-1}
    phases = 1
    for t in range(1, len(golds)):
        if golds[t] != golds[t - 1]:
            phases += 1
    if phases <= 3:
        return "sparse"
    if mc:
        return "moderate" if phases == 4 else "frequent"
    return "moderate" if phases <= 5 else "frequent"


def ref_score(ds: OaksDataset, preds: dict[tuple[str, int], str]) -> dict[str, Any]:
    per_q = []
    tally = {k: 0 for k in ("adaptability", "maladaptation", "prescience", "stubbornness",
                            "lag", "volatility", "stability", "obstinacy")}
    longest = max(d.num_chunks for d in ds.documents if d.questions)
    sums, counts = [0.0] * longest, [0] * longest
    for doc in ds.documents:
        for q in doc.questions:
            golds = ref_golds(q)
            correct, answers = [], []
            for t in range(1, doc.num_chunks + 1):
                out = preds.get((q.question_id, t))
                if out is None:
                    correct.append(0)
                    answers.append("")
                else:
                    correct.append(1 if ref_correct(q, t, out) else 0)
                    answers.append(ref_answer(q, out))
                sums[t - 1] += correct[-1]
                counts[t - 1] += 1
            for t in range(1, doc.num_chunks):
                gt = golds[t] != golds[t - 1]
                model = answers[t] != answers[t - 1]
                if gt and model:
                    tally["adaptability" if correct[t] else "maladaptation"] += 1
                elif gt:
                    tally["prescience" if correct[t] else "stubbornness"] += 1
                elif model:
                    tally["lag" if correct[t] else "volatility"] += 1
                else:
                    tally["stability" if correct[t] else "obstinacy"] += 1
            m: dict[str, Any] = dict(ref_question(correct, golds))
            m["type"] = q.question_type
            m["subset"] = ref_subset(golds, bool(q.options))
            per_q.append(m)
    result: dict[str, Any] = {"n_questions": len(per_q)}
    for key in ("accuracy", "acquisition_latency", "distraction_susceptibility", "phase_miss"):
        result[key] = sum(m[key] for m in per_q) / len(per_q)
    change_total = sum(tally[k] for k in ("adaptability", "maladaptation", "prescience",
                                          "stubbornness"))
    stay_total = sum(tally[k] for k in ("lag", "volatility", "stability", "obstinacy"))
    result["transitions"] = {}
    for k, v in tally.items():
        total = change_total if k in ("adaptability", "maladaptation", "prescience",
                                      "stubbornness") else stay_total
        result["transitions"][k] = v / total if total else 0.0
    groups: dict[str, dict[str, Any]] = {"by_type": {}, "by_subset": {}}
    for m in per_q:
        for group, key in (("by_type", m["type"]), ("by_subset", m["subset"])):
            if key is None:
                continue
            slot = groups[group].setdefault(key, {"sum": 0.0, "n": 0})
            slot["sum"] += m["accuracy"]
            slot["n"] += 1
    for group, slots in groups.items():
        result[group] = {k: {"accuracy": s["sum"] / s["n"], "n_questions": s["n"]}
                         for k, s in slots.items()}
    result["accuracy_by_interval"] = [s / c for s, c in zip(sums, counts, strict=True)]
    return result


# ---- random data --------------------------------------------------------------------------

PLACES = ["kitchen", "the garden", "Hallway", "office.", "an attic"]
COUNT_WORDS = ["0", "Unknown", "1", "one", "once", "2", "twice", "two times", "3", "three",
               "4", "5 times", "thrice", "seven", "twenty-one", "21", "none", "never", "zero"]
COMPARE = ["Unknown", "Same", "Alice", "Bob"]
TRACK = PLACES + ["Unknown", "None", "2", "two"]  # text answers that look like counts
MARKERS = ["## Answer: ", "**Answer**: ", '"answer": "', "Answer:", "answer :", "final answer: ",
           "## ANSWER:\n", ""]
MC_ANSWERS = ["A", "B", "C", "D", "b", "(c)", "a", "d.", "b) kitchen", "the answer is b",
              "(C) garden", "Option D", "I think A", "B.", "E", "e"]


def random_open_question(rng: random.Random, qid: str, n: int) -> OaksQuestion:
    qtype = rng.choice(["counting", "comparison", "tracking", "bridge", None])
    pool = {"counting": COUNT_WORDS, "comparison": COMPARE}.get(qtype or "", TRACK)
    golds: list[tuple[str, ...]] = []
    # counting / comparison open with the "no evidence" pair; a run may return to it later
    current = rng.choice(pool[:2] if qtype in ("counting", "comparison") else pool)
    single = rng.random() < 0.25  # exactly one change: two phases
    switch = rng.randint(1, max(1, n - 1))
    for t in range(n):
        if single:
            if t == switch:
                current = rng.choice([g for g in pool if g != current])
        elif rng.random() < 0.4:
            current = rng.choice(pool)
        extra = (rng.choice(pool),) if rng.random() < 0.2 else ()
        golds.append((current, *extra))
    return OaksQuestion(qid, "q?", tuple(golds), qtype)


def random_mc_question(rng: random.Random, qid: str, n: int) -> OaksQuestion:
    options = tuple(rng.sample(PLACES, 3)) + ("cannot answer at this point",)
    golds, current = [], options[-1]
    for _ in range(n):
        if rng.random() < 0.5:
            current = rng.choice(options)
        golds.append((current,))
    return OaksQuestion(qid, "q?", tuple(golds), rng.choice(["tracking", None]), options)


def random_output(rng: random.Random, q: OaksQuestion) -> str:
    if q.options:
        answer = rng.choice([*MC_ANSWERS, rng.choice(q.options)])
    elif rng.random() < 0.3:  # the "no evidence" answers, in their several spellings
        answer = rng.choice(["Unknown", "unknown.", "0", "zero", "none", "never", "Same"])
    else:
        pool = COUNT_WORDS + COMPARE + TRACK + ["2 kitchens", "Same.", "**twice**", "0 times"]
        answer = rng.choice(pool)
    body = rng.choice(MARKERS) + answer
    if rng.random() < 0.3:
        body = f"Answer: {rng.choice(['B', 'kitchen', 'two'])}\nthinking...\n" + body
    if rng.random() < 0.3:
        body += rng.choice(['"}', "\nbecause the text says so", "  ", "."])
    return body


def random_case(seed: int) -> tuple[OaksDataset, dict[tuple[str, int], str]]:
    rng = random.Random(seed)
    docs, preds = [], {}
    for d in range(rng.randint(1, 4)):
        n = rng.randint(1, 9)
        questions = []
        for i in range(rng.randint(1, 4)):
            qid = f"doc{d}_q{i}"
            maker = random_mc_question if rng.random() < 0.4 else random_open_question
            q = maker(rng, qid, n)
            questions.append(q)
            for t in range(1, n + 1):
                preds[qid, t] = random_output(rng, q)
        docs.append(OaksDocument(f"doc{d}", tuple(f"c{i}" for i in range(n)), tuple(questions)))
    return OaksDataset("random.json", "0" * 64, tuple(docs)), preds


def assert_close(actual: object, expected: object, where: str = "") -> None:
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and set(actual) == set(expected), where
        for key in expected:
            assert_close(actual[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_close(a, e, f"{where}[{i}]")
    else:
        assert actual == pytest.approx(expected, abs=1e-6), where


@pytest.mark.parametrize("seed", range(60))
def test_score_matches_reference(seed: int) -> None:
    dataset, preds = random_case(seed)
    result, missing = score_oaks(dataset, preds)
    assert missing == 0
    assert_close(result, ref_score(dataset, preds))


@pytest.mark.parametrize("seed", range(20))
def test_score_with_missing_matches_reference(seed: int) -> None:
    dataset, preds = random_case(1000 + seed)
    rng = random.Random(seed)
    kept = {k: v for k, v in preds.items() if rng.random() > 0.25}
    result, missing = score_oaks(dataset, kept, allow_missing=True)
    assert missing == len(preds) - len(kept)
    assert_close(result, ref_score(dataset, kept))


@pytest.mark.parametrize("seed", range(20))
def test_per_question_invariant_and_reference(seed: int) -> None:
    dataset, preds = random_case(2000 + seed)
    for row in per_question_table(dataset, preds):
        total = (row["accuracy"] + row["acquisition_latency"]
                 + row["distraction_susceptibility"] + row["phase_miss"])
        assert total == pytest.approx(1.0)
        doc, q = dataset.question_index()[row["question_id"]]
        ref = [int(ref_correct(q, t, preds[q.question_id, t]))
               for t in range(1, doc.num_chunks + 1)]
        assert row["correct"] == ref


def test_random_cases_exercise_the_rules() -> None:
    # The random cases must reach every rule the reference checks: both outcomes, all
    # subsets, single-change questions, the counting and comparison equivalences before
    # evidence (credited) and after it (refused), numerals refused outside counting, and
    # lowercase MC letters credited.
    seen_correct: set[int] = set()
    seen_subsets: set[str] = set()
    hits = dict.fromkeys(("counting early", "comparison early", "counting after",
                          "comparison after", "numeral as text", "lowercase letter",
                          "two phases"), 0)
    for seed in range(60):
        dataset, preds = random_case(seed)
        for row in per_question_table(dataset, preds):
            seen_correct.update(row["correct"])
            seen_subsets.add(row["subset"])
            hits["two phases"] += row["n_phases"] == 2
        for doc in dataset.documents:
            for q in doc.questions:
                kind = q.question_type or ""
                for t in range(1, doc.num_chunks + 1):
                    out = preds[q.question_id, t]
                    if q.options:
                        letter = ref_extract(out, True)
                        # credited through the lowercase rule: the capital appears nowhere
                        hits["lowercase letter"] += bool(
                            letter and letter not in out and ref_correct(q, t, out))
                        continue
                    answer = ref_answer(q, out)
                    golds = [ref_canon(g, False, kind) for g in q.golds[t - 1]]
                    pair = {"counting": ("0", "unknown"),
                            "comparison": ("unknown", "same")}.get(kind)
                    if pair and answer in pair and answer not in golds:
                        key = "early" if ref_correct(q, t, out) else "after"
                        seen_pair = any(ref_canon(g, False, kind) not in pair
                                        for gs in q.golds[:t] for g in gs)
                        assert seen_pair == (key == "after")
                        hits[f"{kind} {key}"] += 1
                    # a numeral spelled another way ("two" for "2", "zero" for "None") is a
                    # different answer outside counting questions
                    as_count = ref_canon(ref_extract(out, False), False, "counting")
                    golds_as_count = [ref_canon(g, False, "counting") for g in q.golds[t - 1]]
                    if kind != "counting" and as_count in golds_as_count and answer not in golds:
                        hits["numeral as text"] += 1
                        assert not ref_correct(q, t, out) or answer in ("unknown", "same")
    assert seen_correct == {0, 1}
    assert seen_subsets == {"sparse", "moderate", "frequent"}
    assert all(hits.values()), hits
