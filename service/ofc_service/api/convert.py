"""Protobuf messages <-> core values, validating everything a client can send.

Every reader takes the field path of the message it reads (``hand.``, ``hands[3].``, ...)
and raises core errors whose ``field`` is the path in the request, in proto field names
(``hand.players[1].board.middle[2]``), so a client can point at the exact input. Limits
that the core does not know about (string lengths, list sizes, enum values) are checked
here, before any work, so an oversized or malformed request is rejected cheaply.
"""

from __future__ import annotations

import functools
import operator
import re
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, NoReturn

from ofc import errors as core
from ofc.cards import CODES, NATURAL_CARDS, RANK_CHARS, Card
from ofc.engine import make_board  # built for two thirds of a frozen __init__'s cost
from ofc.evaluator import Category, HandValue
from ofc.rulesets import PRESETS, ROWS, Row, Ruleset, StayCondition, get_ruleset, ruleset_from_dict
from ofc.scoring import Board, BoardResult, Settlement, settle, validate_boards
from ofc.shuffle import SERVER_SEED_BYTES, parse_seed_hex
from ofcpoker.v1 import cards_pb2, ruleset_pb2, settlement_pb2

MAX_ID_CHARS = 64
MAX_NAME_CHARS = 64
MAX_CARD_TOKEN_CHARS = 8  # "10♠" is 3; anything this long is not a card
MAX_FANTASYLAND_STREAK = 1000
MAX_LIST_ITEMS = 64  # streets, royalty entries, Fantasyland entries, stay conditions
MAX_POINTS = 10_000  # one royalty entry or scoring value: keeps every total inside sint32
MAX_UNIT_VALUE = 1_000_000  # money units per point: keeps units inside sint64
DEFAULT_PRESET = "classic"
CUSTOM_LABEL = "custom"

_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


def with_field(error: core.OfcError, field: str) -> core.OfcError:
    """The same error (same class and message) pointing at ``field``."""
    return type(error)(error.message, field=field)


# --- cards, rows, boards ---------------------------------------------------------------------
# A complete board of canonical codes on the wire: 13 fields of 4 bytes each, a tag (top 1,
# middle 2, bottom 3: 0x0a, 0x12, 0x1a), the length 2 and the code. Read as 13 big-endian
# words, each looked up in its row's table of the 52 words it may be: one C call per board.
_BOARD_WIRE_BYTES = 52
_BOARD_WORDS = struct.Struct(">13I")


def _row_words(tag: int) -> dict[int, Card]:
    return {
        int.from_bytes(bytes([tag, 2]) + code.encode(), "big"): Card.parse(code) for code in CODES
    }


_TOP_WORDS, _MIDDLE_WORDS, _BOTTOM_WORDS = (_row_words(tag) for tag in (0x0A, 0x12, 0x1A))
_WORD_TABLES = (_TOP_WORDS,) * 3 + (_MIDDLE_WORDS,) * 5 + (_BOTTOM_WORDS,) * 5
_lookup = dict.__getitem__


def _board_from_wire(raw: bytes) -> Board | None:
    """A ``Board`` message's bytes as a board, when they are 13 canonical codes in order."""
    try:
        cards = tuple(map(_lookup, _WORD_TABLES, _BOARD_WORDS.unpack(raw)))
    except (KeyError, struct.error):
        return None
    return make_board(cards[:3], cards[3:8], cards[8:])


def read_board(board: cards_pb2.Board) -> Board | None:
    """A complete board of canonical codes, or ``None`` for anything else: then
    :func:`board_from_proto` reads it again, accepting every spelling or naming the bad
    field. Batches read ~10^5 boards a second, so the common case reads the board's wire
    bytes (one C call) rather than 13 strings through the message API, at a third of the
    cost; any other encoding of the same board takes the long way to the same result."""
    return _board_from_wire(board.SerializeToString())


_BOARD_ALONE = b"\x0a\x36\x12\x34"  # a PlayerHand of a board alone: 54 bytes, the board 52


