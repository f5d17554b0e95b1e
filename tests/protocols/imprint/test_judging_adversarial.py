"""Adversarial answers, each with the verdict the paper's judge gives it (ImprintBench App.
D, E; docs/imprint.md §6): the deterministic judges must agree on every row.

Each row is (item, answer, correct). The items are hand-made, one per judge and setting; the
answers are ordinary ones a model gives -- right answers in other words too, so that a judge
that says wrong to everything fails the table.
"""

from __future__ import annotations

from typing import Any

import pytest

from clstream.protocols.imprint.judging import judge_deterministic
from clstream.protocols.imprint.schema import Item


def make(item_id: str, setting: str, family: str, judge: str, question: str,
         gold: str | list[str], **extra: Any) -> Item:
    return Item.model_validate({"item_id": item_id, "setting": setting, "family": family,
                                "judge": judge, "question": question, "gold": gold, **extra})


NEWS_DIRACQ = make("nd", "news", "DirAcq", "yesno",
                   "In early February 2030, did Moutruth Foods sign a cold storage deal?", "Yes")
NEWS_NEGATION = make("nn", "news", "TempUpd", "yesno",
                     "As of 2030-02-12, is Saites Duliv still governor of the central bank?",
                     "No", gold_before="Yes", axis="negation")
NEWS_FORWARD = make("nf", "news", "TempUpd", "exact",
                    "As of 2030-02-12, who is governor of the Central Bank of Faidres?",
                    ["Goth Tigiakouk", "Tigiakouk"], gold_before=["Saites Duliv", "Duliv"],
                    axis="forward")
NEWS_PRICE = make("np", "news", "TempUpd", "exact",
                  "As of 2030-02-20, what is the fuel price in Faidres?",
                  ["1.04 crowns per litre", "1.04"], gold_before=["1.30 crowns per litre",
                                                                  "1.30"], axis="forward")
NEWS_HOP = make("nh", "news", "CompRel", "exact",
                "On 2030-02-15, in which country was the central bank governor born?",
                "Stovelubrev", gold_before="Faidres", axis="hop3")
NEWS_IMPREL = make("ni", "news", "ImpRel", "exact",
                   "What major business deals happened in Faidres in early February 2030?",
                   ["Moutruth Foods and Mobu Metals signed a cold storage agreement",
                    "cold storage agreement"])
NEWS_BOUNDABS = make("nb", "news", "BoundAbs", "abstain",
                     "In mid February 2030, did the ministry extend the fishing ban?",
                     "No record of the ministry extending the fishing ban.")
CODE_PRESENT = make("cp", "code", "DirAcq", "yesno",
                    "Does quillkit have a class at quillkit.Atelier?", "Yes", axis="present")
CODE_INVENTED = make("ca", "code", "DirAcq", "yesno",
                     "Does quillkit have a class at quillkit.AtelierCache?", "No",
                     axis="absent")
CODE_BOUNDABS = make("cb", "code", "BoundAbs", "abstain",
                     "What does quillkit.surfaces.fold_margins return?", "No such function")
CODE_REFRES = make("cr", "code", "RefRes", "identifier",
                   "Which function in quillkit returns the running total of an array?",
                   "quillkit.cumulative_sum")
CODE_IMPREL = make("ci", "code", "ImpRel", "identifier",
                   "Which new functions are in quillkit.strings?", "quillkit.strings.slice")
PERSONA_TEMPUPD = make("pt", "persona", "TempUpd", "exact",
                       "After the change, what is my gift preference?", ["gadgets", "tech toys"],
                       gold_before=["houseplants", "greenery"], axis="changed_info",
                       persona="u1")
PERSONA_CITY = make("pc", "persona", "RefRes", "exact", "Which city do I live in now?",
                    "Porto", gold_before="Lisbon", persona="u1")
PERSONA_BOUNDABS = make("pb", "persona", "BoundAbs", "abstain", "Which city do I live in?",
                        "abstain", persona="u1")
PERSONA_CHOICE = make("pm", "persona", "ImpRel", "choice",
                      "Pick a restaurant for my team lunch; which should I book?", "B",
                      persona="u1", options=["a chili-heavy hotpot place",
                                             "a softly seasoned bistro",
                                             "a curry house"])
LETTER_ONLY = make("pl", "persona", "CompRel", "choice",
                   "Which of the four plans suits me?", "C", persona="u1")

