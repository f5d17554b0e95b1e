"""The builtin policies of the exploitable poker task (docs/clbench.md §4.4 and §6).

All of them read only the observation and feedback texts of :mod:`.environment`:

* :class:`TAGHeuristic` -- a tight-aggressive player that treats every opponent alike: raises
  the better quarter of starting hands, bets half the pot with a pair or better, calls with
  top pair or better, checks and folds the rest. It is the stateless twin: with no past hands
  it has nothing else to go on.
* :class:`OpponentModeler` -- keeps, per opponent name, what the opponent did in every earlier
  hand (its actions street by street, its cards when shown) and reads a style off the counts:
  never folding and never betting is a calling station (value-bet big, never bluff), folding
  often to bets a fit-or-fold player (steal blinds, bet every street, give up when it
  continues), betting and raising often a loose-aggressive player (call its flop bets light,
  bet the turn and river when it checks, fold when it bets late). Until it knows the opponent
  it plays like :class:`TAGHeuristic`. It writes what it knows as notes
  (``opponent <Name>: ...``, the hands as evidence) and can act from such notes alone.
* :class:`OracleExploiter` -- plays the matching exploit from the first hand, knowing each
  named opponent's rules (never its cards); its mean reward is recorded beside the task's
  r_max, the clairvoyant ceiling (:mod:`.ceiling`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from clstream.core.environment import Turn, merge_notes, note_key
from clstream.protocols.clbench.envs.base import instance_of
from clstream.protocols.clbench.envs.poker.game import (
    BIG_BLIND,
    STREETS,
    Spot,
    chen_score,
    holding,
)
from clstream.protocols.clbench.envs.poker.opponents import Act, pot_bet, sized

STYLES = ("calling station", "fit-or-fold", "loose-aggressive")
KNOWN_STYLES = {"Tom": "calling station", "Adam": "fit-or-fold", "Alex": "loose-aggressive"}
"""What :class:`OracleExploiter` knows: each opponent's rules, by name."""

_LINE = {key: re.compile(rf"^{pattern}$", re.MULTILINE) for key, pattern in {
    "hand": r"Hand (\S+) - (\w+)", "name": r"Opponent: (\w+)", "cards": r"Your cards: (.+)",
    "board": r"Board: (.+)", "pot": r"Pot: (\d+) \| Your stack: (\d+) \| \w+'s stack: (\d+)",
    "history": r"(?:Betting so far|Hand history): (.+)", "to_call": r"To call: (\d+)",
    "raise": r"Legal actions: .*RAISE \(raise-to between (\d+) and (\d+)\)",
    "showdown": r"Showdown: .*; (\w+) (\S\S) (\S\S) \([^)]*\)\.",
    "over": r"Hand (\S+) over: you .*"}.items()}
_CODES = {"folds": "F", "checks": "K", "calls": "C", "bets": "B", "raises": "R"}


@dataclass(frozen=True)
class View:
    """One decision as read from an observation."""

    hand: str
    name: str
    spot: Spot
    streets: tuple[tuple[tuple[str, str], ...], ...]
    """Per street so far, the (actor, verb) pairs; actor 'you' or the opponent's name."""


def betting(history: str) -> tuple[tuple[tuple[str, str], ...], ...]:
    """(actor, verb) per action, street by street, of a 'Betting so far' / 'Hand history'."""
    out = []
    for part in history.split(" | "):
        acts = part.split(": ", 1)[1] if ": " in part else ""
        moves = []
        for act in acts.split(", "):
            words = act.split()
            if len(words) >= 2 and act != "no betting":
                moves.append((words[0], words[1]))
        out.append(tuple(moves))
    return tuple(out)