def _players_from_wire(raw: bytes) -> tuple[list[Board], list[str], int] | None:
    """The boards and player ids at the start of a ``Hand``'s wire bytes, and where they
    end: ``Hand.players`` is field 1 (tag 0x0a), serialised first; each ``PlayerHand`` under
    128 bytes is its one-byte length, then an optional player_id (field 1) and the board
    (field 2, 52 bytes: 0x12 0x34). A player holding anything else (Fantasyland fields, a
    long id, a board not of 13 canonical codes): ``None``, the long way."""
    boards: list[Board] = []
    ids: list[str] = []
    pos, end = 0, len(raw)
    unpack, tables, lookup = _BOARD_WORDS.unpack_from, _WORD_TABLES, _lookup
    try:
        while pos < end:
            pid = ""
            if raw.startswith(_BOARD_ALONE, pos):
                start = pos + 4
                pos = start + _BOARD_WIRE_BYTES
            elif raw[pos] == 0x0A:
                size = raw[pos + 1]
                start, pos = pos + 2, pos + 2 + size
                if size & 0x80 or pos > end:
                    return None
                if start < pos and raw[start] == 0x0A:  # an empty player is b"\x0a\x00"
                    pid_size = raw[start + 1]
                    if pid_size & 0x80:
                        return None
                    pid = raw[start + 2 : start + 2 + pid_size].decode()
                    start += 2 + pid_size
                if pos - start != 2 + _BOARD_WIRE_BYTES or raw[start : start + 2] != b"\x12\x34":
                    return None
                start += 2
            else:
                break
            cards = tuple(map(lookup, tables, unpack(raw, start)))
            boards.append(make_board(cards[:3], cards[3:8], cards[8:]))
            ids.append(pid)
    except (KeyError, IndexError, UnicodeDecodeError, struct.error):
        return None  # a code that is not canonical, a short board or player, a bad id
    return boards, ids, pos


def read_players(hand: settlement_pb2.Hand) -> tuple[list[Board], list[str]] | None:
    """The boards and player ids of a hand whose players hold nothing else (no Fantasyland
    fields) and complete boards of canonical codes, read from the hand's wire bytes; else
    ``None``, and :func:`settle_hand` reads the players one field at a time. The shape of a
    back office's batch, at under half the cost of the message API."""
    read = _players_from_wire(hand.SerializeToString())
    if read is None or len(read[0]) != len(hand.players):
        return None
    return read[0], read[1]


def parse_cards(tokens: Sequence[str], field: str) -> tuple[Card, ...]:
    """Card codes from a repeated string field; errors name ``field[k]``."""
    cards = []
    for k, token in enumerate(tokens):
        if len(token) > MAX_CARD_TOKEN_CHARS:
            raise core.InvalidCardError(
                f"invalid card: {token[:MAX_CARD_TOKEN_CHARS]!r}... ({len(token)} characters)",
                field=f"{field}[{k}]",
            )
        try:
            cards.append(Card.parse(token))
        except core.InvalidCardError as exc:
            raise with_field(exc, f"{field}[{k}]") from None
    return tuple(cards)


def parse_row(tokens: Sequence[str], row: Row, field: str) -> tuple[Card, ...]:
    """One row of a board: the right size first (cheap), then the cards."""
    if len(tokens) != row.size:
        raise core.WrongRowSizeError(
            f"{field} has {len(tokens)} cards; the {row.value} row holds {row.size}", field=field
        )
    return parse_cards(tokens, field)


def board_from_proto(board: cards_pb2.Board, field: str) -> Board:
    """A complete board; sizes and card codes checked (duplicates are checked per hand)."""
    return Board(
        parse_row(board.top, Row.TOP, f"{field}.top"),
        parse_row(board.middle, Row.MIDDLE, f"{field}.middle"),
        parse_row(board.bottom, Row.BOTTOM, f"{field}.bottom"),
    )


def check_distinct(cards: Sequence[Card], field: str) -> None:
    """DUPLICATE_CARD at ``field[k]`` for the second occurrence of a card."""
    seen: set[int] = set()
    for k, card in enumerate(cards):
        if card in seen:
            raise core.DuplicateCardError(f"duplicate card {card}", field=f"{field}[{k}]")
        seen.add(card)


def row_position(value: int, field: str) -> Row | None:
    """``None`` for UNSPECIFIED; INVALID_INPUT for a number that is not a RowPosition."""
    if value == cards_pb2.ROW_POSITION_UNSPECIFIED:
        return None
    if not 0 < value <= len(ROWS):
        raise core.InvalidInputError(f"unknown RowPosition value {value}", field=field)
    return ROWS[value - 1]


def category_from_proto(value: int, field: str, error: type[core.OfcError]) -> Category:
    if not 0 < value <= len(Category):
        raise error(f"HandCategory {value} is unspecified or unknown", field=field)
    return Category(value - 1)


def category_to_proto(category: Category) -> cards_pb2.HandCategory.ValueType:
    return cards_pb2.HandCategory.ValueType(category + 1)


@functools.cache  # bounded: under 10,000 distinct row values exist
def hand_value_bytes(value: int) -> bytes:
    """A row value's ``HandValue`` message (category, value, name, ranks) as wire bytes."""
    hand = HandValue(value)
    return cards_pb2.HandValue(
        category=category_to_proto(hand.category),
        value=value,
        name=str(hand),
        ranks=[r.char for r in hand.ranks],
    ).SerializeToString()


def write_hand_value(value: int, out: cards_pb2.HandValue) -> None:
    """Fill ``out`` (a field of a larger message: no copy) with a row value and its names."""
    out.MergeFromString(hand_value_bytes(value))


# --- rulesets -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ResolvedRuleset:
    ruleset: Ruleset
    label: str  # metric label: the preset name, or "custom" when overridden


