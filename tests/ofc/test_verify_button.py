"""The button after a hand in which a seat was taken (by someone not in the hand).

The engine moves the button, as the hand ends, to the next seat taken then, so it may stop at
a seat taken during the hand; that sit-down is recorded in the next hand's ``seat_changes``
only, in the order the table accepted the changes (those made during the hand first). These
hands are played with the core API and written as a live table writes them
(:func:`~ofc.codec.history_of_hand`, with the table's context), then verified: one hand alone
accepts such a ``button_next`` with a note, and a match requires that some first part of the
next hand's ``seat_changes`` leaves it the next seat taken after the button.
"""

from __future__ import annotations

import copy
from typing import Any

from ofc import engine
from ofc.codec import HandContext, history_of_hand
from ofc.policy import timeout
from ofc.shuffle import commitment
from ofc.verify import Code, check_history, verify_match

SEEDS = [bytes([21 + k]) * 32 for k in range(3)]


def hand(
    table: engine.MatchState,
    k: int,
    before: tuple[engine.SitDown | engine.StandUp, ...],
    during: tuple[engine.SitDown | engine.StandUp, ...],
    money: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], engine.MatchState]:
    """Hand ``k + 1`` of ``table``, ``before`` the seat changes since the hand before began,
    ``during`` made after its first move, the seats' money that left by the hand ``money``
    (None: none yet): its history and the table after it."""
    clock = 1_000 * (k + 1)
    actions: list[engine.Action] = [engine.StartHand(SEEDS[k], b"button", clock)]
    state, events = engine.apply(table, actions[0])
    made = list(during)
    while waiting := engine.seats_to_act(state):
        actions.append(timeout(state, waiting[0], at_ms=clock + len(actions)))
        state, events = engine.apply(state, actions[-1])
        while made and not state.hand.over:  # type: ignore[union-attr]
            state, _ = engine.apply(state, made.pop(0))
    settled = next(e for e in events if isinstance(e, engine.HandSettled))
    units = [0] * len(table.seats)
    changed = {c.seat for c in before}
    for player in money["settlement"]["players"] if money is not None else ():
        if money is not None and player["seat"] not in changed:
            units[player["seat"]] = money["seat_units"][player["seat"]] + player["units"]
    context = HandContext(commitment(SEEDS[k + 1]), None, tuple(units), before)
    return history_of_hand(table, actions, state, settled, context), state


def test_a_button_stopped_at_a_seat_taken_during_the_hand_is_checked_in_change_order() -> None:
    # four seats, ann at 0 (the button) and dee at 3; bob takes seat 2 during hand 1, so the
    # button stops there; cy takes seat 1 between hands
    joined = (engine.SitDown(0, "ann", 1), engine.SitDown(3, "dee", 2))
    table, _ = engine.replay(engine.new_match("classic", seats=4), joined)
    bob = engine.SitDown(2, "bob", 1_500)
    first, after = hand(table, 0, joined, (bob,))
    assert (first["button"], first["button_next"]) == (0, 2)
    cy = engine.SitDown(1, "cy", 1_900)
    table, _ = engine.apply(after, cy)
    second, _ = hand(table, 1, (bob, cy), (), first)
    hands = [("hand 1", first), ("hand 2", second)]
    alone = check_history(first)
    assert alone.ok and alone.notes == (
        "button_next: seat 2, empty when the hand began: taken during the hand, as only the "
        "next hand's seat_changes can show (a match with that hand checks it)",
    )
    assert verify_match(hands).ok
    assert verify_match(hands[:1]).notes[-1] == (
        "hand 1: button_next 2, a seat taken during the hand, not confirmed: the match has no "
        "next hand that records its seat changes"
    )

    def found(edit: Any) -> list[tuple[Code, str, str]]:
        changed = copy.deepcopy(hands)
        edit(changed[1][1]["seat_changes"])
        return [(d.code, d.source, d.location) for d in verify_match(changed).discrepancies]

    # cy's sit-down first: before hand 1 ended it stops the button at seat 1, after it so
    # had bob's, and the button goes on to dee's seat: no order gives seat 2
    assert found(lambda changes: changes.reverse()) == [
        (Code.CHAIN_STATE_MISMATCH, "hand 1", "button_next")
    ]
    # bob's sit-down left out: nobody took seat 2 (and he is not at hand 2's table)
    assert found(lambda changes: changes.pop(0))[0] == (
        Code.CHAIN_STATE_MISMATCH, "hand 1", "button_next",
    )  # fmt: skip


def test_a_stand_up_of_a_seat_that_played_ends_the_changes_made_during_the_hand() -> None:
    """A seat that played the hand stands up only once it is over: no sit-down after such a
    stand-up was made during the hand, so it cannot have stopped the button."""
    joined = (engine.SitDown(0, "ann", 1), engine.SitDown(3, "dee", 2))
    table, _ = engine.replay(engine.new_match("classic", seats=4), joined)
    first, after = hand(table, 0, joined, ())
    assert first["button_next"] == 3
    ann_leaves, bob = engine.StandUp(0, 1_900), engine.SitDown(2, "bob", 1_950)
    table, _ = engine.replay(after, (ann_leaves, bob))
    second, _ = hand(table, 1, (ann_leaves, bob), (), first)
    forged = copy.deepcopy(first)
    forged["button_next"] = 2  # bob's seat, as if he had sat down during hand 1
    assert check_history(forged).ok  # alone: a seat the button passes, empty at the start
    found = verify_match([("hand 1", forged), ("hand 2", second)]).discrepancies
    assert [(d.code, d.source, d.location) for d in found] == [
        (Code.CHAIN_STATE_MISMATCH, "hand 1", "button_next"),  # bob sat down after ann left
        (Code.CHAIN_STATE_MISMATCH, "hand 2", "initial_state.button"),
    ]
