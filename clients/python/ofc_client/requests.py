"""Client inputs (card strings, board text, ruleset mappings) -> request messages.

The client does not validate cards: it passes the strings on, and the server's error names
the exact token and field. Only shapes that cannot be expressed in a message at all (an
unknown ruleset option, a number where a list belongs) are rejected here, with the same
typed error the server would use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import grpc
from ofcpoker.v1 import cards_pb2, ruleset_pb2, settlement_pb2

from ofc_client.errors import InvalidRequestError
from ofc_client.models import BoardLike, HandInput, PlayerInput, RulesetLike, category_value

ROW_NAMES = ("top", "middle", "bottom")


def invalid(message: str, field: str, reason: str = "INVALID_INPUT") -> InvalidRequestError:
    return InvalidRequestError(
        message, code=grpc.StatusCode.INVALID_ARGUMENT, reason=reason, field=field
    )


def card_list(cards: str | Sequence[str], field: str = "cards") -> list[str]:
    """``"Ac 3d,2h"`` or ``["Ac", "3d", "2h"]`` -> a list of tokens (not checked here)."""
    if isinstance(cards, str):
        return cards.replace(",", " ").split()
    if not all(isinstance(c, str) for c in cards):
        raise invalid("cards are strings such as 'As' or '10d'", field, "INVALID_CARD")
    return list(cards)


def board_message(board: BoardLike, field: str = "board") -> cards_pb2.Board:
    if isinstance(board, cards_pb2.Board):
        return board
    rows: Sequence[Any]
    if isinstance(board, str):
        rows = board.split("/")
    elif isinstance(board, Mapping):
        missing = [r for r in ROW_NAMES if r not in board]
        if missing:
            raise invalid(
                f"{field}.{missing[0]} is missing", f"{field}.{missing[0]}", "WRONG_ROW_SIZE"
            )
        rows = [board[r] for r in ROW_NAMES]
    else:
        rows = board
    if len(rows) != 3:
        raise invalid("a board is three rows: top / middle / bottom", field, "WRONG_ROW_SIZE")
    top, middle, bottom = (
        card_list(r, f"{field}.{n}") for r, n in zip(rows, ROW_NAMES, strict=True)
    )
    return cards_pb2.Board(top=top, middle=middle, bottom=bottom)


def hand_message(hand: HandInput) -> settlement_pb2.Hand:
    players = []
    for i, player in enumerate(hand.players):
        p = player if isinstance(player, PlayerInput) else PlayerInput(player)
        try:
            players.append(
                settlement_pb2.PlayerHand(
                    player_id=p.player_id,
                    board=board_message(p.board, f"players[{i}].board"),
                    in_fantasyland=p.in_fantasyland,
                    fantasyland_streak=p.fantasyland_streak,
                    fantasyland_cards=p.fantasyland_cards,
                )
            )
        except (TypeError, ValueError) as exc:
            raise invalid(str(exc), f"players[{i}]") from None
    try:
        units = [
            settlement_pb2.PairUnitValue(a=a, b=b, unit_value=v)
            for (a, b), v in hand.pair_units.items()
        ]
    except (TypeError, ValueError) as exc:
        raise invalid(str(exc), "pair_unit_values") from None
    message = settlement_pb2.Hand(players=players, pair_unit_values=units)
    spec = ruleset_spec(hand.ruleset)
    if spec is not None:
        message.ruleset.CopyFrom(spec)
    return message


# --- rulesets -------------------------------------------------------------------------------
def ruleset_spec(ruleset: RulesetLike) -> ruleset_pb2.RulesetSpec | None:
    """A RulesetSpec from a preset name or an overrides mapping (``ofc presets`` JSON form)."""
    if ruleset is None or isinstance(ruleset, ruleset_pb2.RulesetSpec):
        return ruleset
    if isinstance(ruleset, str):
        return ruleset_pb2.RulesetSpec(preset=ruleset)
    if not isinstance(ruleset, Mapping):
        raise invalid("a ruleset is a preset name or an object", "ruleset", "INVALID_RULESET")
    options = dict(ruleset)
    preset = options.pop("preset", "")
    if not isinstance(preset, str):
        raise invalid("preset is a name", "ruleset.preset", "UNKNOWN_RULESET")
    spec = ruleset_pb2.RulesetSpec(preset=preset)
    if options:
        spec.overrides.CopyFrom(overrides_message(options))
    return spec


def _optional_int(raw: Any) -> int:
    """An optional limit (``loss_cap``, ``stay_min_row_royalty``, ...): null is none, as the
    contract's 0 is; a 0 written out is refused, as a local run refuses it."""
    if raw is None:
        return 0
    if _integer(raw) < 1:
        raise ValueError("must be at least 1 when set (null: none)")
    return int(raw)


def _integer(raw: Any) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise TypeError(f"expected an integer, got {raw!r}")
    return raw


def _boolean(raw: Any) -> bool:
    if not isinstance(raw, bool):
        raise TypeError(f"expected true or false, got {raw!r}")
    return raw