ROWS: list[tuple[Item, str, bool]] = [
    # news DirAcq: the yes/no regex (App. E.1)
    (NEWS_DIRACQ, "Yes, they signed it on 4 February.", True),
    (NEWS_DIRACQ, "Yes and No", False),
    (NEWS_DIRACQ, "yes/no", False),
    (NEWS_DIRACQ, "No.", False),
    (NEWS_DIRACQ, "Not sure", False),
    (NEWS_DIRACQ, "Some reports say no, but the deal went ahead.\n## Answer: Yes", True),
    # news TempUpd negation axis: a Yes/No gold
    (NEWS_NEGATION, "No, Goth Tigiakouk replaced him on 10 February.", True),
    (NEWS_NEGATION, "Yes, he still is.", False),
    (NEWS_NEGATION, "Yes or no, hard to say.", False),
    # news TempUpd forward: a stated update with the old value as the past is right
    (NEWS_FORWARD, "Goth Tigiakouk", True),
    (NEWS_FORWARD, "Tigiakouk, who replaced Saites Duliv", True),
    (NEWS_FORWARD, "Goth Tigiakouk (previously Saites Duliv)", True),
    (NEWS_FORWARD, "Saites Duliv was replaced by Goth Tigiakouk.", True),
    (NEWS_FORWARD, "Saites Duliv", False),
    (NEWS_FORWARD, "Either Goth Tigiakouk or Saites Duliv", False),
    (NEWS_FORWARD, "Not Goth Tigiakouk", False),
    (NEWS_FORWARD, "It is not Saites Duliv but Goth Tigiakouk.", True),
    (NEWS_FORWARD, "Goth Tigiakouk or his deputy", False),
    (NEWS_FORWARD, "I have no record of that.", False),
    (NEWS_PRICE, "1.04 crowns per litre (down from 1.30)", True),
    (NEWS_PRICE, "It fell from 1.30 to 1.04 crowns per litre.", True),
    (NEWS_PRICE, "Either 1.04 or 2.00", False),
    (NEWS_PRICE, "1.30 crowns per litre", False),
    (NEWS_PRICE, "About 1.04.", True),
    # news CompRel: hops
    (NEWS_HOP, "Stovelubrev", True),
    (NEWS_HOP, "She was born in Stovelubrev.", True),
    (NEWS_HOP, "Faidres or Stovelubrev", False),
    (NEWS_HOP, "Not Stovelubrev", False),
    (NEWS_HOP, "Stovelubrev, not Faidres", True),
    (NEWS_HOP, "Faidres", False),
    # news ImpRel
    (NEWS_IMPREL, "Moutruth Foods and Mobu Metals signed a cold storage agreement.", True),
    (NEWS_IMPREL, "A cold storage agreement between two firms.", True),
    (NEWS_IMPREL, "Nothing notable happened in Faidres.", False),
    # news BoundAbs: the abstention regex (E.1 accepts a denial)
    (NEWS_BOUNDABS, "There is no record of such an extension.", True),
    (NEWS_BOUNDABS, "No, the ban was not extended.", True),
    (NEWS_BOUNDABS, "Yes. The ban's duration is unknown.", False),
    (NEWS_BOUNDABS, "Yes, until June.", False),
    (NEWS_BOUNDABS, "The ministry extended it until June.", False),
    (NEWS_BOUNDABS, "I don\u2019t know.", True),
    # code DirAcq: a real path (gold Yes) and an invented one (gold No: abstain or deny)
    (CODE_PRESENT, "Yes, quillkit.Atelier is a class.", True),
    (CODE_PRESENT, "I don't know.", False),
    (CODE_PRESENT, "No such class exists.", False),
    (CODE_INVENTED, "I don't know.", True),
    (CODE_INVENTED, "No, there is no such class.", True),
    (CODE_INVENTED, "quillkit.AtelierCache does not exist.", True),
    (CODE_INVENTED, "Yes, it caches ateliers.", False),
    (CODE_INVENTED, "Yes and no", False),
    # code BoundAbs: abstain or deny (App. D.2)
    (CODE_BOUNDABS, "I don't know that function.", True),
    (CODE_BOUNDABS, "That function does not exist in quillkit.", True),
    (CODE_BOUNDABS, "It returns the folded margins as a tuple.", False),
    # code RefRes: the identifier judge
    (CODE_REFRES, "`quillkit.cumulative_sum`", True),
    (CODE_REFRES, "cumulative_sum(a)", True),
    (CODE_REFRES, "You want `cumulative_sum`, not `cumsum`.", True),
    (CODE_REFRES, "`cumulative_sum` or `running_total`", False),
    (CODE_REFRES, "Not cumulative_sum", False),
    (CODE_REFRES, "`quillkit.running_total`", False),
    (CODE_REFRES, "cumulative_sum or cumsum", False),
    (CODE_REFRES, "The function is cumulative_sum", True),
    # code ImpRel: list-contains
    (CODE_IMPREL, "- quillkit.strings.slice\n- quillkit.strings.pad", True),
    (CODE_IMPREL, "slice, pad and strip", True),
    (CODE_IMPREL, "pad, strip", False),
    (CODE_IMPREL, "pad; not slice", False),
    # persona TempUpd / RefRes: exact with the old value
    (PERSONA_TEMPUPD, "Gadgets now; I used to prefer houseplants.", True),
    (PERSONA_TEMPUPD, "Houseplants", False),
    (PERSONA_TEMPUPD, "Gadgets or houseplants", False),
    (PERSONA_TEMPUPD, "Tech toys", True),
    (PERSONA_CITY, "Porto (you moved there from Lisbon)", True),
    (PERSONA_CITY, "Lisbon", False),
    # persona BoundAbs: an abstention is right; a claim about the user, even after "No", is not
    (PERSONA_BOUNDABS, "I don't know which city you live in.", True),
    (PERSONA_BOUNDABS, "You haven't mentioned it; I have no record of your city.", True),
    (PERSONA_BOUNDABS, "No, you live in Lisbon.", False),
    (PERSONA_BOUNDABS, "You live in Lisbon.", False),
    (PERSONA_BOUNDABS, "Yes. Where you live is unknown to me.", False),
    (PERSONA_BOUNDABS, "I don't have that information.", True),
    (PERSONA_BOUNDABS, "I'm not sure - maybe Lisbon?", False),
    (PERSONA_BOUNDABS, "I don't know. Maybe you could tell me?", True),
    # news: hedges, negations and stated updates (App. E.1's Y/N judge)
    (NEWS_HOP, "Faidres or Stovelubrev", False),
    (NEWS_HOP, "Stovelubrev, not Faidres", True),
    (NEWS_FORWARD, "Goth Tigiakouk replaced Saites Duliv.", True),
    (NEWS_PRICE, "It used to be 1.04, now 1.30", False),
    # persona choice, with options and letter-only
    (PERSONA_CHOICE, "B", True),
    (PERSONA_CHOICE, "(B) the bistro", True),
    (PERSONA_CHOICE, "A or B", False),
    (PERSONA_CHOICE, "A softly seasoned bistro suits you.", True),
    (PERSONA_CHOICE, "A", False),
    (LETTER_ONLY, "C", True),
    (LETTER_ONLY, "Answer: (C)", True),
    (LETTER_ONLY, "B or C", False),
    (LETTER_ONLY, "D", False),
]


def test_the_table_is_large_and_balanced() -> None:
    assert len(ROWS) >= 60
    settings = {(row[0].setting, row[0].judge) for row in ROWS}
    assert {j for _, j in settings} == {"yesno", "abstain", "identifier", "choice", "exact"}
    assert {s for s, _ in settings} == {"news", "code", "persona"}
    right = sum(correct for _, _, correct in ROWS)
    assert 0.35 <= right / len(ROWS) <= 0.65


@pytest.mark.parametrize("item, answer, correct", ROWS,
                         ids=[f"{r[0].item_id}-{i}" for i, r in enumerate(ROWS)])
def test_deterministic_judges_agree_with_the_paper(item: Item, answer: str,
                                                   correct: bool) -> None:
    verdict = judge_deterministic(item, answer)
    assert verdict.correct is correct, verdict


def test_strict_abstention_takes_no_denial() -> None:
    assert judge_deterministic(NEWS_BOUNDABS, "No, the ban was not extended.").correct
    assert not judge_deterministic(NEWS_BOUNDABS, "No, the ban was not extended.",
                                   strict_abstention=True).correct
    assert judge_deterministic(NEWS_BOUNDABS, "There is no record of it.",
                               strict_abstention=True).correct
