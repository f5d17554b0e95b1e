"""Ordinary chat filler for the procedural persona histories (docs/imprint.md §4.5).

The paper's persona histories are long, mostly everyday conversation: a persona-chunk of
PersonaMem-v2 or HorizonBench holds about 38.7K tokens (ImprintBench Tables 5 and 8: 1.93M
tokens over 50 persona-chunks), of which the preference statements are a small part. A reader
of such a history has to find a few facts among many turns about other things. This module
writes those other things: sessions about everyday errands (a task request, the user's
follow-ups, the assistant's working replies), in words that name no attribute of the
catalogue, none of its values and no word of any question the items ask (a test checks), so
filler never states a fact and never makes an absent fact look present.

Every line here is written for this project.
"""

from __future__ import annotations

import random

# Each errand: (short name, opening request, (user follow-up, assistant reply) pairs).
# Slots: {n} a small number, {day} a weekday, {item} a household item, {person} a first name;
# one pair fills its slots once, so the reply answers the follow-up.
_ERRANDS: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    ("a grocery list", "Can you help me put together a grocery list for the week?", (
        ("Can you group it by aisle?",
         "Here is the list grouped by aisle: produce, dairy, dry goods, then household."),
        ("Take the bread off, there is still half a loaf.", "Done, the bread is off the list."),
        ("How many onions for {n} meals?", "For {n} meals, {n} onions and one spare is plenty."),
        ("Put the cleaning things at the end.", "I moved the cleaning supplies to the bottom."),
        ("Add washing-up liquid, we ran out yesterday.",
         "Added washing-up liquid under household so it is easy to spot."),
        ("Is there anything I usually forget?",
         "People often forget batteries, bin bags and foil; I added them at the end."))),
    ("a landlord note", "Could you help me draft a note to my landlord about the heating?", (
        ("Make it firm but polite.",
         "Here is a draft that states the problem, the dates and what you are asking for."),
        ("Mention that it has been {n} days already.",
         "I added that the radiators have been cold for {n} days."),
        ("Should I ask for a date when someone will come?",
         "Yes, asking for a visit by {day} gives them a clear deadline."),
        ("Add that {person} upstairs has the same problem.",
         "I mentioned that {person} in the flat above has the same issue."),
        ("Can you make the first line less stiff?",
         "The opening now sounds more natural and gets to the point."))),
    ("a weekend plan", "I need help planning this weekend.", (
        ("I have to fit in laundry and a visit to {person}.",
         "Here is a rough plan: laundry first, then the visit to {person}, with a free evening."),
        ("Can we keep {day} morning free?", "I kept {day} morning open and moved the laundry."),
        ("What if it rains?", "If it rains, the indoor tasks can swap with the visit."),
        ("Add time to fix the {item}.", "I slotted an hour for the {item} after the errands."),
        ("How much free time is left?", "The plan now leaves about {n} hours unscheduled."))),
    ("a budget sheet", "Can you help me set up a simple sheet to track bills?", (
        ("What columns should it have?",
         "Bill, amount, due date, paid, and a notes column should cover it."),
        ("Can it total each month?", "I added a monthly total at the bottom of each block."),
        ("I pay the phone bill on the {n}th.",
         "The phone bill row now repeats on the {n}th of every month."),
        ("Colour the overdue rows.",
         "Overdue rows turn orange once the due date has passed and the paid box is empty."),
        ("Add a row for the {item} repair.", "Added a one-off row for the {item} repair."))),
    ("a cover letter", "Would you look over a cover letter for me?", (
        ("Is the second paragraph too long?",
         "The letter is clear; the second paragraph repeats the first a little."),
        ("Can you cut it to {n} paragraphs?",
         "I trimmed it to {n} paragraphs and kept the strongest example."),
        ("I want to mention the project I led last spring.",
         "I added a sentence about the project and what came of it."),
        ("Does the closing sound right?",
         "The closing is fine; I made the last sentence shorter."),
        ("Please check the grammar again.", "I fixed two commas and a tense slip."))),
    ("a packing list", "Help me make a packing list for a short stay away.", (
        ("It is {n} days away.",
         "Here is a list for {n} days, split into clothes, toiletries and documents."),
        ("Do I need an adapter?", "Yes, an adapter is worth taking; it is with the chargers."),
        ("Add my phone charger.", "Added the phone charger next to the adapter."),
        ("Put documents at the top.",
         "Documents now come first: ID, tickets and the booking reference."),
        ("Can you mark what goes in the small bag?",
         "Items for the small bag are marked with a star."))),
    ("a birthday message", "I want to compose a birthday message for {person}.", (
        ("Keep it short.", "Here is a short message with a warm opening and one memory."),
        ("Mention the day we got lost on the way back.",
         "I added the day you got lost, told as a fond story."),
        ("Can it sound warmer?", "The wording is warmer now."),
        ("Add a line about next year.", "I ended with a hope for the year ahead."),
        ("Maybe end with a joke?", "I closed with a light joke about directions."))),
    ("a cleaning rota", "Can we make a cleaning rota for the flat?", (
        ("There are {n} of us.", "Here is a rota for {n} people, rotating every week."),
        ("{person} works late on {day}s.", "I gave {person} no evening jobs on {day}s."),
        ("Bins go out on {day}.", "Bins are now in the {day} column for the kitchen person."),
        ("Can the bathroom rotate weekly?",
         "The bathroom rotates weekly, so nobody has it twice in a row."),
        ("Add the {item} to the monthly jobs.", "The {item} is now on the monthly list."))),
    ("a report schedule", "Help me pace a long report over the coming week.", (
        ("It is about {n}0 pages.",
         "For about {n}0 pages, a section a day works, with review at the end."),
        ("I can only do mornings.", "The plan now uses mornings only, one block each."),
        ("Leave {day} for review.", "I left {day} for review and moved the charts earlier."),
        ("Can I get ahead on the charts?", "The charts now come on the second day."),
        ("Add a buffer at the end.", "There is a half-day buffer before the deadline."))),
    ("a dinner party", "I'm hosting a dinner party and need a plan.", (
        ("There will be {n} guests.",
         "Here is a plan for {n} guests: a starter, a main and a dessert, with a prep list."),
        ("{person} is bringing dessert.",
         "Since {person} brings dessert, I removed it from your list."),
        ("What should I prep the day before?", "Sauces and chopping can be done ahead."),
        ("I only have one oven.",
         "With one oven, the starter is served cold and the main goes in at six."),
        ("Can you make a timeline for the evening?",
         "Guests at seven, starter at half past, main at eight."))),
    ("a repair request", "The {item} broke again; can you help me describe the problem?", (
        ("It started on {day}.", "I noted that it started on {day}."),
        ("It makes a clicking noise.", "I added the clicking noise when it is switched on."),
        ("Is it worth fixing?",
         "If the repair costs under half the price of a new one, it usually is."),
        ("Write it as a message to the shop.",
         "Here is a message to the shop with the details and your address."),
        ("Ask if they can come within {n} days.",
         "I asked whether a visit within {n} days is possible."))),
    ("a thank-you card", "I need to thank {person} for helping me move boxes.", (
        ("Make it sound sincere.", "Here is a short, sincere note that mentions the stairs."),
        ("Not too long.", "I kept it to three sentences."),
        ("Add that I owe them a favour.", "I added a line offering to return the favour."),
        ("Can you give me {n} versions?", "Here are {n} versions, from plain to playful."),
        ("Which one is warmest?", "The second version is the warmest."))),
)
_ITEMS = ("kettle", "printer", "washing machine", "garden hose", "toaster", "laptop", "fridge",
          "vacuum cleaner", "shower head", "desk lamp", "blender", "door handle")
