"""A ``TableView`` as protobuf wire bytes, for a move's response, and the events of a move.

Building a ``TableView`` message field by field and serialising it cost more than the rest
of a move's encoding; the same bytes are put together here from the record directly. What
each seat of the hand may show is :func:`ofc.engine.seat_view`'s redaction, the one
:func:`ofc.engine.view` applies. The result is exactly what
:func:`ofc_service.api.tables.table_view` fills and protobuf serialises, byte for byte
(tests/api/test_view_wire.py checks it for every viewer at every step of random play,
spectators and Fantasyland sets face down included). The events every move makes (cards
dealt, placed, discarded) are written the same way (:func:`move_event_bytes`), byte for
byte what :func:`ofc_service.api.tables.event_to_proto` serialises to, in every audience's
copy. Only this module knows the field numbers it writes; a test compares them with the
generated descriptors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ofc import engine
from ofc.cards import CODES
from ofc.rulesets import Row
from ofcpoker.v1 import cards_pb2

from ofc_service.api.outcome_wire import settlement_bytes, varint, zigzag
from ofc_service.application.records import TableRecord, WrittenCache

# Wire types: 0 varint, 2 length-delimited; a key is (field number << 3) | wire type.
FIELD_NUMBERS = {
    "TableView": (
        "table_id", "version", "viewer_seat", "ruleset", "seats", "button", "hands_played",
        "max_hands", "hand", "turn_time_limit_ms", "deadline_ms", "last_event_id",
        "pair_unit_values", "client_seed_policy", "client_seed", "next_commitment",
    ),
    "SeatView": (
        "seat", "player_id", "points", "fantasyland_cards", "fantasyland_streak", "units",
        "client_seed", "leaving",
    ),
    "HandView": (
        "number", "button", "commitment", "client_seed", "server_seed", "street", "turn",
        "to_act", "deck_remaining", "seats", "over", "settlement",
    ),
    "HandSeatView": (
        "seat", "fantasyland_cards", "board", "board_hidden", "pending", "pending_count",
        "discards", "discard_count", "done",
    ),
    "Board": ("top", "middle", "bottom"),
    "PairUnitValue": ("a", "b", "unit_value"),
    "TableEvent": (
        "event_id", "version", "seat_taken", "seat_vacated", "hand_started", "cards_dealt",
        "cards_placed", "discard_made", "timeout_applied", "fantasyland_set",
        "fantasyland_revealed", "hand_settled", "seed_revealed", "button_moved",
        "client_seed_set", "seat_leaving",
    ),
    "CardsDealtEvent": ("seat", "street", "position", "count", "cards"),
    "CardsPlacedEvent": ("seat", "street", "placements"),
    "DiscardMadeEvent": ("seat", "street", "card"),
    "Placement": ("card", "row"),
}  # fmt: skip
"""Each message's fields in field-number order from 1: what the encoders below assume."""

_UINT64 = (1 << 64) - 1  # an int64's two's complement, as protobuf writes a negative one


def _key(field: int, wire_type: int) -> bytes:
    return varint(field << 3 | wire_type)


# Every field's key, by field number (the messages here have at most 16 fields).
_VARINT_KEYS = [_key(f, 0) for f in range(17)]
_BYTES_KEYS = [_key(f, 2) for f in range(17)]


def _uint(field: int, value: int) -> bytes:
    return _VARINT_KEYS[field] + varint(value) if value else b""


def _sint(field: int, value: int) -> bytes:
    return _VARINT_KEYS[field] + varint(zigzag(value)) if value else b""


def _present(field: int, value: int | None) -> bytes:
    """An ``optional uint32``: written when set, 0 included."""
    return b"" if value is None else _VARINT_KEYS[field] + varint(value)


def _delimited(field: int, data: bytes) -> bytes:
    return _BYTES_KEYS[field] + varint(len(data)) + data


