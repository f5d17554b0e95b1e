"""The poker task's ceiling: a clairvoyant best response per hand (docs/clbench.md §4.7).

With every card known (both hole cards and the board, all fixed by the deck of the hand) and
the opponent a deterministic rule (:mod:`.opponents`), one hand is a single-agent game:
the most the system can win is a maximum over its own action sequences. This module finds it
for every raise size, not a sample of sizes, with dynamic programming over the chips each
player has put in:

* after the flop, a street starts with both players in for the same ``T`` chips and nothing
  else the opponents read carries over (their rules see the cards, the bets of the street and
  whether they bet or raised on it; none reads who raised last before the flop), so the value of the rest of the hand is a function
  ``V_s(T)`` of the street ``s`` and ``T`` alone, computed for every ``T`` from the river up;
* on a street, a raise the opponent calls moves the hand to ``T + x``: the best such raise is
  a range maximum of ``V_{s+1}``; a raise it folds to wins its chips whatever the size; a
  raise it re-raises (to three times the bet, clamped to all-in) leaves the system to fold,
  call or raise again, each again a range maximum or a closed form over the sizes;
* before the flop, every size of the system's raise is put to the opponent's actual rule
  (and a raise back after its re-raise is a range maximum as above).

What the dynamic programming rests on: after the flop, an opponent's choice of verb (fold,
check or call, raise) depends on its cards, the street, whether it faces a bet, whether it
already bet or raised on the street and whether the bet puts it all-in, never on the sizes
(before the flop its rule is asked about every size of the system's raise, and about the
smallest and largest raise back after it re-raised); its raise to a bet is three times the
bet; after it has bet or raised on a street it only calls or folds. The solver asks each
situation's verb at the extremes of the chips in and of the sizes (:meth:`HandSolver._probe`)
and raises :class:`CeilingError`, rather than return a number that might not be the
maximum, for a rule that answers differently there or raises twice; the tests sweep the
sizes in between.

The best line is also returned as the system's actions in order, so that a test can replay it
through :class:`~.environment.PokerEnv` and find the same result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pokerkit import StandardHighHand

from clstream.protocols.clbench.envs.poker.game import (
    BIG_BLIND,
    BLIND_SEAT,
    BUTTON_SEAT,
    SMALL_BLIND,
    STACK,
    Spot,
    hand_deck,
)
from clstream.protocols.clbench.envs.poker.opponents import RULES, Act

Rule = Callable[[Spot], Act]
Move = tuple[str, int | None]
"""One action of the system: (FOLD | CHECK | CALL | RAISE, raise-to amount or None)."""
NEG = float("-inf")


class CeilingError(RuntimeError):
    """An opponent rule does something the solver's dynamic programming does not cover."""


@dataclass(frozen=True)
class Option:
    """One way to play a street: its value in chips, the system's moves on the street and the
    chips each player is in for when the street closes with the hand still going (None when
    the hand ends on the street, at a fold or all-in)."""

    value: float
    moves: tuple[Move, ...]
    next_t: int | None = None


def _best(options: Sequence[Option]) -> Option:
    return max(options, key=lambda o: o.value)


class _Street:
    """``V_{s+1}`` as the street ``s`` sees it: the value of closing the street at ``t`` chips
    each (``t == STACK``: all-in, straight to the showdown), with range maxima."""

    def __init__(self, values: list[float]) -> None:
        self.w = values
        n = len(values)
        self.after: list[int] = [0] * (n + 1)  # argmax of w[t:STACK] (below all-in)
        self.after3: list[int] = [0] * (n + 3)  # argmax of w[t], w[t+3], ... below STACK
        best = -1
        for t in range(STACK - 1, -1, -1):
            if best < 0 or values[t] > values[best]:
                best = t
            self.after[t] = best
        self.after[STACK] = -1
        for t in range(STACK + 2, -1, -1):
            if t >= STACK:
                self.after3[t] = -1
                continue
            nxt = self.after3[t + 3]
            self.after3[t] = t if nxt < 0 or values[t] >= values[nxt] else nxt

    def below_all_in(self, start: int) -> int:
        """The ``t`` in ``[start, STACK)`` where the value is highest (-1 when empty)."""
        return self.after[start] if start < STACK else -1

    def stride3(self, start: int) -> int:
        """The best of ``start, start + 3, ...`` below ``STACK`` (-1 when empty)."""
        return self.after3[start] if start < STACK else -1


