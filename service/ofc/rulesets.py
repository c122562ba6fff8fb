"""Rulesets as data: presets, royalty tables, scoring schemes, Fantasyland rules.

Every point where the sources disagree is a field here, so a house variant is a new
``Ruleset`` value (or a JSON object of overrides on a preset), never new code.

>>> r = get_ruleset("pineapple")
>>> [(s.deal, s.place) for s in r.streets]
[(5, 5), (3, 2), (3, 2), (3, 2), (3, 2)]
>>> resolve_ruleset({"preset": "classic", "scoring": "2-4", "loss_cap": 30}).loss_cap
30
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ofc.cards import MAX_JOKERS, NATURAL_CARDS, Rank
from ofc.errors import InvalidRulesetError, UnknownRulesetError
from ofc.evaluator import Category


class Row(StrEnum):
    TOP = "top"
    MIDDLE = "middle"
    BOTTOM = "bottom"

    @property
    def size(self) -> int:
        return 3 if self is Row.TOP else 5


ROWS: tuple[Row, Row, Row] = (Row.TOP, Row.MIDDLE, Row.BOTTOM)
BOARD_SIZE = 13


@dataclass(frozen=True, slots=True)
class RoyaltyTable:
    """Royalty points per row.

    ``middle``/``bottom`` are indexed by :class:`~ofc.evaluator.Category` (10 entries);
    ``top_pair``/``top_trips`` by :class:`~ofc.cards.Rank` (13 entries), and so is
    ``top_high_card``, by the highest card of an unpaired top (``As Kd Qc``: ace), so every
    category a top can make has its points (all 0 for high card in the standard tables).
    """

    name: str
    bottom: tuple[int, ...]
    middle: tuple[int, ...]
    top_pair: tuple[int, ...]
    top_trips: tuple[int, ...]
    top_high_card: tuple[int, ...] = (0,) * 13

    def __post_init__(self) -> None:
        sizes = (("bottom", 10), ("middle", 10), ("top_pair", 13), ("top_trips", 13))
        for attr, size in (*sizes, ("top_high_card", 13)):
            values = getattr(self, attr)
            if len(values) != size or any(not isinstance(v, int) or v < 0 for v in values):
                raise InvalidRulesetError(
                    f"royalty table {attr} needs {size} non-negative integers, got {values!r}",
                    field=f"royalties.{attr}",
                )


def _by_category(**points: int) -> tuple[int, ...]:
    return tuple(points.get(c.name.lower(), 0) for c in Category)


_STANDARD_TOP_PAIR = (0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)  # 66 = 1 .. AA = 9
_STANDARD_TOP_TRIPS = tuple(range(10, 23))  # 222 = 10 .. AAA = 22

STANDARD_ROYALTIES = RoyaltyTable(
    name="standard",
    bottom=_by_category(
        straight=2, flush=4, full_house=6, quads=10, straight_flush=15, royal_flush=25
    ),
    middle=_by_category(
        trips=2, straight=4, flush=8, full_house=12, quads=20, straight_flush=30, royal_flush=50
    ),
    top_pair=_STANDARD_TOP_PAIR,
    top_trips=_STANDARD_TOP_TRIPS,
)
# A Ukrainian rules page's table: a flatter bottom, middle trips 2 and otherwise twice the bottom.
UKRAINIAN_ROYALTIES = RoyaltyTable(
    name="ukrainian",
    bottom=_by_category(
        straight=2, flush=4, full_house=6, quads=8, straight_flush=10, royal_flush=15
    ),
    middle=_by_category(
        trips=2, straight=4, flush=8, full_house=12, quads=16, straight_flush=20, royal_flush=30
    ),
    top_pair=_STANDARD_TOP_PAIR,
    top_trips=_STANDARD_TOP_TRIPS,
)
# The standard table plus 1 point for any unpaired top (``As Kd Qc``, ``5c 3d 2h``) on a
# legal board, as one Pineapple engine pays it.
TOP_HIGH_CARD_ROYALTIES = dataclasses.replace(
    STANDARD_ROYALTIES, name="standard+top-high-card", top_high_card=(1,) * 13
)
ROYALTY_TABLES = {
    t.name: t for t in (STANDARD_ROYALTIES, UKRAINIAN_ROYALTIES, TOP_HIGH_CARD_ROYALTIES)
}


@dataclass(frozen=True, slots=True)
class ScoringScheme:
    """Points one player wins from another, from the rows each won.

    ``points = row_value * (won - lost) + majority_value * sign(won - lost)
    + scoop_bonus * (1 if won == 3, -1 if lost == 3)``; a tied row counts for neither.
    1-6: row 1, scoop 3. 1-4: row 1, scoop 1. 2-4: majority 2, scoop 2.
    Row value 2 (a Ukrainian rules page): row 2, no bonus, so a sweep is 6.
    """

    name: str
    row_value: int
    scoop_bonus: int
    majority_value: int = 0

    def points(self, won: int, lost: int) -> int:
        diff = won - lost
        sign = (diff > 0) - (diff < 0)
        scoop = (won == 3) - (lost == 3)
        return self.row_value * diff + self.majority_value * sign + self.scoop_bonus * scoop

    def __post_init__(self) -> None:
        # Negative values would pay the loser of a row (and the contract's fields are
        # unsigned: a scheme the service could not be given).
        for attr in ("row_value", "scoop_bonus", "majority_value"):
            value = getattr(self, attr)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidRulesetError(
                    f"scoring {attr} must be a non-negative integer, not {value!r}",
                    field=f"scoring.{attr}",
                )


SCORING_SCHEMES = {
    s.name: s
    for s in (
        ScoringScheme("1-6", row_value=1, scoop_bonus=3),
        ScoringScheme("1-4", row_value=1, scoop_bonus=1),
        ScoringScheme("2-4", row_value=0, scoop_bonus=2, majority_value=2),
        ScoringScheme("row-2", row_value=2, scoop_bonus=0),
    )
}


def _at_least(category: Category, min_rank: Rank) -> int:
    """The weakest row value of ``category`` whose defining rank is ``min_rank`` or more."""
    # Category and its defining rank are the value's most significant bits.
    return (category << 20) | ((min_rank + 1) << 16)


@dataclass(frozen=True, slots=True)
class TopRequirement:
    """A top row at least this strong: ``category`` and at least ``min_rank`` in it."""

    category: Category
    min_rank: Rank

    def met_by(self, top_value: int) -> bool:
        return top_value >= _at_least(self.category, self.min_rank)


@dataclass(frozen=True, slots=True)
class FantasylandEntry:
    """A legal board whose top meets ``requirement`` earns ``cards`` next hand."""

    requirement: TopRequirement
    cards: int


@dataclass(frozen=True, slots=True)
class StayCondition:
    """A row at least ``category`` (on a legal board) keeps a Fantasyland player in;
    ``min_rank``, when above two, also asks that rank or more of the category's defining
    cards (``StayCondition(Row.TOP, Category.PAIR, Rank.QUEEN)``: QQ, KK, AA or trips).

    >>> from ofc.evaluator import rank_row
    >>> from ofc.cards import parse_cards
    >>> qq = StayCondition(Row.TOP, Category.PAIR, Rank.QUEEN)
    >>> qq.met_by(rank_row(parse_cards("Qs Qd 2c"))), qq.met_by(rank_row(parse_cards("Js Jd Ac")))
    (True, False)
    """

    row: Row
    category: Category
    min_rank: Rank = Rank.TWO

    def met_by(self, value: int) -> bool:
        return value >= _at_least(self.category, self.min_rank)


@dataclass(frozen=True, slots=True)
class FantasylandTier:
    """The stay rule of a Fantasyland hand of ``cards`` cards (a tier): a legal board set in
    it that meets any of ``stay_conditions`` earns ``stay_cards`` cards next hand.

    A tier listed in ``Ruleset.fantasyland_tiers`` replaces, for hands of its size, the
    ruleset-wide ``stay_conditions`` and ``stay_cards``; ``stay_min_row_royalty`` and
    ``max_consecutive_fantasylands`` apply in every tier. A stay that keeps its tier has
    ``stay_cards == cards``.
    """

    cards: int
    stay_conditions: tuple[StayCondition, ...]
    stay_cards: int


@dataclass(frozen=True, slots=True)
class Street:
    """One dealing round: each seat gets ``deal`` cards, places ``place``, discards the rest."""

    deal: int
    place: int

    @property
    def discard(self) -> int:
        return self.deal - self.place


def _entries(*pairs: tuple[Category, Rank, int]) -> tuple[FantasylandEntry, ...]:
    return tuple(FantasylandEntry(TopRequirement(c, r), n) for c, r, n in pairs)


_QQ_PLUS = (Category.PAIR, Rank.QUEEN)
_PROGRESSIVE_ENTRY = _entries(
    (Category.PAIR, Rank.QUEEN, 14),
    (Category.PAIR, Rank.KING, 15),
    (Category.PAIR, Rank.ACE, 16),
    (Category.TRIPS, Rank.TWO, 17),
)
CLASSIC_STREETS = (Street(5, 5),) + (Street(1, 1),) * 8
PINEAPPLE_STREETS = (Street(5, 5),) + (Street(3, 2),) * 4
TURBO_STREETS = (Street(5, 5), Street(4, 4), Street(4, 4))
DEFAULT_STAY = (
    StayCondition(Row.TOP, Category.TRIPS),
    StayCondition(Row.MIDDLE, Category.FULL_HOUSE),
    StayCondition(Row.BOTTOM, Category.QUADS),
)
_QUADS_BOTTOM = StayCondition(Row.BOTTOM, Category.QUADS)
_PINEAPPLE_STAY = (StayCondition(Row.TOP, Category.TRIPS), _QUADS_BOTTOM)


def _keeps_tier(cards: int, top: tuple[Category, Rank]) -> FantasylandTier:
    """A tier kept at its own size by its own entry top again, or by quads or better on the
    bottom (every entry top is at most trips, so trips on top keep every tier)."""
    return FantasylandTier(cards, (StayCondition(Row.TOP, *top), _QUADS_BOTTOM), cards)


@dataclass(frozen=True, slots=True)
class Ruleset:
    """Everything that varies between OFC rooms; see ``docs``/rules.md for each option.

    Fantasyland: a legal board earns the largest ``fantasyland_entry`` whose requirement its
    top meets; a Fantasyland player who meets any ``stay_conditions`` (or, when set, has a
    row earning ``stay_min_row_royalty`` or more) plays another with ``stay_cards`` cards,
    unless ``max_consecutive_fantasylands`` of them have been played in a row. The stay
    rule depends on the tier (the number of cards of the Fantasyland hand being played)
    when ``fantasyland_tiers`` lists it: :meth:`stay_rule`.

    ``jokers`` (0..2) adds that many wild cards to the deck (ids 52, 53; dealt with
    ofc-shuffle-v2; docs/jokers.md): a joker in a row is the best card it can be there.
    """

    name: str = "classic"
    streets: tuple[Street, ...] = CLASSIC_STREETS
    min_players: int = 2
    max_players: int = 4
    royalties: RoyaltyTable = STANDARD_ROYALTIES
    scoring: ScoringScheme = SCORING_SCHEMES["1-6"]
    royalties_to_row_winner_only: bool = False
    unit_value: int = 1
    loss_cap: int | None = None
    fantasyland_entry: tuple[FantasylandEntry, ...] = _entries((*_QQ_PLUS, 13))
    stay_conditions: tuple[StayCondition, ...] = DEFAULT_STAY
    stay_min_row_royalty: int | None = None
    stay_cards: int = 13
    max_consecutive_fantasylands: int | None = None
    button_moves_in_fantasyland: bool = True
    fantasyland_tiers: tuple[FantasylandTier, ...] = ()
    jokers: int = 0

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def cards_per_hand(self) -> int:
        """Cards a normal (non-Fantasyland) seat is dealt in one hand."""
        return sum(s.deal for s in self.streets)

    @property
    def deck_size(self) -> int:
        """Cards in the deck: the 52 and the jokers.

        >>> get_ruleset("pineapple-jokers").deck_size
        54
        """
        return NATURAL_CARDS + self.jokers

    @property
    def max_fantasyland_cards(self) -> int:
        return max(
            [e.cards for e in self.fantasyland_entry]
            + [self.stay_cards]
            + [t.stay_cards for t in self.fantasyland_tiers]
        )

    @property
    def base_fantasyland_cards(self) -> int:
        """The tier meant when a caller says only "in Fantasyland" (a yes/no from an older
        client): the smallest entry's cards, or ``stay_cards`` when nothing enters."""
        return min((e.cards for e in self.fantasyland_entry), default=self.stay_cards)

    def stay_rule(self, cards: int) -> tuple[tuple[StayCondition, ...], int]:
        """What keeps a player in a Fantasyland hand of ``cards`` cards, and with how many
        cards: the tier's rule when ``fantasyland_tiers`` lists it, else the ruleset's.

        >>> r = get_ruleset("progressive-pineapple-keep")
        >>> conditions, cards = r.stay_rule(16)
        >>> [(c.row.value, c.category.name, c.min_rank.char) for c in conditions], cards
        ([('top', 'PAIR', 'A'), ('bottom', 'QUADS', '2')], 16)
        >>> get_ruleset("progressive-pineapple").stay_rule(17)[1]
        14
        """
        for tier in self.fantasyland_tiers:
            if tier.cards == cards:
                return tier.stay_conditions, tier.stay_cards
        return self.stay_conditions, self.stay_cards

    def fantasyland_tier(self, *, in_fantasyland: bool = False, cards: int = 0) -> int:
        """The tier a board is set in: ``cards`` when given (0: not in Fantasyland), else
        :attr:`base_fantasyland_cards` for ``in_fantasyland`` (the older yes/no form).

        >>> PRESETS["pineapple"].fantasyland_tier(in_fantasyland=True)
        14
        """
        if cards:
            return cards
        return self.base_fantasyland_cards if in_fantasyland else 0

    def replace(self, **changes: Any) -> Ruleset:
        """A copy with some fields changed (validated like any ruleset)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Full parameters as JSON-ready data; :func:`ruleset_from_dict` reads it back.

        ``jokers`` is there only when the deck has any (like the other options added with
        hand-history format 4): a 52-card ruleset reads and writes as it did before.
        """
        return {
            "name": self.name,
            "streets": [[s.deal, s.place] for s in self.streets],
            "min_players": self.min_players,
            "max_players": self.max_players,
            "royalties": {
                "name": self.royalties.name,
                "bottom": _category_map(self.royalties.bottom),
                "middle": _category_map(self.royalties.middle),
                "top_pair": _rank_map(self.royalties.top_pair),
                "top_trips": _rank_map(self.royalties.top_trips),
            }
            | (
                {"top_high_card": _rank_map(self.royalties.top_high_card)}
                if any(self.royalties.top_high_card)
                else {}
            ),
            "scoring": {
                "name": self.scoring.name,
                "row_value": self.scoring.row_value,
                "scoop_bonus": self.scoring.scoop_bonus,
                "majority_value": self.scoring.majority_value,
            },
            "royalties_to_row_winner_only": self.royalties_to_row_winner_only,
            "unit_value": self.unit_value,
            "loss_cap": self.loss_cap,
            "fantasyland_entry": [
                {
                    "category": e.requirement.category.name.lower(),
                    "min_rank": e.requirement.min_rank.char,
                    "cards": e.cards,
                }
                for e in self.fantasyland_entry
            ],
            "stay_conditions": _stay_list(self.stay_conditions),
            "stay_min_row_royalty": self.stay_min_row_royalty,
            "stay_cards": self.stay_cards,
            "max_consecutive_fantasylands": self.max_consecutive_fantasylands,
            "button_moves_in_fantasyland": self.button_moves_in_fantasyland,
        } | self._later_options()

    def _later_options(self) -> dict[str, Any]:
        # Options added after hand-history format 3 appear only when used, so a ruleset
        # that uses none of them writes what earlier releases wrote (and they read).
        jokers = {"jokers": self.jokers} if self.jokers else {}
        return jokers | (
            {
                "fantasyland_tiers": [
                    {
                        "cards": t.cards,
                        "stay_conditions": _stay_list(t.stay_conditions),
                        "stay_cards": t.stay_cards,
                    }
                    for t in self.fantasyland_tiers
                ]
            }
            if self.fantasyland_tiers
            else {}
        )

    @property
    def uses_later_options(self) -> bool:
        """True when the ruleset uses an option that hand-history format 4 added
        (Fantasyland tiers, a stay condition's rank, a top high-card royalty, jokers)."""
        return bool(
            self.jokers
            or self.fantasyland_tiers
            or any(self.royalties.top_high_card)
            or any(c.min_rank for c in self.stay_conditions)
        )