_PEOPLE = ("Sam", "Priya", "Tomas", "Leila", "Marco", "Hana", "Oskar", "Rosa", "Yusuf", "Mei")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Sunday")
_SMALL_TALK_USER = ("Thanks, that is helpful.", "That looks good.", "Could you reorder it a little?",
                    "Let's keep it friendly.", "Perfect, one more tweak please.",
                    "Hmm, can we make it simpler?", "Great, that works.",
                    "Sorry, I got distracted for a moment.", "Okay, next thing.")
_SMALL_TALK_ASSISTANT = ("Done. I've tightened the wording.", "Here is the revised version.",
                         "Good idea. I've updated it.", "Noted, I'll keep that in mind.",
                         "Sounds good. Anything else you'd like to adjust?",
                         "Understood. I've adjusted the plan.", "No problem, take your time.")

ERRANDS: tuple[tuple[str, str], ...] = tuple((name, opening) for name, opening, _ in _ERRANDS)
ASSISTANT_OPEN = ("Happy to help with that. Let's start with a rough outline.",
                  "Sure thing. Here is a first pass you can adjust.",
                  "Of course. I'll sketch something and we can refine it.")
ASSISTANT_CLOSE = "Glad that helps. Come back any time."


def _fill(template: str, slots: dict[str, object]) -> str:
    return template.format(**slots)


def _slots(rng: random.Random) -> dict[str, object]:
    return {"n": rng.randint(2, 9), "day": rng.choice(_DAYS), "item": rng.choice(_ITEMS),
            "person": rng.choice(_PEOPLE)}


def errand(rng: random.Random) -> tuple[str, str]:
    """A session's errand: (short name, opening request with its slots filled)."""
    name, opening = ERRANDS[rng.randrange(len(ERRANDS))]
    return name, _fill(opening, _slots(rng))


class Exchanges:
    """The (user, assistant) pairs of one session's work on its errand: each follow-up of
    the errand once, in a random order, then small talk."""

    def __init__(self, rng: random.Random, errand_name: str):
        self.rng = rng
        found = next((e for e in _ERRANDS if e[0] == errand_name), None)
        self.left = list(found[2]) if found is not None else []
        rng.shuffle(self.left)

    def next(self) -> tuple[str, str]:
        if not self.left or self.rng.random() < 0.2:
            return self.rng.choice(_SMALL_TALK_USER), self.rng.choice(_SMALL_TALK_ASSISTANT)
        user, assistant = self.left.pop()
        slots = _slots(self.rng)
        return _fill(user, slots), _fill(assistant, slots)


def small_talk(rng: random.Random) -> str:
    """A short user line that a fact statement can follow in the same turn."""
    return rng.choice(_SMALL_TALK_USER)


def every_line() -> list[str]:
    """Every template of the filler, slots unfilled, and every slot word (for the test that
    filler names no attribute, value or asked word)."""
    lines = [opening for _, opening, _ in _ERRANDS]
    lines += [x for _, _, pairs in _ERRANDS for pair in pairs for x in pair]
    lines += [*_SMALL_TALK_USER, *_SMALL_TALK_ASSISTANT, *ASSISTANT_OPEN, ASSISTANT_CLOSE]
    lines += [*_ITEMS, *_PEOPLE, *_DAYS, *(name for name, _, _ in _ERRANDS)]
    return lines
