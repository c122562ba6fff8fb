"""Verify hand histories, one at a time or a table's hands as one chain.

A hand history (:func:`ofc.codec.hand_history`, the JSON that ``ofc play`` prints and
the live tables store) says how one hand was dealt, played and scored. :func:`verify_history`
checks it without trusting whoever produced it and returns ``None`` when everything holds,
else the first :class:`Discrepancy`: a stable :class:`Code`, a ``location`` (a JSON path
into the history, e.g. ``actions[7].placements[0][0]``) and a message for people.
:func:`check_history` also returns notes (``check_policy``: "not checkable with this
release"); :func:`verify_match` checks a table's hands as one chain, with the settlement
feed's records (:mod:`ofc.verify.match`).

The checks, in the order they run (the first that fails is the answer):

1. ``NEWER_FORMAT_VERSION``: a version newer than this verifier reads.
   ``MALFORMED_HISTORY``: not a history of its version (not JSON, a key missing, a value of
   the wrong type, a card that is not one of the 52, a value not in its canonical form).
2. ``COMMITMENT_MISMATCH``: ``SHA-256(server_seed)`` is not ``commitment``.
3. ``DECK_MISMATCH``: the hand was not played with the re-derived deck, i.e. with
   ofc-shuffle-v1 of (``server_seed``, ``client_seed``, nonce ``hand_number``): the
   ``start_hand`` action carries other seeds, or the initial state starts another hand
   number (``initial_state.hands_played + 1``).
4. ``RULESET_MISMATCH`` (only when the caller names the ruleset agreed for the match): a
   parameter of ``initial_state.ruleset`` differs from it.
5. ``ILLEGAL_ACTION`` at ``actions[0]``: the hand cannot start from ``initial_state``.
6. ``DEAL_MISMATCH``: ``deals`` is not the deal order of :mod:`ofc.engine` applied to the
   re-derived deck.
7. Replaying ``actions`` through :func:`ofc.engine.apply` from the initial state:
   ``TIMEOUT_MISMATCH`` (a timeout's recorded move is another seat's, or at another time),
   ``ILLEGAL_ACTION`` (an action, or a timeout's recorded move, is refused: the engine's
   reason starts the message), ``DEADLINE_MISMATCH`` and ``TIMEOUT_BEFORE_DEADLINE``
   (version 3 with a clock: a timeout's deadline is not its clock's, or the timeout came
   before it), ``POLICY_MISMATCH`` (``check_policy``: the named policy, shipped by this
   release, chooses another move), ``POLICY_UNKNOWN`` (``check_policy``: a name of this
   project's policy that no release wrote), ``INCOMPLETE_HAND`` (the actions end before every
   board is complete). A timeout's move is data: no policy is run to verify it.
8. The rest of the history is recomputed from ``initial_state``, ``actions`` and the
   table's context and compared key by key, in document order: ``HEADER_MISMATCH``
   (``ruleset``, ``button``, ``order``, ``players``), ``BOARD_MISMATCH`` (``boards``,
   discards included) and ``SETTLEMENT_MISMATCH`` (``settlement``, every number of it,
   ``fantasyland_next``, ``button_next``; a ``button_next`` at a seat the button passes,
   empty when the hand began, is a seat taken during the hand: noted, and a match requires
   a first part of the next hand's ``seat_changes`` that leaves the button there).

Every version ever written is read (docs/hand-history.md, "Versions and compatibility").
Keys at the top level that a version does not define (the live tables add ``table_id`` and
``settled_at_ms``) are not checked.

>>> history = example_history()
>>> verify_history(history) is None
True
>>> points = history["settlement"]["players"][0]["points"]
>>> history["settlement"]["players"][0]["points"] += 1
>>> str(verify_history(history)) == (
...     f"SETTLEMENT_MISMATCH at settlement.players[0].points: "
...     f"recorded {points + 1}, recomputed {points}"
... )
True
"""

from __future__ import annotations

from typing import Any

from ofc.codec import HandContext, TurnClock, hand_history
from ofc.engine import SitDown, StartHand, new_match, replay
from ofc.policy import play_by_timeouts
from ofc.rulesets import Ruleset
from ofc.verify.codes import UNREADABLE, Code, Discrepancy, MatchDiscrepancy, Verdict
from ofc.verify.hand import SECTION_CODES, check_hand
from ofc.verify.match import MatchReport, money_at, verify_match
from ofc.verify.values import Found, loads, unwrap

