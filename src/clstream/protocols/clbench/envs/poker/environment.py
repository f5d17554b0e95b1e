"""Exploitable poker (strategic game-playing; docs/clbench.md §4.4; paper App. A.5).

Heads-up no-limit hold'em against named, deterministic and exploitable opponents
(:mod:`.opponents`). Each hand is one instance: both stacks start at 1000 chips, blinds
5/10, and the reward is the chips the system won or lost divided by the big blind (-100 to
+100). The system holds the button on odd-numbered hands. The rules, the legal actions and the
showdown are pokerkit's (:mod:`.game`); the cards of a hand are fixed by (seed, stage,
hand), so every arm and rollout order plays the same cards for the same hand.

Stages (default 20/30/10/35/25 hands): Tom the calling station, Alex the loose-aggressive
player, Tom again, Adam who plays fit-or-fold, Alex again. A stateful run entering a stage
is told "You are now playing against <Name>."; every observation also names the opponent, so
what a stateless player lacks is only the opponent's tendencies.

An action is ``{"action": "FOLD" | "CHECK" | "CALL" | "RAISE", "amount": <raise-to> | null}``;
an illegal one is rejected with the reason and counts towards the invalid-action cap. When
the cap ends a hand, the rest of it plays itself with the system checking when it can and
folding to any bet (a card room's rule for a player out of time); the reward is that hand's
result, so at worst the chips already put in. When
the opponent folds before the system's first decision (Adam folding his small blind), the hand
is already won and any well-formed action acknowledges it.

r_max is computed for the seed: the mean over its hands of each hand's clairvoyant best result
(:mod:`.ceiling`), recorded with the oracle exploiter's mean and the authors' 9.4875.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, ClassVar

from clstream.core.environment import ActionError, OrderPolicy, Schedule
from clstream.protocols.clbench.envs.base import EnvironmentBase, Outcome, build_schedule
from clstream.protocols.clbench.envs.poker.ceiling import hand_ceiling
from clstream.protocols.clbench.envs.poker.game import (
    BIG_BLIND,
    BLIND_SEAT,
    BUTTON_SEAT,
    SMALL_BLIND,
    STACK,
    STREETS,
    Event,
    HandTable,
    hand_deck,
    holding,
)
from clstream.protocols.clbench.envs.poker.opponents import OPPONENTS, RULES
from clstream.protocols.clbench.envs.poker.policy import OracleExploiter

VARIANTS = ("calling_station", "loose_aggressive", "calling_station", "fit_or_fold",
            "loose_aggressive")
SCHEDULES: dict[str, tuple[int, ...]] = {"default": (20, 30, 10, 35, 25),
                                         "short": (3, 3, 2, 4, 3)}
ACTIONS = ("FOLD", "CHECK", "CALL", "RAISE")
AUTHORS_R_MAX = 9.4875
"""The authors' r_max, BB per hand: their expert policy (knowing each opponent's strategy, not
its cards) on their engine, opponents and fixed hands (paper App. A.5). Recorded beside this
task's own ceiling, never used as it: it is neither a bound nor from these opponents."""

INSTRUCTIONS = (
    "You play heads-up no-limit Texas hold'em, one hand at a time, against the opponent named "
    "in each observation. Every hand starts with 1000 chips each and blinds of 5 and 10; the "
    "button posts the small blind and acts first before the flop, last after it, and you hold "
    "the button on every other hand. Your reward for a hand is the chips you win or lose in it, "
    "counted in big blinds. Opponents play by fixed habits that you can learn and exploit; "
    "the same opponent keeps the same habits whenever you meet them again."
)
ACTION_FORMAT = (
    'Reply with one JSON object: {"action": "FOLD" | "CHECK" | "CALL" | "RAISE", "amount": '
    '<integer or null>}. For RAISE (which is also how you bet), amount is the total you raise '
    "to on this street, between the minimum and maximum shown; the maximum puts you all-in. "
    "Other actions take no amount."
)
ACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["action"],
    "properties": {"action": {"enum": list(ACTIONS)},
                   "amount": {"type": ["integer", "null"]}},
}


