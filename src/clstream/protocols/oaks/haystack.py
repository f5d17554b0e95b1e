"""Distractor prose for OAKS-BABI: a procedural narrative grammar, or the user's own text files.

Why: OAKS-BABI hides a few world facts per chunk inside long stretches of unrelated prose
(docs/oaks.md §6; paper Appendix B.1.2, where BABILong used PG-19 novels as the haystack). Shipping
novels is not possible offline, so the default haystack is written by a small grammar: templates
with nested slots over hand-written vocabularies, giving varied sentences that read like
scenery and village talk. The grammar never names a person and never uses a verb from the fact
surface forms, so no distractor sentence can be mistaken for a fact; the world generator also
refuses entity names that share a word with :func:`filler_vocabulary`.

Users may pass text files instead: they are split into sentences and used in order, cycling.
"""

from __future__ import annotations

import random
import re
from collections import deque
from collections.abc import Collection, Sequence
from functools import lru_cache
from pathlib import Path

from clstream.core.errors import DataError

_SLOTS: dict[str, tuple[str, ...]] = {
    "opening": (
        "At first light", "Late in the afternoon", "Toward evening", "Long after midnight",
        "In the grey hour before dawn", "By midday", "Some days later", "That same week",
        "As the season turned", "Once the fog had lifted", "Near the end of the month",
        "Early the next morning", "Well before supper", "During the long thaw",
    ),
    "weather": (
        "a thin rain drifted across the rooftops", "the wind worried at the shutters",
        "frost silvered the low hedges", "heavy clouds sat over the valley",
        "a warm breeze carried the smell of cut hay", "snow gathered along the window ledges",
        "the sky cleared to a hard, pale blue", "mist clung to the river banks",
        "thunder muttered somewhere past the hills",
        "sunlight lay in long bars across the floorboards",
        "a fine drizzle softened the edges of everything",
        "the air turned sharp and smelled of iron",
    ),
    "building": (
        "granary", "chapel", "bakery", "toll house", "boathouse", "forge", "schoolroom",
        "tannery", "watchtower", "inn", "dovecote", "cooperage",
    ),
    "water": ("river", "millpond", "canal", "ford", "lake shore", "harbour"),
    "fixture": (
        "weathervane", "bell", "shutters", "chimney", "signboard", "well", "stair", "roof",
        "clock", "porch",
    ),
    "thing": (
        "the old {building}", "the {building} near the {water}", "the {fixture} of the {building}",
        "the crooked {fixture}", "the {building} on the hill", "the {fixture} by the {water}",
    ),
    "thing_does": (
        "creaked in the wind", "stood quiet", "caught the last of the light",
        "had not been painted in years", "rattled whenever a cart rolled past",
        "needed mending again", "gleamed faintly in the damp",
        "leaned a little further than it had in spring", "smelled of wet timber and smoke",
        "threw a long shadow over the lane", "seemed smaller than anyone remembered",
    ),
    "creature": (
        "a heron called from the reeds", "the crows circled over the stubble fields",
        "a lone fox slipped along the ditch", "the geese complained on the millpond",
        "a stray dog barked at nothing in particular", "the bees hummed among the clover",
        "an owl shifted and muttered in the eaves", "the sparrows quarrelled in the hedges",
        "a pair of swans drifted on the slow current", "the goats on the slope bleated",
        "a cat watched the lane with patient eyes", "the swallows skimmed low over the meadow",
        "a blackbird sang from the chimney pot", "the cows lowed at the far gate",
    ),
    "landscape": (
        "the ridge", "the far fields", "the marsh", "the pine wood", "the harbour wall",
        "the terraced vineyards", "the quarry", "the salt flats", "the orchards", "the heath",
    ),
    "topic": (
        "the price of grain", "the coming harvest", "the state of the roads",
        "the new tax on salt", "who ought to mend the bridge", "the strange lights on the hill",
        "letters that never arrived", "the flooding two winters back", "the fair at midsummer",
        "a wedding nobody had been told about", "the cracked bell in the tower",
        "the miller's long quarrel with the river", "the wolves seen near the pass",
        "the rising cost of lamp oil", "the schoolmaster's odd habits", "the winter stores",
    ),
    "gathering": ("the square", "the tavern", "the washhouse", "the market", "the ferry queue",
                  "the churchyard"),
    "often": ("often did", "always did", "sooner or later did"),
    "saying": ("There was an old saying in those parts", "The grandmothers liked to repeat",
               "Carved above the inn door were words to the effect",
               "Every child in the district learned early"),
    "notice_fate": ("read aloud twice and then folded away", "nailed to the chapel door",
                    "torn down before noon", "argued over until the candles burned low",
                    "pinned beside the well and ignored"),
    "meal": ("supper", "breakfast", "the harvest feast", "the midday meal", "the christening"),
    "proverb": (
        "a patient hand mends more than a quick one", "rain before breakfast brings news by supper",
        "the river keeps its own accounts", "an empty cart makes the most noise",
        "old roads remember every wheel", "a cold hearth hears every secret",
        "no storm lasts longer than the stories about it",
        "a borrowed lamp never burns as bright", "the last sheaf is always the heaviest",
        "fog on the hill means a stranger on the road", "a crooked fence still keeps the sheep in",
        "whoever counts the crows will never count the coins",
        "still water hides the deepest mud", "bread shared is bread that keeps",
    ),
    "feeling": (
        "restless", "oddly hopeful", "tired in a way sleep would not fix", "watchful",
        "quietly content", "uneasy",
    ),
    "crowd": (
        "the townsfolk", "the fishermen", "the weavers", "the old farmers", "the children",
        "the shopkeepers", "the ferrymen", "the lamplighters",
    ),
    "crowd_does": (
        "argued over small things", "kept to their own doors", "sang while they worked",
        "traded rumours at the well", "waited for better weather", "counted the days to market",
        "mended nets in the doorways",
    ),
    "sound": (
        "a door banged", "a kettle began to sing", "someone laughed", "a cart wheel squealed",
        "a hammer rang on an anvil", "a dog whined", "a shutter slammed",
    ),
    "light": ("lamplight", "the low sun", "candlelight", "moonlight", "the glow of the forge"),
    "surface": ("the wet cobbles", "the windows", "the water", "the stacked barrels", "the hedges"),
    "span": ("morning", "afternoon", "evening", "week", "night"),
    "road": ("deep in mud", "rutted and narrow", "washed out at the bend", "overgrown with nettles",
             "dusty and white"),
    "smell": ("baking bread", "woodsmoke", "tar and rope", "crushed apples", "rain on hot stone",
              "fresh lime wash"),
    "look": ("green", "bare", "peaceful", "crowded", "forgotten", "golden"),
    "air": ("still", "cool and sweet", "thick with pollen", "sharp with salt", "heavy and warm"),
}