def read_view(observation: str) -> View | None:
    """The decision an observation asks for, or None for a text that is not one."""
    found = {key: rx.search(observation) for key, rx in _LINE.items()}
    hand, name, cards, pot = found["hand"], found["name"], found["cards"], found["pot"]
    if not (hand and name and cards and pot):
        return None
    street = [s.upper() for s in STREETS].index(hand.group(2))
    hole = tuple(cards.group(1).split())
    board_text = found["board"].group(1) if found["board"] else ""
    board = tuple(c for c in board_text.split() if len(c) == 2)
    streets = betting(found["history"].group(1)) if found["history"] else ()
    to_call = int(found["to_call"].group(1)) if found["to_call"] else 0
    raise_m = found["raise"]
    mine = streets[street] if street < len(streets) else ()
    level = _street_level(observation, street)
    aggressive = ("raise", "bet")
    pre = streets[0] if streets else ()
    last_pre = [a for a, v in pre if v in aggressive or v in ("raises", "bets")]
    spot = Spot(
        seat=0, street=street, hole=(hole[0], hole[1]), board=board,
        pot=int(pot.group(1)), to_call=to_call, my_bet=max(0, level - to_call),
        my_stack=int(pot.group(2)), their_stack=int(pot.group(3)),
        min_raise_to=int(raise_m.group(1)) if raise_m else None,
        max_raise_to=int(raise_m.group(2)) if raise_m else None,
        on_button="on the button" in observation,
        raised_this_street=any(a == "you" and v in aggressive for a, v in mine),
        preflop_aggressor=bool(last_pre) and last_pre[-1] == "you")
    return View(hand.group(1), name.group(1), spot, streets)


def _street_level(observation: str, street: int) -> int:
    """The highest raise-to total on the current street (the big blind preflop)."""
    found = _LINE["history"].search(observation)
    parts = found.group(1).split(" | ") if found else []
    text = parts[street] if street < len(parts) else ""
    amounts = [int(m) for m in re.findall(r"(?:bets?|raises? to) (\d+)", text)]
    return max(amounts, default=BIG_BLIND if street == 0 else 0)


# --- what an opponent did --------------------------------------------------------------------


@lru_cache(maxsize=8192)
def hand_record(observation: str, feedback: str) -> tuple[str, str, str] | None:
    """(opponent, hand id, record) of a finished hand: the opponent's action codes per street
    (F fold, K check, C call, B bet, R raise) joined by '/', then '@' and its cards if shown."""
    over = _LINE["over"].search(feedback)
    name = _LINE["name"].search(observation) or _LINE["name"].search(feedback)
    history = _LINE["history"].search(feedback)
    if not (over and name and history):
        return None
    who = name.group(1)
    codes = ["".join(_CODES.get(v, "") for a, v in street if a == who)
             for street in betting(history.group(1))]
    codes += [""] * (4 - len(codes))
    record = "/".join(codes[:4])
    shown = _LINE["showdown"].search(feedback)
    if shown and shown.group(1) == who:
        record += f"@{shown.group(2)}{shown.group(3)}"
    return who, over.group(1), record


@dataclass(frozen=True)
class Profile:
    """Counts over an opponent's recorded hands and the style they suggest."""

    hands: int
    folds: int
    calls: int
    aggressive: int
    actions: int

    @property
    def style(self) -> str | None:
        faced = self.folds + self.calls
        if self.hands == 0 or self.actions == 0:
            return None
        if self.aggressive / self.actions >= 0.3:
            return "loose-aggressive"
        if faced and self.folds / faced >= 0.25:
            return "fit-or-fold"
        if self.calls and not self.folds and not self.aggressive:
            return "calling station"
        return None


def profile(records: dict[str, str]) -> Profile:
    codes = "".join(r.split("@")[0].replace("/", "") for r in records.values())
    return Profile(len(records), codes.count("F"), codes.count("C") + codes.count("R"),
                   codes.count("B") + codes.count("R"), len(codes))


# --- playing ------------------------------------------------------------------------------