def _points(raw: Mapping[str, Any], key: Callable[[str], Any], make: Any) -> list[Any]:
    return [make(key(k), _integer(v)) for k, v in raw.items()]


def _royalty_table(raw: Mapping[str, Any]) -> ruleset_pb2.RoyaltyTable:
    def cat(k: str, v: int) -> ruleset_pb2.CategoryPoints:
        return ruleset_pb2.CategoryPoints(category=k, points=v)  # type: ignore[arg-type]

    def rank(k: str, v: int) -> ruleset_pb2.RankPoints:
        return ruleset_pb2.RankPoints(rank=k, points=v)

    return ruleset_pb2.RoyaltyTable(
        name=raw.get("name", ""),
        bottom=_points(raw.get("bottom", {}), category_value, cat),
        middle=_points(raw.get("middle", {}), category_value, cat),
        top_pair=_points(raw.get("top_pair", {}), str, rank),
        top_trips=_points(raw.get("top_trips", {}), str, rank),
        top_high_card=_points(raw.get("top_high_card", {}), str, rank),
    )


def _stay_conditions(raw: Any) -> list[ruleset_pb2.StayCondition]:
    return [
        ruleset_pb2.StayCondition(
            row=cards_pb2.RowPosition.Value("ROW_POSITION_" + c["row"].upper()),
            category=category_value(c["category"]),
            min_rank=c.get("min_rank", ""),
        )
        for c in raw
    ]


def _set_option(o: ruleset_pb2.RulesetOverrides, key: str, raw: Any) -> None:
    if key == "name":
        o.name = raw
    elif key in ("min_players", "max_players", "unit_value", "stay_cards", "jokers"):
        setattr(o, key, _integer(raw))
    elif key in ("loss_cap", "stay_min_row_royalty", "max_consecutive_fantasylands"):
        setattr(o, key, _optional_int(raw))
    elif key in ("royalties_to_row_winner_only", "button_moves_in_fantasyland"):
        setattr(o, key, _boolean(raw))
    elif key == "streets":
        o.streets.CopyFrom(
            ruleset_pb2.StreetList(
                streets=[ruleset_pb2.Street(deal=_integer(d), place=_integer(p)) for d, p in raw]
            )
        )
    elif key == "royalties":
        if isinstance(raw, str):
            o.royalty_table = raw
        else:
            o.royalties.CopyFrom(_royalty_table(raw))
    elif key == "scoring":
        if isinstance(raw, str):
            o.scoring_scheme = raw
        else:
            o.scoring.CopyFrom(
                ruleset_pb2.ScoringScheme(
                    name=raw.get("name", ""),
                    row_value=_integer(raw.get("row_value", 0)),
                    scoop_bonus=_integer(raw.get("scoop_bonus", 0)),
                    majority_value=_integer(raw.get("majority_value", 0)),
                )
            )
    elif key == "fantasyland_entry":
        entries = [
            ruleset_pb2.FantasylandEntry(
                category=category_value(e["category"]),
                min_rank=e["min_rank"],
                cards=_integer(e["cards"]),
            )
            for e in raw
        ]
        o.fantasyland_entry.CopyFrom(ruleset_pb2.FantasylandEntryList(entries=entries))
    elif key == "stay_conditions":
        conditions = _stay_conditions(raw)
        o.stay_conditions.CopyFrom(ruleset_pb2.StayConditionList(conditions=conditions))
    elif key == "fantasyland_tiers":
        tiers = [
            ruleset_pb2.FantasylandTier(
                cards=_integer(t["cards"]),
                stay_conditions=_stay_conditions(t["stay_conditions"]),
                stay_cards=_integer(t["stay_cards"]),
            )
            for t in raw
        ]
        o.fantasyland_tiers.CopyFrom(ruleset_pb2.FantasylandTierList(tiers=tiers))
    else:
        raise KeyError(key)


OPTIONS = frozenset(ruleset_pb2.RulesetOverrides.DESCRIPTOR.fields_by_name) - {
    "royalty_table",
    "scoring_scheme",
}


def overrides_message(options: Mapping[str, Any]) -> ruleset_pb2.RulesetOverrides:
    o = ruleset_pb2.RulesetOverrides()
    for key, raw in options.items():
        if key not in OPTIONS:
            raise invalid(f"unknown ruleset option: {key!r}", f"ruleset.{key}", "INVALID_RULESET")
        try:
            _set_option(o, key, raw)
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            raise invalid(
                f"bad value for ruleset option {key!r}: {raw!r} ({exc})",
                f"ruleset.{key}",
                "INVALID_RULESET",
            ) from None
    return o


def row_position(row: str | None) -> cards_pb2.RowPosition.ValueType:
    if row is None:
        return cards_pb2.ROW_POSITION_UNSPECIFIED
    try:
        return cards_pb2.RowPosition.Value("ROW_POSITION_" + row.upper())
    except ValueError:
        raise invalid(f"a row is top, middle or bottom, not {row!r}", "row") from None