def _text(field: int, data: bytes) -> bytes:
    """A ``string`` or ``bytes`` field (given encoded): written unless empty."""
    return _BYTES_KEYS[field] + varint(len(data)) + data if data else b""


# A card code as each repeated string field that holds cards: Board's rows (1, 2, 3) and
# HandSeatView's pending (5) and discards (7).
_CARD_FIELDS = {f: [_delimited(f, code.encode()) for code in CODES] for f in (1, 2, 3, 5, 7)}


def _cards(field: int, cards: Sequence[int]) -> bytes:
    if not cards:
        return b""
    codes = _CARD_FIELDS[field]
    return b"".join([codes[c] for c in cards])


def _hand_seat(s: engine.HandSeat, viewer: int | None, over: bool) -> bytes:
    """``viewer``'s ``HandSeatView`` of ``s``: :func:`ofc.engine.seat_view`'s redaction
    (:func:`ofc.engine.seat_shown`), written from the seat without building the view."""
    own, hidden = engine.seat_shown(s, viewer, over)
    if hidden:
        board_body = b""
    else:
        board = s.board
        top, middle, bottom = _CARD_FIELDS[1], _CARD_FIELDS[2], _CARD_FIELDS[3]
        board_body = b"".join(
            [top[c] for c in board.top] + [middle[c] for c in board.middle]
            + [bottom[c] for c in board.bottom]
        )  # fmt: skip
    pending, discards = s.pending, s.discards
    return b"".join(
        (
            _uint(1, s.seat),
            _uint(2, s.fantasyland),
            _BOARD_KEY,
            varint(len(board_body)),
            board_body,
            _TRUE[4] if hidden else b"",
            _cards(5, pending) if own else b"",
            _uint(6, len(pending)),
            _cards(7, discards) if own else b"",
            _uint(8, len(discards)),
            _TRUE[9] if s.done else b"",
        )
    )


_BOARD_KEY = _key(3, 2)
_TRUE = {f: _key(f, 0) + b"\x01" for f in (4, 9)}  # a bool field set


def _hand(record: TableRecord, viewer: int | None) -> bytes:
    match = record.match
    hand = match.hand
    assert hand is not None
    over = hand.over
    to_act = engine.seats_to_act(match)
    parts = [
        _uint(1, hand.number),
        _uint(2, hand.button),
        _text(3, hand.commitment.encode()),
        _text(4, hand.client_seed),
        _text(5, (hand.server_seed or b"") if over else b""),
        _uint(6, hand.street),
        _present(7, hand.turn),
        _text(8, b"".join([varint(s) for s in to_act])),  # packed
        _uint(9, hand.deck_remaining),
    ]
    parts.extend([_delimited(10, _hand_seat(s, viewer, over)) for s in hand.seats])
    parts.append(_uint(11, over))
    if over:
        settlement = engine.hand_settlement(hand, match.ruleset, pair_units=match.pair_units)
        players = record.hand_player_ids()
        ids = tuple(players[s.seat] for s in hand.seats)
        parts.append(_delimited(12, settlement_bytes(settlement, ids)))
    return b"".join(parts)


# Each table's seats as every view writes them (its SeatView fields 5, one a seat), by the
# seats with the money, players' seeds and leaving marks they were written with: they change
# between hands and when a seat is taken or left, not from move to move.
_SEATS_WRITTEN: WrittenCache[tuple[Any, ...]] = WrittenCache(4096)


def _seats(record: TableRecord) -> bytes:
    key = (record.match.seats, record.seat_units, record.seat_client_seeds, record.leaving_seats)
    return _SEATS_WRITTEN.text(key, lambda: _seats_bytes(record))


def _seats_bytes(record: TableRecord) -> bytes:
    by_seat = dict(record.seat_client_seeds)
    return b"".join(
        [
            _delimited(
                5,
                b"".join(
                    (
                        _uint(1, i),
                        _text(2, s.player_id.encode()),
                        _sint(3, s.points),
                        _uint(4, s.fantasyland),
                        _uint(5, s.fantasyland_streak),
                        _sint(6, record.units_of(i)),
                        _text(7, by_seat.get(i, b"")),
                        _uint(8, i in record.leaving_seats),
                    )
                ),
            )
            for i, s in enumerate(record.match.seats)
        ]
    )