def tag_act(spot: Spot) -> Act:
    """The tight-aggressive default, the same against everyone."""
    score = chen_score(spot.hole)
    if spot.street == 0:
        level = spot.my_bet + spot.to_call
        if level <= BIG_BLIND:
            if score >= 6:
                return sized(spot, 3 * BIG_BLIND)
            return ("CHECK", None) if spot.to_call == 0 else ("FOLD", None)
        if score >= 9 and not spot.raised_this_street:
            return sized(spot, 3 * level)
        return ("CALL", None) if score >= 7 or (score >= 6 and level <= 4 * BIG_BLIND) \
            else ("FOLD", None)
    have = holding(spot.hole, spot.board)
    if spot.to_call == 0:
        return pot_bet(spot, 0.5) if have.made >= 1 else ("CHECK", None)
    if have.made >= 3 and not spot.raised_this_street:
        return sized(spot, 3 * (spot.my_bet + spot.to_call))
    return ("CALL", None) if have.made >= 2 else ("FOLD", None)


def exploit_act(view: View, style: str) -> Act:
    """The play against a known style (see the module docstring)."""
    spot = view.spot
    if style == "calling station":
        return _against_station(spot)
    if style == "fit-or-fold":
        return _against_fit_or_fold(view)
    return _against_loose_aggressive(view)


def _against_station(spot: Spot) -> Act:
    """Never bluff; bet for value with top pair or better, the bigger the better the hand (it
    calls anything), and see cheap cards otherwise."""
    if spot.street == 0:
        if chen_score(spot.hole) >= 3 and not spot.raised_this_street:
            return sized(spot, 4 * BIG_BLIND)
        return ("CALL", None) if spot.to_call else ("CHECK", None)
    have = holding(spot.hole, spot.board)
    if have.made >= 3:
        return pot_bet(spot, 3.0 if spot.street == 3 else 1.0)
    if have.made == 2:
        return pot_bet(spot, 1.0 if spot.street == 3 else 0.75)
    if have.made == 1 and spot.street < 3:
        return pot_bet(spot, 0.34)
    return ("CALL", None) if spot.to_call else ("CHECK", None)


def _against_fit_or_fold(view: View) -> Act:
    """Raise small preflop whatever the cards (it folds all but its tight range); bet every
    street small when checked to (it folds when it misses), big with top pair or better; fold
    when it bets or raises (it does so only with a hand)."""
    spot = view.spot
    if spot.street == 0:
        if spot.my_bet + spot.to_call <= BIG_BLIND:
            return sized(spot, 2 * BIG_BLIND)
        return ("CALL", None) if chen_score(spot.hole) >= 9 else ("FOLD", None)
    have = holding(spot.hole, spot.board)
    if spot.to_call:
        return ("CALL", None) if have.made >= 2 else ("FOLD", None)
    return pot_bet(spot, 1.0 if have.made >= 2 else 0.34)


def _against_loose_aggressive(view: View) -> Act:
    """Raise the button (it folds its weaker half), defend every big blind, call the flop bet
    with anything, and take the pot when it checks the turn or river (it checks only without
    top pair, and then folds to any bet); fold to its late bets without top pair."""
    spot = view.spot
    score = chen_score(spot.hole)
    if spot.street == 0:
        level = spot.my_bet + spot.to_call
        if level <= BIG_BLIND:
            return sized(spot, 2 * BIG_BLIND) if spot.to_call else ("CHECK", None)
        if score >= 9 and not spot.raised_this_street:
            return sized(spot, 3 * level)
        return ("CALL", None) if score >= 3 or level <= 3 * BIG_BLIND else ("FOLD", None)
    have = holding(spot.hole, spot.board)
    if spot.to_call:
        if have.made >= 4 and not spot.raised_this_street:
            return sized(spot, 3 * (spot.my_bet + spot.to_call))
        return ("CALL", None) if spot.street == 1 or have.made >= 2 else ("FOLD", None)
    it_checked = bool(view.streets) and len(view.streets) > spot.street and any(
        a != "you" and v == "checks" for a, v in view.streets[spot.street])
    if it_checked:
        return pot_bet(spot, 0.75 if have.made >= 2 else 0.25)
    return pot_bet(spot, 0.6) if have.made >= 3 else ("CHECK", None)


