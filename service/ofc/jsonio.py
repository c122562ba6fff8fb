"""JSON shapes of the core's inputs and results (used by the command line and histories).

Reading is strict: every wrong type or missing key raises an :class:`~ofc.errors.OfcError`
that names the field, so a batch job can report exactly which input was bad.

>>> req = score_request_from_dict({"players": [
...     {"id": "a", "top": ["Ac", "3d", "2h"],
...      "middle": "6c 6d 9h 8s 4c", "bottom": "9c 8c 7d 6h 5s"},
...     {"id": "b", "top": "Kd 3c 2d", "middle": "5c 5d 9d 8h 4d", "bottom": "7c 7h Qd Js 4s"}]})
>>> [p["points"] for p in settlement_to_dict(req.settle(), req.ids)["players"]]
[8, -8]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ofc.cards import Card, card_codes, parse_cards
from ofc.errors import InvalidInputError, OfcError
from ofc.evaluator import HandValue
from ofc.rulesets import ROWS, Ruleset, resolve_ruleset
from ofc.scoring import Board, Settlement, settle

__all__ = ["ScoreRequest", "error_to_dict", "score_request_from_dict", "settlement_to_dict"]


@dataclass(frozen=True, slots=True)
class ScoreRequest:
    ruleset: Ruleset
    ids: tuple[str, ...]
    boards: tuple[Board, ...]
    in_fantasyland: tuple[bool, ...]
    fantasyland_streaks: tuple[int, ...]

    def settle(self) -> Settlement:
        return settle(
            self.boards,
            self.ruleset,
            in_fantasyland=self.in_fantasyland,
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


def score_request_from_dict(data: Any) -> ScoreRequest:
    if not isinstance(data, Mapping):
        raise InvalidInputError("a hand to score is a JSON object", field="")
    ruleset = resolve_ruleset(data.get("ruleset"))
    players = data.get("players")
    if not isinstance(players, list) or not players:
        raise InvalidInputError("players must be a non-empty list", field="players")
    ids: list[str] = []
    boards: list[Board] = []
    flags: list[bool] = []
    streaks: list[int] = []
    for i, player in enumerate(players):
        place = f"players[{i}]"
        if not isinstance(player, Mapping):
            raise InvalidInputError(f"{place} must be an object", field=place)
        player_id = player.get("id", str(i))
        if not isinstance(player_id, str) or player_id in ids:
            raise InvalidInputError(f"{place}.id must be a unique string", field=f"{place}.id")
        rows = []
        for row in ROWS:
            if row.value not in player:
                raise InvalidInputError(
                    f"{place}.{row.value} is missing", field=f"{place}.{row.value}"
                )
            rows.append(cards_from_json(player[row.value], field=f"{place}.{row.value}"))
        in_fl = player.get("in_fantasyland", False)
        streak = player.get("fantasyland_streak", 1 if in_fl else 0)
        if not isinstance(in_fl, bool):
            raise InvalidInputError(
                f"{place}.in_fantasyland must be true or false", field=f"{place}.in_fantasyland"
            )
        if isinstance(streak, bool) or not isinstance(streak, int) or streak < 0:
            raise InvalidInputError(
                f"{place}.fantasyland_streak must be a non-negative integer",
                field=f"{place}.fantasyland_streak",
            )
        ids.append(player_id)
        boards.append(Board(rows[0], rows[1], rows[2]))
        flags.append(in_fl)
        streaks.append(streak)
    return ScoreRequest(ruleset, tuple(ids), tuple(boards), tuple(flags), tuple(streaks))


def hand_to_dict(value: int) -> dict[str, Any]:
    hand = HandValue(value)
    return {"category": hand.category.name.lower(), "name": str(hand), "value": value}


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


def error_to_dict(error: OfcError) -> dict[str, Any]:
    return {"reason": error.reason, "message": error.message, "field": error.field}


def board_to_dict(board: Board) -> dict[str, list[str]]:
    return {r.value: card_codes(board.row(r)) for r in ROWS}
