"""Request ids: records bound to their caller, digests of what a request asks, and the
secrets a stored answer keeps masked.

A mutating request is applied once per (caller, request id): its record is stored under
:func:`request_key` (a hash of both, so a record answers only the caller that made it) with
the request's digest (the same id with another request is REQUEST_ID_REUSED). A stored
JoinSeat answer holds its seat token masked with the request id (:func:`mask_secret`).
"""

from __future__ import annotations

import functools
import hashlib
import secrets

from ofc.errors import InvalidInputError

from ofc_service.auth import ANONYMOUS, Credentials, caller_identity

MAX_REQUEST_ID_CHARS = 128
INTERNAL_CALLER = "internal"  # the caller of the server's own requests (timeouts): not a hash


def request_key(request_id: str, caller: str | None = None) -> str:
    """The store key for ``caller``'s request id: a hash of both, so ids (and what they
    unmask) stay private, and a record answers the caller that made it and no one else.
    ``caller=None``: the key of the releases before records were bound to their caller
    (read, during a rolling upgrade, for the records they wrote).

    >>> request_key("r1", "a") != request_key("r1", "b") != request_key("r1")
    True
    """
    if not isinstance(request_id, str) or not 1 <= len(request_id) <= MAX_REQUEST_ID_CHARS:
        raise InvalidInputError(
            f"request_id must be 1..{MAX_REQUEST_ID_CHARS} characters", field="request_id"
        )
    if caller is None:
        return hashlib.sha256(b"ofc-request\x00" + request_id.encode()).hexdigest()
    named = b"ofc-request-of\x00" + caller.encode() + b"\x00" + request_id.encode()
    return hashlib.sha256(named).hexdigest()


@functools.lru_cache(maxsize=4096)  # the callers and seats of the tables in play here
def request_lane(caller: str, seat: int | None) -> str:
    """The lane of the records of ``caller`` acting for ``seat`` (a short hash of both): a
    client retries only its latest request for a seat, so a move's record supersedes the same
    caller's earlier move for that seat in the hand, which keeps only that it was applied. An
    operator's key driving several seats has a lane per seat; a caller with no credentials
    (``ANONYMOUS``, who may be anyone) has none: its records stay whole.

    >>> len(request_lane("a", 0)), request_lane("a", 0) != request_lane("b", 0)
    (16, True)
    >>> request_lane("a", 0) != request_lane("a", 1), request_lane(ANONYMOUS, 0)
    (True, '')
    """
    if caller == ANONYMOUS:
        return ""
    named = f"{caller}\x00{'' if seat is None else seat}".encode()
    return hashlib.sha256(b"ofc-lane\x00" + named).hexdigest()[:16]


def mask_secret(secret: str, request_id: str) -> str:
    """XOR ``secret`` with a SHA-256 keystream of the request id (hex out); its own inverse
    via :func:`unmask_secret`. A stored JoinSeat response so keeps the seat token unreadable
    to anyone without the request id, while a retry with the id gets the token back."""
    data = secret.encode()
    return bytes(a ^ b for a, b in zip(data, _keystream(request_id, len(data)), strict=True)).hex()


def unmask_secret(masked_hex: str, request_id: str) -> str:
    data = bytes.fromhex(masked_hex)
    return bytes(
        a ^ b for a, b in zip(data, _keystream(request_id, len(data)), strict=True)
    ).decode()


def _keystream(request_id: str, size: int) -> bytes:
    blocks = (
        hashlib.sha256(b"ofc-mask\x00" + request_id.encode() + i.to_bytes(4, "big")).digest()
        for i in range((size + 31) // 32)
    )
    return b"".join(blocks)[:size]


def new_table_id() -> str:
    """A fresh table id: 16 random bytes, URL-safe base64 without padding (22 characters),
    never starting with "-" (a command line would read such an id as an option).

    >>> len(new_table_id()), new_table_id() != new_table_id()
    (22, True)
    """
    while True:
        table_id = secrets.token_urlsafe(16)
        if not table_id.startswith("-"):
            return table_id


def create_claim(creds: Credentials, request_id: str) -> str:
    """The key of a CreateTable request (caller and request_id, hashed): a retry inside the
    retry window finds the table id the first call claimed under it (a fresh random id, so
    a table id is never reused, even by a request id reused after the window)."""
    caller = caller_identity(creds)
    return hashlib.sha256(f"ofc-table\x00{caller}\x00{request_id}".encode()).hexdigest()
