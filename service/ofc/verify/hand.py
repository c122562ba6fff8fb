"""Verifying one hand history: steps 2 to 8 (step 1, its shape, is :mod:`ofc.verify.shape`).

:func:`check_hand` runs every step and returns what it found out, so that
:mod:`ofc.verify.match` can chain hands: the history as read and the match right after the
hand. The public functions are in :mod:`ofc.verify`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ofc.cards import card_codes
from ofc.codec import action_to_dict, history_from_replay, state_as_written
from ofc.engine import (
    Action,
    CardsDealt,
    Event,
    MatchState,
    StartHand,
    Timeout,
    apply,
    deal_positions,
    seats_to_act,
)
from ofc.errors import OfcError
from ofc.policy import (
    identity,
    is_newer_policy,
    is_unwritten_policy,
    policy_named,
    unwritten_policy,
)
from ofc.rulesets import Ruleset
from ofc.shuffle import commitment, deal_deck
from ofc.verify.codes import Code
from ofc.verify.shape import CONTEXT_KEYS, History, at, read
from ofc.verify.values import compare, found

# The keys of a history in document order, with the code a difference in each is reported
# under. Step 8 compares every one but ``actions`` (checked one by one in steps 1 and 7)
# with the recomputed history; version 3's context keys are checked in step 1.
SECTION_CODES: Mapping[str, Code] = {
    "format_version": Code.MALFORMED_HISTORY,
    "algorithm": Code.MALFORMED_HISTORY,
    "ruleset": Code.HEADER_MISMATCH,
    "hand_number": Code.DECK_MISMATCH,
    "server_seed": Code.DECK_MISMATCH,
    "client_seed": Code.DECK_MISMATCH,
    "commitment": Code.COMMITMENT_MISMATCH,
    "button": Code.HEADER_MISMATCH,
    "order": Code.HEADER_MISMATCH,
    "players": Code.HEADER_MISMATCH,
    "initial_state": Code.MALFORMED_HISTORY,
    "deals": Code.DEAL_MISMATCH,
    "actions": Code.MALFORMED_HISTORY,
    "boards": Code.BOARD_MISMATCH,
    "settlement": Code.SETTLEMENT_MISMATCH,
    "fantasyland_next": Code.SETTLEMENT_MISMATCH,
    "button_next": Code.SETTLEMENT_MISMATCH,
    **{key: Code.MALFORMED_HISTORY for key in CONTEXT_KEYS},
}


@dataclass(frozen=True, slots=True)
class CheckedHand:
    """A history that passed every check: as read, and the match right after the hand
    (its finished hand dropped: the table between hands)."""

    history: History
    final: MatchState
    notes: tuple[str, ...]
    # the seat the button moved to that was empty when the hand began (someone sat down
    # there during the hand: the next hand's seat_changes must show it), or None
    button_taken_seat: int | None = None


def check_hand(
    data: Any, *, expected_ruleset: Ruleset | None = None, check_policy: bool = False
) -> CheckedHand:
    """Every check, in order; raises :class:`~ofc.verify.values.Found` at the first that
    fails."""
    history = read(data)
    raw = history.raw
    server_seed = bytes.fromhex(raw["server_seed"])
    client_seed = bytes.fromhex(raw["client_seed"])
    if commitment(server_seed) != raw["commitment"]:
        raise found(
            Code.COMMITMENT_MISMATCH,
            "commitment",
            f"SHA-256 of server_seed is {commitment(server_seed)}, not {raw['commitment']}",
        )
    _check_deck_inputs(history, server_seed, client_seed)
    if expected_ruleset is not None:
        # The name last: a house ruleset's ("pineapple+custom") says only that the rules
        # differ, the first parameter that differs says how.
        expected = expected_ruleset.to_dict()
        compare(
            {**{k: v for k, v in expected.items() if k != "name"}, "name": expected["name"]},
            raw["initial_state"]["ruleset"],
            "initial_state.ruleset",
            Code.RULESET_MISMATCH,
            "expected",
        )
    started, start_events = _apply_events(history.initial, history.actions[0], 0)
    jokers = history.initial.ruleset.jokers
    deck = card_codes(deal_deck(server_seed, client_seed, raw["hand_number"], jokers=jokers))
    _check_deals(started, raw["deals"], deck)
    replay = _Replay(history, check_policy)
    final = replay.run(started, start_events)
    taken = _button_to_a_seat_taken(history, final)
    if taken is not None:
        final = dataclasses.replace(final, button=taken)
        replay.notes.append(
            f"button_next: seat {taken}, empty when the hand began: taken during the hand, "
            "as only the next hand's seat_changes can show (a match with that hand checks it)"
        )
    _check_recomputed(history, final, replay.events)
    return CheckedHand(history, dataclasses.replace(final, hand=None), tuple(replay.notes), taken)


def _button_to_a_seat_taken(history: History, final: MatchState) -> int | None:
    """The recorded ``button_next`` when it is a seat the button passed on its way to the
    replay's, empty when the hand began, else None (the replay's stands).

    A seat may be taken while a hand is played (not in it); the button moves, as the hand
    ends, to the next seat taken then, so it stops at such a seat. Its sit-down is recorded
    in the next hand's ``seat_changes`` only: one hand cannot show it, a match can."""
    recorded = history.raw["button_next"]
    start = history.initial
    if recorded == final.button or final.button == start.button:  # matches, or did not move
        return None
    count = len(start.seats)
    passed = ((start.button + k) % count for k in range(1, (final.button - start.button) % count))
    if recorded in {seat for seat in passed if not start.seats[seat].occupied}:
        return int(recorded)
    return None


