"""The core's JSON codec: scores, engine states, actions, events and hand histories.

Everything here returns (or reads) plain data ``json.dumps`` accepts, with stdlib types only.
Reading is strict: every wrong type or missing key raises an :class:`~ofc.errors.OfcError`
whose ``field`` is the path (``players[1].top``, ``hand.seats[1].pending``), so a batch job
can report exactly which input was bad.

Scores (the ``ofc score`` input and its results):

>>> req = score_request_from_dict({"players": [
...     {"id": "a", "top": ["Ac", "3d", "2h"],
...      "middle": "6c 6d 9h 8s 4c", "bottom": "9c 8c 7d 6h 5s"},
...     {"id": "b", "top": "Kd 3c 2d", "middle": "5c 5d 9d 8h 4d", "bottom": "7c 7h Qd Js 4s"}]})
>>> [p["points"] for p in settlement_to_dict(req.settle(), req.ids)["players"]]
[8, -8]

The engine's states, actions and events round-trip exactly::

    state_from_dict(state_to_dict(s)) == s        action_from_dict(action_to_dict(a)) == a

Cards are canonical codes (``"As"``), rows ``"top"``/``"middle"``/``"bottom"``, seeds lower-case
hex. A stored state (``format_version`` one of :data:`STATE_FORMAT_VERSIONS`) holds the server
seed: keep it where the players cannot read it. Loading checks the deck against ofc-shuffle-v1
and that every dealt card is in exactly one place.

>>> from ofc.engine import SitDown, apply, new_match
>>> state, events = apply(new_match(seats=2), SitDown(0, "ann"))
>>> state_from_dict(state_to_dict(state)) == state
True
>>> event_to_dict(events[0])
{'type': 'seat_taken', 'seat': 0, 'player_id': 'ann'}
>>> action_to_dict(action_from_dict({"type": "place", "seat": 1, "placements": [["As", "bottom"]]}))
{'type': 'place', 'seat': 1, 'placements': [['As', 'bottom']], 'discard': None, 'at_ms': 0}
"""

from __future__ import annotations

import dataclasses
import functools
import json
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from ofc.cards import MAX_JOKERS, Card, card_by_code, card_codes, deck_cards, parse_cards
from ofc.engine import (
    Action,
    ButtonMoved,
    CardsDealt,
    CardsPlaced,
    DiscardMade,
    Event,
    FantasylandRevealed,
    FantasylandSet,
    HandSeat,
    HandSettled,
    HandStarted,
    HandState,
    MatchState,
    Place,
    Seat,
    SeatTaken,
    SeatVacated,
    SeedRevealed,
    SetFantasyland,
    SitDown,
    StandUp,
    StartHand,
    Timeout,
    TimeoutApplied,
    dealt_batches,
    make_board,
    make_hand,
    make_hand_seat,
    replay,
)
from ofc.errors import InvalidInputError, OfcError
from ofc.evaluator import Category, HandValue
from ofc.rulesets import (
    BOARD_SIZE,
    DEFAULT_RULESET,
    ROWS,
    Row,
    Ruleset,
    Street,
    resolve_ruleset,
    ruleset_from_dict,
)
from ofc.scoring import Board, PairResult, Settlement, settle
from ofc.shuffle import algorithm_for, deal_deck

__all__ = [
    "FORMAT_VERSION",
    "FORMAT_VERSIONS",
    "MAX_TURN_TIME_MS",
    "SCORE_HAND_KEYS",
    "SCORE_PLAYER_KEYS",
    "STATE_FORMAT_VERSIONS",
    "HandContext",
    "OwnParts",
    "ScoreRequest",
    "TurnClock",
    "action_from_dict",
    "action_from_own_dict",
    "action_to_dict",
    "board_to_dict",
    "cards_from_json",
    "check_keys",
    "context_from_dict",
    "context_to_dict",
    "error_to_dict",
    "event_to_dict",
    "format_version",
    "hand_history",
    "history_format_version",
    "history_from_replay",
    "history_of_hand",
    "score_request_from_dict",
    "settlement_json",
    "settlement_to_dict",
    "state_as_written",
    "state_from_dict",
    "state_from_own_dict",
    "state_from_own_parts",
    "state_to_dict",
    "state_to_own_parts",
]

FORMAT_VERSION = 4
"""The newest hand-history format. Version 2 is version 1 plus ``pair_unit_values`` in the
initial state; version 3 adds a timeout's deadline and policy and the table's context
(``next_commitment``, ``clock``, ``seat_units``, ``seat_changes``); version 4 is version 3
plus the ruleset options of tiered Fantasyland and top high-card royalties
(``fantasyland_tiers``, a stay condition's ``min_rank``, ``royalties.top_high_card``:
:attr:`~ofc.rulesets.Ruleset.uses_later_options`) and decks with jokers (the ruleset's
``jokers``, ``algorithm`` ``ofc-shuffle-v2``, ``deck_size``, the cards ``X1``, ``X2``). A
history is written in the lowest version that has what it uses
(:func:`history_format_version`), so readers of an older version still read the histories
that need nothing newer."""

FORMAT_VERSIONS = (1, 2, 3, 4)
"""The hand-history formats this module reads."""

STATE_FORMAT_VERSIONS = (1, 2)
"""The match-state formats this module reads (2: with ``pair_unit_values``)."""


# --- scores: the ``ofc score`` input and results ---------------------------------------
@dataclass(frozen=True, slots=True)
class ScoreRequest:
    ruleset: Ruleset
    ids: tuple[str, ...]
    boards: tuple[Board, ...]
    fantasyland_cards: tuple[int, ...]  # the tier each board was set in (0: none)
    fantasyland_streaks: tuple[int, ...]

    def settle(self) -> Settlement:
        if not any(self.fantasyland_cards):  # streaks only count in Fantasyland
            return settle(self.boards, self.ruleset)
        return settle(
            self.boards,
            self.ruleset,
            fantasyland_cards=self.fantasyland_cards,
            fantasyland_streaks=self.fantasyland_streaks,
        )


def cards_from_json(raw: Any, *, field: str) -> tuple[Card, ...]:
    """A list of card codes, or one string of codes separated by spaces."""
    if isinstance(raw, str):
        tokens: Sequence[Any] = raw.replace(",", " ").split()
    elif isinstance(raw, list):
        tokens = raw
    else:
        raise InvalidInputError(f"{field} must be a list of card codes", field=field)
    try:
        return parse_cards(tokens)
    except OfcError as exc:
        raise type(exc)(f"{field}: {exc.message}", field=field) from None


_ROW_NAMES = tuple(row.value for row in ROWS)
_MISSING = object()


def _row_cards(raw: Any, place: str, name: str) -> tuple[Card, ...]:
    """A row's cards: the common spellings straight through :func:`parse_cards`; anything
    else (and every error, with its field) through :func:`cards_from_json`."""
    if isinstance(raw, str):
        try:
            return parse_cards(raw)
        except OfcError:
            pass
    return cards_from_json(raw, field=f"{place}.{name}")


SCORE_HAND_KEYS: Final = frozenset({"players", "ruleset"})
"""The keys of an ``ofc score`` hand; any other is refused (a misspelt one would be ignored)."""
SCORE_PLAYER_KEYS: Final = frozenset(
    {"id", "top", "middle", "bottom", "in_fantasyland", "fantasyland_cards", "fantasyland_streak"}
)
"""The keys of a player of an ``ofc score`` hand."""


def check_keys(value: Mapping[str, Any], known: frozenset[str], place: str) -> None:
    """INVALID_INPUT naming the first key of ``value`` (the object at ``place``) that is not
    one of ``known``.

    >>> check_keys({"players": [], "rulset": "classic"}, SCORE_HAND_KEYS, "")
    Traceback (most recent call last):
    ...
    ofc.errors.InvalidInputError: a hand has no field 'rulset' (its fields: players, ruleset)
    """
    unknown = sorted(str(k) for k in value.keys() - known)
    if unknown:
        owner = place or "a hand"
        raise InvalidInputError(
            f"{owner} has no field {unknown[0]!r} (its fields: {', '.join(sorted(known))})",
            field=f"{place}.{unknown[0]}" if place else unknown[0],
        )