_PRESET_RESOLVED = {name: ResolvedRuleset(r, name) for name, r in PRESETS.items()}


def ruleset_from_proto(spec: ruleset_pb2.RulesetSpec | None, field: str) -> ResolvedRuleset:
    """The ruleset a request asks for; ``field`` is the path of the RulesetSpec."""
    preset = spec.preset if spec is not None and spec.preset else DEFAULT_PRESET
    if spec is None or not spec.HasField("overrides"):
        resolved = _PRESET_RESOLVED.get(preset)
        if resolved is None:
            _unknown_preset(preset, field)
        return resolved
    return _with_overrides(preset, spec.overrides.SerializeToString(deterministic=True), field)


def _unknown_preset(preset: str, field: str) -> NoReturn:
    try:
        get_ruleset(preset[:MAX_NAME_CHARS])  # not a preset (64 characters is longer than any)
    except core.UnknownRulesetError as exc:
        raise with_field(exc, f"{field}.preset") from None
    raise AssertionError("unreachable")


@functools.lru_cache(maxsize=256)  # back offices send the same house rules again and again
def _with_overrides(preset: str, overrides_bytes: bytes, field: str) -> ResolvedRuleset:
    base = PRESETS.get(preset)
    if base is None:
        _unknown_preset(preset, field)
    overrides = ruleset_pb2.RulesetOverrides.FromString(overrides_bytes)
    path = f"{field}.overrides"
    changes, names = _override_dict(overrides, path)
    try:
        ruleset = ruleset_from_dict(changes, base=base)
    except core.OfcError as exc:
        raise with_field(exc, _override_error_field(exc.field, names, path)) from None
    return ResolvedRuleset(ruleset, CUSTOM_LABEL)


def _override_error_field(core_field: str, names: Mapping[str, str], path: str) -> str:
    """Core names options ``ruleset.key``, ``key`` or ``key.sub``; point at the proto field."""
    key = core_field.removeprefix("ruleset.")
    head, dot, rest = key.partition(".")
    return f"{path}.{names.get(head, head)}{dot}{rest}" if key else path


def _override_dict(
    o: ruleset_pb2.RulesetOverrides, path: str
) -> tuple[dict[str, Any], dict[str, str]]:
    """Overrides in :meth:`Ruleset.to_dict` form, and which proto field set each option."""
    changes: dict[str, Any] = {}
    names: dict[str, str] = {}

    def put(key: str, value: Any, proto_name: str | None = None) -> None:
        changes[key] = value
        names[key] = proto_name or key

    if o.HasField("name"):
        put("name", _name(o.name, f"{path}.name"))
    if o.HasField("streets"):
        streets = _limited(o.streets.streets, f"{path}.streets.streets")
        put("streets", [(s.deal, s.place) for s in streets])
    for key in ("min_players", "max_players", "stay_cards", "jokers"):
        if o.HasField(key):
            put(key, getattr(o, key))
    if o.HasField("unit_value"):
        if o.unit_value > MAX_UNIT_VALUE:
            raise _invalid(f"unit_value is at most {MAX_UNIT_VALUE}", f"{path}.unit_value")
        put("unit_value", o.unit_value)
    for key in ("royalties_to_row_winner_only", "button_moves_in_fantasyland"):
        if o.HasField(key):  # type: ignore[arg-type]
            put(key, getattr(o, key))
    for key in ("loss_cap", "stay_min_row_royalty", "max_consecutive_fantasylands"):
        if o.HasField(key):  # type: ignore[arg-type]
            put(key, getattr(o, key) or None)  # 0 turns the option off
    which_royalties = o.WhichOneof("royalties_override")
    if which_royalties == "royalty_table":
        put("royalties", _name(o.royalty_table, f"{path}.royalty_table"), "royalty_table")
    elif which_royalties == "royalties":
        put("royalties", _royalty_table(o.royalties, f"{path}.royalties"))
    which_scoring = o.WhichOneof("scoring_override")
    if which_scoring == "scoring_scheme":
        put("scoring", _name(o.scoring_scheme, f"{path}.scoring_scheme"), "scoring_scheme")
    elif which_scoring == "scoring":
        s = o.scoring
        put(
            "scoring",
            {
                "name": _name(s.name or CUSTOM_LABEL, f"{path}.scoring.name"),
                "row_value": _points(s.row_value, f"{path}.scoring.row_value"),
                "scoop_bonus": _points(s.scoop_bonus, f"{path}.scoring.scoop_bonus"),
                "majority_value": _points(s.majority_value, f"{path}.scoring.majority_value"),
            },
        )
    if o.HasField("fantasyland_entry"):
        entries_path = f"{path}.fantasyland_entry.entries"
        entries = _limited(o.fantasyland_entry.entries, entries_path)
        put(
            "fantasyland_entry",
            [
                {
                    "category": _category_name(e.category, f"{entries_path}[{k}].category"),
                    "min_rank": _rank_char(e.min_rank, f"{entries_path}[{k}].min_rank"),
                    "cards": e.cards,
                }
                for k, e in enumerate(entries)
            ],
        )
    if o.HasField("stay_conditions"):
        conditions_path = f"{path}.stay_conditions.conditions"
        conditions = _limited(o.stay_conditions.conditions, conditions_path)
        put(
            "stay_conditions",
            [_stay(c, f"{conditions_path}[{k}]") for k, c in enumerate(conditions)],
        )
    if o.HasField("fantasyland_tiers"):
        tiers_path = f"{path}.fantasyland_tiers.tiers"
        tiers = _limited(o.fantasyland_tiers.tiers, tiers_path)
        put("fantasyland_tiers", [_tier(t, f"{tiers_path}[{k}]") for k, t in enumerate(tiers)])
    return changes, names