def _stay_list(conditions: tuple[StayCondition, ...]) -> list[dict[str, str]]:
    out = []
    for c in conditions:
        entry = {"row": c.row.value, "category": c.category.name.lower()}
        if c.min_rank:  # a rank above two: added with format 4, written only when set
            entry["min_rank"] = c.min_rank.char
        out.append(entry)
    return out


def _category_map(values: tuple[int, ...]) -> dict[str, int]:
    return {c.name.lower(): v for c, v in zip(Category, values, strict=True) if v}


def _rank_map(values: tuple[int, ...]) -> dict[str, int]:
    return {r.char: v for r, v in zip(Rank, values, strict=True) if v}


def _validate(r: Ruleset) -> None:
    def bad(message: str, field_name: str) -> InvalidRulesetError:
        return InvalidRulesetError(f"ruleset {r.name!r}: {message}", field=field_name)

    if not r.streets or any(s.deal < 1 or not 0 < s.place <= s.deal for s in r.streets):
        raise bad("each street deals at least 1 card and places 1..deal of them", "streets")
    if sum(s.place for s in r.streets) != BOARD_SIZE:
        raise bad(f"streets must place exactly {BOARD_SIZE} cards", "streets")
    if not 2 <= r.min_players <= r.max_players <= 4:
        # The field named is the one out of 2..4 (min_players first); both in range: max.
        named = "max_players" if 2 <= r.min_players <= 4 else "min_players"
        raise bad("players must satisfy 2 <= min_players <= max_players <= 4", named)
    if r.unit_value < 1:
        raise bad("unit_value must be at least 1", "unit_value")
    if r.loss_cap is not None and r.loss_cap < 1:
        raise bad("loss_cap must be at least 1 when set", "loss_cap")
    if r.stay_min_row_royalty is not None and r.stay_min_row_royalty < 1:
        # 0 would keep every legal board in Fantasyland, where the contract's 0 means off
        raise bad(
            "stay_min_row_royalty must be at least 1 when set (null: no such rule)",
            "stay_min_row_royalty",
        )
    for e in r.fantasyland_entry:
        if not BOARD_SIZE <= e.cards <= 17:
            raise bad("Fantasyland hands have 13..17 cards", "fantasyland_entry")
    if not BOARD_SIZE <= r.stay_cards <= 17:
        raise bad("Fantasyland hands have 13..17 cards", "stay_cards")
    seen: set[int] = set()
    for k, t in enumerate(r.fantasyland_tiers):
        if not (BOARD_SIZE <= t.cards <= 17 and BOARD_SIZE <= t.stay_cards <= 17):
            raise bad("Fantasyland hands have 13..17 cards", f"fantasyland_tiers[{k}]")
        if t.cards in seen:
            raise bad(f"the {t.cards}-card tier is listed twice", f"fantasyland_tiers[{k}]")
        seen.add(t.cards)
    if r.max_consecutive_fantasylands is not None and r.max_consecutive_fantasylands < 1:
        raise bad(
            "max_consecutive_fantasylands must be at least 1 when set",
            "max_consecutive_fantasylands",
        )
    if isinstance(r.jokers, bool) or not isinstance(r.jokers, int):
        raise bad(f"jokers must be an integer 0..{MAX_JOKERS}", "jokers")
    if not 0 <= r.jokers <= MAX_JOKERS:
        raise bad(f"a deck has 0..{MAX_JOKERS} jokers, not {r.jokers}", "jokers")
    worst = max(r.cards_per_hand, r.max_fantasyland_cards)
    if worst * r.max_players > r.deck_size:
        raise bad(
            f"max_players {r.max_players} x {worst} cards (the most a seat is dealt) exceed "
            f"the {r.deck_size}-card deck: lower max_players or the cards dealt",
            "max_players",
        )