def score_request_from_dict(data: Any) -> ScoreRequest:
    """The ``ofc score`` input. A player set in Fantasyland says its tier,
    ``"fantasyland_cards": 16`` (the cards of the Fantasyland hand it played), or, in the
    older form, ``"in_fantasyland": true`` (the ruleset's smallest tier).

    >>> req = score_request_from_dict({"ruleset": "progressive-pineapple-keep", "players": [
    ...     {"top": "Ac Ad 2c", "middle": "3h 3d 5s 5c 7d", "bottom": "Ts Js Qs Ks 2s",
    ...      "fantasyland_cards": 16},
    ...     {"top": "Kd 3c 2d", "middle": "5h 5d 9d 8h 4d", "bottom": "7c 7h Qd Jh 4s"}]})
    >>> [p.fantasyland for p in req.settle().players]
    [FantasylandResult(qualifies=True, cards=16), FantasylandResult(qualifies=False, cards=0)]
    """
    if not isinstance(data, Mapping):
        raise InvalidInputError("a hand to score is a JSON object", field="")
    check_keys(data, SCORE_HAND_KEYS, "")
    ruleset = resolve_ruleset(data.get("ruleset"))
    players = data.get("players")
    if not isinstance(players, list) or not players:
        raise InvalidInputError("players must be a non-empty list", field="players")
    plain = _plain_boards(players)
    if plain is not None:
        none = (0,) * len(players)
        return ScoreRequest(ruleset, plain[0], plain[1], none, none)
    ids: list[str] = []
    boards: list[Board] = []
    tiers: list[int] = []
    streaks: list[int] = []
    for i, player in enumerate(players):
        place = f"players[{i}]"
        if type(player) is not dict and not isinstance(player, Mapping):
            raise InvalidInputError(f"{place} must be an object", field=place)
        check_keys(player, SCORE_PLAYER_KEYS, place)
        player_id = player.get("id", str(i))
        if not isinstance(player_id, str) or player_id in ids:
            raise InvalidInputError(f"{place}.id must be a unique string", field=f"{place}.id")
        rows = []
        for name in _ROW_NAMES:
            raw = player.get(name, _MISSING)
            if raw is _MISSING:
                raise InvalidInputError(f"{place}.{name} is missing", field=f"{place}.{name}")
            rows.append(_row_cards(raw, place, name))
        tier = _score_tier(player, ruleset, place)
        streak = player.get("fantasyland_streak", 1 if tier else 0)
        if isinstance(streak, bool) or not isinstance(streak, int) or streak < 0:
            raise InvalidInputError(
                f"{place}.fantasyland_streak must be a non-negative integer",
                field=f"{place}.fantasyland_streak",
            )
        ids.append(player_id)
        boards.append(Board(rows[0], rows[1], rows[2]))
        tiers.append(tier)
        # The hand in Fantasyland counts itself: 0 there means 1, as in SettleHand's Hand.
        streaks.append(max(streak, 1) if tier else streak)
    return ScoreRequest(ruleset, tuple(ids), tuple(boards), tuple(tiers), tuple(streaks))


def score_json(data: Any) -> str:
    """One hand of :func:`score_request_from_dict`'s input settled, as
    :func:`settlement_json`'s text: the ``ofc score`` result. The common shape goes from the
    boards to the settlement without building the request (a batch scores one a line).

    >>> text = score_json({"players": [
    ...     {"top": "Ac 3d 2h", "middle": "6c 6d 9h 8s 4c", "bottom": "9c 8c 7d 6h 5s"},
    ...     {"top": "Kd 3c 2d", "middle": "5c 5d 9d 8h 4d", "bottom": "7c 7h Qd Js 4s"}]})
    >>> [p["points"] for p in json.loads(text)["players"]]
    [8, -8]
    """
    if type(data) is dict and data.keys() <= SCORE_HAND_KEYS:
        players = data.get("players")
        if type(players) is list and players:
            plain = _plain_boards(players)
            if plain is not None:
                ruleset = resolve_ruleset(data.get("ruleset"))
                return settlement_json(settle(plain[1], ruleset), plain[0])
    request = score_request_from_dict(data)
    return settlement_json(request.settle(), request.ids)


def _plain_boards(players: list[Any]) -> tuple[tuple[str, ...], tuple[Board, ...]] | None:
    """The common shape of :func:`score_request_from_dict`'s players (an id and three rows
    of codes separated by spaces, nobody in Fantasyland) read straight through: the ids and
    boards, or None for anything else, which the general reading takes again, with the same
    result or the error that names the field. (Row sizes and repeated cards are the
    settlement's to refuse, as for any board.)"""
    ids: list[str] = []
    boards: list[Board] = []
    card = card_by_code
    for player in players:
        if type(player) is not dict:
            return None
        top, middle, bottom = player.get("top"), player.get("middle"), player.get("bottom")
        if type(top) is not str or type(middle) is not str or type(bottom) is not str:
            return None
        # The three rows and an id, or the rows alone: then the player holds nothing else.
        player_id = player.get("id")
        if player_id is None:
            if len(player) != 3:
                return None
            player_id = str(len(ids))  # the player's index
        elif len(player) != 4 or type(player_id) is not str:
            return None
        if player_id in ids:  # the general reading names the repeated id
            return None
        try:
            board = Board(
                tuple(map(card, top.split())),
                tuple(map(card, middle.split())),
                tuple(map(card, bottom.split())),
            )
        except KeyError:  # a spelling parse_cards reads (commas) or an error it names
            return None
        ids.append(player_id)
        boards.append(board)
    return tuple(ids), tuple(boards)


def _score_tier(player: Mapping[str, Any], ruleset: Ruleset, place: str) -> int:
    """The tier a player's board was set in: ``fantasyland_cards`` (0 or 13..17), or the
    ruleset's base tier for ``in_fantasyland: true``; a contradiction is refused."""
    in_fl = player.get("in_fantasyland")
    if in_fl is not None and not isinstance(in_fl, bool):
        raise InvalidInputError(
            f"{place}.in_fantasyland must be true or false", field=f"{place}.in_fantasyland"
        )
    cards = player.get("fantasyland_cards", 0)
    field = f"{place}.fantasyland_cards"
    if (
        isinstance(cards, bool)
        or not isinstance(cards, int)
        or not (cards == 0 or 13 <= cards <= 17)
    ):
        raise InvalidInputError(
            f"{field} must be 0 (not in Fantasyland) or 13..17, got {cards!r}", field=field
        )
    if in_fl is False and cards:
        raise InvalidInputError(
            f"{place} says in_fantasyland false and fantasyland_cards {cards}", field=field
        )
    return ruleset.fantasyland_tier(in_fantasyland=bool(in_fl), cards=cards)


def hand_to_dict(value: int) -> dict[str, Any]:
    hand = HandValue(value)
    return {"category": _CATEGORY_NAMES[hand.category], "name": str(hand), "value": value}


_CATEGORY_NAMES = {category: category.name.lower() for category in Category}


def settlement_to_dict(settlement: Settlement, ids: Sequence[str]) -> dict[str, Any]:
    players = []
    for p in settlement.players:
        royalties = dict(zip((r.value for r in ROWS), p.royalties, strict=True))
        players.append(
            {
                "id": ids[p.index],
                "points": p.points,
                "units": p.units,
                "fouled": p.fouled,
                "royalties": {**royalties, "total": sum(p.royalties)},
                "hands": {
                    r.value: hand_to_dict(v) for r, v in zip(ROWS, p.board.values, strict=True)
                },
                "fantasyland_next": {
                    "qualifies": p.fantasyland.qualifies,
                    "cards": p.fantasyland.cards,
                },
            }
        )
    pairs = [
        {
            "a": ids[pr.a],
            "b": ids[pr.b],
            "rows": dict(zip((r.value for r in ROWS), pr.rows, strict=True)),
            "scoop": pr.scoop,
            "a_fouled": settlement.players[pr.a].fouled,
            "b_fouled": settlement.players[pr.b].fouled,
            "row_points": pr.row_points,
            "royalties": pr.royalties,
            "points": pr.points,
            "capped_points": pr.capped_points,
            "unit_value": pr.unit_value,
            "units": pr.units,
        }
        for pr in settlement.pairs
    ]
    return {"ruleset": settlement.ruleset, "players": players, "pairs": pairs}