def _invalid(message: str, field: str) -> core.InvalidRulesetError:
    return core.InvalidRulesetError(message, field=field)


def _name(text: str, field: str) -> str:
    """A ruleset's, scoring's or royalty table's name: 1..64 printable characters, as a
    player id (it is shown to every viewer: no line breaks, no bidi controls)."""
    if not 0 < len(text) <= MAX_NAME_CHARS:
        raise _invalid(f"a name has 1..{MAX_NAME_CHARS} characters, got {len(text)}", field)
    if not text.isprintable():
        raise _invalid(f"a name has printable characters only, got {text!r}", field)
    return text


def _points(value: int, field: str) -> int:
    if value > MAX_POINTS:
        raise _invalid(f"at most {MAX_POINTS} points, got {value}", field)
    return value


def _limited(items: Sequence[Any], field: str) -> Sequence[Any]:
    if len(items) > MAX_LIST_ITEMS:
        raise _invalid(f"at most {MAX_LIST_ITEMS} entries, got {len(items)}", field)
    return items


def _category_name(value: int, field: str) -> str:
    return category_from_proto(value, field, core.InvalidRulesetError).name.lower()


def _rank_char(text: str, field: str) -> str:
    key = "T" if text == "10" else text.upper()
    if len(key) != 1 or key not in RANK_CHARS:
        raise _invalid(f"a rank is one of {RANK_CHARS} (or 10), got {text[:8]!r}", field)
    return key


def _stay(c: ruleset_pb2.StayCondition, field: str) -> dict[str, str]:
    if not 0 < c.row <= len(ROWS):  # (INVALID_RULESET, as every other option's value)
        raise _invalid(f"a stay condition needs a row, got RowPosition {c.row}", f"{field}.row")
    row = ROWS[c.row - 1]
    condition = {"row": row.value, "category": _category_name(c.category, f"{field}.category")}
    if c.min_rank:
        condition["min_rank"] = _rank_char(c.min_rank, f"{field}.min_rank")
    return condition


def _tier(t: ruleset_pb2.FantasylandTier, field: str) -> dict[str, Any]:
    conditions = _limited(t.stay_conditions, f"{field}.stay_conditions")
    return {
        "cards": t.cards,
        "stay_conditions": [
            _stay(c, f"{field}.stay_conditions[{k}]") for k, c in enumerate(conditions)
        ],
        "stay_cards": t.stay_cards,
    }


def _royalty_table(t: ruleset_pb2.RoyaltyTable, field: str) -> dict[str, Any]:
    table: dict[str, Any] = {"name": _name(t.name or CUSTOM_LABEL, f"{field}.name")}
    for attr in ("bottom", "middle"):
        points: dict[str, int] = {}
        for k, entry in enumerate(_limited(getattr(t, attr), f"{field}.{attr}")):
            name = _category_name(entry.category, f"{field}.{attr}[{k}].category")
            if name in points:
                raise _invalid(f"{name} is listed twice", f"{field}.{attr}[{k}].category")
            points[name] = _points(entry.points, f"{field}.{attr}[{k}].points")
        table[attr] = points
    for attr in ("top_pair", "top_trips", "top_high_card"):
        by_rank: dict[str, int] = {}
        for k, entry in enumerate(_limited(getattr(t, attr), f"{field}.{attr}")):
            rank = _rank_char(entry.rank, f"{field}.{attr}[{k}].rank")
            if rank in by_rank:
                raise _invalid(f"rank {rank} is listed twice", f"{field}.{attr}[{k}].rank")
            by_rank[rank] = _points(entry.points, f"{field}.{attr}[{k}].points")
        table[attr] = by_rank
    return table