_CLASSIC = Ruleset()
_PINEAPPLE = Ruleset(
    name="pineapple",
    streets=PINEAPPLE_STREETS,
    max_players=3,
    fantasyland_entry=_entries((*_QQ_PLUS, 14)),
    stay_cards=14,
)
PRESETS: dict[str, Ruleset] = {
    r.name: r
    for r in (
        _CLASSIC,
        _PINEAPPLE,
        Ruleset(
            name="progressive-pineapple",
            streets=PINEAPPLE_STREETS,
            max_players=3,
            fantasyland_entry=_PROGRESSIVE_ENTRY,
            stay_cards=14,
        ),
        Ruleset(name="turbo", streets=TURBO_STREETS),
        Ruleset(
            name="progressive-pineapple-keep",
            streets=PINEAPPLE_STREETS,
            max_players=3,
            fantasyland_entry=_PROGRESSIVE_ENTRY,
            stay_conditions=_PINEAPPLE_STAY,
            stay_cards=14,
            fantasyland_tiers=(
                _keeps_tier(14, (Category.PAIR, Rank.QUEEN)),
                _keeps_tier(15, (Category.PAIR, Rank.KING)),
                _keeps_tier(16, (Category.PAIR, Rank.ACE)),
                _keeps_tier(17, (Category.TRIPS, Rank.TWO)),
            ),
        ),
        Ruleset(
            name="pineapple-top-high-card",
            streets=PINEAPPLE_STREETS,
            max_players=3,
            royalties=TOP_HIGH_CARD_ROYALTIES,
            fantasyland_entry=_entries((*_QQ_PLUS, 14)),
            stay_cards=14,
        ),
        # Jokers (docs/jokers.md): classic with one joker in a 53-card deck, Pineapple with
        # both in a 54-card deck; otherwise the classic and pineapple presets.
        _CLASSIC.replace(name="classic-joker", jokers=1),
        _PINEAPPLE.replace(name="pineapple-jokers", jokers=2),
    )
}
DEFAULT_RULESET = PRESETS["classic"]


