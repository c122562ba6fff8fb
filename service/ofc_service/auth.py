"""Who may act: seat tokens for players, API keys for operators.

A seat token is ``st_<table id>.<192 random bits>``, handed out once when a seat is joined
and stored only as its SHA-256, so a leaked database does not leak tokens; it works for
exactly one (table, seat). The table id in it tells the two refusals apart: a token of this
table that matches no seat is not (or no longer) valid, UNAUTHENTICATED; a token of another
table is a credential for something else, PERMISSION_DENIED. An operator key (configured on
the server) may create tables and act for any seat, but no credential ever reads undealt
cards or an unrevealed server seed: the views the API sends are built by the core and never
contain them.

Credentials travel in gRPC metadata: ``x-ofc-seat-token`` or ``x-ofc-api-key``
(``authorization: Bearer <token>`` is accepted for either).

A mutating request's record (kept for retries with the same ``request_id``) is bound to
:func:`caller_identity`, so a retry is answered only to the credential that sent the
request; docs/security.md has the whole threat model.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

SEAT_TOKEN_PREFIX = "st_"
SEAT_TOKEN_HEADER = "x-ofc-seat-token"
API_KEY_HEADER = "x-ofc-api-key"
# Every seat token ever issued: st_<table id>.<24 random bytes, URL-safe base64>, and in the
# first release st_<the same 32 characters>, naming no table.
_ISSUED = re.compile(r"st_(?:(?P<table>[^.]+)\.)?[A-Za-z0-9_-]{32}")


class AuthError(Exception):
    """Credentials missing or wrong (UNAUTHENTICATED) or not enough (PERMISSION_DENIED)."""

    reason = "AUTH"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UnauthenticatedError(AuthError):
    reason = "UNAUTHENTICATED"


class PermissionDeniedError(AuthError):
    reason = "PERMISSION_DENIED"


def new_seat_token(table_id: str) -> str:
    """A fresh token for a seat at ``table_id`` (table ids hold no ``.``).

    >>> token = new_seat_token("t-1")
    >>> token.startswith("st_t-1.") and len(token) == len("st_t-1.") + 32
    True
    """
    return f"{SEAT_TOKEN_PREFIX}{table_id}.{secrets.token_urlsafe(24)}"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Credentials:
    """What a request presented: at most one of each (two that differ are refused). Each
    secret's :func:`token_hash` is taken once, here: every check and record of the request
    compares or stores the hash."""

    seat_token: str | None = None
    api_key: str | None = None
    seat_token_hash: str = field(default="", init=False, repr=False, compare=False)
    api_key_hash: str = field(default="", init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.seat_token is not None:
            object.__setattr__(self, "seat_token_hash", token_hash(self.seat_token))
        if self.api_key is not None:
            object.__setattr__(self, "api_key_hash", token_hash(self.api_key))

    @classmethod
    def from_metadata(cls, metadata: Iterable[tuple[str, str | bytes]] | None) -> Credentials:
        """The request's credentials; UNAUTHENTICATED when it sends two different seat
        tokens or two different API keys (headers repeated, or a header and a bearer
        token): which one a request acts with is never left to the order of its headers.

        >>> Credentials.from_metadata([("x-ofc-seat-token", "st_a"), ("authorization",
        ...                            "Bearer st_b")])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ofc_service.auth.UnauthenticatedError: the request sends two different seat tokens...
        """
        seat_tokens: set[str] = set()
        api_keys: set[str] = set()
        for key, raw in metadata or ():
            value = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
            key = key.lower()
            if key == SEAT_TOKEN_HEADER:
                seat_tokens.add(value.strip())
            elif key == API_KEY_HEADER:
                api_keys.add(value.strip())
            elif key == "authorization" and value.lower().startswith("bearer "):
                bearer = value[7:].strip()
                (seat_tokens if bearer.startswith(SEAT_TOKEN_PREFIX) else api_keys).add(bearer)
        for found, what in ((seat_tokens, "seat tokens"), (api_keys, "API keys")):
            found.discard("")  # an empty header is none
            if len(found) > 1:
                raise UnauthenticatedError(
                    f"the request sends two different {what} ({SEAT_TOKEN_HEADER}, "
                    f"{API_KEY_HEADER} and authorization headers): send one"
                )
        return cls(next(iter(seat_tokens), None), next(iter(api_keys), None))


ANONYMOUS = ""
"""The caller identity of a request without credentials."""


def caller_identity(creds: Credentials) -> str:
    """Who sent a request, as far as its records go: the SHA-256 of the API key presented
    (it wins, as it does for every check), else of the seat token, else :data:`ANONYMOUS`.
    Holding the same secret is being the same caller; the secret itself is never stored.

    >>> caller_identity(Credentials()) == ANONYMOUS
    True
    >>> caller_identity(Credentials(seat_token="st_t.x")) == token_hash("st_t.x")
    True
    """
    if creds.api_key is not None:
        return creds.api_key_hash
    if creds.seat_token is not None:
        return creds.seat_token_hash
    return ANONYMOUS


class Authenticator:
    """Checks credentials against the configured operator keys and a table's seat hashes."""

    def __init__(self, api_keys: Sequence[str] = ()) -> None:
        self._key_hashes = tuple(token_hash(k) for k in api_keys if k)

    @property
    def has_operator_keys(self) -> bool:
        return bool(self._key_hashes)

    def is_operator(self, creds: Credentials) -> bool:
        """True for a valid operator key; a wrong key is an error, not a downgrade."""
        if creds.api_key is None:
            return False
        presented = creds.api_key_hash
        if any(hmac.compare_digest(presented, h) for h in self._key_hashes):
            return True
        raise UnauthenticatedError("invalid API key")

    def is_operator_at(
        self, creds: Credentials, seat_hashes: dict[int, str], table_id: str
    ) -> bool:
        """:meth:`is_operator` on a call about table ``table_id``: a seat token sent beside a
        valid key must hold there too (:meth:`seat_of`), since credentials presented are
        checked, never ignored; the key still decides what the call may do."""
        if not self.is_operator(creds):
            return False
        self.seat_of(creds, seat_hashes, table_id)
        return True

    def authenticate(self, creds: Credentials) -> None:
        """What is checked of every mutating request before anything else, its retries
        included: an API key presented must be one this server accepts now (a key taken out
        of the configuration gets nothing, not even the answers it was once sent). Seat
        tokens are checked against the table (:meth:`seat_of`)."""
        self.is_operator(creds)

    def require_operator_when_keyed(self, creds: Credentials) -> None:
        """What calls about no table (``CreateTable``, the settlement feed) need: an operator
        key when the server has keys; without keys (development) anyone may make them, but
        an API key sent is still wrong (UNAUTHENTICATED), never ignored. A seat token sent
        without keys is not looked at: it names no table these calls act on."""
        if self.has_operator_keys:
            self.require_operator(creds)
        else:
            self.authenticate(creds)

    def require_operator(self, creds: Credentials) -> None:
        if not self.is_operator(creds):
            if creds.seat_token is not None:
                raise PermissionDeniedError("this call needs an operator API key, not a seat token")
            raise UnauthenticatedError(f"this call needs an operator API key ({API_KEY_HEADER})")

    def seat_of(self, creds: Credentials, seat_hashes: dict[int, str], table_id: str) -> int | None:
        """The seat a seat token belongs to at table ``table_id``; None when no token was
        given. A token that is not one of this table's seats is refused: UNAUTHENTICATED
        when it is not of a shape ever issued or names this table (made up, or its seat was
        left), PERMISSION_DENIED when it names another table (or predates tokens naming one).

        >>> auth = Authenticator()
        >>> for token in ("st_t-1.x", "st_" + "A" * 32, "st_t-2." + "A" * 32):
        ...     try:
        ...         auth.seat_of(Credentials(seat_token=token), {}, "t-1")
        ...     except AuthError as refused:
        ...         print(refused.reason)
        UNAUTHENTICATED
        PERMISSION_DENIED
        PERMISSION_DENIED
        """
        token = creds.seat_token
        if token is None:
            return None
        presented = creds.seat_token_hash
        for seat, stored in seat_hashes.items():
            if hmac.compare_digest(presented, stored):
                return seat
        shape = _ISSUED.fullmatch(token)
        if shape is None:
            raise UnauthenticatedError(
                f"not a seat token: they are {SEAT_TOKEN_PREFIX}<table id>.<32 characters>"
            )
        named = shape["table"]
        if named == table_id:
            raise UnauthenticatedError("this seat token is not (or no longer) valid at this table")
        # Another table's, or the first release's (naming no table): this table cannot tell
        # a made-up token of that shape from a real one.
        raise PermissionDeniedError("this seat token is not valid at this table")

    def may_act_for(
        self, creds: Credentials, seat: int, seat_hashes: dict[int, str], table_id: str
    ) -> None:
        """Raise unless the caller is an operator or holds this seat's token."""
        if self.is_operator_at(creds, seat_hashes, table_id):
            return
        own = self.seat_of(creds, seat_hashes, table_id)
        if own is None:
            raise UnauthenticatedError(
                f"acting for a seat needs its seat token ({SEAT_TOKEN_HEADER}) or an API key"
            )
        if own != seat:
            raise PermissionDeniedError(f"your seat token is for seat {own}, not seat {seat}")