_TEMPLATES: tuple[str, ...] = (
    "{opening}, {weather}.",
    "{thing} {thing_does}.",
    "Somewhere beyond {landscape}, {creature}.",
    "{crowd} {crowd_does}, as they always did when {weather}.",
    "The talk in {gathering} turned, as it {often}, to {topic}.",
    "{saying} that {proverb}.",
    "Nobody could say for certain when {thing} had last been repaired.",
    "{opening}, {sound}, and then the lane was quiet again.",
    "The {span} dragged on, and {crowd} {crowd_does}.",
    "{light} slid across {surface} while {creature}.",
    "It was the sort of {span} that made {crowd} feel {feeling}.",
    "Even {crowd} admitted that {thing} {thing_does}.",
    "For a while nothing stirred beyond {landscape}, and {weather}.",
    "Some claimed that {topic} mattered more than {topic}, but most only shrugged.",
    "{opening}, {thing} {thing_does}, and {creature}.",
    "A notice about {topic} was {notice_fate}.",
    "Down by {landscape} the air was {air}, and {sound}.",
    "Whenever {weather}, {crowd} grew {feeling}.",
    "Nobody mentioned {topic} at {meal}, though everyone was thinking of it.",
    "The road beyond {landscape} was {road}, and few cared to use it.",
    "Of all the places in the district, {thing} was the one the children avoided.",
    "{opening}, the smell of {smell} hung over the lanes.",
    "In the almanac, the entry for that {span} spoke only of {topic}.",
    "It had been years since {landscape} looked so {look}.",
    "{crowd} swore that {creature} every evening at the same hour.",
)