def get_ruleset(name: str) -> Ruleset:
    """A preset by name.

    >>> get_ruleset("turbo").cards_per_hand
    13
    """
    try:
        return PRESETS[name]
    except (KeyError, TypeError):
        raise UnknownRulesetError(
            f"unknown ruleset: {name!r} (known: {', '.join(PRESETS)})", field="ruleset"
        ) from None


# --- reading rulesets from JSON-like data ---------------------------------------------------
def resolve_ruleset(spec: str | Mapping[str, Any] | Ruleset | None) -> Ruleset:
    """A preset name, a mapping of overrides on a preset (``"preset"`` key, default
    classic), or a ruleset. Override values use the :meth:`Ruleset.to_dict` forms, plus
    names: ``"royalties": "ukrainian"``, ``"scoring": "2-4"``.
    """
    if spec is None:
        return DEFAULT_RULESET
    if isinstance(spec, Ruleset):
        return spec
    if isinstance(spec, str):
        return get_ruleset(spec)
    if not isinstance(spec, Mapping):
        raise InvalidRulesetError(
            f"ruleset must be a name or an object, not {spec!r}", field="ruleset"
        )
    overrides = dict(spec)
    base = get_ruleset(overrides.pop("preset", "classic"))
    return ruleset_from_dict(overrides, base=base)


