"""One heads-up no-limit hold'em hand over pokerkit, and hand strength (docs/clbench.md §4.4).

pokerkit keeps the rules (blinds, who acts, legal actions, the minimum raise, all-in, the
showdown and the pot) and evaluates hands; this module only fixes the cards and writes down
what happened. The deck of a hand is a function of (seed, stage, hand number) alone: pokerkit
shuffles its own deck when a state is created, and :class:`HandTable` replaces that deck's
order with the fixed one before anything is dealt, so every arm, rollout order and fresh
environment deals the same cards to the same hand.

In pokerkit's heads-up seating, player 1 is the button (small blind, first to act preflop) and
player 0 the big blind.

Hand strength, as the opponents and the builtin policies read it:

* preflop -- :func:`chen_score`, a points count over the two hole cards (high card, pair,
  suitedness, gap);
* postflop -- :func:`holding`: the pokerkit category of the best five cards, reduced to a made
  level that counts only what the hole cards add (a pair on the board alone is nothing), and a
  draw flag (four to a flush or at least two ranks that complete a straight).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from pokerkit import Automation, Card, Label, NoLimitTexasHoldem, StandardHighHand, State

STACK, SMALL_BLIND, BIG_BLIND = 1000, 5, 10
RANKS = "23456789TJQKA"
SUITS = "cdhs"
STREETS = ("preflop", "flop", "turn", "river")
BUTTON_SEAT, BLIND_SEAT = 1, 0  # pokerkit's heads-up seats
_AUTOMATIONS = tuple(a for a in Automation
                     if a not in (Automation.HOLE_DEALING, Automation.BOARD_DEALING))
"""Every chore automated but dealing, which :class:`HandTable` does from the fixed deck."""


def hand_deck(seed: int, stage: int, hand: int) -> list[str]:
    """The 52 cards of one hand in dealing order, from sha256 of (seed, stage, hand)."""
    digest = hashlib.sha256(f"poker-deal:{seed}:{stage}:{hand}".encode()).digest()
    cards = [r + s for r in RANKS for s in SUITS]
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(cards)
    return cards


def rank_of(card: str) -> int:
    return RANKS.index(card[0]) + 2


# --- hand strength --------------------------------------------------------------------------


def chen_score(hole: tuple[str, str]) -> float:
    """A points count of a starting hand: high card value, doubled for a pair, plus suitedness,
    minus the gap between the ranks, plus a little for small connected cards."""
    a, b = sorted((rank_of(c) for c in hole), reverse=True)
    points = {14: 10.0, 13: 8.0, 12: 7.0, 11: 6.0}.get(a, a / 2)
    if a == b:
        return max(5.0, 2 * points)
    if hole[0][1] == hole[1][1]:
        points += 2
    gap = a - b - 1
    points -= {0: 0, 1: 1, 2: 2, 3: 4}.get(gap, 5)
    if gap <= 1 and a < 12:
        points += 1
    return float(points)


def fits_preflop(hole: tuple[str, str]) -> bool:
    """The tight continuing range: any pair, an ace with a ten or better, two cards ten or
    higher, or suited connectors from nine-ten up."""
    a, b = sorted((rank_of(c) for c in hole), reverse=True)
    suited = hole[0][1] == hole[1][1]
    return a == b or (a == 14 and b >= 10) or b >= 10 or (suited and a - b == 1 and b >= 9)


@dataclass(frozen=True)
class Holding:
    """What a hand has on a board: ``made`` 0 nothing, 1 a weak pair, 2 top pair or an
    overpair, 3 two pair with both hole cards, 4 a set, trips, straight or better; ``draw``
    four to a flush or an open straight draw (flop and turn only)."""

    made: int
    draw: bool
    label: str


def _straight_ranks(ranks: set[int]) -> int:
    """How many missing ranks would complete a five-card straight with ``ranks``."""
    have = ranks | ({1} if 14 in ranks else set())
    outs = set()
    for low in range(1, 11):
        window = set(range(low, low + 5))
        missing = window - have
        if len(missing) == 1:
            outs |= missing
    return len(outs)


@lru_cache(maxsize=4096)
def holding(hole: tuple[str, str], board: tuple[str, ...]) -> Holding:
    """The made level and draw flag of ``hole`` on a flop, turn or river ``board``."""
    best = StandardHighHand.from_game("".join(hole), "".join(board))
    label = best.entry.label
    hole_ranks = [rank_of(c) for c in hole]
    board_ranks = [rank_of(c) for c in board]
    top = max(board_ranks)
    pocket = hole_ranks[0] == hole_ranks[1]
    hits = sorted({r for r in hole_ranks if r in board_ranks}, reverse=True)
    plays_board = (len(board) == 5 and not best > StandardHighHand.from_game("", "".join(board)))
    made = 0
    if label in (Label.STRAIGHT, Label.FLUSH, Label.FULL_HOUSE, Label.FOUR_OF_A_KIND,
                 Label.STRAIGHT_FLUSH) and not plays_board:
        made = 4
    elif (pocket and hits) or any(board_ranks.count(r) >= 2 for r in hits):
        made = 4  # a set, or trips with one hole card
    elif len(hits) == 2:
        made = 3
    elif pocket:
        made = 2 if hole_ranks[0] > top else 1
    elif hits:
        made = 2 if hits[0] == top else 1
    draw = False
    if len(board) < 5:
        cards = hole + board
        draw = any(sum(c[1] == s for c in cards) == 4 and any(c[1] == s for c in hole)
                   for s in SUITS)
        draw = draw or _straight_ranks(set(hole_ranks + board_ranks)) >= 2
    return Holding(made, draw, label.value)


# --- one hand -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """One betting action: street index, seat, verb (checks, calls, bets, raises, folds) and
    the street total it brings the actor to (0 for a check or fold)."""

    street: int
    seat: int
    verb: str
    to: int
    all_in: bool = False


@dataclass(frozen=True)
class Spot:
    """What the player to act sees (the opponent's cards excluded)."""

    seat: int
    street: int
    hole: tuple[str, str]
    board: tuple[str, ...]
    pot: int
    to_call: int
    my_bet: int
    my_stack: int
    their_stack: int
    min_raise_to: int | None
    max_raise_to: int | None
    on_button: bool
    raised_this_street: bool
    """Whether this seat already bet or raised on this street."""
    preflop_aggressor: bool
    """Whether this seat made the last preflop bet or raise."""


@dataclass
class HandTable:
    """A pokerkit state dealt from a fixed deck, with the actions taken written down."""

    deck: list[str]
    state: State = field(init=False)
    events: list[Event] = field(default_factory=list)
    folded: int | None = None
    final_pot: int = 0
    """Chips in the pot after the latest action (the whole pot once the hand is over)."""
    holes: tuple[tuple[str, str], tuple[str, str]] = field(init=False)
    _board: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.state = NoLimitTexasHoldem.create_state(
            _AUTOMATIONS, True, 0, (SMALL_BLIND, BIG_BLIND), BIG_BLIND, (STACK, STACK), 2)
        # hole cards: deck[0:2] to seat 0, deck[2:4] to seat 1; board deck[4:9]; pokerkit
        # burns from the front of its deck, so the board cards go to its end
        self.holes = ((self.deck[0], self.deck[1]), (self.deck[2], self.deck[3]))
        self._board = self.deck[4:9]
        pending = self.state.deck_cards
        pending.clear()
        pending.extend(next(iter(Card.parse(c)))
                       for c in self.deck[:4] + self.deck[9:] + self.deck[4:9])
        self._deal()

    def _deal(self) -> None:
        """Deal whatever pokerkit waits for (hole cards, the next street) from the deck."""
        s = self.state
        while s.status and (s.can_deal_hole() or s.can_deal_board()):
            if s.can_deal_hole():
                seat = s.hole_dealee_index
                assert seat is not None
                s.deal_hole("".join(self.holes[seat]))
            else:
                n, count = len(self.board), s.board_dealing_count
                assert count is not None
                s.deal_board("".join(self._board[n:n + count]))

    @property
    def over(self) -> bool:
        return not self.state.status

    @property
    def actor(self) -> int | None:
        return None if self.over else self.state.actor_index

    def hole(self, seat: int) -> tuple[str, str]:
        return self.holes[seat]

    @property
    def board(self) -> tuple[str, ...]:
        return tuple(repr(c) for row in self.state.board_cards for c in row)

    @property
    def street(self) -> int:
        index = self.state.street_index
        return 3 if index is None else int(index)

    def spot(self, seat: int) -> Spot:
        s = self.state
        bets = [int(b) for b in s.bets]
        can_raise = s.can_complete_bet_or_raise_to()
        street = self.street
        aggression = [e for e in self.events if e.verb in ("bets", "raises")]
        return Spot(
            seat, street, self.hole(seat), self.board,
            pot=2 * STACK - int(s.stacks[0]) - int(s.stacks[1]),
            to_call=int(s.checking_or_calling_amount or 0),
            my_bet=bets[seat], my_stack=int(s.stacks[seat]),
            their_stack=int(s.stacks[1 - seat]),
            min_raise_to=int(s.min_completion_betting_or_raising_to_amount or 0)
            if can_raise else None,
            max_raise_to=int(s.max_completion_betting_or_raising_to_amount or 0)
            if can_raise else None,
            on_button=seat == BUTTON_SEAT,
            raised_this_street=any(e.street == street and e.seat == seat for e in aggression),
            preflop_aggressor=any(e.seat == seat for e in aggression if e.street == 0)
            and [e for e in aggression if e.street == 0][-1].seat == seat)

    def fold(self) -> None:
        self._record("folds", 0, 0)
        self.folded = self.state.actor_index
        self.state.fold()
        self._deal()

    def check_or_call(self) -> None:
        verb = "calls" if self.state.checking_or_calling_amount else "checks"
        seat = self.state.actor_index
        assert seat is not None
        to = int(self.state.bets[seat]) + int(self.state.checking_or_calling_amount or 0)
        self._record(verb, to if verb == "calls" else 0,
                     int(self.state.checking_or_calling_amount or 0), all_in=verb == "calls" and to - int(self.state.bets[seat])
                     >= int(self.state.stacks[seat]))
        self.state.check_or_call()
        self._deal()

    def act(self, verb: str, amount: int | None = None) -> None:
        """One decision: ``FOLD``, ``RAISE`` to ``amount``, anything else a check or call."""
        if verb == "FOLD":
            self.fold()
        elif verb == "RAISE" and amount is not None:
            self.raise_to(amount)
        else:
            self.check_or_call()

    def play_out(self, seat: int, rule: Callable[[Spot], tuple[str, int | None]]) -> None:
        """``seat`` decides by ``rule`` until another seat is to act or the hand is over."""
        while not self.over and self.actor == seat:
            self.act(*rule(self.spot(seat)))

    def raise_to(self, amount: int) -> None:
        seat = self.state.actor_index
        assert seat is not None
        verb = "raises" if self.street == 0 or self.state.checking_or_calling_amount else "bets"
        all_in = amount >= int(self.state.stacks[seat]) + int(self.state.bets[seat])
        self._record(verb, amount, amount - int(self.state.bets[seat]), all_in=all_in)
        self.state.complete_bet_or_raise_to(amount)
        self._deal()

    def _record(self, verb: str, to: int, added: int, all_in: bool = False) -> None:
        seat = self.state.actor_index
        assert seat is not None
        self.final_pot = 2 * STACK - int(self.state.stacks[0]) - int(self.state.stacks[1]) + added
        self.events.append(Event(self.street, seat, verb, to, all_in))

    def net(self, seat: int) -> int:
        """Chips won (or lost, negative) by ``seat`` once the hand is over."""
        return int(self.state.stacks[seat]) - STACK

    @property
    def showdown(self) -> bool:
        return self.over and self.folded is None

