"""Verify a hand history: commitment, deck, deals, actions, boards and settlement.

A hand history (:func:`ofc.engine_json.hand_history`, the JSON that ``ofc play`` prints and
the live tables store) says how one hand was dealt, played and scored. :func:`verify_history`
checks it without trusting whoever produced it and returns ``None`` when everything holds,
else the first :class:`Discrepancy`: a stable :class:`Code`, a ``location`` (a JSON path
into the history, e.g. ``actions[7].placements[0][0]``) and a message for people.

The checks, in the order they run (the first that fails is the answer):

1. ``MALFORMED_HISTORY``: not a version-1 history (not JSON, a key missing, a value of the
   wrong type, a card that is not one of the 52, a value not in its canonical form).
2. ``COMMITMENT_MISMATCH``: ``SHA-256(server_seed)`` is not ``commitment``.
3. ``DECK_MISMATCH``: the hand was not played with the re-derived deck, i.e. with
   ofc-shuffle-v1 of (``server_seed``, ``client_seed``, nonce ``hand_number``): the
   ``start_hand`` action carries other seeds, or the initial state starts another hand
   number (``initial_state.hands_played + 1``).
4. ``RULESET_MISMATCH`` (only when the caller names the ruleset agreed for the match): a
   parameter of ``initial_state.ruleset`` differs from it.
5. ``ILLEGAL_ACTION`` at ``actions[0]``: the hand cannot start from ``initial_state``.
6. ``DEAL_MISMATCH``: ``deals`` is not the deal order of :mod:`ofc.engine` applied to the
   re-derived deck: batch ``k`` goes to the wrong seat or street, starts at the wrong
   position, has the wrong size or cards that are not the deck's at that position, or a
   batch is missing or extra.
7. ``ILLEGAL_ACTION``: replaying ``actions`` through :func:`ofc.engine.apply` from the
   initial state, an action is refused (the engine's reason starts the message);
   ``TIMEOUT_MISMATCH``: a timeout does not resolve to the move recorded in it;
   ``INCOMPLETE_HAND``: the actions end before every board is complete.
8. The rest of the history is recomputed from ``initial_state`` and ``actions`` and compared
   key by key, in document order: ``HEADER_MISMATCH`` (``ruleset``, ``button``, ``order``,
   ``players``), ``BOARD_MISMATCH`` (``boards``, discards included) and
   ``SETTLEMENT_MISMATCH`` (``settlement``, every number of it, ``fantasyland_next``,
   ``button_next``).

Keys at the top level that version 1 does not define (the live tables add ``table_id`` and
``settled_at_ms``) are not checked. Times (``at_ms``) are recorded, not verified: they come
from the servers' clocks. docs/hand-history.md documents the format field by field.

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

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple

from ofc.cards import card_codes
from ofc.engine import (
    Action,
    MatchState,
    Place,
    SetFantasyland,
    SitDown,
    StartHand,
    Timeout,
    TimeoutApplied,
    apply,
    deal_positions,
    new_match,
    replay,
    seats_to_act,
)
from ofc.engine_json import (
    FORMAT_VERSIONS,
    action_from_dict,
    action_to_dict,
    format_version,
    hand_history,
    state_from_dict,
    state_to_dict,
)
from ofc.errors import InvalidRulesetError, OfcError, UnknownRulesetError
from ofc.rulesets import Ruleset
from ofc.shuffle import ALGORITHM, commitment, shuffle_deck

__all__ = [
    "SECTION_CODES",
    "Code",
    "Discrepancy",
    "example_history",
    "verify_history",
    "verify_history_json",
]


class Code(StrEnum):
    """What kind of discrepancy; the values are stable (clients and scripts match on them)."""

    MALFORMED_HISTORY = "MALFORMED_HISTORY"
    COMMITMENT_MISMATCH = "COMMITMENT_MISMATCH"
    DECK_MISMATCH = "DECK_MISMATCH"
    RULESET_MISMATCH = "RULESET_MISMATCH"
    DEAL_MISMATCH = "DEAL_MISMATCH"
    ILLEGAL_ACTION = "ILLEGAL_ACTION"
    TIMEOUT_MISMATCH = "TIMEOUT_MISMATCH"
    INCOMPLETE_HAND = "INCOMPLETE_HAND"
    HEADER_MISMATCH = "HEADER_MISMATCH"
    BOARD_MISMATCH = "BOARD_MISMATCH"
    SETTLEMENT_MISMATCH = "SETTLEMENT_MISMATCH"


@dataclass(frozen=True, slots=True)
class Discrepancy:
    """The first check a history fails: what, where (a JSON path, ``""`` for the whole
    document) and a message for people (not for parsing).

    >>> print(Discrepancy(Code.DEAL_MISMATCH, "deals[2].cards[0]", "recorded 'As'"))
    DEAL_MISMATCH at deals[2].cards[0]: recorded 'As'
    """

    code: Code
    location: str
    message: str

    def __str__(self) -> str:
        where = f" at {self.location}" if self.location else ""
        return f"{self.code}{where}: {self.message}"


# The version-1 keys in document order, with the code a difference in each is reported
# under. Step 8 compares every one but ``actions`` (checked one by one in steps 1 and 7)
# with the recomputed history.
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
}


def verify_history(history: Any, *, expected_ruleset: Ruleset | None = None) -> Discrepancy | None:
    """``None`` when ``history`` (parsed JSON) passes every check, else the first discrepancy.

    ``expected_ruleset``: the ruleset agreed for the match; when given, the history's
    parameters must equal it (``RULESET_MISMATCH`` otherwise). Never raises for bad input.

    >>> from ofc.rulesets import get_ruleset
    >>> print(verify_history(example_history(), expected_ruleset=get_ruleset("turbo")))
    RULESET_MISMATCH at initial_state.ruleset.name: recorded 'classic', expected 'turbo'
    >>> print(verify_history([]))
    MALFORMED_HISTORY: a hand history is a JSON object, not a list
    """
    try:
        _verify(history, expected_ruleset)
    except _Found as found:
        return found.discrepancy
    return None


def verify_history_json(
    text: str | bytes, *, expected_ruleset: Ruleset | None = None
) -> Discrepancy | None:
    """:func:`verify_history` of a JSON document (UTF-8 when bytes).

    Text that is not JSON, repeats a key in an object or uses ``NaN``/``Infinity`` is
    ``MALFORMED_HISTORY``: two JSON readers must not be able to read different histories
    from one file.

    >>> print(verify_history_json('{"format_version": 1, "format_version": 1}'))
    MALFORMED_HISTORY: not JSON: the key 'format_version' appears twice in one object
    """
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")  # strictly: JSON travels as UTF-8 (RFC 8259)
        data = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except _Found as found:
        return found.discrepancy
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, deep nesting
        reason = exc.args[0] if isinstance(exc, ValueError) and exc.args else "nested too deeply"
        return Discrepancy(Code.MALFORMED_HISTORY, "", f"not JSON: {reason}")
    return verify_history(data, expected_ruleset=expected_ruleset)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _malformed("", f"not JSON: the key {key!r} appears twice in one object")
        result[key] = value
    return result


def _no_constant(name: str) -> Any:
    raise _malformed("", f"not JSON: {name} is not a JSON number")


def example_history(seats: int = 2, *, ruleset: str = "classic") -> dict[str, Any]:
    """A small, valid history (the timeout policy plays every seat): for examples and tests.

    >>> h = example_history(3, ruleset="pineapple")
    >>> h["ruleset"], len(h["players"]), h["actions"][0]["type"]
    ('pineapple', 3, 'start_hand')
    """
    table, _ = replay(
        new_match(ruleset, seats=seats), [SitDown(s, f"player-{s}") for s in range(seats)]
    )
    actions: list[Action] = [StartHand(bytes(range(32)), b"example")]
    state, _ = apply(table, actions[0])
    while waiting := seats_to_act(state):
        actions.append(Timeout(waiting[0], at_ms=len(actions)))
        state, _ = apply(state, actions[-1])
    return hand_history(table, actions)


# --- the search for the first discrepancy ---------------------------------------------------
class _Found(Exception):
    def __init__(self, discrepancy: Discrepancy) -> None:
        super().__init__(str(discrepancy))
        self.discrepancy = discrepancy


def _malformed(location: str, message: str) -> _Found:
    return _Found(Discrepancy(Code.MALFORMED_HISTORY, location, message))


def _found(code: Code, location: str, message: str) -> _Found:
    return _Found(Discrepancy(code, location, message))


@dataclass(frozen=True, slots=True)
class _History:
    """A history that passed step 1: the raw document and what the checks replay."""

    raw: Mapping[str, Any]
    initial: MatchState
    actions: tuple[Action, ...]
    resolved: Mapping[int, Place | SetFantasyland]  # action index -> the recorded move


def _verify(data: Any, expected_ruleset: Ruleset | None) -> None:
    history = _read(data)
    raw = history.raw
    server_seed = bytes.fromhex(raw["server_seed"])
    client_seed = bytes.fromhex(raw["client_seed"])
    if commitment(server_seed) != raw["commitment"]:
        raise _found(
            Code.COMMITMENT_MISMATCH,
            "commitment",
            f"SHA-256 of server_seed is {commitment(server_seed)}, not {raw['commitment']}",
        )
    _check_deck_inputs(history, server_seed, client_seed)
    if expected_ruleset is not None:
        _compare(
            expected_ruleset.to_dict(),
            raw["initial_state"]["ruleset"],
            "initial_state.ruleset",
            Code.RULESET_MISMATCH,
            "expected",
        )
    started = _apply(history.initial, history.actions[0], 0)
    deck = card_codes(shuffle_deck(server_seed, client_seed, raw["hand_number"]))
    _check_deals(started, raw["deals"], deck)
    _replay(history, started)
    _check_recomputed(history)


def _check_deck_inputs(history: _History, server_seed: bytes, client_seed: bytes) -> None:
    start = history.actions[0]
    assert isinstance(start, StartHand)
    for name, committed, used in (
        ("server_seed", server_seed, start.server_seed),
        ("client_seed", client_seed, start.client_seed),
    ):
        if used != committed:
            raise _found(
                Code.DECK_MISMATCH,
                f"actions[0].{name}",
                f"the hand was started with {name} {used.hex()!r}, not the history's "
                f"{committed.hex()!r}: it was not played with the re-derived deck",
            )
    number = history.raw["hand_number"]
    if number != history.initial.hands_played + 1:
        raise _found(
            Code.DECK_MISMATCH,
            "hand_number",
            f"the deck is re-derived with nonce hand_number {number}, but the initial state "
            f"(hands_played {history.initial.hands_played}) starts hand "
            f"{history.initial.hands_played + 1}",
        )


def _apply(state: MatchState, action: Action, index: int) -> MatchState:
    new_state, _ = _apply_events(state, action, index)
    return new_state


def _apply_events(
    state: MatchState, action: Action, index: int
) -> tuple[MatchState, tuple[Any, ...]]:
    try:
        return apply(state, action)
    except OfcError as exc:
        raise _found(
            Code.ILLEGAL_ACTION, _at(f"actions[{index}]", exc.field), f"{exc.reason}: {exc.message}"
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
            raise _found(Code.DEAL_MISMATCH, path, f"missing: batch {k} of the deal is {what}")
        deal = deals[k]
        for key, value in (("seat", seat), ("street", street), ("position", position)):
            if deal[key] != value:
                raise _found(
                    Code.DEAL_MISMATCH,
                    f"{path}.{key}",
                    f"recorded {deal[key]!r}; batch {k} of the deal is {what}",
                )
        if deal["count"] != count:
            raise _found(
                Code.DEAL_MISMATCH,
                f"{path}.count",
                f"recorded {deal['count']!r}; batch {k} of the deal is {what}",
            )
        _compare(
            deck[position : position + count],
            deal["cards"],
            f"{path}.cards",
            Code.DEAL_MISMATCH,
            f"the deck from position {position} has",
        )
    if len(deals) > len(expected):
        raise _found(
            Code.DEAL_MISMATCH,
            f"deals[{len(expected)}]",
            f"extra: the deal order has {len(expected)} batches",
        )


def _street(street: int | None) -> str:
    return "null (Fantasyland)" if street is None else str(street)


def _replay(history: _History, started: MatchState) -> None:
    """Step 7: every action through the engine; timeouts must make their recorded move."""
    state = started
    for index, action in enumerate(history.actions[1:], start=1):
        state, events = _apply_events(state, action, index)
        if isinstance(action, Timeout):
            made = next(e.action for e in events if isinstance(e, TimeoutApplied))
            assert made is not None
            _compare(
                action_to_dict(made),
                action_to_dict(history.resolved[index]),
                f"actions[{index}].resolved",
                Code.TIMEOUT_MISMATCH,
                "the timeout makes",
            )
    waiting = seats_to_act(state)
    if waiting:
        raise _found(
            Code.INCOMPLETE_HAND,
            f"actions[{len(history.actions)}]",
            f"the actions end with the hand in progress: the table waits for seat(s) "
            f"{', '.join(map(str, waiting))}",
        )


def _check_recomputed(history: _History) -> None:
    """Step 8: the history the engine writes for this start and these actions, key by key.

    The actions themselves were checked one by one (steps 1 and 7); replaying each timeout's
    recorded move, now known to be the one it makes, gives the same hand without running
    the timeout policy a second time.
    """
    moves = [history.resolved.get(i, action) for i, action in enumerate(history.actions)]
    expected = hand_history(history.initial, moves)
    for key, code in SECTION_CODES.items():
        if key != "actions":
            _compare(expected[key], history.raw[key], key, code, "recomputed")


# --- comparing JSON values ------------------------------------------------------------------
class _Missing:
    def __repr__(self) -> str:
        return "nothing"


_MISSING: Any = _Missing()


class _Difference(NamedTuple):
    path: str
    expected: Any
    actual: Any


def _difference(expected: Any, actual: Any, path: str) -> _Difference | None:
    """The first place (document order of ``expected``) where ``actual`` differs; a value of
    another JSON type differs (``1`` is not ``true``, ``1`` is not ``1.0``)."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return _Difference(path, expected, actual)
        for key, value in expected.items():
            found = _difference(value, actual.get(key, _MISSING), _join(path, key))
            if found is not None:
                return found
        extra = [key for key in actual if key not in expected]
        return _Difference(_join(path, extra[0]), _MISSING, actual[extra[0]]) if extra else None
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return _Difference(path, expected, actual)
        for i in range(max(len(expected), len(actual))):
            found = _difference(
                expected[i] if i < len(expected) else _MISSING,
                actual[i] if i < len(actual) else _MISSING,
                f"{path}[{i}]",
            )
            if found is not None:
                return found
        return None
    if type(expected) is not type(actual) or expected != actual:
        return _Difference(path, expected, actual)
    return None