def ruleset_to_proto(r: Ruleset) -> ruleset_pb2.RulesetParameters:
    """Every parameter of a ruleset."""

    def by_category(values: Sequence[int]) -> list[ruleset_pb2.CategoryPoints]:
        return [
            ruleset_pb2.CategoryPoints(category=category_to_proto(c), points=v)
            for c, v in zip(Category, values, strict=True)
            if v
        ]

    def by_rank(values: Sequence[int]) -> list[ruleset_pb2.RankPoints]:
        return [
            ruleset_pb2.RankPoints(rank=RANK_CHARS[i], points=v) for i, v in enumerate(values) if v
        ]

    def stay_conditions(
        conditions: Sequence[StayCondition],
    ) -> list[ruleset_pb2.StayCondition]:
        return [
            ruleset_pb2.StayCondition(
                row=cards_pb2.RowPosition.ValueType(ROWS.index(c.row) + 1),
                category=category_to_proto(c.category),
                min_rank=c.min_rank.char if c.min_rank else "",
            )
            for c in conditions
        ]

    t = r.royalties
    return ruleset_pb2.RulesetParameters(
        name=r.name,
        streets=[ruleset_pb2.Street(deal=s.deal, place=s.place) for s in r.streets],
        min_players=r.min_players,
        max_players=r.max_players,
        royalties=ruleset_pb2.RoyaltyTable(
            name=t.name,
            bottom=by_category(t.bottom),
            middle=by_category(t.middle),
            top_pair=by_rank(t.top_pair),
            top_trips=by_rank(t.top_trips),
            top_high_card=by_rank(t.top_high_card),
        ),
        scoring=ruleset_pb2.ScoringScheme(
            name=r.scoring.name,
            row_value=r.scoring.row_value,
            scoop_bonus=r.scoring.scoop_bonus,
            majority_value=r.scoring.majority_value,
        ),
        royalties_to_row_winner_only=r.royalties_to_row_winner_only,
        unit_value=r.unit_value,
        loss_cap=r.loss_cap or 0,
        fantasyland_entry=[
            ruleset_pb2.FantasylandEntry(
                category=category_to_proto(e.requirement.category),
                min_rank=e.requirement.min_rank.char,
                cards=e.cards,
            )
            for e in r.fantasyland_entry
        ],
        stay_conditions=stay_conditions(r.stay_conditions),
        stay_min_row_royalty=r.stay_min_row_royalty or 0,
        stay_cards=r.stay_cards,
        max_consecutive_fantasylands=r.max_consecutive_fantasylands or 0,
        button_moves_in_fantasyland=r.button_moves_in_fantasyland,
        cards_per_hand=r.cards_per_hand,
        fantasyland_tiers=[
            ruleset_pb2.FantasylandTier(
                cards=t.cards,
                stay_conditions=stay_conditions(t.stay_conditions),
                stay_cards=t.stay_cards,
            )
            for t in r.fantasyland_tiers
        ],
        jokers=r.jokers,
        deck_size=r.deck_size,
    )


# --- hands ----------------------------------------------------------------------------------
class SettledHand(NamedTuple):  # a tuple: a batch makes one a hand
    settlement: Settlement
    ids: tuple[str, ...]
    ruleset_label: str
    fouls: int


_CORE_PLAYER_FIELD = re.compile(r"players\[(\d+)\]\.(top|middle|bottom)")


CLASSIC = _PRESET_RESOLVED[DEFAULT_PRESET]
"""The ruleset of a hand that names none."""


def settle_hand(hand: settlement_pb2.Hand, path: str) -> SettledHand:
    """Validate and settle one Hand; ``path`` prefixes every error field (``hand.`` or ``""``).

    Batches run this some 10^5 times a second: field paths are only built for an error."""
    if hand.HasField("ruleset"):
        resolved = ruleset_from_proto(hand.ruleset, f"{path}ruleset")
    else:
        resolved = CLASSIC
    ruleset = resolved.ruleset
    players = hand.players
    n = len(players)
    if not ruleset.min_players <= n <= ruleset.max_players:
        _wrong_player_count(ruleset, n, path)
    if not hand.pair_unit_values and (read := read_players(hand)) is not None:
        return settle_boards(read[0], read[1], resolved, path)
    settlement, ids = _settle_players(hand, ruleset, path)
    fouls = sum([p.board.fouled for p in settlement.players])
    return SettledHand(settlement, tuple(ids), resolved.label, fouls)


def settle_boards(
    boards: list[Board], ids: Sequence[str], resolved: ResolvedRuleset, path: str
) -> SettledHand:
    """Settle the boards of players holding nothing else (:func:`read_players`), with their
    ids; the same checks, in the same order, and the same errors as :func:`settle_hand`."""
    ruleset = resolved.ruleset
    n = len(boards)
    if not ruleset.min_players <= n <= ruleset.max_players:
        _wrong_player_count(ruleset, n, path)
    if any(ids):
        for i, pid in enumerate(ids):
            _check_player_id(pid, ids[:i], path, i)
    try:
        settlement = settle(boards, ruleset)
    except core.OfcError as exc:
        raise _player_error(exc, path) from None
    fouls = 0
    for player in settlement[1]:
        fouls += player[1][1]  # PlayerResult.board.fouled
    return SettledHand(settlement, tuple(ids), resolved.label, fouls)


