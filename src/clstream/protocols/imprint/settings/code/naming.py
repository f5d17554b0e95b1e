"""A package's own naming: the words of its identifiers, and invented names that follow it.

DirAcq's absent items and BoundAbs ask about identifiers that do not exist (docs/imprint.md
§4.4). The paper builds its fictitious leaves under each namespace (App. D.2); an invented name
tests what DirAcq names only when it is one the package could plausibly have had, so an answer
cannot be told from the name's shape. :func:`invented_leaf` therefore keeps everything a reader
could judge from the surface of the real sibling callables: the namespace (the feature's own
parent), the kind (a function among functions, a method among the class's methods, a class
among classes), the casing (``snake_case``, ``CamelCase`` or run-together lowercase), the
number of words, and the words themselves, which come from the package's vocabulary at the
same position (``cumulative_sum`` -> ``cumulative_max`` when ``max`` is a frequent last word of
numpy's functions). A run-together single word takes one of the package's productive prefixes
(numpy's ``nan``, ``arg``). No invented name is defined anywhere in either release.
"""

from __future__ import annotations

import builtins
import keyword
import random
import re
from collections import Counter
from collections.abc import Iterable

# Fewer sibling callables than this in the namespace: the package's callables of the kind.
MIN_SIBLINGS = 6
# Candidates kept from the most frequent vocabulary, among which the seed picks.
TOP_CANDIDATES = 8
# A prefix is one of the package's conventions when it forms this many sibling names.
MIN_PREFIX_USES = 3

_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z][a-z0-9]*|[a-z0-9]+")


def name_style(leaf: str) -> str:
    """``camel`` (``CubicSpline``), ``snake`` (``cumulative_sum``) or ``flat`` (``nanmax``)."""
    core = leaf.strip("_")
    if core[:1].isupper():
        return "camel"
    return "snake" if "_" in core else "flat"


def name_words(leaf: str) -> list[str]:
    """The words of a name in its own style: ``cumulative_sum`` -> cumulative, sum;
    ``CubicSpline`` -> Cubic, Spline; ``nanmax`` -> nanmax."""
    style = name_style(leaf)
    if style == "camel":
        return _CAMEL.findall(leaf)
    if style == "snake":
        return [w for w in leaf.split("_") if w]
    return [leaf]


def identifier_words(text: str) -> list[str]:
    """Lower-case words of any identifier or prose, ``_`` and case changes splitting."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", text)
    return [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Za-z][a-z0-9]*", spaced)
            if w]


def _join(words: list[str], style: str, leaf: str) -> str:
    lead = leaf[: len(leaf) - len(leaf.lstrip("_"))]
    return lead + ("".join(words) if style == "camel" else "_".join(words))


def forbidden_names(*name_sets: Iterable[str]) -> set[str]:
    """Names an invented leaf must not take: the given ones, Python's builtins and keywords."""
    out = set(dir(builtins)) | set(keyword.kwlist)
    for names in name_sets:
        for name in names:
            out.add(name)
            out.add(name.rsplit(".", 1)[-1])
    return out


def _prefixes(names: set[str]) -> Counter[str]:
    """How many sibling names each short prefix forms with another sibling name
    (``nanmax``/``max`` -> ``nan``)."""
    uses: Counter[str] = Counter()
    for name in names:
        for cut in range(2, min(5, len(name) - 2)):
            if name[cut:] in names:
                uses[name[:cut]] += 1
    return uses


def _contexts(names: Iterable[str]) -> dict[str, set[str]]:
    """For each word, the frames it fills among ``names``: ``merge_{}`` for ``tones`` in
    ``merge_tones``; ``nan{}`` and ``{}`` for ``max`` given ``nanmax`` and ``max``."""
    out: dict[str, set[str]] = {}
    for name in names:
        words = name_words(name)
        if len(words) >= 2:
            for i, word in enumerate(words):
                frame = _join([*words[:i], "{}", *words[i + 1:]], name_style(name), name)
                out.setdefault(word, set()).add(frame)
        else:
            for cut in range(0, min(5, len(name) - 1)):
                out.setdefault(name[cut:], set()).add(name[:cut] + "{}")
    return out


def invented_candidates(leaf: str, siblings: Iterable[str]) -> list[str]:
    """Names in the style and vocabulary of ``siblings`` that differ from ``leaf`` in one
    word, most plausible first (the caller removes names that exist): a word that fills
    the same frames among the siblings as the word it replaces (``max`` for ``sum``: both
    take ``nan{}``), then a frequent word at that place."""
    style = name_style(leaf)
    words = name_words(leaf)
    peers = sorted({s for s in siblings if s != leaf and not s.startswith("_")})
    scored: dict[str, tuple[int, int]] = {}
    if len(words) >= 2:
        contexts = _contexts(peers)
        same_style = [name_words(s) for s in peers if name_style(s) == style]
        single = {s for s in peers if name_style(s) == ("camel" if style == "camel" else "flat")}
        for i in range(len(words)):
            vocabulary: Counter[str] = Counter()
            for peer in same_style:
                if len(peer) == len(words):
                    vocabulary[peer[i]] += 2  # the word at the same place in a sibling
                elif i in (0, len(words) - 1) and len(peer) >= 2:
                    vocabulary[peer[0 if i == 0 else -1]] += 1
            if i == len(words) - 1:
                for name in single:  # a sibling name of its own: ``max`` -> ``cumulative_max``
                    vocabulary[name] += 1
            frames = contexts.get(words[i], set())
            for word, count in vocabulary.items():
                if word != words[i] and len(word) >= 2:
                    made = _join([*words[:i], word, *words[i + 1:]], style, leaf)
                    score = (len(frames & contexts.get(word, set())), count)
                    scored[made] = max(scored.get(made, (0, 0)), score)
    else:
        names = {s for s in peers if name_style(s) == style}
        prefixes = {p: n for p, n in _prefixes(names | {leaf}).items() if n >= MIN_PREFIX_USES}
        own = next((p for p in sorted(prefixes, key=len, reverse=True)
                    if leaf.startswith(p) and leaf[len(p):] in names), None)
        base = leaf[len(own):] if own else leaf
        for prefix, count in prefixes.items():
            if prefix != own:
                scored[prefix + base] = max(scored.get(prefix + base, (0, 0)), (0, count))
    return [name for name, _ in sorted(scored.items(), key=lambda kv: (-kv[1][0], -kv[1][1],
                                                                        kv[0]))]


def invented_leaf(leaf: str, siblings: Iterable[str], forbidden: set[str],
                  rng: random.Random) -> str | None:
    """One invented name for ``leaf`` (see the module docstring), or None when the package's
    naming offers none that is free."""
    free = [name for name in invented_candidates(leaf, siblings)
            if name.isidentifier() and name not in forbidden]
    if not free:
        return None
    return rng.choice(free[:TOP_CANDIDATES])
