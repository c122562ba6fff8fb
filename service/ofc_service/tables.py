"""Live tables: the engine's match state, stored as one record per table, changed by moves.

Every change is read → check → ``engine.apply`` → one atomic store commit carrying the new
record, the events, the response (kept for request-id replays), the hand history when a
hand ends, and the table's next deadline. The store rejects a commit whose expected version
is stale, so two replicas racing on one table (two moves, or two deadline sweepers) can
never both win. This module knows nothing of protobuf: the API layer passes in how to
encode events and responses.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import re
import secrets
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ofc import engine
from ofc.codec import (
    HandContext,
    TurnClock,
    action_from_dict,
    action_to_dict,
    hand_history,
    state_from_dict,
    state_to_dict,
)
from ofc.engine import Action, Event, MatchState
from ofc.errors import IllegalActionError, InvalidInputError, UnknownSeatError
from ofc.policy import DEFAULT_POLICY, TIMEOUT_POLICY, DefaultMovePolicy, identity, timeout
from ofc.rulesets import ROWS
from ofc.shuffle import combine_client_seeds, commitment

from ofc_service.auth import (
    Authenticator,
    AuthError,
    Credentials,
    UnauthenticatedError,
    new_seat_token,
    token_hash,
)
from ofc_service.metrics import ACTIVE_TABLES, MOVES
from ofc_service.periodic import Periodic
from ofc_service.settlements import SettlementRecord, SettlementRelay, money_totals
from ofc_service.store import (
    DEFAULT_REQUEST_TTL_SECONDS,
    Commit,
    StaleVersionError,
    TableExistsError,
    TableNotFoundError,
    TableStore,
)

log = logging.getLogger("ofc.tables")


class NewerRecordError(Exception):
    """A table record written by a newer server version (a rolling upgrade in progress):
    this replica cannot act on it, a replica of the newer version can. Retryable."""


class ClientSeedPolicyError(IllegalActionError):
    """SetClientSeed at a table whose hands use the table's client seed only."""

    reason = "CLIENT_SEED_POLICY"


# 2 added seat_units, 3 the client seed policy and the next hand's seed, 4 a timeout's move
# (and policy and deadline) in hand_actions and the seat changes between hands.
RECORD_FORMAT = 4
RECORD_FORMATS = (1, 2, 3, RECORD_FORMAT)  # older records load (see TableRecord.from_bytes)
POLICY_TABLE = "table"  # every hand's client seed is the table's
POLICY_PLAYERS = "players"  # the table's seed, then each seat's own, length-prefixed
CLIENT_SEED_POLICIES = (POLICY_TABLE, POLICY_PLAYERS)
MAX_REQUEST_ID_CHARS = 128
INTERNAL_CALLER = "internal"  # the caller of the server's own requests (timeouts): not a hash
DEFAULT_EVENT_LOG_HANDS = 2  # the current hand and the one before, for watchers resuming
KEPT_RECORDS = 1024  # per replica: the tables in play here (a few MB)
HAND_PREFIX = "hand"


@dataclass(frozen=True, slots=True)
class ClientSeedSet:
    """A seat set its own client seed (a table event the engine does not know: seeds are
    the shell's business until StartHand hands the engine one combined seed)."""

    seat: int
    client_seed: bytes


TableEvent = Event | ClientSeedSet
EventEncoder = Callable[[TableEvent, int, "TableRecord"], bytes]
"""(event, table version it produced, record after it) -> the bytes stored in the log."""


