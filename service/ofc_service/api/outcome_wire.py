"""A settlement as protobuf wire bytes (``HandOutcome``), for the batch and stream calls.

Filling a ``Settlement`` message field by field costs some 25 µs a hand in Python, more
than settling it; the same bytes put together here from cached pieces (a row's
``HandValue``, a royalty triple, a pair's result) cost a few. What comes out is exactly what
:func:`ofc_service.api.convert.write_settlement` fills and protobuf serialises, byte for
byte (tests/api/test_outcome_wire.py checks it on random and edge-case hands), so a client
cannot tell the two apart. Only this module knows the field numbers of
``settlement.proto``; a test compares them with the generated descriptors.

>>> from ofc.scoring import Board, settle
>>> from ofcpoker.v1 import rules_service_pb2 as pb
>>> boards = [Board.parse("Ac 3d 2h / 6c 6d 9h 8s 4c / 9c 8c 7d 6h 5s"),
...           Board.parse("Kd 3c 2d / 5c 5d 9d 8h 4d / 7c 7h Qd Js 4s")]
>>> outcome = pb.HandOutcome.FromString(outcome_bytes(settle(boards), ("a", "b")))
>>> [(p.player_id, p.points) for p in outcome.settlement.players]
[('a', 8), ('b', -8)]
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from ofc.scoring import NO_FANTASYLAND, FantasylandResult, PairResult, Settlement
from ofcpoker.v1 import errors_pb2

from ofc_service.api.convert import hand_value_bytes

# Wire types: 0 varint, 2 length-delimited. A tag is (field number << 3) | wire type.
_VARINT = 0
_BYTES = 2


def _tag(field: int, wire_type: int) -> bytes:
    return bytes([field << 3 | wire_type])  # every field number here is below 16


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_TWO_BYTES = 1 << 14
_SHORT = [_encode_varint(i) for i in range(_TWO_BYTES)]  # message lengths, small numbers


def varint(value: int) -> bytes:
    """An unsigned varint.

    >>> varint(1), varint(300), varint(2**20)
    (b'\\x01', b'\\xac\\x02', b'\\x80\\x80@')
    """
    return _SHORT[value] if value < _TWO_BYTES else _encode_varint(value)


def zigzag(value: int) -> int:
    """``sint32``/``sint64`` encoding: 0, -1, 1, -2 ... as 0, 1, 2, 3 ...

    >>> [zigzag(v) for v in (0, -1, 1, -2)]
    [0, 1, 2, 3]
    """
    return value << 1 if value >= 0 else (-value << 1) - 1


def _field_uint(field: int, value: int) -> bytes:
    return _tag(field, _VARINT) + varint(value) if value else b""


def _field_sint(field: int, value: int) -> bytes:
    return _tag(field, _VARINT) + varint(zigzag(value)) if value else b""


def _field_bool(field: int, value: bool) -> bytes:
    return _tag(field, _VARINT) + b"\x01" if value else b""


def _field_message(field: int, body: bytes) -> bytes:
    return _tag(field, _BYTES) + varint(len(body)) + body


def _field_string(field: int, text: str) -> bytes:
    return _field_message(field, text.encode()) if text else b""


# --- Settlement fields (settlement.proto) ---------------------------------------------------
# BoardAssessment: top 1, middle 2, bottom 3 (HandValue), fouled 4, royalties 5, fantasyland 6
# Royalties: top 1, middle 2, bottom 3, total 4.  FantasylandOutcome: qualifies 1, cards 2.
# PlayerResult: index 1, player_id 2, board 3, points 4 (sint32), units 5 (sint64).
# PairResult: a 1, b 2, top 3, middle 4, bottom 5, scoop 6, a_fouled 7, b_fouled 8,
#   row_points 9, royalties 10, points 11, capped_points 12 (sint32), unit_value 13, units 14.
# Settlement: ruleset 1, players 2, pairs 3.  HandOutcome: settlement 1, error 2.
FIELD_NUMBERS = {
    "BoardAssessment": ("top", "middle", "bottom", "fouled", "royalties", "fantasyland"),
    "Royalties": ("top", "middle", "bottom", "total"),
    "FantasylandOutcome": ("qualifies", "cards"),
    "PlayerResult": ("index", "player_id", "board", "points", "units"),
    "PairResult": (
        "a", "b", "top", "middle", "bottom", "scoop", "a_fouled", "b_fouled",
        "row_points", "royalties", "points", "capped_points", "unit_value", "units",
    ),
    "Settlement": ("ruleset", "players", "pairs"),
    "HandOutcome": ("settlement", "error"),
}  # fmt: skip
"""Each message's fields in field-number order from 1: what the encoders below assume."""


