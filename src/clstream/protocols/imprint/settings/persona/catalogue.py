"""The attribute catalogue and the sentence templates of the procedural persona generator
(docs/imprint.md §4.5).

Every attribute carries the semantic frame the paper attaches to a fact (ImprintBench App. D.3:
domain, constraint dimension, task affordances) and its own wording, so that every sentence and
question reads as English for every value:

* ``noun`` names the attribute the way the user does when stating it outright; ``ask`` is the
  question about it (DirAcq, TempUpd, RefRes and BoundAbs ask it); ``fact`` states a value
  outright and shares the noun with ``ask`` (direct statements and updates);
* ``gloss`` states a value in a roundabout way with none of the words of ``noun`` or ``ask``
  (paraphrased and implicit statements, and other people's preferences with ``my`` turned
  into ``their``, ``her`` or ``his``). A RefRes question is the ``ask`` of a fact the chats
  only gave as a gloss, so no content word of the question occurs in the sentence that stated the fact: finding that
  sentence needs the paraphrase understood (App. D.3: RefRes is paraphrastic);
* a value's ``suggestion`` is the recommendation it implies (ImpRel options and the slots of a
  CompRel bundle).

Every template here is written for this project.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

EXPLICITNESS: tuple[str, ...] = ("direct", "paraphrase", "implicit", "nearby")
AFFORDANCES: tuple[str, ...] = ("meal", "schedule", "trip", "writing", "support", "gift")


@dataclass(frozen=True)
class Value:
    """One value of an attribute: its canonical name, accepted synonyms (paraphrases say the
    first synonym, so an answer may give either) and the recommendation it implies."""

    name: str
    synonyms: tuple[str, ...]
    suggestion: str

    @property
    def forms(self) -> list[str]:
        return [self.name, *self.synonyms]

    @property
    def said(self) -> str:
        """How a roundabout sentence names the value: its first synonym, else its name."""
        return self.synonyms[0] if self.synonyms else self.name


@dataclass(frozen=True)
class Attribute:
    """A tracked preference with its semantic frame and its wording (see the module docstring).

    ``scenario`` is an ImpRel request that needs the preference without naming it; ``event`` is
    an optional life event ``(id, sentence)`` that can force a change.
    """

    key: str
    noun: str
    ask: str
    fact: str
    gloss: str
    domain: str
    constraint: str
    affordances: tuple[str, ...]
    values: tuple[Value, ...]
    scenario: str
    event: tuple[str, str] | None = None

    def value(self, name: str) -> Value:
        return next(v for v in self.values if v.name == name)

    def state(self, value: str) -> str:
        """The ``fact`` clause for ``value`` (a canonical name)."""
        return _fill(self.fact, value)

    def describe(self, said: str, holder: str = "my") -> str:
        """The ``gloss`` clause for a value as said, about the user or, with ``holder`` "their",
        "her" or "his", about someone else."""
        clause = _fill(self.gloss, said)
        return holder + clause[len("my"):] if holder != "my" else clause

    def ask_now(self) -> str:
        """The question asked after a change: the same question, about the present."""
        return self.ask[:-1] + " now?"


def _fill(template: str, value: str) -> str:
    article = "an" if value[:1].lower() in "aeiou" else "a"
    return template.format(v=value, a=article)


def _attr(key: str, noun: str, ask: str, fact: str, gloss: str, domain: str, constraint: str,
          affordances: str, values: Sequence[tuple[str, str, str]], scenario: str,
          event: tuple[str, str] | None = None) -> Attribute:
    vals = tuple(Value(n, tuple(s for s in syn.split("|") if s), sug) for n, syn, sug in values)
    return Attribute(key, noun, ask, fact, gloss, domain, constraint,
                     tuple(affordances.split()), vals, scenario, event)


CATALOGUE: tuple[Attribute, ...] = (
    _attr("diet", "diet", "What diet do I follow?", "I stick to {a} {v} diet",
          "my eating habits are {v}", "food", "dietary restriction", "meal",
          [("vegan", "plant-based", "the tofu and roasted squash bowl"),
           ("pescatarian", "", "the grilled sea bass plate"),
           ("omnivorous", "", "the slow-cooked beef ragout"),
           ("keto", "low-carb", "the bunless burger with a side salad")],
          "I'm ordering a main course for tonight; which of these should I get?"),
    _attr("cuisine", "favourite cuisine", "What is my favourite cuisine?",
          "my favourite cuisine comes down to {v}", "my comfort food is {v} cooking", "food", "taste",
          "meal gift",
          [("Thai", "", "a green curry evening at Baan Siam"),
           ("Italian", "", "a handmade pasta night at Trattoria Nonna"),
           ("Mexican", "", "a taco crawl starting at Casa Verde"),
           ("Japanese", "", "a ramen counter seat at Menya Kiku")],
          "Friends want to take me out to celebrate; which outing would suit me best?"),
    _attr("spice", "spice tolerance", "What is my spice tolerance?",
          "my spice tolerance tops out at {v}", "my heat threshold is {v}", "food", "sensory limit",
          "meal trip",
          [("mild", "gentle", "a softly seasoned Mediterranean bistro"),
           ("fiery", "extra hot", "a chili-heavy Sichuan hotpot place"),
           ("medium", "middling", "a balanced North Indian curry house")],
          "Pick a restaurant for my team lunch; which of these should I book?"),
    _attr("allergy", "allergy", "Which allergy do I have?", "I have an allergy to {v}",
          "my body reacts badly to {v}", "health", "medical restriction", "meal gift",
          [("peanuts", "groundnuts", "a satay-free noodle salad"),
           ("shellfish", "", "a shrimp-free paella with chicken"),
           ("sesame", "", "a tahini-free falafel wrap")],
          "Which dish should I bring to the potluck so I can eat it myself?"),
    _attr("exercise", "exercise", "What exercise do I do?", "for exercise, I stick to {v}",
          "my workout routine is built around {v}", "fitness", "physical activity",
          "schedule",
          [("running", "jogging", "a dawn loop along the river path"),
           ("swimming", "laps", "a lane booking at the aquatic centre"),
           ("cycling", "biking", "a spin along the greenway trail"),
           ("yoga", "", "a slow flow class at the studio")],
          "I have a free hour on Saturday to move my body; what should I plan?",
          ("knee_injury", "I twisted my knee badly last week")),
    _attr("hobby", "hobby", "What is my hobby?", "for a hobby, I turn to {v}",
          "my spare time goes to {v}", "leisure", "interest", "gift schedule",
          [("pottery", "ceramics", "a bag of stoneware clay and glazes"),
           ("chess", "", "a weighted tournament set with a clock"),
           ("birdwatching", "birding", "a pair of compact binoculars"),
           ("woodcarving", "whittling", "a set of carving knives")],
          "My sister asks what to get me for my birthday; which present should I suggest?"),
    _attr("music", "music", "What music do I listen to?", "I mostly listen to {v} music",
          "my playlists are full of {v}", "media", "taste", "gift",
          [("jazz", "", "tickets to a late trio set at the Blue Room"),
           ("techno", "electronica", "a pass to the warehouse rave festival"),
           ("bluegrass", "", "seats at the banjo and fiddle jamboree"),
           ("opera", "", "a box at the Verdi gala")],
          "Which concert gift would make me happiest?"),
    _attr("film", "film genre", "What film genre do I prefer?",
          "my film genre of choice comes down to {v}",
          "my movie nights are all {v}", "media", "taste", "gift support",
          [("documentaries", "docs", "the new deep-sea nature series"),
           ("horror", "", "the haunted lighthouse chiller"),
           ("westerns", "", "the frontier showdown remaster"),
           ("animation", "cartoons", "the hand-drawn fox adventure")],
          "I want something to watch to unwind tonight; which should I choose?"),
    _attr("literature", "books", "Which books do I read?", "for books, I stick to {v}",
          "my bedside table is piled with {v}", "media", "taste", "gift",
          [("science fiction", "sci-fi", "the new generation-ship saga"),
           ("crime thrillers", "whodunits", "the latest detective page-turner"),
           ("poetry", "verse", "a slim collection of sonnets"),
           ("biographies", "memoirs", "the life story of a famous explorer")],
          "Which book should my friend wrap for me?"),
    _attr("travel", "travel style", "What is my travel style?", "for travel, my style comes down to {v}",
          "my holidays usually mean {v}", "travel", "comfort", "trip",
          [("backpacking", "", "two weeks of hostels across the Balkans"),
           ("cruises", "sailing", "a week aboard a Norwegian fjord ship"),
           ("camping", "", "a tent pitch by a mountain lake"),
           ("road trips", "driving tours", "a coastal drive with motel stops")],
          "Help me choose a getaway for my spring break; which one fits me?"),
    _attr("city", "home city", "What is my home city?", "my home city is {v}",
          "my front door is in {v}", "location", "geography", "trip schedule",
          [("Lisbon", "", "a weekend hop down to the Algarve"),
           ("Montreal", "", "a quick train up to Quebec City"),
           ("Osaka", "", "a day trip over to Kyoto"),
           ("Denver", "", "a drive up to Boulder for the day")],
          "I want a short break near where I am; which option makes sense?",
          ("relocation", "I just packed up the whole apartment and relocated")),
    _attr("pet", "pet", "What pet do I have?", "for a pet, I live with {a} {v}",
          "my constant companion is {a} {v}", "household", "care duty", "gift schedule",
          [("cat", "kitty", "a feather wand and a scratching post"),
           ("beagle", "dog", "a sturdy leash and chew toys"),
           ("parrot", "", "a perch swing and seed treats"),
           ("hamster", "", "a wheel and a bag of bedding")],
          "Which gift for my animal should I order?"),
    _attr("shift", "shift pattern", "What shift pattern do I have?", "my shift pattern runs on {v}",
          "my working hours are {v}", "work", "availability", "schedule",
          [("nights", "overnight", "a catch-up call at noon before I start"),
           ("early starts", "dawn starts", "a catch-up call late in the afternoon"),
           ("weekends", "", "a catch-up call on a Tuesday"),
           ("split days", "", "a catch-up call in my mid-day gap")],
          "When should my friend schedule a call with me?",
          ("new_job", "My old employer let me go and a new one hired me this month")),
    _attr("job", "profession", "What is my profession?", "by profession I am {a} {v}",
          "my line of work is {v}", "work", "expertise", "writing",
          [("nurse", "nursing", "a note about handover routines on the ward"),
           ("architect", "architecture", "a note about client sketches and site visits"),
           ("teacher", "teaching", "a note about lesson plans and marking"),
           ("welder", "welding", "a note about workshop safety and torches")],
          "Which intro line should go into my networking message?"),
    _attr("chronotype", "chronotype", "What is my chronotype?", "my chronotype is {a} {v}",
          "my sleep rhythm is that of {a} {v}", "routine", "energy", "schedule",
          [("night owl", "late sleeper", "a deep-work block from nine to midnight"),
           ("early bird", "lark", "a deep-work block from six to nine"),
           ("napper", "siesta lover", "a deep-work block split around an afternoon nap")],
          "When should I block time for hard, focused work?"),
    _attr("caffeine", "usual drink", "What is my usual drink?", "for my usual drink, I go with {v}",
          "my daily brew is always {v}", "food", "stimulant", "meal",
          [("espresso", "", "a double shot at the corner bar"),
           ("decaf", "caffeine-free coffee", "a caffeine-free latte"),
           ("matcha", "", "a whisked green tea at the tea house"),
           ("chai", "", "a spiced milky tea from the cart")],
          "What should I order at the café this afternoon?"),
    _attr("language", "foreign language", "What foreign language am I learning?",
          "the foreign language I am learning is {v}", "my evening classes are in {v}", "learning", "study",
          "schedule gift",
          [("Portuguese", "", "a Brazilian novel with a glossary"),
           ("Korean", "", "a K-drama script workbook"),
           ("Swahili", "", "a Nairobi phrasebook and audio set"),
           ("Finnish", "", "a Helsinki graded-reader bundle")],
          "Which study gift would actually help me?"),
    _attr("gifts", "gift preference", "What is my gift preference?", "for gifts, my preference goes to {v}",
          "my ideal presents are {v}", "social", "taste", "gift",
          [("experiences", "outings", "a voucher for a hot-air balloon ride"),
           ("handmade items", "homemade things", "a knitted scarf made by a friend"),
           ("gadgets", "tech toys", "a pocket-sized smart speaker"),
           ("houseplants", "greenery", "a potted fiddle-leaf fig")],
          "Which present would I appreciate most from my colleagues?"),
    _attr("tone", "writing tone", "What is my writing tone?", "I set my writing tone to {v}",
          "my emails always sound {v}", "communication", "register", "writing",
          [("formal", "polished", "an email opening 'Dear Ms Ortega, I am writing regarding "
                                  "the invoice.'"),
           ("breezy", "casual", "an email opening 'Hey Ortega, quick one about that "
                                "invoice!'"),
           ("concise", "terse", "an email opening 'Ortega: invoice query attached. Thanks.'")],
          "Which opening should I use for my email to the accountant?"),
    _attr("health", "health condition", "What health condition do I have?",
          "I live with {v} as a health condition", "my medical history includes {v}", "health",
          "medical restriction", "support trip",
          [("asthma", "", "a route that avoids the dusty quarry trail"),
           ("migraines", "", "a quiet, dim café instead of the concert hall"),
           ("tinnitus", "ear ringing", "a seat far from the speakers"),
           ("diabetes", "", "a picnic with sugar-free snacks packed")],
          "Which plan for the outing should I go with?"),
    _attr("commute", "commute", "How do I commute?", "for my commute, I rely on the {v}",
          "my trips to the office are by {v}", "transport", "mobility", "schedule trip",
          [("bicycle", "bike", "the route with the protected lane"),
           ("tram", "streetcar", "the route along the line seven stops"),
           ("carpool", "ride share", "the route that picks up two colleagues"),
           ("scooter", "moped", "the route with curbside parking bays")],
          "Which route should I use to reach the new office?"),
    _attr("budget", "spending limit", "What is my spending limit?", "I hold my spending limit to {v} levels",
          "my money rules are {v}", "finance", "cost", "trip gift",
          [("shoestring", "tight", "a hostel dorm at twenty a night"),
           ("comfortable", "moderate", "a three-star guesthouse at ninety a night"),
           ("lavish", "luxurious", "a harbour-view suite at four hundred a night")],
          "Which place should I book for my stay?"),
    _attr("social", "personality type", "What is my personality type?",
          "my personality type is {a} {v}", "my social side is that of {a} {v}",
          "personality", "social comfort", "support schedule",
          [("introvert", "homebody", "a quiet dinner for two"),
           ("extrovert", "party animal", "a big open-house party"),
           ("ambivert", "in-betweener", "a small board-game night with four friends")],
          "How should I celebrate finishing my project?"),
    _attr("comfort", "coping strategy", "What is my coping strategy?",
          "for coping, my strategy comes down to {v}", "my way through tough moments is {v}", "wellbeing",
          "emotional need", "support",
          [("pep talks", "cheerleading", "a rousing message listing my wins"),
           ("quiet listening", "a sounding board", "a call where you mostly listen"),
           ("distraction", "diversion", "a silly film night to change the subject")],
          "I've had a rough week; what would help me most from you?"),
)
CATALOGUE_BY_KEY: dict[str, Attribute] = {a.key: a for a in CATALOGUE}

# Statement wrappers: the attribute's own clause carries the fact. None of their words occurs
# in an ``ask`` (a test checks), so a RefRes question shares no content word with its source.
DIRECT = ("Just so you know, {fact}.", "One thing about me: {fact}.", "Worth knowing: {fact}.")
PARAPHRASE = ("Honestly, {gloss}.", "Funny enough, {gloss}.", "If it helps, {gloss}.")
IMPLICIT = ("Same as last time, remember that {gloss}.",
            "Keep in mind that {gloss} when you plan this.")
UPDATE = ("Quick update: {fact} now.", "Things have changed, and these days {fact}.")
EVENT_UPDATE = "{event}, so {fact} now."
NEARBY = ("My {who} told me that {their}.", "My {who} mentioned that {their} these days.")
# Other people the user mentions, with the possessive a gloss about them takes.
RELATIONS = (("sister", "her"), ("neighbour", "their"), ("cousin", "their"),
             ("coworker", "their"), ("roommate", "their"), ("uncle", "his"),
             ("best friend", "their"))

# CompRel's generic stem (App. D.3: one stem for every tuple, under 15 words).
COMPREL_STEM = "Which of these plans would suit me best right now?"

_WORD = re.compile(r"[a-z0-9]+")
# Function words ignored when comparing a question with the chats: interrogatives, pronouns,
# auxiliaries, determiners, prepositions -- words a lexical reader skips. "me", "mine", "know"
# and the like are content words here on purpose (a reader may match them).
STOP_WORDS = frozenset(
    """a an the of to in on at for with from by and or but if so is are was were has have had
    am be been do does did will would can could should may might must what which who whom whose how why
    when where i you my your it its this that these those he she they we his her their
    our""".split()
)


def content_words(text: str) -> frozenset[str]:
    """Lower-case words of ``text`` without :data:`STOP_WORDS`."""
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS)


def word_stems(text: str) -> frozenset[str]:
    """:func:`content_words` with a plural ``s`` dropped ("shifts" and "shift" are one word):
    the words a lexical reader would match a question against a sentence with."""
    return frozenset(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
                     for w in content_words(text))


def mentions(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` as a whole-word phrase (case ignored)."""
    words = _WORD.findall(phrase.lower())
    if not words:
        return False
    pattern = r"(?<![a-z0-9])" + r"[^a-z0-9]+".join(map(re.escape, words)) + r"(?![a-z0-9])"
    return re.search(pattern, text.lower()) is not None
