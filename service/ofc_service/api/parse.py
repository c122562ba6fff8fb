"""Strict readers for the scalar fields of TableService and SettlementFeedService requests.

Each reader takes the field's value and its path in the request (``table_id``,
``settlement_ids[3]``) and returns the value the servicer may use, or raises
``InvalidInputError`` naming that path, before any work is done or anything is read from
the store. Numbers in text fields are ASCII digits only (``str.isdigit`` and ``int`` accept
``"²"`` and ``"٣"``) and bounded by what the store can hold, so no well-formed-looking
input can reach Redis and come back as an error the client did not cause.

>>> event_id("1700000000000-3", "after_event_id")
'1700000000000-3'
>>> event_id("1-99999999999999999999", "after_event_id")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ofc.errors.InvalidInputError: after_event_id: an event id is "<ms>-<seq>" with each number ...
>>> page_token("²")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ofc.errors.InvalidInputError: page_token: not a token from ListHands: '²'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, TypeVar

from ofc.errors import InvalidInputError

from ofc_service.store.base import MAX_EXTRA_NUMBER

MAX_TABLE_ID_CHARS: Final = 64
MAX_REQUEST_ID_CHARS: Final = 128
MAX_PLAYER_ID_CHARS: Final = 64
MAX_STREAM_NUMBER: Final = 2**64 - 1  # each half of a Redis stream id is an unsigned 64-bit
MAX_QUOTED_CHARS: Final = 40  # an error quotes at most this much of the input

# What a table id may hold: what the store accepts (no whitespace, braces, control chars).
_TABLE_ID_RE: Final = re.compile(r"[^\s{}\x00-\x1f\x7f]+")
_EVENT_ID_RE: Final = re.compile(r"(0|[1-9][0-9]{0,19})-(0|[1-9][0-9]{0,19})", re.ASCII)
_PAGE_TOKEN_RE: Final = re.compile(r"0|[1-9][0-9]{0,15}", re.ASCII)
_SETTLEMENT_ID_RE: Final = re.compile(r"(.+):(0|[1-9][0-9]{0,15})", re.ASCII | re.DOTALL)

T = TypeVar("T")


def quoted(text: str) -> str:
    """``text`` as an error message quotes it: short, so a huge input makes no huge error."""
    if len(text) <= MAX_QUOTED_CHARS:
        return repr(text)
    return f"{text[:MAX_QUOTED_CHARS]!r}... ({len(text)} characters)"


def _invalid(message: str, field: str) -> InvalidInputError:
    return InvalidInputError(f"{field}: {message}", field=field)


def table_id(text: str, field: str = "table_id") -> str:
    """A table id as CreateTable returns it: 1..64 characters, no whitespace, braces or
    control characters (an unknown but well-formed id is NOT_FOUND later, not here).

    >>> table_id("", "table_id")
    Traceback (most recent call last):
    ...
    ofc.errors.InvalidInputError: table_id: required, 1..64 characters without whitespace or braces
    """
    if not 0 < len(text) <= MAX_TABLE_ID_CHARS or not _TABLE_ID_RE.fullmatch(text):
        what = "required" if not text else f"got {quoted(text)}"
        raise _invalid(
            f"{what}, 1..{MAX_TABLE_ID_CHARS} characters without whitespace or braces", field
        )
    return text


def player_id(text: str, field: str = "player_id") -> str:
    """A player id: 1..64 printable characters, the first and the last not a space (it
    appears in views, logs and records, where ``"ann "`` would pass for ``"ann"``, a
    player already seated).

    >>> player_id("ann lee")
    'ann lee'
    >>> player_id("ann ")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ofc.errors.InvalidInputError: player_id: must be 1..64 printable characters, the first ...
    """
    if (
        not 0 < len(text) <= MAX_PLAYER_ID_CHARS
        or not text.isprintable()
        or text[0] == " "
        or text[-1] == " "
    ):
        raise _invalid(
            f"must be 1..{MAX_PLAYER_ID_CHARS} printable characters, the first and the last "
            "not a space",
            field,
        )
    return text


def event_id(text: str, field: str) -> str:
    """An event id from ``TableEvent.event_id`` (``"<ms>-<seq>"``, canonical, each number an
    unsigned 64-bit as in Redis stream ids), or ``"0"`` for "before the first event"."""
    if text == "0":
        return text
    match = _EVENT_ID_RE.fullmatch(text)
    if match is None or max(int(match[1]), int(match[2])) > MAX_STREAM_NUMBER:
        raise _invalid(
            f'an event id is "<ms>-<seq>" with each number 0..{MAX_STREAM_NUMBER}, '
            f"got {quoted(text)}",
            field,
        )
    return text


def stream_id(text: str, field: str) -> str:
    """A settlement feed stream id: ``"<ms>-<seq>"`` like an event id (``"0"`` is none)."""
    if text == "0":
        raise _invalid("a stream id is \"<ms>-<seq>\", got '0'", field)
    return event_id(text, field)


def page_token(text: str, field: str = "page_token") -> int:
    """A ListHands page token (as ``next_page_token`` gave it): the first hand number of
    the page. Empty: the first page."""
    if not text:
        return 0
    if not _PAGE_TOKEN_RE.fullmatch(text) or int(text) > MAX_EXTRA_NUMBER:
        raise _invalid(f"not a token from ListHands: {quoted(text)}", field)
    return int(text)


def settlement_id(text: str, field: str) -> str:
    """A settlement id, ``"<table_id>:<hand_number>"`` as the feed's records carry it."""
    match = _SETTLEMENT_ID_RE.fullmatch(text)
    if match is None or not _TABLE_ID_RE.fullmatch(match[1]) or len(match[1]) > 200:
        raise _invalid(f'a settlement id is "<table_id>:<hand_number>", got {quoted(text)}', field)
    return text


def at_most(value: int, limit: int, field: str, *, zero: str = "") -> int:
    """A number field of ``0..limit`` (``zero`` says what 0 means, for the message)."""
    if value > limit:
        meaning = f" (0: {zero})" if zero else ""
        raise _invalid(f"must be 0..{limit}{meaning}, got {value}", field)
    return value


def bounded(items: Sequence[T], limit: int, field: str) -> Sequence[T]:
    """A repeated field of at most ``limit`` items (checked before any item is read)."""
    if len(items) > limit:
        raise _invalid(f"at most {limit} items, got {len(items)}", field)
    return items


__all__ = [
    "MAX_PLAYER_ID_CHARS",
    "MAX_REQUEST_ID_CHARS",
    "MAX_STREAM_NUMBER",
    "MAX_TABLE_ID_CHARS",
    "at_most",
    "bounded",
    "event_id",
    "page_token",
    "player_id",
    "quoted",
    "settlement_id",
    "stream_id",
    "table_id",
]