def street_history(events: list[Event], board: tuple[str, ...], name: str, me: int) -> str:
    """The betting of a hand so far, street by street, with the board each street showed."""
    shown = {0: "", 1: " ".join(board[:3]), 2: board[3] if len(board) > 3 else "",
             3: board[4] if len(board) > 4 else ""}
    parts = []
    for street, label in enumerate(STREETS):
        acts = [event_text(e, name, me) for e in events if e.street == street]
        if not acts and street > 0 and len(board) < street + 2:
            break
        head = f"{label} {shown[street]}".rstrip() if street else label
        parts.append(f"{head}: {', '.join(acts) if acts else 'no betting'}")
    return " | ".join(parts)


def event_text(event: Event, name: str, me: int) -> str:
    mine = event.seat == me
    who = "you" if mine else name
    verb = {"checks": "check", "calls": "call", "bets": "bet", "raises": "raise to",
            "folds": "fold"}[event.verb] if mine else event.verb.replace("raises", "raises to")
    text = f"{who} {verb}" + (f" {event.to}" if event.verb in ("bets", "raises") else "")
    return text + (" (all-in)" if event.all_in else "")


class PokerEnv(EnvironmentBase):
    """Exploitable poker: 120 hands against three named opponents in five stages."""

    name: ClassVar[str] = "exploitable_poker"
    order_policy: ClassVar[OrderPolicy] = OrderPolicy.STAGE_PERMUTE
    best_reward: ClassVar[float] = STACK / BIG_BLIND
    min_reward: ClassVar[float] = -STACK / BIG_BLIND
    max_steps: ClassVar[int] = 20
    instructions: ClassVar[str] = INSTRUCTIONS
    action_format: ClassVar[str] = ACTION_FORMAT
    action_schema: ClassVar[Mapping[str, Any]] = ACTION_SCHEMA

    def __init__(self, seed: int = 0, schedule: str = "default", max_invalid: int = 3) -> None:
        if schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {schedule!r}; known: {sorted(SCHEDULES)}")
        sizes = SCHEDULES[schedule]
        ids = [f"hand-{i + 1:03d}" for i in range(sum(sizes))]
        sched: Schedule = build_schedule(schedule, sizes, VARIANTS, ids)
        super().__init__(seed, sched, max_invalid)
        self._table: HandTable | None = None
        self._me = BUTTON_SEAT
        self._seen = 0  # events already shown to the system
        self._rule = RULES[VARIANTS[0]]

    def _params(self) -> dict[str, Any]:
        return {"stack": STACK, "blinds": [SMALL_BLIND, BIG_BLIND], "opponents": OPPONENTS}

    @property
    def r_max(self) -> float:
        """The mean over this seed's hands of the clairvoyant best result of each hand
        (:mod:`.ceiling`): no way of playing the schedule earns more."""
        best = self.hand_ceilings()
        return math.fsum(best.values()) / len(best)

    def hand_ceilings(self) -> dict[str, float]:
        """Per hand, the most the system can win in it (BB), every card and the opponent's
        rule known."""
        return dict(zip(self.schedule.instance_ids,
                        _ceilings(self.seed, tuple(self._hands())), strict=True))

    def _hands(self) -> list[tuple[int, int, str]]:
        return [(self.schedule.stage_of(i), self.schedule.canonical_index(i) + 1,
                 self.schedule.variant_of(i)) for i in self.schedule.instance_ids]

    def _ceiling(self) -> dict[str, Any]:
        return {"basis": "clairvoyant best response per hand, mean over this seed's hands",
                "best_reward": self.best_reward,
                "authors_r_max": AUTHORS_R_MAX,
                "oracle_exploiter": round(_exploiter(self.seed, self.schedule.name), 6)}

    def deck(self, instance_id: str) -> list[str]:
        """The cards of a hand in dealing order (system and opponent hole cards, board)."""
        hand = self.schedule.canonical_index(instance_id) + 1
        return hand_deck(self.seed, self.schedule.stage_of(instance_id), hand)

    def opponent(self, instance_id: str) -> str:
        return OPPONENTS[self.schedule.variant_of(instance_id)]

    def _notice(self, old_variant: str, new_variant: str) -> str:
        return f"You are now playing against {OPPONENTS[new_variant]}."

    def _enter(self, instance_id: str) -> None:
        hand = self.schedule.canonical_index(instance_id) + 1
        self._table = HandTable(self.deck(instance_id))
        self._me = BUTTON_SEAT if hand % 2 else BLIND_SEAT
        self._rule = RULES[self.schedule.variant_of(instance_id)]
        self._seen = 0
        self._opponent_plays()

    def _opponent_plays(self) -> None:
        """The opponent acts until it is the system's turn or the hand is over."""
        table = self._table
        assert table is not None
        table.play_out(1 - self._me, self._rule)

    # --- what the system sees -----------------------------------------------------------------

    def _observation(self, first: bool) -> str:
        table, me = self._table, self._me
        assert table is not None and self.current is not None
        name = self.opponent(self.current)
        spot = table.spot(me)
        new = [e for e in table.events[self._seen:] if e.seat != me]
        street = table.events[-1].street if table.over else table.street
        lines = [f"Hand {self.current} - {STREETS[street].upper()}",
                 f"Opponent: {name}",
                 "Position: you are on the button (small blind)" if me == BUTTON_SEAT
                 else "Position: you are the big blind",
                 f"Your cards: {' '.join(spot.hole)}",
                 f"Board: {' '.join(spot.board) or '(none yet)'}",
                 f"Pot: {spot.pot} | Your stack: {spot.my_stack} | {name}'s stack: "
                 f"{spot.their_stack}",
                 f"{name} since your last decision: "
                 + (", ".join(f"{event_text(e, name, me)} ({STREETS[e.street]})" for e in new)
                    or "nothing"),
                 f"Betting so far: {street_history(table.events, table.board, name, me)}"]
        if table.over:
            lines.append("The hand is already over: send any action (CHECK) to see the result.")
            return "\n".join(lines)
        lines.append(f"To call: {spot.to_call}")
        legal = ["FOLD", "CALL"] if spot.to_call else ["CHECK"]
        if spot.min_raise_to is not None:
            legal.append(f"RAISE (raise-to between {spot.min_raise_to} and {spot.max_raise_to})")
        lines.append(f"Legal actions: {', '.join(legal)}")
        return "\n".join(lines)

    def _check(self, action: dict[str, Any]) -> None:
        verb = action.get("action")
        if not isinstance(verb, str) or verb.strip().upper() not in ACTIONS:
            raise ActionError(f'"action" must be one of {", ".join(ACTIONS)}, got {verb!r}')
        verb = verb.strip().upper()
        amount = action.get("amount")
        table = self._table
        assert table is not None
        if table.over:
            return
        spot = table.spot(self._me)
        if verb == "RAISE":
            if isinstance(amount, bool) or not isinstance(amount, int | float) or (
                    isinstance(amount, float) and not amount.is_integer()):
                raise ActionError(f"RAISE needs an integer amount (the raise-to total), got "
                                  f"{amount!r}")
            if spot.min_raise_to is None or spot.max_raise_to is None:
                raise ActionError("raising is not allowed here (the opponent is all-in)")
            if not spot.min_raise_to <= int(amount) <= spot.max_raise_to:
                raise ActionError(f"the raise-to amount must be between {spot.min_raise_to} "
                                  f"and {spot.max_raise_to}, got {int(amount)}")
        elif verb == "CHECK" and spot.to_call:
            raise ActionError(f"you cannot check: {spot.to_call} to call (FOLD, CALL or RAISE)")
        elif verb in ("CALL", "FOLD") and not spot.to_call:
            raise ActionError(f"there is no bet to {verb.lower()}: CHECK or RAISE")

    def _apply(self, action: dict[str, Any]) -> Outcome:
        table = self._table
        assert table is not None and self.current is not None
        if not table.over:
            verb = str(action["action"]).strip().upper()
            before = len(table.events)
            if verb == "FOLD":
                table.fold()
            elif verb == "RAISE":
                table.raise_to(int(action["amount"]))
            else:
                table.check_or_call()
            mine = event_text(table.events[before], self.opponent(self.current), self._me)
            self._seen = len(table.events)
            self._opponent_plays()
            feedback = f"You {mine[4:]}."
        else:
            feedback = ""
        if not table.over:
            return Outcome(feedback)
        return self._result(feedback)

    def _result(self, feedback: str) -> Outcome:
        table = self._table
        assert table is not None and self.current is not None
        name, me = self.opponent(self.current), self._me
        net = table.net(me)
        verdict = "WON" if net > 0 else "LOST" if net < 0 else "TIED"
        lines = [feedback] if feedback else []
        lines.append(f"Hand {self.current} over: you {verdict} ({net:+d} chips, "
                     f"{net / BIG_BLIND:+g} BB).")
        # The opponent named again, so that the result is understood without the decision it
        # closes (a memory that keeps only an instance's closing feedback).
        lines.append(f"Opponent: {name}")
        if table.showdown:
            board = table.board
            mine, theirs = table.hole(me), table.hole(1 - me)
            lines.append(f"Showdown: board {' '.join(board)}; your {' '.join(mine)} "
                         f"({holding(mine, board).label}); {name} {' '.join(theirs)} "
                         f"({holding(theirs, board).label}).")
        elif table.folded is not None:
            lines.append(f"{'You' if table.folded == me else name} folded; no showdown.")
        lines.append(f"Hand history: {street_history(table.events, table.board, name, me)}")
        lines.append(f"Final pot {table.final_pot}; net change {net:+d} chips, "
                     f"stack {STACK + net}.")
        reward = net / BIG_BLIND
        return Outcome("\n".join(lines), True, reward, net > 0,
                       {"raw_metric": net, "showdown": table.showdown})

    def _forfeit(self) -> tuple[float, str]:
        """The rest of the hand plays itself: the system checks when it can and folds to a bet
        (what a card room does for a player whose time runs out)."""
        table = self._table
        assert table is not None
        while not table.over:
            if table.spot(self._me).to_call:
                table.fold()
            else:
                table.check_or_call()
            self._opponent_plays()
        outcome = self._result("Your remaining decisions were played as check or fold.")
        assert outcome.reward is not None
        return outcome.reward, outcome.feedback


@lru_cache(maxsize=64)
def _ceilings(seed: int, hands: tuple[tuple[int, int, str], ...]) -> tuple[float, ...]:
    """The clairvoyant best result of each (stage, hand number, variant), in BB: a few
    hundredths of a second a hand, kept for the process."""
    return tuple(hand_ceiling(seed, stage, hand, variant)[0] for stage, hand, variant in hands)


@lru_cache(maxsize=64)
def _exploiter(seed: int, schedule: str) -> float:
    """BB per hand of :class:`~.policy.OracleExploiter` (the opponents' rules known,
    their cards not) on this seed's hands: the figure recorded beside r_max."""
    env, policy, total = PokerEnv(seed, schedule), OracleExploiter(), 0.0
    for instance_id in env.schedule.instance_ids:
        query = env.begin(instance_id)
        while True:
            result = env.step(policy.act((), query.observation))
            if result.instance_complete:
                total += float(result.reward or 0.0)
                break
            assert result.next_query is not None
            query = result.next_query
    return total / len(env.schedule)