def ruleset_from_dict(data: Mapping[str, Any], *, base: Ruleset = DEFAULT_RULESET) -> Ruleset:
    """Apply the fields present in ``data`` (``to_dict`` format) on top of ``base``."""
    changes: dict[str, Any] = {}
    for key, raw in data.items():
        reader = _READERS.get(key)
        if reader is None:
            raise InvalidRulesetError(f"unknown ruleset option: {key!r}", field=f"ruleset.{key}")
        try:
            changes[key] = reader(raw)
        except InvalidRulesetError:
            raise
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            raise InvalidRulesetError(
                f"bad value for ruleset option {key!r}: {raw!r} ({exc})", field=f"ruleset.{key}"
            ) from None
    if "name" not in changes and changes:
        changes["name"] = f"{base.name}+custom"
    return base.replace(**changes)


def _int(raw: Any) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise TypeError("expected an integer")
    return raw


def _optional_int(raw: Any) -> int | None:
    return None if raw is None else _int(raw)


def _bool(raw: Any) -> bool:
    if not isinstance(raw, bool):
        raise TypeError("expected true or false")
    return raw


def _str(raw: Any) -> str:
    if not isinstance(raw, str) or not raw:
        raise TypeError("expected a non-empty string")
    return raw


def _category(raw: Any) -> Category:
    return Category[_str(raw).upper()]


