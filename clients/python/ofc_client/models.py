"""Plain frozen dataclasses for results, and the inputs the client accepts.

Results mirror the protobuf messages field for field (see protos/ofcpoker/v1), with enums
as lower-case names (``"full_house"``, ``"top"``) and rows as ``(top, middle, bottom)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ofcpoker.v1 import cards_pb2, errors_pb2, rules_service_pb2, ruleset_pb2, settlement_pb2

_CATEGORY_PREFIX = "HAND_CATEGORY_"

BoardLike = str | Mapping[str, Any] | Sequence[Any] | cards_pb2.Board
"""``"Ac 3d 2h / 6c 6d 9h 8s 4c / 9c 8c 7d 6h 5s"``, ``{"top": ..., "middle": ..., "bottom": ...}``
(each a list of codes or one string), ``(top, middle, bottom)``, or a ``Board`` message."""

RulesetLike = str | Mapping[str, Any] | ruleset_pb2.RulesetSpec | None
"""A preset name, a mapping of overrides in the ``ofc presets`` JSON form (``"preset"`` key
for the base, e.g. ``{"preset": "classic", "scoring": "2-4", "loss_cap": 30}``), a
``RulesetSpec`` message, or ``None`` for classic."""


@dataclass(frozen=True, slots=True)
class PlayerInput:
    """One player's board for a hand to settle, with optional label and Fantasyland state:
    ``fantasyland_cards`` the tier it was set in (the Fantasyland hand's cards; 0: none),
    or ``in_fantasyland`` alone for the ruleset's smallest tier."""

    board: BoardLike
    player_id: str = ""
    in_fantasyland: bool = False
    fantasyland_streak: int = 0
    fantasyland_cards: int = 0


@dataclass(frozen=True, slots=True)
class HandInput:
    """One hand to settle: 2-4 players, a ruleset, and unit values for particular pairs."""

    players: Sequence[PlayerInput | BoardLike]
    ruleset: RulesetLike = None
    pair_units: Mapping[tuple[int, int], int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HandValue:
    category: str  # "high_card" .. "royal_flush"
    value: int  # comparable across 3- and 5-card rows; bigger is stronger
    name: str  # "pair of kings, ace kicker"
    ranks: tuple[str, ...]

    @classmethod
    def from_proto(cls, m: cards_pb2.HandValue) -> HandValue:
        return cls(category_name(m.category), m.value, m.name, tuple(m.ranks))


@dataclass(frozen=True, slots=True)
class RowEvaluation:
    hand: HandValue
    royalty: int  # 0 unless a row was given


@dataclass(frozen=True, slots=True)
class Royalties:
    top: int
    middle: int
    bottom: int
    total: int


@dataclass(frozen=True, slots=True)
class Fantasyland:
    qualifies: bool
    cards: int


@dataclass(frozen=True, slots=True)
class BoardAssessment:
    top: HandValue
    middle: HandValue
    bottom: HandValue
    fouled: bool
    royalties: Royalties
    fantasyland: Fantasyland

    @classmethod
    def from_proto(cls, m: settlement_pb2.BoardAssessment) -> BoardAssessment:
        r = m.royalties
        return cls(
            HandValue.from_proto(m.top),
            HandValue.from_proto(m.middle),
            HandValue.from_proto(m.bottom),
            m.fouled,
            Royalties(r.top, r.middle, r.bottom, r.total),
            Fantasyland(m.fantasyland.qualifies, m.fantasyland.cards),
        )


@dataclass(frozen=True, slots=True)
class PlayerResult:
    index: int
    player_id: str
    board: BoardAssessment
    points: int  # net over all opponents, after the loss cap; zero-sum
    units: int  # net money units; zero-sum


@dataclass(frozen=True, slots=True)
class PairResult:
    a: int
    b: int
    rows: tuple[int, int, int]  # top, middle, bottom: +1 a won, -1 b won, 0 tie
    scoop: int
    a_fouled: bool
    b_fouled: bool
    row_points: int
    royalties: int
    points: int
    capped_points: int
    unit_value: int
    units: int


@dataclass(frozen=True, slots=True)
class Settlement:
    ruleset: str
    players: tuple[PlayerResult, ...]
    pairs: tuple[PairResult, ...]

    @property
    def points(self) -> tuple[int, ...]:
        """Each player's net points, in seat order."""
        return tuple(p.points for p in self.players)

    @classmethod
    def from_proto(cls, m: settlement_pb2.Settlement) -> Settlement:
        return cls(
            m.ruleset,
            tuple(
                PlayerResult(
                    p.index, p.player_id, BoardAssessment.from_proto(p.board), p.points, p.units
                )
                for p in m.players
            ),
            tuple(
                PairResult(
                    a=pr.a,
                    b=pr.b,
                    rows=(pr.top, pr.middle, pr.bottom),
                    scoop=pr.scoop,
                    a_fouled=pr.a_fouled,
                    b_fouled=pr.b_fouled,
                    row_points=pr.row_points,
                    royalties=pr.royalties,
                    points=pr.points,
                    capped_points=pr.capped_points,
                    unit_value=pr.unit_value,
                    units=pr.units,
                )
                for pr in m.pairs
            ),
        )


@dataclass(frozen=True, slots=True)
class HandError:
    """Why one hand of a batch or stream was not settled (the call itself succeeded)."""

    reason: str
    field: str  # relative to the hand, e.g. "players[1].board.middle[2]"
    message: str
    code: int  # google.rpc.Code number, 3 = INVALID_ARGUMENT

    @classmethod
    def from_proto(cls, m: errors_pb2.ErrorDetail) -> HandError:
        return cls(m.reason, m.field, m.message, m.code)


HandResult = Settlement | HandError


def outcome_from_proto(m: rules_service_pb2.HandOutcome) -> HandResult:
    if m.WhichOneof("result") == "settlement":
        return Settlement.from_proto(m.settlement)
    return HandError.from_proto(m.error)


@dataclass(frozen=True, slots=True)
class Deck:
    algorithm: str
    commitment: str
    cards: tuple[str, ...]  # position 0 is dealt first
    first_block_hex: str  # empty unless asked for


@dataclass(frozen=True, slots=True)
class FantasylandSet:
    """A solved Fantasyland hand: rows as card codes (highest first) and what it is worth."""

    top: tuple[str, ...]
    middle: tuple[str, ...]
    bottom: tuple[str, ...]
    discards: tuple[str, ...]
    royalties: int
    fantasyland_next: bool
    objective: int  # royalties, plus the Fantasyland value when fantasyland_next
    fantasyland_next_cards: int = 0  # cards of that next Fantasyland hand; 0 for none

    @classmethod
    def from_proto(cls, m: rules_service_pb2.SolveFantasylandResponse) -> FantasylandSet:
        b = m.board
        return cls(
            tuple(b.top),
            tuple(b.middle),
            tuple(b.bottom),
            tuple(m.discards),
            m.royalties,
            m.fantasyland_next,
            m.objective,
            m.fantasyland_next_cards,
        )


def category_name(value: int) -> str:
    return cards_pb2.HandCategory.Name(value).removeprefix(_CATEGORY_PREFIX).lower()  # type: ignore[arg-type]


def category_value(name: str) -> cards_pb2.HandCategory.ValueType:
    return cards_pb2.HandCategory.Value(_CATEGORY_PREFIX + name.upper())