def to_action(act: Act) -> dict[str, Any]:
    return {"action": act[0], "amount": act[1]}


def _check_only(observation: str) -> dict[str, Any] | None:
    if "The hand is already over" in observation:
        return {"action": "CHECK", "amount": None}
    return None


class TAGHeuristic:
    """Tight-aggressive, the same against every opponent (see the module docstring)."""

    name = "poker-tag"

    def act(self, history: Sequence[Turn], observation: str) -> dict[str, Any]:
        view = read_view(observation)
        if view is None or _check_only(observation):
            return {"action": "CHECK", "amount": None}
        return to_action(tag_act(view.spot))


class OpponentModeler:
    """Per-opponent counts from earlier hands, and the exploit of the style they suggest."""

    name = "poker-opponent-modeler"

    def records(self, history: Sequence[Turn]) -> dict[str, dict[str, str]]:
        """opponent -> hand id -> record, for every finished hand in ``history``."""
        out: dict[str, dict[str, str]] = {}
        for turn in history:
            found = hand_record(turn.observation, turn.feedback)
            if found:
                out.setdefault(found[0], {})[found[1]] = found[2]
        return out

    def act(self, history: Sequence[Turn], observation: str) -> dict[str, Any]:
        return self._act(self.records(history), observation)

    def _act(self, records: dict[str, dict[str, str]], observation: str) -> dict[str, Any]:
        view = read_view(observation)
        if view is None or _check_only(observation):
            return {"action": "CHECK", "amount": None}
        known = {h: r for h, r in records.get(view.name, {}).items() if h != view.hand}
        style = profile(known).style
        return to_action(exploit_act(view, style) if style else tag_act(view.spot))

    # --- notes (core.environment.NoteTaker) ---------------------------------------------------

    def notes(self, history: Sequence[Turn]) -> list[str]:
        return [self._note(name, recs) for name, recs in sorted(self.records(history).items())]

    @staticmethod
    def _note(name: str, records: dict[str, str]) -> str:
        p = profile(records)
        style = p.style or "not yet clear"
        body = " ".join(f"{h}={r}" for h, r in sorted(records.items()))
        return (f"opponent {name}: style {style}; {p.hands} hands, {p.folds} folds, {p.calls} "
                f"calls, {p.aggressive} bets or raises in {p.actions} actions; hands {body}")

    @staticmethod
    def _parse_note(note: str) -> tuple[str, dict[str, str]] | None:
        key = note_key(note)
        if key is None or not key.startswith("opponent ") or "; hands " not in note:
            return None
        body = note.rsplit("; hands ", 1)[1].split()
        return key[len("opponent "):], dict(item.split("=", 1) for item in body if "=" in item)

    def merge(self, old: str, new: str) -> str:
        a, b = self._parse_note(old), self._parse_note(new)
        if a is None or b is None:
            return new if a is None else old
        return self._note(a[0], {**a[1], **b[1]})

    def act_from_notes(self, notes: Sequence[str], history: Sequence[Turn], observation: str
                       ) -> dict[str, Any]:
        records: dict[str, dict[str, str]] = {}
        for note in merge_notes(self, notes):
            parsed = self._parse_note(note)
            if parsed:
                records.setdefault(parsed[0], {}).update(parsed[1])
        for name, recs in self.records(history).items():
            records.setdefault(name, {}).update(recs)
        return self._act(records, observation)


class OracleExploiter:
    """Knows each named opponent's rules (not its cards) and exploits them from hand one."""

    name = "poker-oracle"

    def act(self, history: Sequence[Turn], observation: str) -> dict[str, Any]:
        view = read_view(observation)
        if view is None or instance_of(observation) is None or _check_only(observation):
            return {"action": "CHECK", "amount": None}
        style = KNOWN_STYLES.get(view.name)
        return to_action(exploit_act(view, style) if style else tag_act(view.spot))