# A hand of 2..4 players who hold a board alone (a PlayerHand of 56 bytes: 0a 36 12 34 and the
# board's 13 fields), maybe followed by a ruleset naming a preset: the shape of a back
# office's batch. Every byte but the cards' codes is fixed: checked as four strided slices
# (each field's tag, each field's length, the header's last two bytes), then the cards' words
# unpacked at once and looked up together (one table: the tags are checked already), the
# rows cut in one call.
_PLAYER_ALONE_BYTES = 4 + _BOARD_WIRE_BYTES
_ROW_TAGS = bytes([0x0A] * 3 + [0x12] * 5 + [0x1A] * 5)
_ANY_ROW_WORDS = {**_TOP_WORDS, **_MIDDLE_WORDS, **_BOTTOM_WORDS}


class _Shape(NamedTuple):
    tags: bytes  # raw[0::4]: the player's tag 0a, then the board's 13 fields' tags
    lengths: bytes  # raw[1::4]: the player's length 0x36, then 2 for each card code
    headers: tuple[bytes, bytes]  # raw[2::56], raw[3::56]: the board's tag and length
    words: Callable[[bytes], tuple[int, ...]]  # the 13n cards' words
    rows: Callable[[tuple[Card, ...]], tuple[tuple[Card, ...], ...]]  # the 3n rows
    no_ids: tuple[str, ...]


def _shape(n: int) -> _Shape:
    return _Shape(
        (b"\x0a" + _ROW_TAGS) * n,
        (b"\x36" + b"\x02" * 13) * n,
        (b"\x12" * n, b"\x34" * n),
        struct.Struct(">" + "4x13I" * n).unpack_from,
        operator.itemgetter(
            *(slice(13 * i + a, 13 * i + b) for i in range(n) for a, b in ((0, 3), (3, 8), (8, 13)))
        ),
        ("",) * n,
    )


_ALONE = {n: _shape(n) for n in range(2, 5)}
# What may follow the players: nothing (the classic preset), or Hand.ruleset naming a preset.
_RULESET_TAILS: dict[bytes, ResolvedRuleset] = {
    b"": CLASSIC,
    settlement_pb2.Hand(ruleset=ruleset_pb2.RulesetSpec()).SerializeToString(): CLASSIC,
    **{
        settlement_pb2.Hand(ruleset=ruleset_pb2.RulesetSpec(preset=name)).SerializeToString(): r
        for name, r in _PRESET_RESOLVED.items()
    },
}


class PlainHand(NamedTuple):
    """A hand read from its wire bytes (:func:`read_wire`): to settle with
    :func:`settle_boards`."""

    boards: list[Board]
    ids: Sequence[str]
    resolved: ResolvedRuleset


def read_wire(raw: bytes) -> PlainHand | None:
    """A ``Hand``'s wire bytes read, when its players hold a board of canonical codes and
    maybe an id, and the hand nothing but a preset's name (no overrides, pair unit values or
    Fantasyland): the shape of a back office's batch. ``None`` for any other bytes (other
    fields, other spellings, bytes that do not decode): the caller parses them. Whatever
    this reads, protobuf reads the same way; :func:`settle_boards` of it settles as
    :func:`settle_hand` of the parsed hand does, or raises the same error (its field under
    no prefix).

    >>> from ofcpoker.v1 import cards_pb2
    >>> board = cards_pb2.Board(top=["Ac", "3d", "2h"], middle=["6c", "6d", "9h", "8s", "4c"],
    ...                         bottom=["9c", "8c", "7d", "6h", "5s"])
    >>> other = cards_pb2.Board(top=["Kd", "3c", "2d"], middle=["5c", "5d", "9d", "8h", "4d"],
    ...                         bottom=["7c", "7h", "Qd", "Js", "4s"])
    >>> hand = settlement_pb2.Hand(players=[settlement_pb2.PlayerHand(board=board),
    ...                                     settlement_pb2.PlayerHand(board=other)])
    >>> settled = settle_boards(*read_wire(hand.SerializeToString()), "")
    >>> [p.points for p in settled.settlement.players]
    [8, -8]
    """
    n = len(raw) // _PLAYER_ALONE_BYTES
    shape = _ALONE.get(n)
    if (
        shape is not None
        and (resolved := _RULESET_TAILS.get(raw[(end := n * _PLAYER_ALONE_BYTES) :])) is not None
        and raw[0:end:4] == shape.tags
        and raw[1:end:4] == shape.lengths
        and (raw[2:end:_PLAYER_ALONE_BYTES], raw[3:end:_PLAYER_ALONE_BYTES]) == shape.headers
    ):
        try:
            cards = operator.itemgetter(*shape.words(raw))(_ANY_ROW_WORDS)
        except KeyError:  # a code that is not canonical: read player by player
            pass
        else:
            rows = iter(shape.rows(cards))
            return PlainHand(list(map(make_board, rows, rows, rows)), shape.no_ids, resolved)
    read = _players_from_wire(raw)
    if read is None:
        return None
    resolved = _RULESET_TAILS.get(raw[read[2] :])
    if resolved is None:
        return None
    return PlainHand(read[0], read[1], resolved)


