"""The named opponents of the poker environment: deterministic rules over hand strength
(docs/clbench.md §4.4).

Each opponent is a function of what it sees at its turn (a :class:`~.game.Spot`: its own
cards, the board, the bets) and returns an :data:`Act`. None draws at random, so a hand's play
is fixed by its cards and the system's actions. Each raises at most once per street, so a
hand always ends.

* ``calling_station`` (Tom) -- calls every bet and checks otherwise; never raises, never folds.
* ``fit_or_fold`` (Adam) -- preflop continues only with a tight range (pairs, big aces, two
  high cards, high suited connectors) and re-raises the best of it; after the flop continues
  against a bet only with a pair or better or a draw, bets half the pot with top pair or
  better, and checks or folds everything else.
* ``loose_aggressive`` (Alex) -- raises about three hands in four preflop, bets two thirds of
  the pot on every flop and calls flop bets with any pair or draw; on the turn and river bets
  and calls only with top pair or better and otherwise checks and folds.
"""

from __future__ import annotations

from collections.abc import Callable

from clstream.protocols.clbench.envs.poker.game import (
    BIG_BLIND,
    Spot,
    chen_score,
    fits_preflop,
    holding,
)

Act = tuple[str, int | None]
"""(FOLD | CHECK | CALL | RAISE, raise-to amount or None)."""

OPPONENTS = {"calling_station": "Tom", "loose_aggressive": "Alex", "fit_or_fold": "Adam"}
"""Opponent name per variant."""


def sized(spot: Spot, target: float) -> Act:
    """RAISE to ``target`` clamped to the legal range, or a call / check when raising is not
    allowed."""
    if spot.min_raise_to is None or spot.max_raise_to is None:
        return ("CALL", None) if spot.to_call else ("CHECK", None)
    return ("RAISE", int(min(max(round(target), spot.min_raise_to), spot.max_raise_to)))


def pot_bet(spot: Spot, fraction: float) -> Act:
    """A bet of ``fraction`` of the pot after calling (the raise-to total of this street)."""
    return sized(spot, spot.my_bet + spot.to_call + fraction * (spot.pot + spot.to_call))


def passive(spot: Spot) -> Act:
    return ("CALL", None) if spot.to_call else ("CHECK", None)


def calling_station(spot: Spot) -> Act:
    return passive(spot)


def fit_or_fold(spot: Spot) -> Act:
    if spot.street == 0:
        premium = chen_score(spot.hole) >= 10
        if spot.to_call == 0:
            return ("CHECK", None)
        if premium and not spot.raised_this_street:
            return sized(spot, 3 * (spot.my_bet + spot.to_call))
        return ("CALL", None) if fits_preflop(spot.hole) else ("FOLD", None)
    have = holding(spot.hole, spot.board)
    if spot.to_call:
        if have.made >= 3 and not spot.raised_this_street:
            return sized(spot, 3 * (spot.my_bet + spot.to_call))
        return ("CALL", None) if have.made >= 1 or have.draw else ("FOLD", None)
    return pot_bet(spot, 0.5) if have.made >= 2 else ("CHECK", None)


def loose_aggressive(spot: Spot) -> Act:
    score = chen_score(spot.hole)
    if spot.street == 0:
        facing_raise = spot.my_bet + spot.to_call > BIG_BLIND
        if not facing_raise:  # the button's first action, or the big blind after a limp
            if score >= 2 and not spot.raised_this_street:
                return sized(spot, 3 * BIG_BLIND if spot.on_button else 4 * BIG_BLIND)
            return passive(spot) if spot.to_call == 0 else ("FOLD", None)
        if score >= 9 and not spot.raised_this_street:
            return sized(spot, 3 * (spot.my_bet + spot.to_call))
        return ("CALL", None) if score >= 5 else ("FOLD", None)
    have = holding(spot.hole, spot.board)
    if spot.street == 1:
        if spot.to_call:
            if have.made >= 3 and not spot.raised_this_street:
                return sized(spot, 3 * (spot.my_bet + spot.to_call))
            return ("CALL", None) if have.made >= 1 or have.draw else ("FOLD", None)
        return pot_bet(spot, 2 / 3)
    if spot.to_call:
        if have.made >= 3 and not spot.raised_this_street:
            return sized(spot, 3 * (spot.my_bet + spot.to_call))
        return ("CALL", None) if have.made >= 2 else ("FOLD", None)
    return pot_bet(spot, 2 / 3) if have.made >= 2 else ("CHECK", None)


RULES: dict[str, Callable[[Spot], Act]] = {
    "calling_station": calling_station,
    "loose_aggressive": loose_aggressive,
    "fit_or_fold": fit_or_fold,
}
"""The rule of each variant's opponent."""