def _check_deck_inputs(history: History, server_seed: bytes, client_seed: bytes) -> None:
    start = history.actions[0]
    assert isinstance(start, StartHand)
    for name, committed, used in (
        ("server_seed", server_seed, start.server_seed),
        ("client_seed", client_seed, start.client_seed),
    ):
        if used != committed:
            raise found(
                Code.DECK_MISMATCH,
                f"actions[0].{name}",
                f"the hand was started with {name} {used.hex()!r}, not the history's "
                f"{committed.hex()!r}: it was not played with the re-derived deck",
            )
    number = history.raw["hand_number"]
    if number != history.initial.hands_played + 1:
        raise found(
            Code.DECK_MISMATCH,
            "hand_number",
            f"the deck is re-derived with nonce hand_number {number}, but the initial state "
            f"(hands_played {history.initial.hands_played}) starts hand "
            f"{history.initial.hands_played + 1}",
        )


def _apply_events(state: MatchState, action: Action, index: int) -> tuple[MatchState, Any]:
    try:
        return apply(state, action)
    except OfcError as exc:
        field = exc.field
        if isinstance(action, Timeout) and (field == "move" or field.startswith("move.")):
            field = "resolved" + field.removeprefix("move")  # the move is `resolved` in JSON
        raise found(
            Code.ILLEGAL_ACTION, at(f"actions[{index}]", field), f"{exc.reason}: {exc.message}"
        ) from None


def _check_deals(started: MatchState, deals: list[Any], deck: list[str]) -> None:
    """Step 6: the batches the deal order gives, from the re-derived deck, one by one."""
    hand = started.hand
    assert hand is not None
    ruleset = started.ruleset
    positions = deal_positions(hand, ruleset)
    # The deal order: Fantasyland blocks in turn order, then street by street in turn order.
    expected: list[tuple[int, int | None, int]] = [
        (s.seat, None, s.fantasyland) for s in hand.seats if s.in_fantasyland
    ]
    expected += [
        (s.seat, street_index, street.deal)
        for street_index, street in enumerate(ruleset.streets)
        for s in hand.seats
        if not s.in_fantasyland
    ]
    for k, (seat, street, count) in enumerate(expected):
        path = f"deals[{k}]"
        position = positions[(seat, street)]
        what = f"{count} card(s) for seat {seat}, street {_street(street)}, from {position}"
        if k >= len(deals):
            raise found(Code.DEAL_MISMATCH, path, f"missing: batch {k} of the deal is {what}")
        deal = deals[k]
        for key, value in (("seat", seat), ("street", street), ("position", position)):
            if deal[key] != value:
                raise found(
                    Code.DEAL_MISMATCH,
                    f"{path}.{key}",
                    f"recorded {deal[key]!r}; batch {k} of the deal is {what}",
                )
        if deal["count"] != count:
            raise found(
                Code.DEAL_MISMATCH,
                f"{path}.count",
                f"recorded {deal['count']!r}; batch {k} of the deal is {what}",
            )
        compare(
            deck[position : position + count],
            deal["cards"],
            f"{path}.cards",
            Code.DEAL_MISMATCH,
            f"the deck from position {position} has",
        )
    if len(deals) > len(expected):
        raise found(
            Code.DEAL_MISMATCH,
            f"deals[{len(expected)}]",
            f"extra: the deal order has {len(expected)} batches",
        )


def _street(street: int | None) -> str:
    return "null (Fantasyland)" if street is None else str(street)