def _dumps(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"))


_HOLE = "\x00hole"  # a string no record field can hold (JSON escapes it as \u0000)
_HOLE_JSON = re.compile(re.escape(_dumps(_HOLE)))


T = TypeVar("T")


class _Fragments:
    """JSON of immutable values by identity: the few this replica wrote last."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._texts: OrderedDict[int, tuple[object, str]] = OrderedDict()

    def json(self, value: T, to_dict: Callable[[T], Any]) -> str:
        key = id(value)
        hit = self._texts.get(key)
        if hit is not None and hit[0] is value:
            self._texts.move_to_end(key)
            return hit[1]
        text = _dumps(to_dict(value))
        self._texts[key] = (value, text)  # holding the value keeps its id from being reused
        if len(self._texts) > self._size:
            self._texts.popitem(last=False)
        return text


_FRAGMENTS = _Fragments(16_384)


@dataclass(frozen=True, slots=True)
class TableRecord:
    """Everything stored for one table (server side only: it holds the server seed)."""

    table_id: str
    match: MatchState
    turn_time_limit_ms: int
    fantasyland_time_limit_ms: int
    client_seed: bytes
    created_at_ms: int
    seat_tokens: tuple[tuple[int, str], ...] = ()  # (seat, SHA-256 of its token)
    hand_start: MatchState | None = None  # the match right before the current hand started
    hand_actions: tuple[Action, ...] = ()  # the current hand's actions, StartHand first
    seat_deadlines: tuple[tuple[int, int], ...] = ()  # (seat, Unix ms) for seats to act
    seat_units: tuple[int, ...] = ()  # per seat: running money total (smallest currency unit)
    client_seed_policy: str = POLICY_TABLE
    seat_client_seeds: tuple[tuple[int, bytes], ...] = ()  # (seat, its own seed), players policy
    # The next hand's server seed, drawn (and its commitment published) one hand ahead, so
    # no client seed can be chosen before it. Empty in records written before format 3.
    next_server_seed: bytes = b""
    # Seats taken and left since the current hand started (for the next hand's history),
    # and those before the current hand (for its own). None: not known (a record written
    # before format 4 did not collect them).
    seat_changes: tuple[engine.SitDown | engine.StandUp, ...] | None = ()
    hand_seat_changes: tuple[engine.SitDown | engine.StandUp, ...] | None = ()
    # Whether the current hand's deadlines follow this server's clock rule (with_deadlines),
    # so that its timeouts can record them: false for a hand begun before format 4.
    hand_deadlines: bool = True

    @property
    def token_hashes(self) -> dict[int, str]:
        return dict(self.seat_tokens)

    def units_of(self, seat: int) -> int:
        """The seat's running money total at this table (0 before its first hand)."""
        return self.seat_units[seat] if seat < len(self.seat_units) else 0

    @property
    def deadline_ms(self) -> int | None:
        return min((ms for _, ms in self.seat_deadlines), default=None)

    @property
    def next_commitment(self) -> str:
        """SHA-256 of the next hand's server seed (hex); empty before one is drawn."""
        return commitment(self.next_server_seed) if self.next_server_seed else ""

    def hand_client_seed(self) -> bytes:
        """The client seed of the next hand to start: the table's seed, or (players policy)
        the table's seed and each seat's own, in seat order, u32be-length-prefixed."""
        if self.client_seed_policy == POLICY_TABLE:
            return self.client_seed
        own = dict(self.seat_client_seeds)
        seats = range(len(self.match.seats))
        return combine_client_seeds([self.client_seed, *(own.get(s, b"") for s in seats)])

    def to_bytes(self) -> bytes:
        data: dict[str, Any] = {
            "format": RECORD_FORMAT,
            "table_id": self.table_id,
            "match": _HOLE,
            "turn_time_limit_ms": self.turn_time_limit_ms,
            "fantasyland_time_limit_ms": self.fantasyland_time_limit_ms,
            "client_seed": self.client_seed.hex(),
            "created_at_ms": self.created_at_ms,
            "seat_tokens": [list(t) for t in self.seat_tokens],
            "hand_start": _HOLE,
            "hand_actions": _HOLE,
            "seat_deadlines": [list(d) for d in self.seat_deadlines],
            "seat_units": list(self.seat_units),
            "client_seed_policy": self.client_seed_policy,
            "seat_client_seeds": [[s, seed.hex()] for s, seed in self.seat_client_seeds],
            "next_server_seed": self.next_server_seed.hex(),
            "seat_changes": _changes_to_list(self.seat_changes),
            "hand_seat_changes": _changes_to_list(self.hand_seat_changes),
            "hand_deadlines": self.hand_deadlines,
        }
        # The hand's start and its actions do not change while the hand goes on: their JSON
        # is made once (per replica) and spliced in, in the order of the holes above.
        start = self.hand_start
        hand_start = "null" if start is None else _FRAGMENTS.json(start, state_to_dict)
        actions = ",".join(_FRAGMENTS.json(a, action_to_dict) for a in self.hand_actions)
        fills = iter((_dumps(state_to_dict(self.match)), hand_start, f"[{actions}]"))
        text = _HOLE_JSON.sub(lambda _: next(fills), _dumps(data))
        return text.encode()

    @classmethod
    def from_bytes(cls, raw: bytes) -> TableRecord:
        """Read a record of any format this server knows. Before format 4, a timeout in
        ``hand_actions`` was stored without its move (the engine chose it): the move is
        recovered from the stored hand (:func:`_recover_timeouts`), and the seat changes
        since the last hand are not known."""
        data = json.loads(raw)
        found = data.get("format")
        if isinstance(found, int) and found > RECORD_FORMAT:
            raise NewerRecordError(
                f"table {data.get('table_id')!r} was written by a newer server version "
                f"(record format {found}; this replica reads up to {RECORD_FORMAT}); retry"
            )
        if found not in RECORD_FORMATS:
            raise ValueError(f"unknown table record format {found!r}")
        match = state_from_dict(data["match"])
        hand_start = None if data["hand_start"] is None else state_from_dict(data["hand_start"])
        if found < 4:
            actions = _recover_timeouts(hand_start, data["hand_actions"], match)
            changes: tuple[SeatChanges, SeatChanges] = (None, None)
            hand_deadlines = match.hand is None or match.hand.over
        else:
            actions = tuple(action_from_dict(a) for a in data["hand_actions"])
            changes = (
                _changes_from_list(data["seat_changes"]),
                _changes_from_list(data["hand_seat_changes"]),
            )
            hand_deadlines = bool(data["hand_deadlines"])
        return cls(
            table_id=data["table_id"],
            match=match,
            turn_time_limit_ms=data["turn_time_limit_ms"],
            fantasyland_time_limit_ms=data["fantasyland_time_limit_ms"],
            client_seed=bytes.fromhex(data["client_seed"]),
            created_at_ms=data["created_at_ms"],
            seat_tokens=tuple((int(s), str(h)) for s, h in data["seat_tokens"]),
            hand_start=hand_start,
            hand_actions=actions,
            seat_deadlines=tuple((int(s), int(ms)) for s, ms in data["seat_deadlines"]),
            seat_units=tuple(int(u) for u in data.get("seat_units", ())),
            client_seed_policy=data.get("client_seed_policy", POLICY_TABLE),
            seat_client_seeds=tuple(
                (int(s), bytes.fromhex(seed)) for s, seed in data.get("seat_client_seeds", ())
            ),
            next_server_seed=bytes.fromhex(data.get("next_server_seed", "")),
            seat_changes=changes[0],
            hand_seat_changes=changes[1],
            hand_deadlines=hand_deadlines,
        )


SeatChanges = tuple[engine.SitDown | engine.StandUp, ...] | None


def _changes_to_list(changes: SeatChanges) -> list[Any] | None:
    return None if changes is None else [action_to_dict(a) for a in changes]


def _changes_from_list(raw: list[Any] | None) -> SeatChanges:
    if raw is None:
        return None
    changes = tuple(action_from_dict(a) for a in raw)
    assert all(isinstance(a, engine.SitDown | engine.StandUp) for a in changes)
    return changes  # type: ignore[return-value]


def _recover_timeouts(
    hand_start: MatchState | None, raw_actions: list[Any], match: MatchState
) -> tuple[Action, ...]:
    """The actions of a record written before format 4, each timeout with the move it made.

    Those servers let the engine choose a timeout's move and stored only ``{type, seat,
    at_ms}``. The move is read back from the stored hand, where it is: the seat's batch
    (the deck's cards at that point of the replay), each card in the row of the final board
    that holds it or among the discards, in batch order as the policy placed them (a
    Fantasyland seat's set as the board shows it). The replay of the recovered actions must
    give the stored hand exactly. The move names ``ofc-timeout-4`` (the policy of the
    servers that wrote format 3) when that policy makes the same move, else no policy (an
    older server's).
    """
    if hand_start is None or match.hand is None:
        return tuple(action_from_dict(a) for a in raw_actions)
    final = match.hand
    state = hand_start
    actions: list[Action] = []
    for raw in raw_actions:
        if raw.get("type") == "timeout" and "resolved" not in raw:
            seat, at_ms = int(raw["seat"]), int(raw["at_ms"])
            move = _move_from_final(state, seat, final, at_ms)
            chosen = dataclasses.replace(TIMEOUT_POLICY.choose(state, seat), at_ms=at_ms)
            policy = identity(TIMEOUT_POLICY) if chosen == move else None
            action: Action = engine.Timeout(seat, move, policy, at_ms)
        else:
            action = action_from_dict(raw)
        state, _ = engine.apply(state, action)
        actions.append(action)
    if state.hand != final:
        raise ValueError("the stored hand is not the replay of its actions")
    return tuple(actions)


def _move_from_final(
    state: MatchState, seat: int, final: engine.HandState, at_ms: int
) -> engine.Place | engine.SetFantasyland:
    hand = state.hand
    assert hand is not None
    batch = hand.seat(seat).pending
    board = final.seat(seat).board
    if hand.seat(seat).in_fantasyland:
        return engine.SetFantasyland(
            seat, board.top, board.middle, board.bottom, final.seat(seat).discards, at_ms
        )
    rows = {card: row for row in ROWS for card in board.row(row)}
    placements = tuple((card, rows[card]) for card in batch if card in rows)
    discards = [card for card in batch if card not in rows]
    return engine.Place(seat, placements, discards[0] if discards else None, at_ms)


@dataclass(slots=True)
class _Kept:
    """A table's record as this replica last wrote or read it."""

    raw: bytes
    record: TableRecord
    version: int
    _sha1: str = ""

    def sha1(self) -> str:
        if not self._sha1:
            self._sha1 = hashlib.sha1(self.raw).hexdigest()
        return self._sha1


@dataclass(frozen=True, slots=True)
class Change:
    """What one accepted request did (before it is committed)."""

    record: TableRecord
    events: tuple[TableEvent, ...]
    actor_seat: int | None = None  # the seat the caller acted for, if any
    seat_token: str | None = None  # a new seat token (JoinSeat)
    move: str | None = None  # the kind of hand move, counted in ofc_moves_total once committed


@dataclass(frozen=True, slots=True)
class Committed:
    """A change as stored: the new version, for building the response."""

    change: Change
    version: int
    last_event_id: str


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


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def new_table_id() -> str:
    """A fresh table id: 16 random bytes, URL-safe base64 without padding (22 characters).

    >>> len(new_table_id()), new_table_id() != new_table_id()
    (22, True)
    """
    return secrets.token_urlsafe(16)


class TableManager:
    """Reads, changes and commits tables; the API layer and the deadline sweeper use it."""

    def __init__(
        self,
        store: TableStore,
        authenticator: Authenticator,
        encode_event: EventEncoder,
        *,
        clock_ms: Callable[[], int] = now_ms,
        server_seed: Callable[[], bytes] = lambda: secrets.token_bytes(32),
        relay: SettlementRelay | None = None,
        event_log_hands: int = DEFAULT_EVENT_LOG_HANDS,
        request_ttl_seconds: int = DEFAULT_REQUEST_TTL_SECONDS,
        policy: DefaultMovePolicy = DEFAULT_POLICY,
    ) -> None:
        self.store = store
        self.auth = authenticator
        self.encode_event = encode_event
        self.clock_ms = clock_ms
        self.server_seed = server_seed
        self.relay = relay  # relays a settling commit's outbox at once (else: its sweep)
        self.event_log_hands = event_log_hands  # 0: no per-hand trim (the store's cap only)
        self.request_ttl_seconds = request_ttl_seconds  # the retry window of request ids
        self.policy = policy  # chooses the move of a seat whose clock ran out
        self._kept: OrderedDict[str, _Kept] = OrderedDict()

    async def load(self, table_id: str) -> tuple[TableRecord, int, str]:
        """The record, its version and the id of the last event it includes."""
        stored = await self.store.load(table_id)
        record = self.decode(table_id, stored.state, stored.version)
        return record, stored.version, stored.last_event_id

    def decode(self, table_id: str, raw: bytes, version: int) -> TableRecord:
        """The record stored as ``raw`` at ``version``. Decoding is a good part of a move's
        work, so the record this replica last wrote or read of each table is kept, with its
        bytes (a load of other bytes decodes them) and its version (see :meth:`mutate`)."""
        kept = self._kept.get(table_id)
        if kept is not None and kept.raw == raw:
            self._kept.move_to_end(table_id)
            kept.version = version
            return kept.record
        record = TableRecord.from_bytes(raw)
        self._keep(table_id, raw, record, version)
        return record

    def _keep(self, table_id: str, raw: bytes, record: TableRecord, version: int) -> None:
        self._kept[table_id] = _Kept(raw, record, version)
        self._kept.move_to_end(table_id)
        if len(self._kept) > KEPT_RECORDS:
            self._kept.popitem(last=False)

    async def create(self, record: TableRecord, *, respond: Callable[[Committed], bytes]) -> bytes:
        result = await self.store.create_table(record.table_id, record.to_bytes())
        return respond(Committed(Change(record, ()), result.version, ""))

    async def mutate(
        self,
        table_id: str,
        *,
        expected_version: int,
        request_id: str,
        change: Callable[[TableRecord, int], Change],
        respond: Callable[[Committed], bytes],
        caller: str = INTERNAL_CALLER,
        request_digest: str = "",
    ) -> bytes:
        """Apply ``change`` to the table at ``expected_version`` exactly once per request id.

        ``change`` checks the caller's credentials before anything else. A retry of a
        request already committed returns its first response unchanged, even when the table
        has moved on, but only to the caller that sent it (``caller``, the
        :func:`~ofc_service.auth.caller_identity` of its credentials: the record is stored
        under both) and only for the same request (``request_digest``; another request with
        the id is :class:`~ofc_service.store.RequestIdReusedError`). Anyone else is judged as
        if there were no record. Any rejection (core error, auth error, stale version)
        leaves the table untouched.
        """
        key = request_key(request_id, caller)
        # One store round trip when this replica holds the record at that version (it made
        # or read the table's last change): the commit itself checks the request id, the
        # version and the state (by its SHA-1, so a store that lost writes cannot fool it).
        kept = self._kept.get(table_id)
        if kept is not None and kept.version == expected_version:
            now = self.clock_ms()
            try:
                done = change(kept.record, now)
            except Exception:  # judged against the store's table below, as a retry may be
                done = None
            if done is not None:
                try:
                    return await self._commit(
                        table_id, key, expected_version, done, now, respond, kept.sha1(),
                        request_digest,
                    )  # fmt: skip
                except (StaleVersionError, TableNotFoundError):
                    self._kept.pop(table_id, None)
        # Otherwise two: the load and the commit. The request record is read only when the
        # request cannot go on as sent: a committed request moved the table on, so its retry
        # always meets another version (or a missing table, or a change that no longer
        # applies); a duplicate racing past the load is answered by the commit itself, which
        # checks the request id before the version.
        try:
            stored = await self.store.load(table_id)
        except TableNotFoundError as missing:
            return await self._replayed(table_id, request_id, key, request_digest, missing)
        record = self.decode(table_id, stored.state, stored.version)
        now = self.clock_ms()
        # Credentials first, even for a request that is stale: a caller the table refuses
        # is refused whatever the version (and gets only its own record, if any).
        error: Exception
        try:
            done = change(record, now)
        except AuthError as refused:
            return await self._replayed(table_id, request_id, key, request_digest, refused)
        except Exception as refused:
            error = refused
        else:
            if stored.version == expected_version:
                return await self._commit(
                    table_id, key, stored.version, done, now, respond, "", request_digest
                )
        if stored.version != expected_version:
            error = StaleVersionError(
                table_id, expected_version=expected_version, current_version=stored.version
            )
        # The caller passed the table's credential checks: a record of the release before
        # records were bound to callers may answer it too (see docs/security.md).
        return await self._replayed(table_id, request_id, key, request_digest, error, legacy=True)

    async def _commit(
        self,
        table_id: str,
        key: str,
        expected_version: int,
        done: Change,
        now: int,
        respond: Callable[[Committed], bytes],
        expected_sha1: str,
        request_digest: str,
    ) -> bytes:
        # One clock reading per move: the action's time, the new deadlines and the history's.
        done = dataclasses.replace(done, record=with_deadlines(done.record, now, done.events))
        version = expected_version + 1
        blobs = [self.encode_event(e, version, done.record) for e in done.events]
        extra = _history_extra(done, now)
        outbox = _settlement_outbox(done, now)
        # Event ids are assigned by the commit, so a move's response carries none; watchers
        # resume from the ids in Watch snapshots and events.
        response = respond(Committed(done, version, ""))
        state = done.record.to_bytes()
        commit = Commit(
            table_id,
            expected_version=expected_version,
            state=state,
            request_id=key,
            deadline_ms=done.record.deadline_ms,
            events=blobs,
            response=response,
            extra=extra,
            outbox=outbox,
            # A hand's first events begin a log segment: the log keeps the last few hands (for
            # watchers resuming); finished hands live on in their histories.
            keep_segments=self.event_log_hands
            if any(isinstance(e, engine.HandStarted) for e in done.events)
            else 0,
            expected_state_sha1=expected_sha1,
            request_digest=request_digest,
            request_ttl_seconds=self.request_ttl_seconds,
        )
        result = await self.store.commit(commit)
        if not result.replayed:
            self._keep(table_id, state, done.record, result.version)
            if done.move is not None:
                MOVES.labels(done.move).inc()
        if outbox and not result.replayed and self.relay is not None:
            try:
                await self.relay.relay_table(table_id)
            except Exception:  # the move is committed; the relay's sweep retries the outbox
                log.exception("relay failed", extra={"fields": {"table_id": table_id}})
        return result.response

    async def _replayed(
        self,
        table_id: str,
        request_id: str,
        key: str,
        request_digest: str,
        error: Exception,
        *,
        legacy: bool = False,
    ) -> bytes:
        """The first response of the caller's request already committed (another request
        under its id: RequestIdReusedError); else ``error`` is raised. ``legacy``: a record
        written before records named their caller and request (a rolling upgrade) answers
        too; the caller passed the credential checks of a new request just now."""
        prior = await self.store.get_response(table_id, key, request_digest=request_digest)
        if prior is None and legacy:
            prior = await self.store.get_response(table_id, request_key(request_id))
        if prior is None:
            raise error
        return prior

    async def create_for_request(
        self,
        claim_id: str,
        make: Callable[[str], TableRecord],
        request_digest: str = "",
    ) -> tuple[TableRecord, int, str]:
        """The table of one create request: the record ``make(table_id)`` under a table id
        claimed for ``claim_id`` (the caller's request, hashed) for the retry window; then
        :meth:`load`'s answer. The claim keeps ``request_digest``: the same claim for another
        request is :class:`~ofc_service.store.RequestIdReusedError`.

        Two steps, each idempotent: the store claims a fresh random id for the request (or
        returns the id a first call claimed), then the table is created if absent. A retry
        inside the window so answers with the same table, and creates it if the first call
        stopped between the steps; after the window the request is new and gets a new id,
        so a table id is never reused (nor, with it, a settlement id).
        """
        table_id = await self.store.claim_table_id(
            claim_id,
            new_table_id(),
            ttl_seconds=self.request_ttl_seconds,
            request_digest=request_digest,
        )
        with contextlib.suppress(TableExistsError):
            await self.create(make(table_id), respond=lambda c: b"")
        return await self.load(table_id)

    # --- the changes each RPC makes -------------------------------------------------------
    def apply_action(
        self, record: TableRecord, action: Action, now: int
    ) -> tuple[TableRecord, tuple[Event, ...]]:
        """``engine.apply`` plus the bookkeeping of the hand being recorded for its history."""
        match, events = engine.apply(record.match, action)
        if isinstance(action, engine.StartHand):
            record = dataclasses.replace(
                record,
                match=match,
                hand_start=record.match,
                hand_actions=(action,),
                hand_seat_changes=record.seat_changes,  # written into this hand's history
                seat_changes=(),
                hand_deadlines=True,
            )
        elif isinstance(action, engine.Place | engine.SetFantasyland | engine.Timeout):
            record = dataclasses.replace(
                record, match=match, hand_actions=(*record.hand_actions, action)
            )
        else:  # a seat taken or left: the next hand's history explains the changed seat
            changes = record.seat_changes
            record = dataclasses.replace(
                record, match=match, seat_changes=None if changes is None else (*changes, action)
            )
        units = money_totals(record.seat_units, len(match.seats), events)
        return dataclasses.replace(record, seat_units=units), events

    def join(self, record: TableRecord, seat: int, player_id: str, now: int) -> Change:
        token = new_seat_token(record.table_id)
        new, events = self.apply_action(record, engine.SitDown(seat, player_id, now), now)
        tokens = (*tuple(t for t in new.seat_tokens if t[0] != seat), (seat, token_hash(token)))
        return Change(dataclasses.replace(new, seat_tokens=tokens), events, seat, token)

    def leave(self, record: TableRecord, seat: int, creds: Credentials, now: int) -> Change:
        self.auth.may_act_for(creds, seat, record.token_hashes, record.table_id)
        new, events = self.apply_action(record, engine.StandUp(seat, now), now)
        tokens = tuple(t for t in new.seat_tokens if t[0] != seat)
        seeds = tuple(s for s in new.seat_client_seeds if s[0] != seat)  # not the next player's
        new = dataclasses.replace(new, seat_tokens=tokens, seat_client_seeds=seeds)
        return Change(new, events, None)

    def start_hand(self, record: TableRecord, creds: Credentials, now: int) -> Change:
        seat = (
            None
            if self.auth.is_operator(creds)
            else self.auth.seat_of(creds, record.token_hashes, record.table_id)
        )
        if seat is None and not self.auth.is_operator(creds):  # no credentials at all
            raise UnauthenticatedError(
                "starting a hand needs a seat token of this table or an API key"
            )
        # The seed committed one hand ahead (a record from before format 3 has none yet).
        seed = record.next_server_seed or self.server_seed()
        action = engine.StartHand(seed, record.hand_client_seed(), now)
        new, events = self.apply_action(record, action, now)
        new = dataclasses.replace(new, next_server_seed=self.server_seed())
        return Change(new, events, seat)

    def set_client_seed(
        self, record: TableRecord, seat: int, seed: bytes, creds: Credentials
    ) -> Change:
        """A seat's own client seed (players policy), counted from the next StartHand."""
        self.auth.may_act_for(creds, seat, record.token_hashes, record.table_id)
        if record.client_seed_policy != POLICY_PLAYERS:
            raise ClientSeedPolicyError(
                "this table's hands use the table's client seed only "
                "(create it with CLIENT_SEED_POLICY_PLAYERS)",
                field="table_id",
            )
        if not record.match.seats[seat].player_id:
            raise UnknownSeatError(f"seat {seat} is empty", field="seat")
        own = tuple(s for s in record.seat_client_seeds if s[0] != seat)
        if seed:
            own = tuple(sorted((*own, (seat, seed))))
        new = dataclasses.replace(record, seat_client_seeds=own)
        return Change(new, (ClientSeedSet(seat, seed),), seat)

    def act(self, record: TableRecord, action: Action, creds: Credentials, now: int) -> Change:
        seat = getattr(action, "seat")  # noqa: B009 - every hand action names its seat
        self.auth.may_act_for(creds, seat, record.token_hashes, record.table_id)
        new, events = self.apply_action(record, action, now)
        return Change(new, events, seat, move=_MOVE_KINDS.get(type(action)))

    # --- deadlines ------------------------------------------------------------------------
    async def apply_due_timeouts(self, table_id: str) -> int:
        """Make the timeout move for every seat of ``table_id`` whose time is up; returns how
        many were applied here (0 when another replica got there first)."""
        try:
            record, version, _ = await self.load(table_id)
        except Exception:  # the table expired or was never there: the hint is stale
            return 0
        now = self.clock_ms()
        due = [seat for seat, ms in record.seat_deadlines if ms <= now]
        if not due:
            return 0
        seat = due[0]
        hand = record.match.hand
        number = 0 if hand is None else hand.number

        def change(current: TableRecord, at: int) -> Change:
            deadline = dict(current.seat_deadlines).get(seat) if current.hand_deadlines else None
            action = timeout(
                current.match, seat, at_ms=at, deadline_ms=deadline, policy=self.policy
            )
            new, events = self.apply_action(current, action, at)
            return Change(new, events, None, move="timeout")

        try:
            await self.mutate(
                table_id,
                expected_version=version,
                request_id=f"timeout:{number}:{seat}:{version}",
                change=change,
                respond=lambda committed: b"",
            )
        except StaleVersionError:
            return 0  # someone moved (or another replica timed out) first: nothing to do
        return 1


_MOVE_KINDS: dict[type, str] = {engine.Place: "place", engine.SetFantasyland: "set_fantasyland"}


def with_deadlines(record: TableRecord, now: int, events: Iterable[TableEvent] = ()) -> TableRecord:
    """The deadline of every seat the table waits for, after a change made at ``now`` that
    produced ``events``: a seat playing street by street gets a full turn for each batch,
    from the change that dealt it; a Fantasyland seat has one clock for the hand, from its
    start. Other seats' clocks keep running. (docs/hand-history.md, "Turn clocks": the
    verifier checks every timeout's deadline by this rule.)"""
    waiting = engine.seats_to_act(record.match)
    hand = record.match.hand
    if not waiting or hand is None:
        return dataclasses.replace(record, seat_deadlines=())
    running = dict(record.seat_deadlines)
    dealt = {e.seat for e in events if isinstance(e, engine.CardsDealt) and e.street is not None}
    deadlines = []
    for seat in waiting:
        if hand.seat(seat).in_fantasyland:
            deadline = hand.started_at_ms + record.fantasyland_time_limit_ms
        elif seat in dealt or seat not in running:
            deadline = now + record.turn_time_limit_ms
        else:
            deadline = running[seat]
        deadlines.append((seat, deadline))
    return dataclasses.replace(record, seat_deadlines=tuple(deadlines))


def _history_extra(done: Change, now: int) -> Mapping[str, bytes]:
    """The hand history blob, written in the same commit as the move that ended the hand."""
    if not any(isinstance(e, engine.HandSettled) for e in done.events):
        return {}
    record = done.record
    hand = record.match.hand
    assert record.hand_start is not None and hand is not None
    settled = next(e for e in done.events if isinstance(e, engine.HandSettled))
    won = dict(zip(settled.seats, (p.units for p in settled.settlement.players), strict=True))
    # Money before the hand: every seat that played it, less what it won; a seat empty when
    # the hand started had none (a seat's money restarts at 0 when it is taken).
    before = tuple(
        record.units_of(seat) - won[seat] if seat in won else 0
        for seat in range(len(record.match.seats))
    )
    context = HandContext(
        next_commitment=record.next_commitment,
        clock=TurnClock(record.turn_time_limit_ms, record.fantasyland_time_limit_ms),
        seat_units=before,
        seat_changes=record.hand_seat_changes,
    )
    history = hand_history(record.hand_start, record.hand_actions, context)
    history["table_id"] = record.table_id
    history["settled_at_ms"] = now
    number = hand.number
    return {f"{HAND_PREFIX}:{number}": pack_history(history)}


def pack_history(history: Mapping[str, Any]) -> bytes:
    """A hand history as stored: compact JSON, zlib-compressed (about a quarter the size;
    a table keeps every finished hand for its lifetime).

    >>> unpack_history(pack_history({"hand_number": 1}))
    b'{"hand_number":1}'
    >>> unpack_history(b'{"hand_number":1}')  # as stored before compression
    b'{"hand_number":1}'
    """
    return zlib.compress(json.dumps(history, separators=(",", ":")).encode(), 6)


def unpack_history(raw: bytes) -> bytes:
    """The JSON of a stored hand history (plain JSON is read as it is)."""
    return raw if raw.startswith(b"{") else zlib.decompress(raw)


def _settlement_outbox(done: Change, now: int) -> Mapping[str, bytes]:
    """The settlement record for the feed, written in the same commit as the move that ended
    the hand (into the table's outbox; the relay moves it on to the feed)."""
    record = done.record
    settled = [e for e in done.events if isinstance(e, engine.HandSettled)]
    return {
        s.settlement_id: s.to_bytes()
        for s in (
            SettlementRecord.from_event(
                record.table_id, e, record.match, record.seat_units, settled_at_ms=now
            )
            for e in settled
        )
    }


class DeadlineSweeper:
    """Applies timeout moves when turns run out; runs in every replica, safely."""

    def __init__(
        self, manager: TableManager, *, interval_s: float = 0.25, batch: int = 100
    ) -> None:
        self.manager = manager
        self.batch = batch
        self._loop = Periodic("deadline sweep", self.sweep_once, interval_s)

    async def sweep_once(self) -> int:
        # Tables waiting for a move, all replicas' (the index is global): dashboards take max().
        ACTIVE_TABLES.set(await self.manager.store.deadline_count())
        due = await self.manager.store.due_deadlines(self.manager.clock_ms(), limit=self.batch)
        applied = 0
        for table_id, _ in due:
            applied += await self.manager.apply_due_timeouts(table_id)
        return applied

    def start(self) -> None:
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()

    def wake(self) -> None:
        """Sweep now rather than after the loop's backoff (the store answers again)."""
        self._loop.wake()


def seat_of_viewer(
    auth: Authenticator, creds: Credentials, record: TableRecord, as_seat: int | None
) -> int | None:
    """The seat whose view the caller gets: the seat token's, or ``as_seat`` for an operator."""
    if auth.is_operator(creds):
        if as_seat is not None and not 0 <= as_seat < len(record.match.seats):
            raise InvalidInputError(f"no seat {as_seat} at this table", field="as_seat")
        return as_seat
    return auth.seat_of(creds, record.token_hashes, record.table_id)


__all__ = [
    "CLIENT_SEED_POLICIES",
    "POLICY_PLAYERS",
    "POLICY_TABLE",
    "Change",
    "ClientSeedPolicyError",
    "ClientSeedSet",
    "Committed",
    "DeadlineSweeper",
    "NewerRecordError",
    "TableEvent",
    "TableManager",
    "TableRecord",
    "mask_secret",
    "new_table_id",
    "pack_history",
    "request_key",
    "seat_of_viewer",
    "unmask_secret",
    "unpack_history",
    "with_deadlines",
]