# ``settlement_json``: the same text as ``json.dumps(settlement_to_dict(...))``, put together
# from cached pieces (a row's hand, a board's royalties, a pair's numbers), at a fraction of
# the cost: ``ofc score --jsonl`` writes one a hand.
@functools.cache  # under 10,000 row values exist
def _hand_json(value: int) -> str:
    """``json.dumps(hand_to_dict(value))``'s text, put together directly: a batch meets a few
    thousand values for the first time, and the dict and its encoding cost more than the name.

    >>> from ofc.evaluator import evaluate
    >>> value = evaluate(parse_cards("Qs Qd 9c 4h 2d")).value
    >>> _hand_json(value) == json.dumps(hand_to_dict(value))
    True
    """
    hand = HandValue(value)
    name = json.dumps(str(hand))
    return f'{{"category": "{_CATEGORY_NAMES[hand.category]}", "name": {name}, "value": {value}}}'


@functools.lru_cache(maxsize=4096)  # ids come back line after line
def _json_string(text: str) -> str:
    return json.dumps(text)


def _json_bool(flag: bool) -> str:
    return "true" if flag else "false"


@functools.lru_cache(maxsize=1 << 14)  # a board's verdict: few shapes
def _verdict_json(
    fouled: bool, royalties: tuple[int, int, int], fantasyland: tuple[bool, int]
) -> tuple[str, str]:
    """A player's text before its top row's hand, and after its bottom row's."""
    top, middle, bottom = royalties
    qualifies, cards = fantasyland
    return (
        f'"fouled": {_json_bool(fouled)}, "royalties": {{"top": {top}, "middle": {middle}, '
        f'"bottom": {bottom}, "total": {top + middle + bottom}}}, "hands": {{"top": ',
        f'}}, "fantasyland_next": {{"qualifies": {_json_bool(qualifies)}, "cards": {cards}}}}}',
    )


@functools.lru_cache(maxsize=1 << 16)  # pair results repeat: small numbers in few shapes
def _pair_json(pair: PairResult, a_fouled: bool, b_fouled: bool) -> str:
    _, _, (top, middle, bottom), scoop, row_points, royalties, points, capped, unit = pair
    return (
        f'"rows": {{"top": {top}, "middle": {middle}, "bottom": {bottom}}}, "scoop": {scoop}, '
        f'"a_fouled": {_json_bool(a_fouled)}, "b_fouled": {_json_bool(b_fouled)}, '
        f'"row_points": {row_points}, "royalties": {royalties}, "points": {points}, '
        f'"capped_points": {capped}, "unit_value": {unit}, "units": {capped * unit}}}'
    )


def settlement_json(settlement: Settlement, ids: Sequence[str]) -> str:
    """``json.dumps(settlement_to_dict(settlement, ids))``, the same text, several times
    faster (for a stream of hands).

    >>> req = score_request_from_dict({"players": [
    ...     {"top": "Ac 3d 2h", "middle": "6c 6d 9h 8s 4c", "bottom": "9c 8c 7d 6h 5s"},
    ...     {"top": "Kd 3c 2d", "middle": "5c 5d 9d 8h 4d", "bottom": "7c 7h Qd Js 4s"}]})
    >>> s = req.settle()
    >>> settlement_json(s, req.ids) == json.dumps(settlement_to_dict(s, req.ids))
    True
    """
    ruleset, players, pairs = settlement
    names = list(map(_json_string, ids))
    hand_json = _hand_json
    player_parts = []
    for index, (values, fouled, royalties, fantasyland), points, units in players:
        top, middle, bottom = values
        before, after = _verdict_json(fouled, royalties, fantasyland)
        player_parts.append(
            f'{{"id": {names[index]}, "points": {points}, "units": {units}, {before}'
            f'{hand_json(top)}, "middle": {hand_json(middle)}, "bottom": {hand_json(bottom)}{after}'
        )
    pair_parts = [
        f'{{"a": {names[pair[0]]}, "b": {names[pair[1]]}, '
        + _pair_json(pair, players[pair[0]][1][1], players[pair[1]][1][1])
        for pair in pairs
    ]
    return (
        f'{{"ruleset": {_json_string(ruleset)}, "players": [{", ".join(player_parts)}], '
        f'"pairs": [{", ".join(pair_parts)}]}}'
    )


def error_to_dict(error: OfcError) -> dict[str, Any]:
    return {"reason": error.reason, "message": error.message, "field": error.field}


def board_to_dict(board: Board) -> dict[str, list[str]]:
    """The rows in ``ROWS`` order, by name.

    >>> board_to_dict(Board.parse("As / Kd Qc /"))
    {'top': ['As'], 'middle': ['Kd', 'Qc'], 'bottom': []}
    """
    return {
        "top": card_codes(board.top),
        "middle": card_codes(board.middle),
        "bottom": card_codes(board.bottom),
    }


def format_version(state: MatchState) -> int:
    """The version a state is written in (and a hand history starting from it, when it uses
    nothing of version 3: :func:`history_format_version`).

    >>> from ofc.engine import new_match
    >>> format_version(new_match(seats=3))
    1
    >>> format_version(new_match(seats=3, pair_units={(0, 1): 5}))
    2
    """
    return 2 if state.pair_units else 1