def view_bytes(
    record: TableRecord,
    version: int,
    viewer: int | None,
    hand_viewer: int | None,
    *,
    ruleset: bytes,
    policy: int,
) -> bytes:
    """``viewer``'s ``TableView`` (None: a spectator's) as ``SerializeToString`` writes it,
    without ``last_event_id``; ``hand_viewer``: whose private cards of the hand it shows
    (see ``tables._hand_viewer``), ``ruleset``: the ruleset's serialised parameters,
    ``policy``: the ``ClientSeedPolicy`` number."""
    match = record.match
    parts = [
        _text(1, record.table_id.encode()),
        _uint(2, version),
        _present(3, viewer),
        _delimited(4, ruleset),
        _seats(record),
    ]
    parts.append(_uint(6, match.button))
    parts.append(_uint(7, match.hands_played))
    parts.append(_uint(8, match.max_hands or 0))
    if match.hand is not None:
        parts.append(_delimited(9, _hand(record, hand_viewer)))
    parts.append(_uint(10, record.turn_time_limit_ms))
    parts.append(_uint(11, (record.deadline_ms or 0) & _UINT64))
    for a, b, unit in match.pair_units:
        parts.append(_delimited(13, b"".join((_uint(1, a), _uint(2, b), _uint(3, unit)))))
    parts.append(_uint(14, policy))
    parts.append(_text(15, record.client_seed))
    parts.append(_text(16, record.next_commitment.encode()))
    return b"".join(parts)


# --- a move's events ------------------------------------------------------------------------
_CARDS_DEALT, _CARDS_PLACED, _DISCARD_MADE = 6, 7, 8  # TableEvent's fields of those kinds
ROW_NUMBERS = {  # RowPosition's number of each row
    Row.TOP: cards_pb2.ROW_POSITION_TOP,
    Row.MIDDLE: cards_pb2.ROW_POSITION_MIDDLE,
    Row.BOTTOM: cards_pb2.ROW_POSITION_BOTTOM,
}
# Each (card, row) as a CardsPlacedEvent's placements field: a Placement of the card's code
# (field 1) and the row's number (field 2).
_PLACEMENTS = {
    row: [_delimited(3, _delimited(1, code.encode()) + _uint(2, number)) for code in CODES]
    for row, number in ROW_NUMBERS.items()
}
_DISCARDS = [_delimited(3, code.encode()) for code in CODES]  # DiscardMadeEvent.card


def move_event_bytes(event: engine.Event, version: int) -> bytes | None:
    """``event`` (made at ``version``) as a serialised ``TableEvent`` without an event id,
    for the kinds of event every move makes (cards dealt, placed, discarded: as given, so a
    redacted copy is written from the redacted event); None for any other kind."""
    if isinstance(event, engine.CardsDealt):
        kind = _CARDS_DEALT
        body = b"".join(
            (
                _uint(1, event.seat),
                _present(2, event.street),
                _uint(3, event.position),
                _uint(4, event.count),
                _cards(5, event.cards),
            )
        )
    elif isinstance(event, engine.CardsPlaced):
        kind = _CARDS_PLACED
        placed = b"".join([_PLACEMENTS[row][card] for card, row in event.placements])
        body = b"".join((_uint(1, event.seat), _uint(2, event.street), placed))
    elif isinstance(event, engine.DiscardMade):
        kind = _DISCARD_MADE
        card = b"" if event.card is None else _DISCARDS[event.card]
        body = b"".join((_uint(1, event.seat), _uint(2, event.street), card))
    else:
        return None
    return _uint(2, version) + _delimited(kind, body)


__all__ = ["FIELD_NUMBERS", "ROW_NUMBERS", "move_event_bytes", "view_bytes"]