def _wrong_player_count(ruleset: Ruleset, n: int, path: str) -> NoReturn:
    raise core.WrongPlayerCountError(
        f"ruleset {ruleset.name!r} settles {ruleset.min_players}..{ruleset.max_players} "
        f"boards, got {n}",
        field=f"{path}players",
    )


def _check_player_id(pid: str, earlier: Sequence[str], path: str, i: int) -> None:
    """Player ``i``'s id: empty, or unique (not in ``earlier``) and at most
    :data:`MAX_ID_CHARS` printable characters, as JoinSeat's (it is shown in answers, logs
    and histories as it is); else INVALID_INPUT naming the field."""
    if pid and (len(pid) > MAX_ID_CHARS or pid in earlier or not pid.isprintable()):
        raise core.InvalidInputError(
            f"player_id must be unique and at most {MAX_ID_CHARS} printable characters",
            field=f"{path}players[{i}].player_id",
        )


def _settle(
    boards: list[Board],
    ruleset: Ruleset,
    path: str,
    *,
    tiers: list[int] | None = None,
    streaks: list[int] | None = None,
    pair_units: dict[tuple[int, int], int] | None = None,
) -> Settlement:
    try:
        if tiers is not None and any(tiers):
            return settle(
                boards,
                ruleset,
                fantasyland_cards=tiers,
                fantasyland_streaks=streaks,
                pair_units=pair_units,
            )
        return settle(boards, ruleset, pair_units=pair_units)  # nobody in Fantasyland
    except core.OfcError as exc:
        raise _player_error(exc, path) from None


def _player_error(error: core.OfcError, path: str) -> core.OfcError:
    """The core's error of a hand's boards, its field a path in the request."""
    field = _CORE_PLAYER_FIELD.sub(r"players[\1].board.\2", error.field)
    return with_field(error, f"{path}{field}" if field else f"{path}players")


def _settle_players(
    hand: settlement_pb2.Hand, ruleset: Ruleset, path: str
) -> tuple[Settlement, list[str]]:
    """Every player read through the message API: any spelling of a card, Fantasyland,
    pair unit values, and the error that names the bad field."""
    ids: list[str] = []
    boards: list[Board] = []
    tiers: list[int] = []
    streaks: list[int] = []
    for i, player in enumerate(hand.players):
        proto_board = player.board
        board = read_board(proto_board)
        if board is None:
            board = board_from_proto(proto_board, f"{path}players[{i}].board")
        boards.append(board)
        pid = player.player_id
        _check_player_id(pid, ids, path, i)
        streak = player.fantasyland_streak
        if streak > MAX_FANTASYLAND_STREAK:
            raise core.InvalidInputError(
                f"fantasyland_streak must be 0..{MAX_FANTASYLAND_STREAK}",
                field=f"{path}players[{i}].fantasyland_streak",
            )
        ids.append(pid)
        tier = fantasyland_tier(
            ruleset,
            player.in_fantasyland,
            player.fantasyland_cards,
            f"{path}players[{i}].fantasyland_cards",
        )
        tiers.append(tier)
        streaks.append((streak or 1) if tier else 0)
    pair_units = None
    if hand.pair_unit_values:
        pair_units = pair_units_from_proto(
            hand.pair_unit_values, len(boards), f"{path}pair_unit_values"
        )
    settlement = _settle(boards, ruleset, path, tiers=tiers, streaks=streaks, pair_units=pair_units)
    return settlement, ids


def fantasyland_tier(ruleset: Ruleset, in_fantasyland: bool, cards: int, field: str) -> int:
    """The tier a board was set in, from a request's ``in_fantasyland`` and
    ``fantasyland_cards`` (0 or 13..17). Nonzero cards mean Fantasyland whatever the flag
    says: proto3 cannot tell a false flag from one left out."""
    if cards and not 13 <= cards <= 17:
        raise core.InvalidInputError(
            f"fantasyland_cards must be 0 or 13..17, got {cards}", field=field
        )
    return ruleset.fantasyland_tier(in_fantasyland=in_fantasyland, cards=cards)