# --- reading helpers ------------------------------------------------------------------------
def _obj(raw: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise InvalidInputError(f"{path or 'the input'} must be a JSON object", field=path)
    return raw


def _key(obj: Mapping[str, Any], key: str, path: str) -> Any:
    if key not in obj:
        raise InvalidInputError(f"{_join(path, key)} is missing", field=_join(path, key))
    return obj[key]


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _int(raw: Any, path: str, *, minimum: int | None = 0) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or (minimum is not None and raw < minimum):
        bound = "an integer" if minimum is None else f"an integer >= {minimum}"
        raise InvalidInputError(f"{path} must be {bound}, got {raw!r}", field=path)
    return raw


def _opt_int(raw: Any, path: str, *, minimum: int = 0) -> int | None:
    return None if raw is None else _int(raw, path, minimum=minimum)


def _str(raw: Any, path: str) -> str:
    if not isinstance(raw, str):
        raise InvalidInputError(f"{path} must be a string, got {raw!r}", field=path)
    return raw


def _hex(raw: Any, path: str) -> bytes:
    try:
        return bytes.fromhex(_str(raw, path))
    except ValueError:
        raise InvalidInputError(f"{path} must be hex, got {raw!r}", field=path) from None


def _list(raw: Any, path: str) -> list[Any]:
    if not isinstance(raw, list):
        raise InvalidInputError(f"{path} must be a list", field=path)
    return raw


def _cards(raw: Any, path: str) -> tuple[Card, ...]:
    return cards_from_json(_list(raw, path), field=path)


def _card(raw: Any, path: str) -> Card:
    cards = cards_from_json([_str(raw, path)], field=path)
    return cards[0]


def _row(raw: Any, path: str) -> Row:
    text = _str(raw, path)
    if text not in {r.value for r in ROWS}:
        raise InvalidInputError(f"{path} must be top, middle or bottom, got {raw!r}", field=path)
    return Row(text)


def _board(raw: Any, path: str) -> Board:
    obj = _obj(raw, path)
    top, middle, bottom = (_cards(_key(obj, r.value, path), _join(path, r.value)) for r in ROWS)
    return Board(top, middle, bottom)


# --- states ---------------------------------------------------------------------------------
def state_as_written(state: MatchState, written: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`state_to_dict` of ``state`` in the form ``written`` (a document that reads as
    ``state``) has: the releases that first kept a table's pair unit values (75a55fb to
    c3fb462, before format 2) wrote such a state as format 1, every key as now; a state
    they wrote is read back (and its history verified) in that form.

    >>> from ofc.engine import new_match
    >>> staked = new_match(seats=3, pair_units={(0, 1): 5})
    >>> old = {**state_to_dict(staked), "format_version": 1}
    >>> state_from_dict(old) == staked, state_as_written(staked, old) == old
    (True, True)
    >>> state_as_written(staked, state_to_dict(staked))["format_version"]
    2
    """
    data = state_to_dict(state)
    if state.pair_units and written.get("format_version") == 1:
        data["format_version"] = 1
    return data


def state_to_dict(state: MatchState, *, compact: bool = False) -> dict[str, Any]:
    """The whole match state as JSON-ready data (server seed included: store it privately).

    ``pair_unit_values`` (the agreed unit values per pair of seats) is written only when the
    table has any, in format version 2; states of tables without them stay version 1.
    ``compact``: without the ruleset (the caller stores it once, beside) and the hand's deck
    (it follows from the hand's seeds and number); :func:`state_from_dict` reads it back
    given the ruleset.

    >>> from ofc.engine import new_match
    >>> state = new_match(seats=2)
    >>> sorted(set(state_to_dict(state)) - set(state_to_dict(state, compact=True)))
    ['ruleset']
    >>> state_from_dict(state_to_dict(state, compact=True), ruleset=state.ruleset) == state
    True
    """
    hand = state.hand
    data: dict[str, Any] = {
        "format_version": format_version(state),
        "seats": [
            {
                "player_id": s.player_id,
                "points": s.points,
                "fantasyland": s.fantasyland,
                "fantasyland_streak": s.fantasyland_streak,
            }
            for s in state.seats
        ],
        "button": state.button,
        "hands_played": state.hands_played,
        "max_hands": state.max_hands,
        "hand": None if hand is None else _hand_to_dict(hand, deck=not compact),
    }
    if not compact:
        data = {
            "format_version": data.pop("format_version"),
            "ruleset": state.ruleset.to_dict(),
        } | data
    if state.pair_units:
        data["pair_unit_values"] = [
            {"a": a, "b": b, "unit_value": unit} for a, b, unit in state.pair_units
        ]
    return data


def _hand_to_dict(hand: HandState, *, deck: bool = True) -> dict[str, Any]:
    data: dict[str, Any] = {
        "number": hand.number,
        "button": hand.button,
        "server_seed": hand.server_seed.hex(),
        "client_seed": hand.client_seed.hex(),
    }
    if deck:
        data["deck"] = card_codes(hand.deck)
    data |= {
        "dealt": hand.dealt,
        "seats": [
            {
                "seat": s.seat,
                "fantasyland": s.fantasyland,
                "fantasyland_streak": s.fantasyland_streak,
                "board": board_to_dict(s.board),
                "pending": card_codes(s.pending),
                "discards": card_codes(s.discards),
            }
            for s in hand.seats
        ],
        "street": hand.street,
        "turn": hand.turn,
        "started_at_ms": hand.started_at_ms,
        "updated_at_ms": hand.updated_at_ms,
    }
    return data


def state_from_dict(data: Any, *, ruleset: Ruleset | None = None) -> MatchState:
    """Read :func:`state_to_dict`'s output back (strictly; see the module doc); given
    ``ruleset``, its compact form (no ruleset, no deck: the deck is the seeds' shuffle).
    Also the form of the releases that kept pair unit values before format 2 named them
    (75a55fb to c3fb462): format 1 with ``pair_unit_values`` (see :func:`state_as_written`)."""
    obj = _obj(data, "")
    version = _key(obj, "format_version", "")
    if isinstance(version, bool) or version not in STATE_FORMAT_VERSIONS:
        raise InvalidInputError(
            f"unsupported state format_version {version!r} (this engine reads "
            f"{', '.join(map(str, STATE_FORMAT_VERSIONS))})",
            field="format_version",
        )
    if ruleset is None:
        ruleset = ruleset_from_dict(_obj(_key(obj, "ruleset", ""), "ruleset"), base=DEFAULT_RULESET)
    elif "ruleset" in obj:
        raise InvalidInputError("a compact state holds no ruleset", field="ruleset")
    compact = "ruleset" not in obj
    seats = []
    for i, raw in enumerate(_list(_key(obj, "seats", ""), "seats")):
        path = f"seats[{i}]"
        seat = _obj(raw, path)
        seats.append(
            Seat(
                player_id=_str(_key(seat, "player_id", path), f"{path}.player_id"),
                points=_int(_key(seat, "points", path), f"{path}.points", minimum=None),
                fantasyland=_int(_key(seat, "fantasyland", path), f"{path}.fantasyland"),
                fantasyland_streak=_int(
                    _key(seat, "fantasyland_streak", path), f"{path}.fantasyland_streak"
                ),
            )
        )
    if not ruleset.min_players <= len(seats) <= ruleset.max_players:
        raise InvalidInputError(
            f"ruleset {ruleset.name!r} plays {ruleset.min_players}..{ruleset.max_players} seats, "
            f"got {len(seats)}",
            field="seats",
        )
    button = _int(_key(obj, "button", ""), "button")
    if button >= len(seats):
        raise InvalidInputError(f"button {button} is not a seat", field="button")
    hands_played = _int(_key(obj, "hands_played", ""), "hands_played")
    max_hands = _opt_int(_key(obj, "max_hands", ""), "max_hands", minimum=1)
    hand_raw = _key(obj, "hand", "")
    hand = (
        None
        if hand_raw is None
        else _hand_from_dict(hand_raw, len(seats), ruleset, compact=compact)
    )
    if hand is not None and hand.number != hands_played:
        raise InvalidInputError(
            f"hand.number {hand.number} is not hands_played {hands_played}", field="hand.number"
        )
    pair_units = _pair_units_from_list(obj.get("pair_unit_values", []), len(seats))
    return MatchState(ruleset, tuple(seats), button, hands_played, max_hands, hand, pair_units)


def _pair_units_from_list(raw: Any, table_size: int) -> tuple[tuple[int, int, int], ...]:
    """``pair_unit_values``: seats ``a < b`` of the table, each pair once, in pair order."""
    units: list[tuple[int, int, int]] = []
    for k, item in enumerate(_list(raw, "pair_unit_values")):
        path = f"pair_unit_values[{k}]"
        pair = _obj(item, path)
        a = _int(_key(pair, "a", path), f"{path}.a")
        b = _int(_key(pair, "b", path), f"{path}.b")
        unit = _int(_key(pair, "unit_value", path), f"{path}.unit_value", minimum=1)
        if not a < b < table_size:
            raise InvalidInputError(
                f"{path}: a pair is two seats a < b < {table_size}, got ({a}, {b})",
                field=f"{path}.b",
            )
        if units and (a, b) <= units[-1][:2]:
            raise InvalidInputError(
                f"{path}: pairs are listed once each, in ascending (a, b) order", field=path
            )
        units.append((a, b, unit))
    return tuple(units)


@functools.lru_cache(maxsize=1024)
def _shuffled(server_seed: bytes, client_seed: bytes, number: int, jokers: int) -> tuple[Card, ...]:
    """A hand's deck, shuffled once per replica: a live table's state is read at each move."""
    return deal_deck(server_seed, client_seed, number, jokers=jokers)


def _hand_from_dict(
    raw: Any, table_size: int, ruleset: Ruleset, *, compact: bool = False
) -> HandState:
    streets = ruleset.streets
    path = "hand"
    obj = _obj(raw, path)

    def get(key: str) -> Any:
        return _key(obj, key, path)

    number = _int(get("number"), "hand.number", minimum=1)
    server_seed = _hex(get("server_seed"), "hand.server_seed")
    client_seed = _hex(get("client_seed"), "hand.client_seed")
    if compact and "deck" in obj:
        raise InvalidInputError("a compact state's hand holds no deck", field="hand.deck")
    deck = _shuffled(server_seed, client_seed, number, ruleset.jokers)
    if not compact and _cards(get("deck"), "hand.deck") != deck:
        raise InvalidInputError(
            f"hand.deck is not the {algorithm_for(ruleset.jokers)} deck of its seeds and "
            f"number ({ruleset.deck_size} cards)",
            field="hand.deck",
        )
    dealt = _int(get("dealt"), "hand.dealt")
    seats: list[HandSeat] = []
    for i, seat_raw in enumerate(_list(get("seats"), "hand.seats")):
        seat_path = f"hand.seats[{i}]"
        seat = _obj(seat_raw, seat_path)

        def field_of(key: str, seat: Mapping[str, Any] = seat, seat_path: str = seat_path) -> Any:
            return _key(seat, key, seat_path)

        number_of_seat = _int(field_of("seat"), f"{seat_path}.seat")
        if number_of_seat >= table_size or any(s.seat == number_of_seat for s in seats):
            raise InvalidInputError(
                f"{seat_path}.seat is not a distinct seat", field=f"{seat_path}.seat"
            )
        fantasyland = _int(field_of("fantasyland"), f"{seat_path}.fantasyland")
        if fantasyland and not BOARD_SIZE <= fantasyland <= 17:
            raise InvalidInputError(
                f"{seat_path}.fantasyland must be 0 or 13..17", field=f"{seat_path}.fantasyland"
            )
        seats.append(
            HandSeat(
                seat=number_of_seat,
                fantasyland=fantasyland,
                fantasyland_streak=_int(
                    field_of("fantasyland_streak"), f"{seat_path}.fantasyland_streak"
                ),
                board=_board(field_of("board"), f"{seat_path}.board"),
                pending=_cards(field_of("pending"), f"{seat_path}.pending"),
                discards=_cards(field_of("discards"), f"{seat_path}.discards"),
            )
        )
    street = _int(get("street"), "hand.street")
    turn = _opt_int(get("turn"), "hand.turn")
    hand = HandState(
        number=number,
        button=_int(get("button"), "hand.button"),
        server_seed=server_seed,
        client_seed=client_seed,
        deck=deck,
        dealt=dealt,
        seats=tuple(seats),
        street=street,
        turn=turn,
        started_at_ms=_int(get("started_at_ms"), "hand.started_at_ms"),
        updated_at_ms=_int(get("updated_at_ms"), "hand.updated_at_ms"),
    )
    _check_hand(hand, streets)
    return hand


def _check_hand(hand: HandState, streets: tuple[Street, ...]) -> None:
    """Every dealt card in exactly one place; rows not overfull; the turn holds a batch."""
    if not 2 <= len(hand.seats) <= 4:
        raise InvalidInputError("a hand has 2..4 seats", field="hand.seats")
    if hand.dealt > len(hand.deck):
        raise InvalidInputError("hand.dealt exceeds the deck", field="hand.dealt")
    placed: list[Card] = []
    for i, s in enumerate(hand.seats):
        for row in ROWS:
            if len(s.board.row(row)) > row.size:
                path = f"hand.seats[{i}].board.{row.value}"
                raise InvalidInputError(f"{path} holds more than {row.size} cards", field=path)
        placed += [*s.board.cards, *s.pending, *s.discards]
    if len(placed) != len(set(placed)) or set(placed) != set(hand.deck[: hand.dealt]):
        raise InvalidInputError(
            "the hand's boards, batches and discards are not exactly the dealt cards",
            field="hand.seats",
        )
    if hand.street > len(streets):
        raise InvalidInputError(f"hand.street must be 0..{len(streets)}", field="hand.street")
    for i, s in enumerate(hand.seats):
        path = f"hand.seats[{i}]"
        if s.fantasyland:
            untouched = len(s.pending) == s.fantasyland and not s.board.cards and not s.discards
            set_ = not s.pending and s.done and len(s.discards) == s.fantasyland - BOARD_SIZE
            if not (untouched or set_):
                raise InvalidInputError(f"{path} is neither dealt nor set", field=path)
        elif s.seat == hand.turn:
            if hand.street >= len(streets) or len(s.pending) != streets[hand.street].deal:
                raise InvalidInputError(f"{path} does not hold its street's batch", field=path)
        elif s.pending:
            raise InvalidInputError(f"{path} holds a batch out of turn", field=path)
    if hand.turn is not None and hand.index(hand.turn) < 0:
        raise InvalidInputError("hand.turn is not a seat of the hand", field="hand.turn")


def state_from_own_dict(data: Mapping[str, Any], *, ruleset: Ruleset) -> MatchState:
    """Read back a compact :func:`state_to_dict` this program wrote itself (a server's own
    table record), without :func:`state_from_dict`'s checks: the same state, built by its
    constructors at a fraction of the cost. Input from anywhere else (a history, an import,
    a request) goes through :func:`state_from_dict`. A value that is not such a state
    raises ``KeyError``, ``TypeError``, ``IndexError`` or ``ValueError``, or reads as
    nonsense: the caller vouches for the bytes.

    >>> from ofc.engine import SitDown, StartHand, apply, new_match
    >>> state, _ = apply(new_match(seats=2), SitDown(0, "ann"))
    >>> state, _ = apply(apply(state, SitDown(1, "bob"))[0], StartHand(bytes(32)))
    >>> compact = state_to_dict(state, compact=True)
    >>> state_from_own_dict(compact, ruleset=state.ruleset) == state
    True
    >>> state_from_own_dict(compact, ruleset=state.ruleset) == state_from_dict(
    ...     compact, ruleset=state.ruleset
    ... )
    True
    >>> state_from_own_dict({**compact, "format_version": 99}, ruleset=state.ruleset)
    Traceback (most recent call last):
    ...
    ValueError: state format 99 is not one this release reads
    """
    version = data.get("format_version")
    if version not in STATE_FORMAT_VERSIONS:  # a newer server's record: not read as nonsense
        raise ValueError(f"state format {version!r} is not one this release reads")
    hand_raw = data["hand"]
    hand = None if hand_raw is None else _hand_from_own_dict(hand_raw, ruleset)
    pair_units = tuple(
        (int(p["a"]), int(p["b"]), int(p["unit_value"])) for p in data.get("pair_unit_values", ())
    )
    return MatchState(
        ruleset,
        tuple(
            Seat(s["player_id"], s["points"], s["fantasyland"], s["fantasyland_streak"])
            for s in data["seats"]
        ),
        data["button"],
        data["hands_played"],
        data["max_hands"],
        hand,
        pair_units,
    )


def _hand_from_own_dict(raw: Mapping[str, Any], ruleset: Ruleset) -> HandState:
    card = card_by_code
    server_seed = bytes.fromhex(raw["server_seed"])
    client_seed = bytes.fromhex(raw["client_seed"])
    number = raw["number"]
    seats = []
    for s in raw["seats"]:
        board = s["board"]
        seats.append(
            HandSeat(
                s["seat"],
                s["fantasyland"],
                s["fantasyland_streak"],
                Board(
                    tuple(map(card, board["top"])),
                    tuple(map(card, board["middle"])),
                    tuple(map(card, board["bottom"])),
                ),
                tuple(map(card, s["pending"])),
                tuple(map(card, s["discards"])),
            )
        )
    return HandState(
        number,
        raw["button"],
        server_seed,
        client_seed,
        _shuffled(server_seed, client_seed, number, ruleset.jokers),
        raw["dealt"],
        tuple(seats),
        raw["street"],
        raw["turn"],
        raw["started_at_ms"],
        raw["updated_at_ms"],
    )


# --- a server's own state, in parts ---------------------------------------------------------
class OwnParts(NamedTuple):
    """A state as a server's own table record stores it (:func:`state_to_own_parts`), in
    parts that change at different paces, so that a reader keeps what it decoded before by
    the part's bytes: ``match`` (compact JSON of the state without its hand: the seats,
    button, hands played) and ``hand`` (JSON of the hand's number, button, seeds and start
    time) change once a hand; ``deck`` (the shuffled deck, a card id a byte) once a hand;
    ``progress`` (cards dealt, street, turn, last update) and ``seats`` (each hand seat: its
    Fantasyland numbers, then its rows, batch and discards as card ids) at every move.
    ``hand``, ``deck`` and ``progress`` are empty between hands."""

    match: bytes
    hand: bytes
    deck: bytes
    progress: bytes
    seats: tuple[bytes, ...]


_CARD_OF_ID: tuple[Card, ...] = deck_cards(MAX_JOKERS)  # every card, by its id
# seat, fantasyland, fantasyland streak; then the sizes of top, middle, bottom, batch, discards
_OWN_SEAT = struct.Struct(">HBI5B")
_OWN_PROGRESS = struct.Struct(">HHhq")  # dealt, street, turn (-1: none), updated_at_ms


def state_to_own_parts(state: MatchState) -> OwnParts:
    """The state in :class:`OwnParts`; :func:`state_from_own_parts` reads them back.

    >>> from ofc.engine import SitDown, StartHand, apply, new_match
    >>> state, _ = apply(new_match(seats=2), SitDown(0, "ann"))
    >>> state, _ = apply(apply(state, SitDown(1, "bob"))[0], StartHand(bytes(32)))
    >>> parts = state_to_own_parts(state)
    >>> len(parts.deck), len(parts.seats)
    (52, 2)
    >>> state_from_own_parts(parts, ruleset=state.ruleset) == state
    True
    """
    hand = state.hand
    match = own_match_bytes(state)
    if hand is None:
        return OwnParts(match, b"", b"", b"", ())
    return OwnParts(
        match,
        own_hand_bytes(hand),
        bytes(hand.deck),
        own_progress_bytes(hand),
        tuple(map(own_seat_bytes, hand.seats)),
    )


def state_from_own_parts(parts: OwnParts, *, ruleset: Ruleset) -> MatchState:
    """Read :func:`state_to_own_parts`' parts back, by the constructors (as
    :func:`state_from_own_dict`: the caller vouches for the bytes). A table record reads
    each part through its own cache instead, with the functions this one calls."""
    match = match_from_own_bytes(parts.match, ruleset=ruleset)
    if not parts.hand:
        return match
    hand = hand_from_own_parts(
        hand_head_from_own_bytes(parts.hand),
        cards_from_own_bytes(parts.deck),
        parts.progress,
        tuple(map(seat_from_own_bytes, parts.seats)),
    )
    return dataclasses.replace(match, hand=hand)


def own_match_bytes(state: MatchState) -> bytes:
    """:class:`OwnParts`' ``match``: the compact state of ``state`` without its hand."""
    return _OWN_JSON.encode(
        state_to_dict(dataclasses.replace(state, hand=None), compact=True)
    ).encode()


def match_from_own_bytes(raw: bytes, *, ruleset: Ruleset) -> MatchState:
    """The state (with no hand) of :func:`own_match_bytes`' bytes."""
    data = json.loads(raw)
    if data["hand"] is not None:
        raise ValueError("an own state's match part holds a hand")
    return state_from_own_dict(data, ruleset=ruleset)


OwnHandHead = tuple[int, int, bytes, bytes, int]  # number, button, server and client seed, start


def own_hand_bytes(hand: HandState) -> bytes:
    """:class:`OwnParts`' ``hand``: what stays the same over a hand but its deck."""
    head = [hand.number, hand.button, hand.server_seed.hex(), hand.client_seed.hex()]
    return _OWN_JSON.encode([*head, hand.started_at_ms]).encode()


def hand_head_from_own_bytes(raw: bytes) -> OwnHandHead:
    number, button, server_seed, client_seed, started_at_ms = json.loads(raw)
    return (number, button, bytes.fromhex(server_seed), bytes.fromhex(client_seed), started_at_ms)


def cards_from_own_bytes(raw: bytes) -> tuple[Card, ...]:
    """Cards stored a card id a byte (``bytes(cards)``)."""
    return tuple(map(_CARD_OF_ID.__getitem__, raw))


def own_progress_bytes(hand: HandState) -> bytes:
    turn = -1 if hand.turn is None else hand.turn
    return _OWN_PROGRESS.pack(hand.dealt, hand.street, turn, hand.updated_at_ms)


def own_seat_bytes(seat: HandSeat) -> bytes:
    board = seat.board
    rows = (board.top, board.middle, board.bottom, seat.pending, seat.discards)
    sizes = map(len, rows)
    head = _OWN_SEAT.pack(seat.seat, seat.fantasyland, seat.fantasyland_streak, *sizes)
    return head + bytes(board.top + board.middle + board.bottom + seat.pending + seat.discards)


def seat_from_own_bytes(raw: bytes) -> HandSeat:
    """The hand seat of :func:`own_seat_bytes`' bytes."""
    seat, fantasyland, streak, top, middle, bottom, pending, discards = _OWN_SEAT.unpack_from(raw)
    cards = tuple(map(_CARD_OF_ID.__getitem__, raw[_OWN_SEAT.size :]))
    if len(cards) != top + middle + bottom + pending + discards:
        raise ValueError("an own hand seat's cards are not its rows' sizes")
    a, b, c, d = top, top + middle, top + middle + bottom, top + middle + bottom + pending
    board = make_board(cards[:a], cards[a:b], cards[b:c])
    return make_hand_seat(seat, fantasyland, streak, board, cards[c:d], cards[d:])


def hand_from_own_parts(
    head: OwnHandHead, deck: tuple[Card, ...], progress: bytes, seats: tuple[HandSeat, ...]
) -> HandState:
    """The hand of its parts, each already read (:class:`OwnParts`)."""
    number, button, server_seed, client_seed, started_at_ms = head
    dealt, street, turn, updated_at_ms = _OWN_PROGRESS.unpack(progress)
    return make_hand(
        number,
        button,
        server_seed,
        client_seed,
        deck,
        dealt,
        seats,
        street,
        None if turn < 0 else turn,
        started_at_ms,
        updated_at_ms,
    )


_OWN_JSON = json.JSONEncoder(separators=(",", ":"), check_circular=False)


# --- actions --------------------------------------------------------------------------------
def action_to_dict(action: Action) -> dict[str, Any]:
    """An action as JSON-ready data (a ``start_hand`` carries the server seed)."""
    if isinstance(action, SitDown):
        return {
            "type": "sit_down",
            "seat": action.seat,
            "player_id": action.player_id,
            "at_ms": action.at_ms,
        }
    if isinstance(action, StandUp):
        return {"type": "stand_up", "seat": action.seat, "at_ms": action.at_ms}
    if isinstance(action, StartHand):
        return {
            "type": "start_hand",
            "server_seed": action.server_seed.hex(),
            "client_seed": action.client_seed.hex(),
            "at_ms": action.at_ms,
        }
    if isinstance(action, Place):
        return {
            "type": "place",
            "seat": action.seat,
            "placements": [[str(c), r.value] for c, r in action.placements],
            "discard": None if action.discard is None else str(action.discard),
            "at_ms": action.at_ms,
        }
    if isinstance(action, SetFantasyland):
        return {
            "type": "set_fantasyland",
            "seat": action.seat,
            "top": card_codes(action.top),
            "middle": card_codes(action.middle),
            "bottom": card_codes(action.bottom),
            "discards": card_codes(action.discards),
            "at_ms": action.at_ms,
        }
    if isinstance(action, Timeout):
        return {
            "type": "timeout",
            "seat": action.seat,
            "at_ms": action.at_ms,
            "deadline_ms": action.deadline_ms,
            "policy": action.policy,
            "resolved": action_to_dict(action.move),
        }
    raise InvalidInputError(f"not an action: {action!r}", field="action")


def action_from_dict(data: Any) -> Action:
    """Read :func:`action_to_dict`'s output back; ``at_ms`` and ``discard``/``discards`` and
    ``client_seed`` may be left out (0, none, empty), and a timeout's ``deadline_ms`` and
    ``policy`` (none: as versions 1 and 2 of the history format write it). Placements may also
    be objects ``{"card": "As", "row": "bottom"}``. A timeout's move is ``resolved``."""
    obj = _obj(data, "")
    kind = _str(_key(obj, "type", ""), "type")
    at_ms = _int(obj.get("at_ms", 0), "at_ms")
    if kind == "start_hand":
        return StartHand(
            _hex(_key(obj, "server_seed", ""), "server_seed"),
            _hex(obj.get("client_seed", ""), "client_seed"),
            at_ms,
        )
    seat = _int(_key(obj, "seat", ""), "seat")
    if kind == "sit_down":
        return SitDown(seat, _str(_key(obj, "player_id", ""), "player_id"), at_ms)
    if kind == "stand_up":
        return StandUp(seat, at_ms)
    if kind == "timeout":
        resolved = _obj(_key(obj, "resolved", ""), "resolved")
        if resolved.get("type") not in ("place", "set_fantasyland"):
            raise InvalidInputError(
                "a timeout resolves to a place or a set_fantasyland", field="resolved.type"
            )
        try:
            move = action_from_dict(resolved)
        except OfcError as exc:
            exc.field = _join("resolved", exc.field)
            raise
        assert isinstance(move, Place | SetFantasyland)
        deadline = _opt_int(obj.get("deadline_ms"), "deadline_ms")
        policy = obj.get("policy")
        if policy is not None and (not isinstance(policy, str) or not policy):
            raise InvalidInputError("policy must be a non-empty string or null", field="policy")
        return Timeout(seat, move, policy, at_ms, deadline)
    if kind == "place":
        placements = []
        for k, raw in enumerate(_list(_key(obj, "placements", ""), "placements")):
            path = f"placements[{k}]"
            if isinstance(raw, Mapping):
                card_raw, row_raw = _key(raw, "card", path), _key(raw, "row", path)
            elif isinstance(raw, list) and len(raw) == 2:
                card_raw, row_raw = raw
            else:
                raise InvalidInputError(f"{path} must be [card, row]", field=path)
            placements.append((_card(card_raw, f"{path}.card"), _row(row_raw, f"{path}.row")))
        discard_raw = obj.get("discard")
        discard = None if discard_raw is None else _card(discard_raw, "discard")
        return Place(seat, tuple(placements), discard, at_ms)
    if kind == "set_fantasyland":
        top, middle, bottom = (_cards(_key(obj, r.value, ""), r.value) for r in ROWS)
        return SetFantasyland(
            seat, top, middle, bottom, _cards(obj.get("discards", []), "discards"), at_ms
        )
    raise InvalidInputError(f"unknown action type {kind!r}", field="type")


def action_from_own_dict(data: Mapping[str, Any]) -> Action:
    """Read back :func:`action_to_dict`'s output this program wrote itself (a server's own
    table record) by the constructors, without :func:`action_from_dict`'s checks: the same
    action at a fraction of the cost (as :func:`state_from_own_dict` for states). A value
    that is not such an action raises ``KeyError``, ``TypeError``, ``IndexError`` or
    ``ValueError``, or reads as nonsense: the caller vouches for the bytes.

    >>> from ofc.cards import Card
    >>> place = Place(1, ((Card.parse("As"), Row.TOP),), Card.parse("2c"), 7)
    >>> action_from_own_dict(action_to_dict(place)) == place
    True
    >>> timeout = Timeout(0, place, "ofc-timeout-4", 9, 8)
    >>> action_from_own_dict(action_to_dict(timeout)) == timeout
    True
    """
    kind = data["type"]
    if kind == "place":
        discard = data["discard"]
        return Place(
            data["seat"],
            tuple([(card_by_code(card), _ROW_OF[row]) for card, row in data["placements"]]),
            None if discard is None else card_by_code(discard),
            data["at_ms"],
        )
    if kind == "set_fantasyland":
        return SetFantasyland(
            data["seat"],
            tuple(map(card_by_code, data["top"])),
            tuple(map(card_by_code, data["middle"])),
            tuple(map(card_by_code, data["bottom"])),
            tuple(map(card_by_code, data["discards"])),
            data["at_ms"],
        )
    if kind == "timeout":
        move = action_from_own_dict(data["resolved"])
        if not isinstance(move, Place | SetFantasyland):
            raise ValueError(f"an own timeout's move is a {data['resolved']['type']!r}")
        return Timeout(data["seat"], move, data["policy"], data["at_ms"], data["deadline_ms"])
    if kind == "start_hand":
        server_seed, client_seed = data["server_seed"], data["client_seed"]
        return StartHand(bytes.fromhex(server_seed), bytes.fromhex(client_seed), data["at_ms"])
    if kind == "sit_down":
        return SitDown(data["seat"], data["player_id"], data["at_ms"])
    if kind == "stand_up":
        return StandUp(data["seat"], data["at_ms"])
    raise ValueError(f"an own action is a {kind!r}")


_ROW_OF: dict[str, Row] = {row.value: row for row in ROWS}


# --- events ---------------------------------------------------------------------------------
def event_to_dict(event: Event) -> dict[str, Any]:
    """An event as JSON-ready data. Redact first for a viewer:
    ``event_to_dict(event_for_viewer(event, seat))``.

    >>> from ofc.engine import CardsDealt, event_for_viewer
    >>> e = CardsDealt(seat=1, street=0, position=0, count=1, cards=(Card.parse("As"),))
    >>> event_to_dict(e)["cards"], event_to_dict(event_for_viewer(e, None))["cards"]
    (['As'], [])
    """
    if isinstance(event, SeatTaken):
        return {"type": "seat_taken", "seat": event.seat, "player_id": event.player_id}
    if isinstance(event, SeatVacated):
        return {
            "type": "seat_vacated",
            "seat": event.seat,
            "player_id": event.player_id,
            "points": event.points,
        }
    if isinstance(event, HandStarted):
        return {
            "type": "hand_started",
            "number": event.number,
            "button": event.button,
            "order": list(event.order),
            "fantasyland": [{"seat": s, "cards": n} for s, n in event.fantasyland],
            "commitment": event.commitment,
            "client_seed": event.client_seed.hex(),
            "at_ms": event.at_ms,
        }
    if isinstance(event, CardsDealt):
        return {
            "type": "cards_dealt",
            "seat": event.seat,
            "street": event.street,
            "position": event.position,
            "count": event.count,
            "cards": card_codes(event.cards),
        }
    if isinstance(event, CardsPlaced):
        return {
            "type": "cards_placed",
            "seat": event.seat,
            "street": event.street,
            "placements": [[str(c), r.value] for c, r in event.placements],
        }
    if isinstance(event, DiscardMade):
        return {
            "type": "discard_made",
            "seat": event.seat,
            "street": event.street,
            "card": None if event.card is None else str(event.card),
        }
    if isinstance(event, TimeoutApplied):
        return {
            "type": "timeout_applied",
            "seat": event.seat,
            "action": None if event.action is None else action_to_dict(event.action),
        }
    if isinstance(event, FantasylandSet):
        return {
            "type": "fantasyland_set",
            "seat": event.seat,
            "board": board_to_dict(event.board),
            "discards": card_codes(event.discards),
        }
    if isinstance(event, FantasylandRevealed):
        return {
            "type": "fantasyland_revealed",
            "seat": event.seat,
            "board": board_to_dict(event.board),
        }
    if isinstance(event, HandSettled):
        return {
            "type": "hand_settled",
            "number": event.number,
            "seats": list(event.seats),
            "boards": [board_to_dict(b) for b in event.boards],
            "settlement": _settlement_by_seat(event),
            "fantasyland_next": [{"seat": s, "cards": n} for s, n in event.fantasyland_next],
            "totals": list(event.totals),
            "at_ms": event.at_ms,
        }
    if isinstance(event, SeedRevealed):
        return {
            "type": "seed_revealed",
            "number": event.number,
            "server_seed": event.server_seed.hex(),
            "client_seed": event.client_seed.hex(),
            "commitment": event.commitment,
        }
    if isinstance(event, ButtonMoved):
        return {"type": "button_moved", "from_seat": event.from_seat, "to_seat": event.to_seat}
    raise InvalidInputError(f"not an event: {event!r}", field="event")


def _settlement_by_seat(event: HandSettled) -> dict[str, Any]:
    """:func:`settlement_to_dict` with seats (ints) in place of player ids."""
    data = settlement_to_dict(event.settlement, [str(s) for s in event.seats])
    for player in data["players"]:
        player["seat"] = int(player.pop("id"))
    for pair in data["pairs"]:
        pair["a"], pair["b"] = int(pair["a"]), int(pair["b"])
    return data


# --- hand histories -------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TurnClock:
    """A table's turn clocks: each batch dealt to a seat playing street by street runs
    ``turn_time_limit_ms`` from its deal; a Fantasyland seat has
    ``fantasyland_time_limit_ms`` from the hand's start."""

    turn_time_limit_ms: int
    fantasyland_time_limit_ms: int


MAX_TURN_TIME_MS: Final = 3_600_000
"""The longest turn clock a table takes (an hour): longer ones are refused where set."""


@dataclass(frozen=True, slots=True)
class HandContext:
    """What a table knows of a hand that the engine does not (history format version 3).

    ``next_commitment``: the commitment of the next hand's server seed published when this
    hand started (``""``: none). ``clock``: the turn clocks (``None``: no clock).
    ``seat_units``: per seat of the table, its money before the hand (``None``: unknown).
    ``seat_changes``: the seats taken and left since the previous hand started (or since
    the table was made, for its first hand), in order (``None``: not recorded).
    """

    next_commitment: str = ""
    clock: TurnClock | None = None
    seat_units: tuple[int, ...] | None = None
    seat_changes: tuple[SitDown | StandUp, ...] | None = None


def history_format_version(
    initial: MatchState, actions: Iterable[Action], context: HandContext | None = None
) -> int:
    """The lowest hand-history format that holds this hand: 4 when its ruleset uses an
    option of version 4 (jokers among them), 3 with a table's context or a timeout (its
    policy and deadline are version 3's), else the initial state's (1 or 2).

    >>> from ofc.engine import new_match
    >>> history_format_version(new_match(seats=2), []), history_format_version(
    ...     new_match(seats=2), [], HandContext())
    (1, 3)
    >>> history_format_version(new_match("progressive-pineapple-keep", seats=2), [])
    4
    >>> history_format_version(new_match("classic-joker", seats=2), [])
    4
    """
    if initial.ruleset.uses_later_options:
        return 4
    if context is not None or any(isinstance(a, Timeout) for a in actions):
        return 3
    return format_version(initial)


def context_to_dict(context: HandContext) -> dict[str, Any]:
    """The version-3 top-level keys of a history (what :func:`context_from_dict` reads)."""
    clock = context.clock
    return {
        "next_commitment": context.next_commitment,
        "clock": None
        if clock is None
        else {
            "turn_time_limit_ms": clock.turn_time_limit_ms,
            "fantasyland_time_limit_ms": clock.fantasyland_time_limit_ms,
        },
        "seat_units": None if context.seat_units is None else list(context.seat_units),
        "seat_changes": None
        if context.seat_changes is None
        else [action_to_dict(a) for a in context.seat_changes],
    }


def context_from_dict(data: Mapping[str, Any]) -> HandContext:
    """The :class:`HandContext` of a version-3 history (its top-level keys).

    >>> from ofc.engine import SitDown
    >>> context = HandContext("", TurnClock(1_000, 4_000), (0, 0), (SitDown(1, "bob", 7),))
    >>> context_to_dict(context)["seat_changes"]
    [{'type': 'sit_down', 'seat': 1, 'player_id': 'bob', 'at_ms': 7}]
    >>> context_from_dict(context_to_dict(context)) == context
    True
    """
    clock_raw = _key(data, "clock", "")
    clock = None
    if clock_raw is not None:
        obj = _obj(clock_raw, "clock")
        clock = TurnClock(
            _int(_key(obj, "turn_time_limit_ms", "clock"), "clock.turn_time_limit_ms", minimum=1),
            _int(
                _key(obj, "fantasyland_time_limit_ms", "clock"),
                "clock.fantasyland_time_limit_ms",
                minimum=1,
            ),
        )
    units_raw = _key(data, "seat_units", "")
    units = None
    if units_raw is not None:
        units = tuple(
            _int(u, f"seat_units[{i}]", minimum=None)
            for i, u in enumerate(_list(units_raw, "seat_units"))
        )
    changes_raw = _key(data, "seat_changes", "")
    changes: tuple[SitDown | StandUp, ...] | None = None
    if changes_raw is not None:
        read: list[SitDown | StandUp] = []
        for i, raw in enumerate(_list(changes_raw, "seat_changes")):
            path = f"seat_changes[{i}]"
            try:
                change = action_from_dict(raw)
            except OfcError as exc:
                exc.field = _join(path, exc.field)
                raise
            if not isinstance(change, SitDown | StandUp):
                raise InvalidInputError(
                    f"{path} must be a sit_down or a stand_up", field=f"{path}.type"
                )
            read.append(change)
        changes = tuple(read)
    commitment_raw = _str(_key(data, "next_commitment", ""), "next_commitment")
    return HandContext(commitment_raw, clock, units, changes)


def hand_history(
    initial: MatchState,
    actions: Iterable[Action],
    context: HandContext | None = None,
    *,
    version: int | None = None,
) -> dict[str, Any]:
    """Everything an auditor needs to re-derive and re-score one finished hand.

    ``initial`` is the match before the hand's :class:`~ofc.engine.StartHand` (its previous
    hand, irrelevant to the next, is left out); ``actions`` start with that StartHand and end
    with the action that completed the last board; ``context`` is what the table adds (see
    :class:`HandContext`). The history lists the seeds and the commitment, the table as the
    hand began, every dealt batch (with its deck position), every action in order (a timeout
    with the move it made), the final boards and discards and the settlement, in the format
    :func:`history_format_version` gives (``version`` forces one: what a verifier re-writes).
    ``state_from_dict(h["initial_state"])`` plus ``action_from_dict`` of each action,
    replayed, gives the same hand.

    >>> from ofc.engine import SitDown, StartHand, apply, new_match, replay, seats_to_act
    >>> from ofc.policy import timeout
    >>> table, _ = replay(new_match(seats=2), [SitDown(0, "ann"), SitDown(1, "bob")])
    >>> actions: list[Action] = [StartHand(bytes(32), b"table-7")]
    >>> state, _ = apply(table, actions[0])
    >>> while waiting := seats_to_act(state):
    ...     actions.append(timeout(state, waiting[0], at_ms=len(actions)))
    ...     state, _ = apply(state, actions[-1])
    >>> history = hand_history(table, actions)
    >>> history["format_version"], history["client_seed"], len(history["deals"])
    (3, '7461626c652d37', 18)
    >>> history["actions"][1]["policy"], history["clock"], len(history["actions"])
    ('ofc-timeout-4', None, 19)
    >>> sum(p["points"] for p in history["settlement"]["players"])
    0
    """
    actions = list(actions)
    start = dataclasses.replace(initial, hand=None)
    final, events = replay(start, actions)
    return history_from_replay(start, actions, final, events, context, version=version)


def history_from_replay(
    initial: MatchState,
    actions: Sequence[Action],
    final: MatchState,
    events: Sequence[Event],
    context: HandContext | None = None,
    *,
    version: int | None = None,
) -> dict[str, Any]:
    """:func:`hand_history` when the caller has already replayed ``actions`` from
    ``initial`` (``initial`` between hands) to ``final``, producing ``events``: a verifier
    that replayed them one by one does not replay them again."""
    start = initial
    hand = final.hand
    if hand is None or not hand.over or hand.number != start.hands_played + 1:
        raise InvalidInputError(
            "a history needs the actions of exactly one complete hand", field="actions"
        )
    if version is None:
        version = history_format_version(start, actions, context)
    settled = next(e for e in events if isinstance(e, HandSettled))
    history: dict[str, Any] = {
        "format_version": version,
        "algorithm": algorithm_for(final.ruleset.jokers),
        "ruleset": final.ruleset.name,
        "hand_number": hand.number,
        "server_seed": hand.server_seed.hex(),
        "client_seed": hand.client_seed.hex(),
        "commitment": hand.commitment,
        "button": hand.button,
        "order": list(hand.order),
        "players": [
            {
                "seat": s.seat,
                "player_id": start.seats[s.seat].player_id,
                "fantasyland": s.fantasyland,
            }
            for s in hand.seats
        ],
        "initial_state": state_to_dict(start),
        "deals": [event_to_dict(e) for e in events if isinstance(e, CardsDealt)],
        "actions": [_history_action(a, version) for a in actions],
        "boards": [
            {"seat": s.seat, **board_to_dict(s.board), "discards": card_codes(s.discards)}
            for s in hand.seats
        ],
        "settlement": _settlement_by_seat(settled),
        "fantasyland_next": [{"seat": s, "cards": n} for s, n in settled.fantasyland_next],
        "button_next": final.button,
    }
    if version >= 3:
        history.update(context_to_dict(context or HandContext()))
    if final.ruleset.jokers:  # version 4: only a deck with jokers says its size
        history["deck_size"] = final.ruleset.deck_size
    return history


def history_of_hand(
    initial: MatchState,
    actions: Sequence[Action],
    final: MatchState,
    settled: HandSettled,
    context: HandContext | None = None,
    *,
    version: int | None = None,
) -> dict[str, Any]:
    """:func:`hand_history` of a hand its caller has just played, without replaying it:
    ``final`` is the match after the last of ``actions`` (applied from ``initial``, the
    match before the hand's StartHand) and ``settled`` the :class:`HandSettled` event that
    action produced. The dealt batches are read from the final hand (their positions are
    fixed in advance, :func:`~ofc.engine.dealt_batches`), so the history is the one
    :func:`hand_history` writes from a replay, byte for byte; a table that played the hand
    move by move has everything else already.

    >>> from ofc.engine import SitDown, StartHand, apply, new_match, replay, seats_to_act
    >>> from ofc.policy import timeout
    >>> table, _ = replay(new_match(seats=2), [SitDown(0, "ann"), SitDown(1, "bob")])
    >>> actions: list[Action] = [StartHand(bytes(32), b"table-7")]
    >>> state, events = apply(table, actions[0])
    >>> while waiting := seats_to_act(state):
    ...     actions.append(timeout(state, waiting[0], at_ms=len(actions)))
    ...     state, events = apply(state, actions[-1])
    >>> settled = next(e for e in events if isinstance(e, HandSettled))
    >>> history_of_hand(table, actions, state, settled) == hand_history(table, actions)
    True
    """
    start = initial if initial.hand is None else dataclasses.replace(initial, hand=None)
    hand = final.hand
    batches = () if hand is None else dealt_batches(hand, final.ruleset)
    return history_from_replay(start, actions, final, (*batches, settled), context, version=version)


def _history_action(action: Action, version: int) -> dict[str, Any]:
    """An action as a history of ``version`` writes it: before version 3 a timeout had no
    deadline or policy."""
    entry = action_to_dict(action)
    if isinstance(action, Timeout) and version < 3:
        del entry["deadline_ms"], entry["policy"]
    return entry