def opponent_act(variant: str, spot: Spot, *, raised: bool = False) -> Act:
    """The opponent's action at ``spot``, checked against what the solver assumes: after it
    bet or raised on the street (``raised``) it never raises again."""
    verb, amount = RULES[variant](spot)
    if raised and verb == "RAISE":
        raise CeilingError(f"{variant} raised twice on one street")
    if verb not in ("FOLD", "CHECK", "CALL", "RAISE"):
        raise CeilingError(f"{variant} answered {verb!r}")
    return verb, amount


class HandSolver:
    """The clairvoyant best response for one hand: ``deck`` as :func:`~.game.hand_deck`
    deals it, the system in ``seat``, the opponent playing ``variant``'s rule."""

    def __init__(self, deck: Sequence[str], seat: int, variant: str) -> None:
        self.deck, self.seat, self.variant = tuple(deck), seat, variant
        self._verbs: dict[tuple[int, bool, bool], str] = {}

    @property
    def opp(self) -> int:
        return 1 - self.seat

    def hole(self, seat: int) -> tuple[str, str]:
        return (self.deck[0], self.deck[1]) if seat == 0 else (self.deck[2], self.deck[3])

    def board(self, street: int) -> tuple[str, ...]:
        return tuple(self.deck[4:4 + (0, 3, 4, 5)[street]])

    def showdown_sign(self) -> int:
        board = "".join(self.deck[4:9])
        mine = StandardHighHand.from_game("".join(self.hole(self.seat)), board)
        theirs = StandardHighHand.from_game("".join(self.hole(self.opp)), board)
        return 1 if mine > theirs else -1 if theirs > mine else 0

    # --- the opponent's spots --------------------------------------------------------------

    def _spot(self, street: int, t: int, my_bet: int, their_bet: int, *, raised: bool,
              increment: int = BIG_BLIND) -> Spot:
        """The opponent's view: both in for ``t`` from earlier streets, street bets
        ``my_bet`` (the opponent's) and ``their_bet``; ``increment`` the last raise's size."""
        my_stack, their_stack = STACK - t - my_bet, STACK - t - their_bet
        to_call = max(0, their_bet - my_bet)
        top = max(my_bet, their_bet)
        can_raise = my_stack > to_call and their_stack > 0
        most = STACK - t  # the street total of an all-in
        least = min(top + max(increment, BIG_BLIND), most)
        return Spot(self.opp, street, self.hole(self.opp), self.board(street),
                    pot=2 * t + my_bet + their_bet, to_call=to_call, my_bet=my_bet,
                    my_stack=my_stack, their_stack=their_stack,
                    min_raise_to=least if can_raise else None,
                    max_raise_to=most if can_raise else None,
                    on_button=self.opp == BUTTON_SEAT, raised_this_street=raised,
                    preflop_aggressor=False)

    def _answer(self, street: int, t: int, my_bet: int, their_bet: int, *, raised: bool,
                increment: int) -> Act:
        """The opponent's answer to the system's raise to ``their_bet`` (street totals).
        Before the flop the rule is asked every time. After it, the verb is asked once per
        street, street state (bet or raised already or not) and whether the bet puts the
        opponent all-in: :meth:`_probe` asks it at the extremes of the chips already in and
        of the sizes, and refuses a rule whose answers differ there. A raise is checked to be
        three times the bet."""
        most = STACK - t
        key = (street, raised, their_bet < most)
        if street:
            if key not in self._verbs:
                self._verbs[key] = self._probe(*key)
            verb = self._verbs[key]
            return verb, min(3 * their_bet, most) if verb == "RAISE" else None
        return self._asked(street, t, my_bet, their_bet, raised, increment)

    def _asked(self, street: int, t: int, my_bet: int, their_bet: int, raised: bool,
               increment: int) -> Act:
        verb, amount = opponent_act(self.variant, self._spot(
            street, t, my_bet, their_bet, raised=raised, increment=increment), raised=raised)
        if verb == "RAISE" and amount != min(3 * their_bet, STACK - t):
            raise CeilingError(f"{self.variant} raised to {amount}, not 3 x {their_bet}")
        return verb, amount

    def _probe(self, street: int, raised: bool, below_all_in: bool) -> str:
        """The one verb of a situation after the flop, asked with the fewest and the most
        chips already in and the smallest and largest bets it covers."""
        verbs = set()
        for t in (BIG_BLIND, STACK // 2, STACK - 4 * BIG_BLIND):
            most = STACK - t
            for mine in ((BIG_BLIND, most // 3) if raised else (0,)):
                least = min(max(2 * mine, BIG_BLIND), most - 1)
                for bet in ((least, most - 1) if below_all_in else (most,)):
                    verbs.add(self._asked(street, t, mine, bet, raised, bet - mine)[0])
        if len(verbs) > 1:
            raise CeilingError(f"{self.variant} answers a bet with {' or '.join(sorted(verbs))} "
                               f"by its size on street {street}")
        return verbs.pop()

    def _facing_bet(self, street: int, t: int, x: int, opp_bet: int = 0,
                    increment: int | None = None) -> Act:
        """The opponent's answer to the system's raise to ``x`` (street total), when it has
        not bet or raised on the street."""
        inc = x - opp_bet if increment is None else increment
        return self._answer(street, t, opp_bet, x, raised=False, increment=inc)

    # --- after a raise the opponent made ---------------------------------------------------

    def _after_their_raise(self, street: int, t: int, mine: int, theirs: int,
                           nxt: _Street, prefix: tuple[Move, ...]) -> Option:
        """The system faces the opponent's bet or raise to ``theirs`` (street totals, the
        system in for ``mine``): fold, call, or raise again, to which the opponent (who has
        bet or raised on this street) only calls or folds."""
        most = STACK - t
        options = [Option(-(t + mine), (*prefix, ("FOLD", None))),
                   Option(nxt.w[t + theirs], (*prefix, ("CALL", None)),
                          t + theirs if t + theirs < STACK else None)]
        if theirs < most:
            least = min(theirs + max(theirs - mine, BIG_BLIND), most)
            answers = {z: self._answer(street, t, theirs, z, raised=True,
                                       increment=z - theirs)[0]
                       for z in {least, max(least, most - 1), most}}
            if street == 0 and least < most and answers[least] != answers[most - 1]:
                raise CeilingError(f"{self.variant} answers a raise to {least} with "
                                   f"{answers[least]} and one to {most - 1} with "
                                   f"{answers[most - 1]}")
            for z, verb in sorted(answers.items()):
                if verb == "FOLD":
                    options.append(Option(t + theirs, (*prefix, ("RAISE", z))))
                elif z == most:
                    options.append(Option(nxt.w[STACK], (*prefix, ("RAISE", z))))
                else:
                    best = nxt.below_all_in(t + least)
                    if best >= 0:
                        options.append(Option(nxt.w[best], (*prefix, ("RAISE", best - t)),
                                              best))
        return _best(options)

    # --- the system raises ------------------------------------------------------------------

    def _raise_options(self, street: int, t: int, least: int, nxt: _Street,
                       prefix: tuple[Move, ...], opp_bet: int = 0) -> list[Option]:
        """Every raise of the system to ``x`` in ``[least, all-in]`` (street totals), the
        opponent having put in ``opp_bet`` on the street and not raised on it."""
        most = STACK - t
        options = []
        verb, _ = self._facing_bet(street, t, most, opp_bet)
        all_in = (*prefix, ("RAISE", most))
        options.append(Option(t + opp_bet, all_in) if verb == "FOLD"
                       else Option(nxt.w[STACK], all_in))
        if least >= most:
            return options
        lo_verb, _ = self._facing_bet(street, t, least, opp_bet)
        if lo_verb == "FOLD":
            options.append(Option(t + opp_bet, (*prefix, ("RAISE", least))))
        elif lo_verb in ("CALL", "CHECK"):
            best = nxt.below_all_in(t + least)
            options.append(Option(nxt.w[best], (*prefix, ("RAISE", best - t)), best))
        else:  # re-raised to min(3x, all-in): the system folds, calls or raises again
            for x in self._reraise_sizes(least, most):
                y = min(3 * x, most)
                options.append(self._after_their_raise(street, t, x, y, nxt,
                                                        (*prefix, ("RAISE", x))))
            best = nxt.stride3(t + 3 * least)  # called re-raises below all-in
            if best >= 0:
                x = (best - t) // 3
                options.append(Option(nxt.w[best], (*prefix, ("RAISE", x), ("CALL", None)),
                                      best))
        return options

    @staticmethod
    def _reraise_sizes(least: int, most: int) -> list[int]:
        """The sizes worth trying where the opponent re-raises: the smallest (the cheapest
        fold, the lowest floor for raising again), the largest whose re-raise leaves the
        opponent chips (the most it puts in and can still fold) and the smallest whose
        re-raise puts it all-in (a called all-in for the least)."""
        below = (most - 1) // 3  # largest x with 3x < most
        sizes = {least, min(max(below, least), most - 1), min(max(below + 1, least), most - 1)}
        return sorted(sizes)

    # --- streets ----------------------------------------------------------------------------

    def postflop(self, street: int, t: int, nxt: _Street) -> Option:
        """The best play of a flop, turn or river begun with both in for ``t``."""
        most = STACK - t
        first = min(BIG_BLIND, most)
        opener = self._spot(street, t, 0, 0, raised=False)
        if self.seat == BLIND_SEAT:  # the big blind acts first after the flop
            options = self._raise_options(street, t, first, nxt, ())
            verb, amount = opponent_act(self.variant, opener)
            if verb == "CHECK":
                options.append(Option(nxt.w[t], (("CHECK", None),), t))
            elif verb == "RAISE" and amount is not None:
                options.append(self._after_their_raise(street, t, 0, amount, nxt,
                                                        (("CHECK", None),)))
            else:
                raise CeilingError(f"{self.variant} answered a check with {verb}")
            return _best(options)
        verb, amount = opponent_act(self.variant, opener)
        if verb == "CHECK":
            options = self._raise_options(street, t, first, nxt, ())
            options.append(Option(nxt.w[t], (("CHECK", None),), t))
            return _best(options)
        if verb == "RAISE" and amount is not None:
            return self._after_their_raise(street, t, 0, amount, nxt, ())
        raise CeilingError(f"{self.variant} opened a street with {verb}")

    def preflop(self, flop: _Street) -> Option:
        """The best play from the deal: every raise size is put to the opponent's rule."""
        if self.seat == BUTTON_SEAT:
            options = [Option(-SMALL_BLIND, (("FOLD", None),))]
            verb, amount = opponent_act(self.variant, self._spot(0, 0, BIG_BLIND, BIG_BLIND,
                                                                 raised=False))
            limp: tuple[Move, ...] = (("CALL", None),)
            if verb == "CHECK":
                options.append(Option(flop.w[BIG_BLIND], limp, BIG_BLIND))
            elif verb == "RAISE" and amount is not None:
                options.append(self._after_their_raise(0, 0, BIG_BLIND, amount, flop, limp))
            options += self._preflop_raises(flop, (), BIG_BLIND)
            return _best(options)
        verb, amount = opponent_act(self.variant, self._spot(0, 0, SMALL_BLIND, BIG_BLIND,
                                                             raised=False))
        if verb == "FOLD":
            return Option(SMALL_BLIND, (("CHECK", None),))
        if verb == "RAISE" and amount is not None:
            return self._after_their_raise(0, 0, BIG_BLIND, amount, flop, ())
        options = [Option(flop.w[BIG_BLIND], (("CHECK", None),), BIG_BLIND)]
        options += self._preflop_raises(flop, (), BIG_BLIND)
        return _best(options)

    def _preflop_raises(self, flop: _Street, prefix: tuple[Move, ...], opp_bet: int
                        ) -> list[Option]:
        """Every raise to ``x`` from 20 to all-in over the blinds, each put to the rule."""
        options = []
        for x in range(2 * BIG_BLIND, STACK + 1):
            verb, amount = self._facing_bet(0, 0, x, opp_bet, increment=x - BIG_BLIND)
            moves = (*prefix, ("RAISE", x))
            if verb == "FOLD":
                options.append(Option(opp_bet, moves))
            elif verb in ("CALL", "CHECK") or x == STACK:
                options.append(Option(flop.w[x], moves, x if x < STACK else None))
            elif amount is not None:
                options.append(self._after_their_raise(0, 0, x, amount, flop, moves))
        return options

    def solve(self) -> tuple[float, list[list[Move]]]:
        """The most the system can win in this hand, in chips, and the moves that win it,
        street by street."""
        sign = self.showdown_sign()
        values: list[float] = [float(sign * t) for t in range(STACK + 1)]
        streets: list[list[Option]] = []
        for street in (3, 2, 1):
            nxt = _Street(values)
            row = [self.postflop(street, t, nxt) if t < STACK else Option(values[STACK], ())
                   for t in range(STACK + 1)]
            streets.insert(0, row)
            values = [o.value for o in row[:STACK]] + [float(sign * STACK)]
        start = self.preflop(_Street(values))
        line, option = [list(start.moves)], start
        for row in streets:
            if option.next_t is None:
                break
            option = row[option.next_t]
            line.append(list(option.moves))
        return start.value, line


def hand_ceiling(seed: int, stage: int, hand: int, variant: str) -> tuple[float, list[list[Move]]]:
    """The clairvoyant best result of one hand of the task in big blinds, and its moves."""
    seat = BUTTON_SEAT if hand % 2 else BLIND_SEAT
    value, line = HandSolver(tuple(hand_deck(seed, stage, hand)), seat, variant).solve()
    return value / BIG_BLIND, line