class _Replay:
    """Step 7: every action through the engine, a timeout's recorded move included; with a
    clock, each timeout's deadline against the clock rule (docs/hand-history.md, "Turn
    clocks"); with ``check_policy``, each named policy this release ships re-run."""

    def __init__(self, history: History, check_policy: bool) -> None:
        self.history = history
        self.check_policy = check_policy
        context = history.context
        self.clock = None if context is None else context.clock
        self.dealt_at: dict[int, int] = {}  # seat -> when its current batch was dealt
        self.hand_started_at = history.actions[0].at_ms
        self.notes: list[str] = []
        self.events: list[Event] = []  # every event of the hand, for step 8

    def run(self, started: MatchState, start_events: tuple[Event, ...]) -> MatchState:
        history = self.history
        self._clock_starts(start_events, self.hand_started_at)
        self.events.extend(start_events)
        state = started
        for index, action in enumerate(history.actions[1:], start=1):
            if isinstance(action, Timeout):
                self._check_timeout_move(action, index)
            before = state
            state, events = _apply_events(state, action, index)
            if isinstance(action, Timeout):
                self._check_deadline(before, action, index)
                if self.check_policy:
                    self._check_policy(before, action, index)
            self._clock_starts(events, action.at_ms)
            self.events.extend(events)
        waiting = seats_to_act(state)
        if waiting:
            raise found(
                Code.INCOMPLETE_HAND,
                f"actions[{len(history.actions)}]",
                f"the actions end with the hand in progress: the table waits for seat(s) "
                f"{', '.join(map(str, waiting))}",
            )
        self.notes = list(dict.fromkeys(self.notes))
        return state

    def _clock_starts(self, events: tuple[Event, ...], at_ms: int) -> None:
        for event in events:
            if isinstance(event, CardsDealt) and event.street is not None:
                self.dealt_at[event.seat] = at_ms

    @staticmethod
    def _check_timeout_move(action: Timeout, index: int) -> None:
        for key, own in (("seat", action.seat), ("at_ms", action.at_ms)):
            made = getattr(action.move, key)
            if made != own:
                raise found(
                    Code.TIMEOUT_MISMATCH,
                    f"actions[{index}].resolved.{key}",
                    f"recorded {made!r}, the timeout's own {key} is {own!r}",
                )

    def _check_deadline(self, before: MatchState, action: Timeout, index: int) -> None:
        clock = self.clock
        if clock is None or action.deadline_ms is None:
            return
        hand = before.hand
        assert hand is not None
        if hand.seat(action.seat).in_fantasyland:
            started, limit, what = (
                self.hand_started_at,
                clock.fantasyland_time_limit_ms,
                "a Fantasyland seat's clock runs from the hand's start",
            )
        else:
            started, limit, what = (
                self.dealt_at[action.seat],
                clock.turn_time_limit_ms,
                "a turn's clock runs from the deal of the seat's batch",
            )
        path = f"actions[{index}]"
        if action.deadline_ms != started + limit:
            raise found(
                Code.DEADLINE_MISMATCH,
                f"{path}.deadline_ms",
                f"recorded {action.deadline_ms}; {what} ({started}) for {limit} ms: "
                f"{started + limit}",
            )
        if action.at_ms < action.deadline_ms:
            raise found(
                Code.TIMEOUT_BEFORE_DEADLINE,
                f"{path}.at_ms",
                f"the timeout at {action.at_ms} comes {action.deadline_ms - action.at_ms} ms "
                f"before the seat's deadline {action.deadline_ms}",
            )

    def _check_policy(self, before: MatchState, action: Timeout, index: int) -> None:
        name = action.policy
        policy = policy_named(name)
        if policy is None:
            if name is None:
                why = f"the history (format version {self.history.version}) names no policy"
            elif is_unwritten_policy(name):
                raise found(Code.POLICY_UNKNOWN, f"actions[{index}].policy", unwritten_policy(name))
            elif is_newer_policy(name):
                why = f"the policy {name!r} is newer than this release ships"
            else:
                why = f"the policy {name!r} is not one this release ships"
            self.notes.append(f"timeout policy not checkable with this release: {why}")
            return
        chosen = dataclasses.replace(policy.choose(before, action.seat), at_ms=action.at_ms)
        compare(
            action_to_dict(chosen),
            action_to_dict(action.move),
            f"actions[{index}].resolved",
            Code.POLICY_MISMATCH,
            f"{identity(policy)} chooses",
        )


def _check_recomputed(history: History, final: MatchState, events: list[Event]) -> None:
    """Step 8: the history the engine writes for this start, these actions (as step 7
    replayed them) and this context, key by key, in the history's own version."""
    expected = history_from_replay(
        history.initial, history.actions, final, events, history.context, version=history.version
    )
    # the initial state in its writer's form (stakes in a version-1 state: 75a55fb to c3fb462)
    expected["initial_state"] = state_as_written(history.initial, history.raw["initial_state"])
    for key, code in SECTION_CODES.items():
        if key != "actions" and key in expected:
            compare(expected[key], history.raw[key], key, code, "recomputed")


__all__ = ["SECTION_CODES", "CheckedHand", "check_hand"]