class _Made(dict[Any, bytes]):
    """A dict that makes each missing entry once, with ``make`` (for keys of a bounded set:
    row values, royalty and Fantasyland shapes); a plain dict lookup on a hit."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[Any], bytes]) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, key: Any) -> bytes:
        value = self[key] = self.make(key)
        return value


# A row's HandValue as BoardAssessment.top, .middle or .bottom: under 10,000 values each.
_TOP, _MIDDLE, _BOTTOM = (
    _Made(functools.partial(lambda f, v: _field_message(f, hand_value_bytes(v)), field))
    for field in (1, 2, 3)
)


def _verdict(
    fouled: bool, royalties: tuple[int, int, int], fantasyland: FantasylandResult
) -> bytes:
    """BoardAssessment's fouled, royalties and fantasyland fields."""
    (top, middle, bottom), (qualifies, cards) = royalties, fantasyland
    royalties_body = (
        _field_uint(1, top)
        + _field_uint(2, middle)
        + _field_uint(3, bottom)
        + _field_uint(4, top + middle + bottom)
    )
    fantasyland_body = _field_bool(1, qualifies) + _field_uint(2, cards)
    return (
        _field_bool(4, fouled)
        + _field_message(5, royalties_body)
        + _field_message(6, fantasyland_body)
    )


# A board's verdict: a fouled board has no royalties and no Fantasyland (scoring._assess), any
# other is keyed by its (royalties, fantasyland).
_FOULED_VERDICT = _verdict(True, (0, 0, 0), FantasylandResult(False, 0))
_VERDICTS = _Made(lambda key: _verdict(False, *key))
# Most boards earn no Fantasyland (the core's one NO_FANTASYLAND): keyed by royalties alone.
_NO_FANTASYLAND_VERDICTS = _Made(lambda royalties: _verdict(False, royalties, NO_FANTASYLAND))


@functools.lru_cache(maxsize=1 << 16)  # pair results repeat: small numbers in few shapes
def _pair(pair: PairResult, a_fouled: bool, b_fouled: bool) -> bytes:
    a, b, (top, middle, bottom), scoop, row_points, royalties, points, capped, unit = pair
    body = b"".join(
        (
            _field_uint(1, a),
            _field_uint(2, b),
            _field_sint(3, top),
            _field_sint(4, middle),
            _field_sint(5, bottom),
            _field_sint(6, scoop),
            _field_bool(7, a_fouled),
            _field_bool(8, b_fouled),
            _field_sint(9, row_points),
            _field_sint(10, royalties),
            _field_sint(11, points),
            _field_sint(12, capped),
            _field_uint(13, unit),
            _field_sint(14, capped * unit),
        )
    )
    return _field_message(3, body)


_SMALL = 4096  # PlayerResult.points and .units in -_SMALL.._SMALL come from tables
_POINTS = {v: _field_sint(4, v) for v in range(-_SMALL, _SMALL + 1)}
_UNITS = {v: _field_sint(5, v) for v in range(-_SMALL, _SMALL + 1)}
_INDEXES = tuple(_field_uint(1, i) for i in range(16))


@functools.lru_cache(maxsize=4096)  # player ids come back batch after batch
def _player_id(text: str) -> bytes:
    return _field_string(2, text)


@functools.lru_cache(maxsize=256)
def _ruleset_name(text: str) -> bytes:
    return _field_string(1, text)