def _points_by(keys: Any, raw: Mapping[str, Any], parse: Any) -> tuple[int, ...]:
    values = [0] * len(keys)
    for key, points in raw.items():
        values[parse(key)] = _int(points)
    return tuple(values)


def _royalties(raw: Any) -> RoyaltyTable:
    if isinstance(raw, str):
        if raw not in ROYALTY_TABLES:
            raise ValueError(f"known tables: {', '.join(ROYALTY_TABLES)}")
        return ROYALTY_TABLES[raw]
    return RoyaltyTable(
        name=_str(raw.get("name", "custom")),
        bottom=_points_by(Category, raw.get("bottom", {}), lambda k: _category(k)),
        middle=_points_by(Category, raw.get("middle", {}), lambda k: _category(k)),
        top_pair=_points_by(Rank, raw.get("top_pair", {}), lambda k: Rank.parse(k)),
        top_trips=_points_by(Rank, raw.get("top_trips", {}), lambda k: Rank.parse(k)),
        top_high_card=_points_by(Rank, raw.get("top_high_card", {}), lambda k: Rank.parse(k)),
    )


def _stay_conditions(raw: Any) -> tuple[StayCondition, ...]:
    return tuple(
        StayCondition(
            Row(c["row"]), _category(c["category"]), Rank.parse(_str(c.get("min_rank", "2")))
        )
        for c in raw
    )