def _compare(expected: Any, actual: Any, path: str, code: Code, source: str) -> None:
    found = _difference(expected, actual, path)
    if found is not None:
        raise _found(
            code, found.path, f"recorded {_show(found.actual)}, {source} {_show(found.expected)}"
        )


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _at(path: str, field: str) -> str:
    """``path`` plus a core error's ``field`` (relative to an action) as a JSON path."""
    if not field:
        return path
    field = _action_path(field)
    return path + field if field.startswith("[") else f"{path}.{field}"


_PAIR_PART = re.compile(r"(placements\[\d+\])\.(card|row)")


def _action_path(field: str) -> str:
    """The core names a placement's parts ``.card``/``.row``; in JSON a placement is the
    pair ``[card, row]``."""
    return _PAIR_PART.sub(lambda m: f"{m[1]}[{0 if m[2] == 'card' else 1}]", field)


# --- step 1: the shape of a version-1 history ----------------------------------------------
_Check = Callable[[Any, str], None]
_SEED = re.compile(r"[0-9a-f]{64}")
_HEX = re.compile(r"(?:[0-9a-f]{2})*")
_CARD = re.compile(r"[2-9TJQKA][cdhs]")


def _integer(minimum: int | None = 0) -> _Check:
    def check(value: Any, path: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _malformed(path, f"must be an integer, got {_show(value)}")
        if minimum is not None and value < minimum:
            raise _malformed(path, f"must be at least {minimum}, got {value}")

    return check


def _text(pattern: re.Pattern[str] | None = None, what: str = "a string") -> _Check:
    def check(value: Any, path: str) -> None:
        if not isinstance(value, str) or (pattern is not None and not pattern.fullmatch(value)):
            raise _malformed(path, f"must be {what}, got {_show(value)}")

    return check


def _boolean(value: Any, path: str) -> None:
    if not isinstance(value, bool):
        raise _malformed(path, f"must be true or false, got {_show(value)}")


def _one_of(expected: tuple[int, ...], why: str) -> _Check:
    def check(value: Any, path: str) -> None:
        if type(value) is not int or value not in expected:
            raise _malformed(path, f"is {_show(value)}: {why}")

    return check


def _constant(expected: Any, why: str) -> _Check:
    def check(value: Any, path: str) -> None:
        if type(value) is not type(expected) or value != expected:
            raise _malformed(path, f"is {_show(value)}: {why}")

    return check


def _nullable(inner: _Check) -> _Check:
    def check(value: Any, path: str) -> None:
        if value is not None:
            inner(value, path)

    return check


def _list_of(item: _Check, *, min_items: int = 0) -> _Check:
    def check(value: Any, path: str) -> None:
        if not isinstance(value, list):
            raise _malformed(path, f"must be a list, got {_show(value)}")
        if len(value) < min_items:
            raise _malformed(path, f"must have at least {min_items} item(s)")
        for i, element in enumerate(value):
            item(element, f"{path}[{i}]")

    return check


def _object(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        kind = "a list" if isinstance(value, list) else _show(value)
        subject = "must be" if path else "a hand history is"
        raise _malformed(path, f"{subject} a JSON object, not {kind}")
    return value


def _record(fields: Mapping[str, _Check], *, open_: bool = False) -> _Check:
    """An object with exactly ``fields`` (``open_``: other keys allowed and not checked)."""

    def check(value: Any, path: str) -> None:
        obj = _object(value, path)
        for key, inner in fields.items():
            if key not in obj:
                raise _malformed(_join(path, key), "is missing")
            inner(obj[key], _join(path, key))
        if not open_:
            for key in obj:
                if key not in fields:
                    raise _malformed(_join(path, key), "is not a key of this object")

    return check


_UINT = _integer()
_INT = _integer(None)
_STR = _text()
_CARDS = _list_of(_text(_CARD, "a card code such as 'As' or 'Td'"))


def _any_object(value: Any, path: str) -> None:
    _object(value, path)


def _by_row(inner: _Check) -> _Check:
    return _record({"top": inner, "middle": inner, "bottom": inner})


_SETTLEMENT = _record(
    {
        "ruleset": _STR,
        "players": _list_of(
            _record(
                {
                    "seat": _UINT,
                    "points": _INT,
                    "units": _INT,
                    "fouled": _boolean,
                    "royalties": _record(
                        {"top": _UINT, "middle": _UINT, "bottom": _UINT, "total": _UINT}
                    ),
                    "hands": _by_row(_record({"category": _STR, "name": _STR, "value": _UINT})),
                    "fantasyland_next": _record({"qualifies": _boolean, "cards": _UINT}),
                }
            )
        ),
        "pairs": _list_of(
            _record(
                {
                    "a": _UINT,
                    "b": _UINT,
                    "rows": _by_row(_INT),
                    "scoop": _INT,
                    "a_fouled": _boolean,
                    "b_fouled": _boolean,
                    "row_points": _INT,
                    "royalties": _INT,
                    "points": _INT,
                    "capped_points": _INT,
                    "unit_value": _UINT,
                    "units": _INT,
                }
            )
        ),
    }
)

_HISTORY_FIELDS: Mapping[str, _Check] = {
    "format_version": _one_of(
        FORMAT_VERSIONS, f"this verifier reads versions {', '.join(map(str, FORMAT_VERSIONS))}"
    ),
    "algorithm": _constant(ALGORITHM, f"this verifier knows the shuffle {ALGORITHM!r} only"),
    "ruleset": _STR,
    "hand_number": _integer(1),
    "server_seed": _text(_SEED, "32 bytes as 64 lower-case hex digits"),
    "client_seed": _text(_HEX, "bytes as lower-case hex digits"),
    "commitment": _text(_SEED, "64 lower-case hex digits"),
    "button": _UINT,
    "order": _list_of(_UINT),
    "players": _list_of(_record({"seat": _UINT, "player_id": _STR, "fantasyland": _UINT})),
    "initial_state": _any_object,  # read by ofc.engine_json.state_from_dict
    "deals": _list_of(
        _record(
            {
                "type": _constant("cards_dealt", "every deal is a cards_dealt record"),
                "seat": _UINT,
                "street": _nullable(_UINT),
                "position": _UINT,
                "count": _UINT,
                "cards": _CARDS,
            }
        )
    ),
    "actions": _list_of(_any_object, min_items=1),  # read by ofc.engine_json.action_from_dict
    "boards": _list_of(
        _record(
            {"seat": _UINT, "top": _CARDS, "middle": _CARDS, "bottom": _CARDS, "discards": _CARDS}
        )
    ),
    "settlement": _SETTLEMENT,
    "fantasyland_next": _list_of(_record({"seat": _UINT, "cards": _UINT})),
    "button_next": _UINT,
}
_HISTORY = _record(_HISTORY_FIELDS, open_=True)
# Keys the live tables add to what they store; any other extra key is left alone.
_STORED_FIELDS: Mapping[str, _Check] = {"table_id": _STR, "settled_at_ms": _UINT}


def _read(data: Any) -> _History:
    """Step 1: the document has the version-1 shape, and its initial state and actions read
    back through :mod:`ofc.engine_json` to exactly what they say (canonical form)."""
    obj = _object(data, "")
    if "format_version" in obj:  # the version first: a later version may differ in anything
        _HISTORY_FIELDS["format_version"](obj["format_version"], "format_version")
    _HISTORY(obj, "")
    for key, check in _STORED_FIELDS.items():
        if key in obj:
            check(obj[key], key)
    initial = _read_initial_state(obj["initial_state"])
    if obj["format_version"] != format_version(initial):  # version 2: pair unit values
        raise _malformed(
            "format_version",
            f"is {obj['format_version']}, the initial state's is {format_version(initial)}",
        )
    actions: list[Action] = []
    resolved: dict[int, Place | SetFantasyland] = {}
    for index, raw in enumerate(obj["actions"]):
        path = f"actions[{index}]"
        body = {k: v for k, v in raw.items() if k != "resolved"}
        action = _read_action(body, path)
        if index == 0 and not isinstance(action, StartHand):
            raise _malformed(f"{path}.type", "a history's first action is its start_hand")
        if index > 0 and not isinstance(action, Place | SetFantasyland | Timeout):
            raise _malformed(
                f"{path}.type", "after start_hand come only place, set_fantasyland and timeout"
            )
        if isinstance(action, Timeout):
            if "resolved" not in raw:
                raise _malformed(f"{path}.resolved", "is missing: a timeout records its move")
            move = _read_action(_object(raw["resolved"], f"{path}.resolved"), f"{path}.resolved")
            if not isinstance(move, Place | SetFantasyland):
                raise _malformed(
                    f"{path}.resolved.type", "a timeout resolves to a place or set_fantasyland"
                )
            resolved[index] = move
        elif "resolved" in raw:
            raise _malformed(f"{path}.resolved", "only a timeout records a resolved move")
        actions.append(action)
    return _History(obj, initial, tuple(actions), resolved)


def _read_initial_state(raw: Any) -> MatchState:
    try:
        state = state_from_dict(raw)
    except OfcError as exc:
        field = exc.field
        if isinstance(exc, InvalidRulesetError | UnknownRulesetError) and not field.startswith(
            "ruleset"
        ):
            field = _join("ruleset", field)  # a ruleset's own checks name its options bare
        raise _malformed(_join("initial_state", field), exc.message) from None
    if state.hand is not None:
        raise _malformed("initial_state.hand", "must be null: a history starts between hands")
    _canonical(state_to_dict(state), raw, "initial_state")
    return state


def _read_action(raw: Mapping[str, Any], path: str) -> Action:
    try:
        action = action_from_dict(raw)
    except OfcError as exc:
        message = exc.message.removeprefix(f"{exc.field}: ")  # the location says where
        raise _malformed(_at(path, exc.field), message) from None
    _canonical(action_to_dict(action), raw, path)
    return action


def _canonical(expected: Any, actual: Any, path: str) -> None:
    found = _difference(expected, actual, path)
    if found is not None:
        location = _action_path(found.path)
        if found.actual is _MISSING:
            raise _malformed(location, "is missing")
        if found.expected is _MISSING:
            raise _malformed(location, "is not part of the canonical form")
        raise _malformed(
            location, f"is {_show(found.actual)}, not in its canonical form {_show(found.expected)}"
        )