__all__ = [
    "SECTION_CODES",
    "UNREADABLE",
    "Code",
    "Discrepancy",
    "MatchDiscrepancy",
    "MatchReport",
    "Verdict",
    "check_history",
    "check_history_json",
    "example_history",
    "money_at",
    "read_document",
    "verify_history",
    "verify_history_json",
    "verify_match",
]


def check_history(
    history: Any, *, expected_ruleset: Ruleset | None = None, check_policy: bool = False
) -> Verdict:
    """Every check of ``history`` (parsed JSON): the first discrepancy, if any, and notes.

    ``expected_ruleset``: the ruleset agreed for the match; when given, the history's
    parameters must equal it (``RULESET_MISMATCH`` otherwise). ``check_policy``: re-run each
    timeout's named policy when this release ships it (``POLICY_MISMATCH``), refuse a name of
    this project's policy that no release wrote (``POLICY_UNKNOWN``), else note that it is
    not checkable. Never raises for bad input.

    >>> check_history(example_history(), check_policy=True).ok
    True
    """
    try:
        checked = check_hand(history, expected_ruleset=expected_ruleset, check_policy=check_policy)
    except Found as stop:
        return Verdict(stop.discrepancy)
    return Verdict(None, checked.notes)


def verify_history(history: Any, *, expected_ruleset: Ruleset | None = None) -> Discrepancy | None:
    """``None`` when ``history`` (parsed JSON) passes every check, else the first discrepancy.

    >>> from ofc.rulesets import get_ruleset
    >>> print(verify_history(example_history(), expected_ruleset=get_ruleset("turbo")))
    RULESET_MISMATCH at initial_state.ruleset.streets[1][0]: recorded 1, expected 4
    >>> print(verify_history([]))
    MALFORMED_HISTORY: a hand history is a JSON object, not a list
    """
    return check_history(history, expected_ruleset=expected_ruleset).discrepancy


def read_document(text: str | bytes) -> Any:
    """The history in ``text``: the bare history, or a ``GetHandHistoryResponse`` as protobuf
    JSON (its ``historyJson``). Parsed strictly: text that is not JSON, repeats a key in an
    object or uses ``NaN``/``Infinity`` raises ``Found`` (``MALFORMED_HISTORY``), since two
    JSON readers must not be able to read different histories from one file."""
    return unwrap(loads(text))


def check_history_json(
    text: str | bytes, *, expected_ruleset: Ruleset | None = None, check_policy: bool = False
) -> Verdict:
    """:func:`check_history` of a JSON document (UTF-8 when bytes; see :func:`read_document`).

    >>> check_history_json('{"historyJson": "{\\\\"format_version\\\\": 9}"}').discrepancy.code
    <Code.NEWER_FORMAT_VERSION: 'NEWER_FORMAT_VERSION'>
    """
    try:
        data = read_document(text)
    except Found as stop:
        return Verdict(stop.discrepancy)
    return check_history(data, expected_ruleset=expected_ruleset, check_policy=check_policy)


def verify_history_json(
    text: str | bytes, *, expected_ruleset: Ruleset | None = None
) -> Discrepancy | None:
    """:func:`verify_history` of a JSON document (UTF-8 when bytes).

    >>> print(verify_history_json('{"format_version": 1, "format_version": 1}'))
    MALFORMED_HISTORY: not JSON: the key 'format_version' appears twice in one object
    """
    return check_history_json(text, expected_ruleset=expected_ruleset).discrepancy


def example_history(
    seats: int = 2, *, ruleset: str = "classic", clock: TurnClock | None = None
) -> dict[str, Any]:
    """A small, valid history (the timeout policy plays every seat): for examples and tests.
    With ``clock``, each timeout comes at its deadline and records it.

    >>> h = example_history(3, ruleset="pineapple")
    >>> h["ruleset"], len(h["players"]), h["actions"][0]["type"], h["format_version"]
    ('pineapple', 3, 'start_hand', 3)
    """
    sit = tuple(SitDown(s, f"player-{s}") for s in range(seats))
    table, _ = replay(new_match(ruleset, seats=seats), sit)
    actions = play_by_timeouts(table, StartHand(bytes(range(32)), b"example"), clock=clock)
    context = HandContext(clock=clock, seat_units=(0,) * seats, seat_changes=sit)
    return hand_history(table, actions, context)