def settlement_bytes(settlement: Settlement, ids: Sequence[str]) -> bytes:
    """A ``Settlement`` message's wire bytes; ``ids[i]`` is player ``i``'s id ("" for none)."""
    ruleset, players, pairs = settlement
    parts = [_ruleset_name(ruleset)]
    short, small = _SHORT, _SMALL
    for index, board, points, units in players:
        (top, middle, bottom), fouled, royalties, fantasyland = board
        if fouled:
            verdict = _FOULED_VERDICT
        elif fantasyland is NO_FANTASYLAND:
            verdict = _NO_FANTASYLAND_VERDICTS[royalties]
        else:
            verdict = _VERDICTS[royalties, fantasyland]
        assessment = b"".join((_TOP[top], _MIDDLE[middle], _BOTTOM[bottom], verdict))
        size = len(assessment)
        player_id = ids[index]
        body = b"".join(
            (
                _INDEXES[index] if index < 16 else _field_uint(1, index),
                _player_id(player_id) if player_id else b"",
                b"\x1a",  # board: field 3, length-delimited
                short[size] if size < _TWO_BYTES else varint(size),
                assessment,
                _POINTS[points] if -small <= points <= small else _field_sint(4, points),
                _UNITS[units] if -small <= units <= small else _field_sint(5, units),
            )
        )
        size = len(body)
        parts += (b"\x12", short[size] if size < _TWO_BYTES else varint(size), body)
    for pair in pairs:
        parts.append(_pair(pair, players[pair[0]][1][1], players[pair[1]][1][1]))
    return b"".join(parts)


def outcome_bytes(settlement: Settlement, ids: Sequence[str]) -> bytes:
    """A ``HandOutcome`` holding the settlement, as wire bytes."""
    body = settlement_bytes(settlement, ids)
    size = len(body)
    return b"".join((b"\x0a", _SHORT[size] if size < _TWO_BYTES else varint(size), body))


def error_outcome_bytes(detail: errors_pb2.ErrorDetail) -> bytes:
    """A ``HandOutcome`` holding an error, as wire bytes."""
    return _field_message(2, detail.SerializeToString())


def identified_outcome(hand_id: str, outcome: bytes) -> bytes:
    """``IdentifiedOutcome{hand_id = 1, outcome = 2}`` (and the one-hand
    ``SettleHandsStreamResponse``, whose first two fields are the same) as wire bytes."""
    return _field_string(1, hand_id) + _field_message(2, outcome)


def length_delimited(raw: bytes) -> list[tuple[int, bytes]] | None:
    """A message's fields as (field number, bytes), when every field is length-delimited
    (strings, bytes, messages) with a number below 16, as in the batch requests; else
    ``None`` (a field of another wire type: the caller reads the message API instead).

    >>> length_delimited(b"\\x0a\\x02hi\\x12\\x00")
    [(1, b'hi'), (2, b'')]
    """
    fields: list[tuple[int, bytes]] = []
    pos, end = 0, len(raw)
    while pos < end:
        tag = raw[pos]
        if tag & 0x87 != _BYTES:
            return None
        size, shift, pos = 0, 0, pos + 1
        while True:  # the length, a varint of at most 32 bits (as protobuf reads one)
            if pos >= end or shift > 28:
                return None
            byte = raw[pos]
            size |= (byte & 0x7F) << shift
            pos, shift = pos + 1, shift + 7
            if byte < 0x80:
                break
        if pos + size > end:
            return None
        fields.append((tag >> 3, raw[pos : pos + size]))
        pos += size
    return fields


def repeated_field(field: int, items: Sequence[bytes]) -> bytes:
    """Length-delimited items of one repeated field (``SettleHandsResponse.results`` is 1)."""
    tag = _tag(field, _BYTES)
    return b"".join([tag + varint(len(item)) + item for item in items])


__all__ = [
    "FIELD_NUMBERS",
    "error_outcome_bytes",
    "identified_outcome",
    "length_delimited",
    "outcome_bytes",
    "repeated_field",
    "settlement_bytes",
    "varint",
    "zigzag",
]
