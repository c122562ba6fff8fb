"""Step 1 of verifying a history: its shape, for its version (``MALFORMED_HISTORY``).

A history is read key by key against the version it declares; its initial state, actions and
version-3 context are read back through :mod:`ofc.codec` and must be exactly what it
writes (canonical form). A version newer than :data:`~ofc.codec.FORMAT_VERSIONS` is
``NEWER_FORMAT_VERSION``: newer than this verifier reads, not malformed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ofc.codec import (
    FORMAT_VERSION,
    FORMAT_VERSIONS,
    HandContext,
    action_from_dict,
    action_to_dict,
    context_from_dict,
    context_to_dict,
    format_version,
    state_as_written,
    state_from_dict,
)
from ofc.engine import Action, MatchState, Place, SetFantasyland, StartHand, Timeout
from ofc.errors import InvalidRulesetError, OfcError, UnknownRulesetError
from ofc.shuffle import ALGORITHMS, DECK_SIZES, algorithm_for
from ofc.verify.codes import Code
from ofc.verify.values import MISSING, difference, found, join, malformed, show


@dataclass(frozen=True, slots=True)
class History:
    """A history that passed step 1: the raw document and what the checks replay."""

    raw: Mapping[str, Any]
    version: int
    initial: MatchState
    actions: tuple[Action, ...]
    context: HandContext | None  # version 3's keys; None before


_Check = Callable[[Any, str], None]
_SEED = re.compile(r"[0-9a-f]{64}")
_SEED_OR_NONE = re.compile(r"(?:[0-9a-f]{64})?")
_HEX = re.compile(r"(?:[0-9a-f]{2})*")
_CARD = re.compile(r"[2-9TJQKA][cdhs]|X[12]")


# The largest integer every JSON reader keeps exactly (I-JSON, RFC 7493): a count, a score
# or money past it would be read as another number by some verifier. Times may pass it (their
# readers take them exactly: `ofc play --turn-time-ms` of some releases took any limit).
SAFE_INTEGER = 2**53 - 1


def _integer(minimum: int | None = 0, *, any_size: bool = False) -> _Check:
    def check(value: Any, path: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise malformed(path, f"must be an integer, got {show(value)}")
        if not any_size and not -SAFE_INTEGER <= value <= SAFE_INTEGER:
            raise malformed(path, f"must be an integer of at most 2^53 - 1 in size, got {value}")
        if minimum is not None and value < minimum:
            raise malformed(path, f"must be at least {minimum}, got {value}")

    return check


def _text(pattern: re.Pattern[str] | None = None, what: str = "a string") -> _Check:
    def check(value: Any, path: str) -> None:
        if not isinstance(value, str) or (pattern is not None and not pattern.fullmatch(value)):
            raise malformed(path, f"must be {what}, got {show(value)}")

    return check


def _boolean(value: Any, path: str) -> None:
    if not isinstance(value, bool):
        raise malformed(path, f"must be true or false, got {show(value)}")


def _constant(expected: Any, why: str) -> _Check:
    def check(value: Any, path: str) -> None:
        if type(value) is not type(expected) or value != expected:
            raise malformed(path, f"is {show(value)}: {why}")

    return check


def _nullable(inner: _Check) -> _Check:
    def check(value: Any, path: str) -> None:
        if value is not None:
            inner(value, path)

    return check


def _list_of(item: _Check, *, min_items: int = 0) -> _Check:
    def check(value: Any, path: str) -> None:
        if not isinstance(value, list):
            raise malformed(path, f"must be a list, got {show(value)}")
        if len(value) < min_items:
            raise malformed(path, f"must have at least {min_items} item(s)")
        for i, element in enumerate(value):
            item(element, f"{path}[{i}]")

    return check


def _object(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        kind = "a list" if isinstance(value, list) else show(value)
        subject = "must be" if path else "a hand history is"
        raise malformed(path, f"{subject} a JSON object, not {kind}")
    return value


def _record(fields: Mapping[str, _Check], *, open_: bool = False) -> _Check:
    """An object with exactly ``fields`` (``open_``: other keys allowed and not checked)."""

    def check(value: Any, path: str) -> None:
        obj = _object(value, path)
        for key, inner in fields.items():
            if key not in obj:
                raise malformed(join(path, key), "is missing")
            inner(obj[key], join(path, key))
        if not open_:
            for key in obj:
                if key not in fields:
                    raise malformed(join(path, key), "is not a key of this object")

    return check


_UINT = _integer()
_INT = _integer(None)
_STR = _text()
_CARDS = _list_of(_text(_CARD, "a card code such as 'As', 'Td' or the joker 'X1'"))


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
    "format_version": _integer(1),
    "algorithm": _text(
        re.compile("|".join(map(re.escape, ALGORITHMS))),
        f"a deal algorithm this verifier knows ({', '.join(map(repr, ALGORITHMS))})",
    ),
    "ruleset": _STR,
    "hand_number": _integer(1),
    "server_seed": _text(_SEED, "32 bytes as 64 lower-case hex digits"),
    "client_seed": _text(_HEX, "bytes as lower-case hex digits"),
    "commitment": _text(_SEED, "64 lower-case hex digits"),
    "button": _UINT,
    "order": _list_of(_UINT),
    "players": _list_of(_record({"seat": _UINT, "player_id": _STR, "fantasyland": _UINT})),
    "initial_state": _any_object,  # read by ofc.codec.state_from_dict
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
    "actions": _list_of(_any_object, min_items=1),  # read by ofc.codec.action_from_dict
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
# Version 3's keys; the context itself is read by ofc.codec.context_from_dict.
_CONTEXT_FIELDS: Mapping[str, _Check] = {
    "next_commitment": _text(_SEED_OR_NONE, "64 lower-case hex digits, or empty"),
    "clock": _nullable(
        _record(
            {
                "turn_time_limit_ms": _integer(1, any_size=True),
                "fantasyland_time_limit_ms": _integer(1, any_size=True),
            }
        )
    ),
    "seat_units": _nullable(_list_of(_INT)),
    "seat_changes": _nullable(_list_of(_any_object)),
}
CONTEXT_KEYS = tuple(_CONTEXT_FIELDS)
# Keys the live tables add to what they store; any other extra key is left alone.
_STORED_FIELDS: Mapping[str, _Check] = {
    "table_id": _STR,
    "settled_at_ms": _integer(0, any_size=True),
}


def _check_integer_sizes(document: Mapping[str, Any]) -> None:
    """Every integer of the document but a time (a key ending in ``_ms``) within
    :data:`SAFE_INTEGER` either way, the first other one (in document order) refused: a JSON
    reader that rounds past it would read another history."""
    stack: list[tuple[str, Any]] = [("", document)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            stack.extend(
                (join(path, key), item)
                for key, item in reversed(value.items())
                if not key.endswith("_ms")
            )
        elif isinstance(value, list):
            stack.extend((f"{path}[{k}]", item) for k, item in reversed(list(enumerate(value))))
        elif (
            isinstance(value, int)
            and not isinstance(value, bool)
            and not -SAFE_INTEGER <= value <= SAFE_INTEGER
        ):
            raise malformed(path, f"must be an integer of at most 2^53 - 1 in size, got {value}")


def read(data: Any) -> History:
    """Step 1: the document has its version's shape, and its initial state, actions and
    context read back through :mod:`ofc.codec` to exactly what they say."""
    obj = _object(data, "")
    version = _read_version(obj)
    _check_integer_sizes(obj)
    _HISTORY(obj, "")
    for key, check in _STORED_FIELDS.items():
        if key in obj:
            check(obj[key], key)
    initial = _read_initial_state(obj["initial_state"])
    # Version 2 is version 1 with pair unit values, and a history of either says its initial
    # state's version; the releases that kept stakes before version 2 (75a55fb to c3fb462)
    # wrote such a hand as version 1 throughout (codec.state_as_written), and only they.
    stated = obj["initial_state"]["format_version"]
    if version < 3 and version != stated:
        raise malformed("format_version", f"is {version}, the initial state's is {stated}")
    if version >= 3 and stated != format_version(initial):
        raise malformed(
            "initial_state.format_version",
            f"is {stated}, not in its canonical form {format_version(initial)}",
        )
    if version < 4 and initial.ruleset.uses_later_options:
        raise malformed(
            "format_version",
            f"is {version}: the ruleset uses options of version 4 (Fantasyland tiers, a stay "
            "condition's rank, a top high-card royalty, jokers)",
        )
    context = _read_context(obj, initial) if version >= 3 else None
    _read_deck(obj, version, initial)
    actions: list[Action] = []
    for index, raw in enumerate(obj["actions"]):
        path = f"actions[{index}]"
        action = _read_action(raw, path, version)
        if index == 0 and not isinstance(action, StartHand):
            raise malformed(f"{path}.type", "a history's first action is its start_hand")
        if index > 0 and not isinstance(action, Place | SetFantasyland | Timeout):
            raise malformed(
                f"{path}.type", "after start_hand come only place, set_fantasyland and timeout"
            )
        if (
            isinstance(action, Timeout)
            and action.deadline_ms is not None
            and (context is None or context.clock is None)
        ):
            raise malformed(f"{path}.deadline_ms", "a deadline, but the history has no clock")
        actions.append(action)
    return History(obj, version, initial, tuple(actions), context)


def _read_deck(obj: Mapping[str, Any], version: int, initial: MatchState) -> None:
    """The deal algorithm and the deck size agree with the ruleset's jokers: ofc-shuffle-v1
    for 52 cards; for a deck with jokers (version 4 only) ofc-shuffle-v2 and ``deck_size``,
    which a 52-card history does not have."""
    jokers = initial.ruleset.jokers  # before version 4 there are none: read() said so
    expected = algorithm_for(jokers)
    if obj["algorithm"] != expected:
        raise malformed(
            "algorithm",
            f"is {show(obj['algorithm'])}: a {initial.ruleset.deck_size}-card deck is dealt "
            f"with {expected!r}",
        )
    if not jokers:
        if version >= 4 and "deck_size" in obj:
            raise malformed("deck_size", "is not part of the canonical form (a 52-card deck)")
        return
    if "deck_size" not in obj:
        raise malformed("deck_size", "is missing")
    size = obj["deck_size"]
    if isinstance(size, bool) or not isinstance(size, int) or size not in DECK_SIZES:
        raise malformed("deck_size", f"must be one of {list(DECK_SIZES)}, got {show(size)}")
    if size != initial.ruleset.deck_size:
        raise malformed(
            "deck_size",
            f"is {size}, but the ruleset's deck has {initial.ruleset.deck_size} cards "
            f"({jokers} joker{'' if jokers == 1 else 's'})",
        )


def _read_version(obj: Mapping[str, Any]) -> int:
    """The version first: a later version may differ in anything."""
    if "format_version" not in obj:
        raise malformed("format_version", "is missing")
    version = obj["format_version"]
    if type(version) is int and version > FORMAT_VERSION:
        raise found(
            Code.NEWER_FORMAT_VERSION,
            "format_version",
            f"is {version}: newer than this verifier reads "
            f"(versions {', '.join(map(str, FORMAT_VERSIONS))}); verify it with a later release",
        )
    if type(version) is not int or version not in FORMAT_VERSIONS:
        raise malformed(
            "format_version",
            f"is {show(version)}: this verifier reads versions "
            f"{', '.join(map(str, FORMAT_VERSIONS))}",
        )
    return version


def _read_initial_state(raw: Any) -> MatchState:
    try:
        state = state_from_dict(raw)
    except OfcError as exc:
        field = exc.field
        if isinstance(exc, InvalidRulesetError | UnknownRulesetError) and not field.startswith(
            "ruleset"
        ):
            field = join("ruleset", field)  # a ruleset's own checks name its options bare
        raise malformed(join("initial_state", field), exc.message) from None
    if state.hand is not None:
        raise malformed("initial_state.hand", "must be null: a history starts between hands")
    _canonical(state_as_written(state, raw), raw, "initial_state")
    return state


def _read_context(obj: Mapping[str, Any], initial: MatchState) -> HandContext:
    for key, check in _CONTEXT_FIELDS.items():
        if key not in obj:
            raise malformed(key, "is missing")
        check(obj[key], key)
    try:
        context = context_from_dict(obj)
    except OfcError as exc:
        raise malformed(
            action_path(exc.field), exc.message.removeprefix(f"{exc.field}: ")
        ) from None
    expected = context_to_dict(context)
    _canonical(expected, {key: obj[key] for key in expected}, "")
    units = context.seat_units
    if units is not None and len(units) != len(initial.seats):
        raise malformed(
            "seat_units", f"has {len(units)} entries for the {len(initial.seats)} seats"
        )
    return context


def _read_action(raw: Any, path: str, version: int) -> Action:
    obj = _object(raw, path)
    try:
        action = action_from_dict(obj)
    except OfcError as exc:
        message = exc.message.removeprefix(f"{exc.field}: ")  # the location says where
        raise malformed(at(path, exc.field), message) from None
    expected = action_to_dict(action)
    if isinstance(action, Timeout) and version < 3:  # no deadline, no policy before 3
        del expected["deadline_ms"], expected["policy"]
    _canonical(expected, obj, path)
    return action


def _canonical(expected: Any, actual: Any, path: str) -> None:
    differs = difference(expected, actual, path)
    if differs is not None:
        location = action_path(differs.path)
        if differs.actual is MISSING:
            raise malformed(location, "is missing")
        if differs.expected is MISSING:
            raise malformed(location, "is not part of the canonical form")
        raise malformed(
            location,
            f"is {show(differs.actual)}, not in its canonical form {show(differs.expected)}",
        )


def at(path: str, field: str) -> str:
    """``path`` plus a core error's ``field`` (relative to an action) as a JSON path."""
    if not field:
        return path
    field = action_path(field)
    return path + field if field.startswith("[") else f"{path}.{field}"


_PAIR_PART = re.compile(r"(placements\[\d+\])\.(card|row)")


def action_path(field: str) -> str:
    """The core names a placement's parts ``.card``/``.row``; in JSON a placement is the
    pair ``[card, row]``."""
    return _PAIR_PART.sub(lambda m: f"{m[1]}[{0 if m[2] == 'card' else 1}]", field)


__all__ = ["CONTEXT_KEYS", "History", "action_path", "at", "read"]