def pair_units_from_proto(
    items: Sequence[settlement_pb2.PairUnitValue], n: int, field: str, *, what: str = "player"
) -> dict[tuple[int, int], int] | None:
    """``PairUnitValue``s as ``{(a, b): unit_value}`` (``None`` for none), each checked:
    ``a < b < n`` (``what`` names the indexes: players of a hand, seats of a table), a unit
    value of 1..:data:`MAX_UNIT_VALUE`, each pair once; errors name ``field[k].b`` etc."""
    if not items:
        return None
    units: dict[tuple[int, int], int] = {}
    for k, item in enumerate(items):
        place = f"{field}[{k}]"
        if not item.a < item.b < n:
            raise core.InvalidInputError(
                f"a pair is two {what} indexes a < b < {n}, got ({item.a}, {item.b})",
                field=f"{place}.b",
            )
        if not 1 <= item.unit_value <= MAX_UNIT_VALUE:
            raise core.InvalidInputError(
                f"unit_value must be 1..{MAX_UNIT_VALUE}", field=f"{place}.unit_value"
            )
        if (item.a, item.b) in units:
            raise core.InvalidInputError(f"pair ({item.a}, {item.b}) is listed twice", field=place)
        units[(item.a, item.b)] = item.unit_value
    return units


def validate_board(board: Board, field: str, *, jokers: int) -> None:
    """Duplicate cards within one board, and jokers the deck of ``jokers`` jokers does not
    have (sizes and codes were checked when it was read); the error names ``field``'s row,
    in its field and its message."""
    try:
        validate_boards([board], jokers=jokers)
    except core.OfcError as exc:

        def local(text: str) -> str:
            return _CORE_PLAYER_FIELD.sub(rf"{field}.\2", text)

        raise type(exc)(local(exc.message), field=local(exc.field) or field) from None


def check_jokers(cards: Sequence[Card], jokers: int, field: str) -> None:
    """INVALID_CARD at ``field[k]`` for a joker a deck of ``jokers`` jokers does not have."""
    for k, card in enumerate(cards):
        if card >= NATURAL_CARDS + jokers:
            have = f"{jokers} joker{'' if jokers == 1 else 's'}"
            raise core.InvalidCardError(
                f"{field}[{k}] is the joker {card}, but the ruleset's deck has {have}",
                field=f"{field}[{k}]",
            )


def write_assessment(result: BoardResult, out: settlement_pb2.BoardAssessment) -> None:
    """Fill ``out`` in place (protobuf copies nested messages passed to constructors)."""
    write_hand_value(result.values[0], out.top)
    write_hand_value(result.values[1], out.middle)
    write_hand_value(result.values[2], out.bottom)
    out.fouled = result.fouled
    top, middle, bottom = result.royalties
    royalties = out.royalties
    royalties.top, royalties.middle, royalties.bottom = top, middle, bottom
    royalties.total = top + middle + bottom
    fantasyland = out.fantasyland
    fantasyland.qualifies, fantasyland.cards = result.fantasyland


def write_settlement(settled: SettledHand, out: settlement_pb2.Settlement) -> None:
    """Fill ``out`` in place with the settlement, per player and per pair."""
    s = settled.settlement
    players = s.players
    out.ruleset = s.ruleset
    for p in players:
        player = out.players.add(
            index=p.index, player_id=settled.ids[p.index], points=p.points, units=p.units
        )
        write_assessment(p.board, player.board)
    for pr in s.pairs:
        top, middle, bottom = pr.rows
        out.pairs.add(
            a=pr.a,
            b=pr.b,
            top=top,
            middle=middle,
            bottom=bottom,
            scoop=pr.scoop,
            a_fouled=players[pr.a].board.fouled,
            b_fouled=players[pr.b].board.fouled,
            row_points=pr.row_points,
            royalties=pr.royalties,
            points=pr.points,
            capped_points=pr.capped_points,
            unit_value=pr.unit_value,
            units=pr.units,
        )


# --- seeds ----------------------------------------------------------------------------------
def server_seed_from_proto(which: str | None, hex_text: str, raw: bytes) -> bytes:
    """The 32-byte server seed from a ``server_seed`` oneof (hex or bytes)."""
    if which == "server_seed_hex":
        if len(hex_text) > 4 * SERVER_SEED_BYTES:  # parse_seed_hex quotes its input
            raise core.InvalidSeedError(
                f"server seed must be {2 * SERVER_SEED_BYTES} hex digits, "
                f"got {len(hex_text)} characters",
                field="server_seed_hex",
            )
        try:
            return parse_seed_hex(hex_text)
        except core.InvalidSeedError as exc:
            raise with_field(exc, "server_seed_hex") from None
    if which == "server_seed_bytes":
        if len(raw) != SERVER_SEED_BYTES:
            raise core.InvalidSeedError(
                f"server seed must be {SERVER_SEED_BYTES} bytes, got {len(raw)}",
                field="server_seed_bytes",
            )
        return raw
    raise core.InvalidSeedError(
        "a server seed is required (server_seed_hex or server_seed_bytes)", field="server_seed_hex"
    )


def commitment_from_proto(text: str) -> str:
    if not _HEX64.fullmatch(text):
        raise core.InvalidInputError(
            f"a commitment is 64 hex digits, got {len(text)} characters", field="commitment"
        )
    return text