_SLOT = re.compile(r"\{(\w+)\}")
_WORD = re.compile(r"[A-Za-z]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+")


def _expand(template: str, rng: random.Random) -> str:
    text = template
    while "{" in text:
        text = _SLOT.sub(lambda m: rng.choice(_SLOTS[m.group(1)]), text, count=1)
    return text


def _filler(rng: random.Random, recent: Collection[int] = ()) -> tuple[int, str]:
    choices = [i for i in range(len(_TEMPLATES)) if i not in recent]
    index = rng.choice(choices)
    text = _expand(_TEMPLATES[index], rng)
    return index, text[0].upper() + text[1:]


def filler_sentence(rng: random.Random) -> str:
    """One procedurally written distractor sentence."""
    return _filler(rng)[1]


@lru_cache(maxsize=1)
def filler_vocabulary() -> frozenset[str]:
    """Every lowercase word the grammar can produce (world names must avoid these)."""
    words: set[str] = set()
    for text in (*_TEMPLATES, *(v for values in _SLOTS.values() for v in values)):
        words.update(w.lower() for w in _WORD.findall(_SLOT.sub(" ", text)))
    return frozenset(words)


def split_sentences(text: str) -> list[str]:
    """Sentences of free text: whitespace collapsed, split after ``.``, ``!`` or ``?``."""
    flat = " ".join(text.split())
    if not flat:
        return []
    out: list[str] = []
    start = 0
    for m in _SENTENCE_END.finditer(flat):
        out.append(flat[start:m.end()].strip())
        start = m.end()
    tail = flat[start:].strip()
    if tail:
        out.append(tail)
    return [s for s in out if s]


def read_haystack(files: Sequence[str | Path]) -> list[str]:
    """All sentences of the given UTF-8 text files, in file order."""
    sentences: list[str] = []
    for f in files:
        if Path(f).is_char_device() or Path(f).is_block_device():  # /dev/zero never ends
            raise DataError(f, None, None, "a device, not a file")
        try:
            text = Path(f).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise DataError(f, None, None, "haystack file not found") from None
        except UnicodeDecodeError as e:
            raise DataError(f, None, None, f"not UTF-8 text (byte {e.start})") from None
        except OSError as e:
            raise DataError(f, None, None, f"cannot read haystack file: {e.strerror}") from None
        found = split_sentences(text)
        if not found:
            raise DataError(f, None, None, "haystack file holds no text")
        sentences.extend(found)
    return sentences


class ProceduralSource:
    """An endless stream of grammar sentences drawn with ``rng``.

    A template is not reused within the next few sentences, so neighbouring lines differ in
    shape and not only in their words.
    """

    _SPACING = 8

    def __init__(self, rng: random.Random):
        self._rng = rng
        self._next: str | None = None
        self._recent: deque[int] = deque(maxlen=self._SPACING)

    def peek(self) -> str:
        if self._next is None:
            index, self._next = _filler(self._rng, self._recent)
            self._recent.append(index)
        return self._next

    def advance(self) -> None:
        self.peek()
        self._next = None

    def skippable(self) -> bool:
        """A sentence that does not fit may be replaced by a fresh one."""
        return True


class FileSource:
    """User sentences in their order, starting over after the last one."""

    def __init__(self, sentences: Sequence[str]):
        if not sentences:
            raise ValueError("a file haystack needs at least one sentence")
        self._sentences = tuple(sentences)
        self._pos = 0

    def peek(self) -> str:
        return self._sentences[self._pos]

    def advance(self) -> None:
        self._pos = (self._pos + 1) % len(self._sentences)

    def skippable(self) -> bool:
        """User text is used strictly in order."""
        return False