def _scoring(raw: Any) -> ScoringScheme:
    if isinstance(raw, str):
        if raw not in SCORING_SCHEMES:
            raise ValueError(f"known schemes: {', '.join(SCORING_SCHEMES)}")
        return SCORING_SCHEMES[raw]
    return ScoringScheme(
        name=_str(raw.get("name", "custom")),
        row_value=_int(raw.get("row_value", 0)),
        scoop_bonus=_int(raw.get("scoop_bonus", 0)),
        majority_value=_int(raw.get("majority_value", 0)),
    )


_READERS: dict[str, Any] = {
    "name": _str,
    "streets": lambda raw: tuple(Street(_int(d), _int(p)) for d, p in raw),
    "min_players": _int,
    "max_players": _int,
    "royalties": _royalties,
    "scoring": _scoring,
    "royalties_to_row_winner_only": _bool,
    "unit_value": _int,
    "loss_cap": _optional_int,
    "fantasyland_entry": lambda raw: tuple(
        FantasylandEntry(
            TopRequirement(_category(e["category"]), Rank.parse(_str(e["min_rank"]))),
            _int(e["cards"]),
        )
        for e in raw
    ),
    "stay_conditions": _stay_conditions,
    "fantasyland_tiers": lambda raw: tuple(
        FantasylandTier(
            _int(t["cards"]), _stay_conditions(t["stay_conditions"]), _int(t["stay_cards"])
        )
        for t in raw
    ),
    "stay_min_row_royalty": _optional_int,
    "stay_cards": _int,
    "max_consecutive_fantasylands": _optional_int,
    "button_moves_in_fantasyland": _bool,
    "jokers": _int,
}


__all__ = [
    "BOARD_SIZE",
    "DEFAULT_RULESET",
    "PRESETS",
    "ROWS",
    "FantasylandEntry",
    "FantasylandTier",
    "Row",
    "RoyaltyTable",
    "Ruleset",
    "ScoringScheme",
    "StayCondition",
    "Street",
    "TopRequirement",
    "get_ruleset",
    "resolve_ruleset",
    "ruleset_from_dict",
]
