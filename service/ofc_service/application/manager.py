"""Live tables: one pipeline per mutating request, and the reads the API serves.

A command goes through these stages, each a method below, in this order:

1. **decode** — the table's record: the one this replica kept of its last write or read
   (:meth:`TableManager.decode`), else the store's bytes decoded;
2. **authorise** — the caller's credentials against the table (:meth:`TableManager.authorise`);
3. **engine step** — the rules applied (:meth:`TableManager.step`): ``engine.apply`` plus the
   bookkeeping of the hand's history, seat tokens, seeds and the new deadlines;
4. **encode** — the new record, each event for every audience and the response, through the
   injected :class:`~.presenter.Presenter`, into one :class:`~ofc_service.store.Commit`
   (:meth:`TableManager.encode`);
5. **commit** — one atomic store write, at most once per (caller, request id), refused when
   the table moved on;
6. **fan-out** — the record kept for the next move, the move counted, a settlement relayed
   to the feed (:meth:`TableManager.fan_out`); watchers read the events from the log.

Any rejection (core error, credentials, stale version) leaves the table untouched. This
module knows nothing of protobuf: the presenter does the encoding.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ofc import engine
from ofc.codec import HandContext, TurnClock, history_of_hand
from ofc.engine import Action, Event
from ofc.errors import FantasylandOwedError, HandInProgressError, OfcError, UnknownSeatError
from ofc.policy import DEFAULT_POLICY, DefaultMovePolicy, timeout
from ofc.rulesets import PRESETS
from ofc.verify import money_at, verify_match

from ofc_service.application.commands import (
    LEAVE_AFTER_HAND,
    LEAVE_CANCEL,
    Change,
    Command,
    JoinSeat,
    LeaveSeat,
    NewTable,
    Outcome,
    PlaceCards,
    SetClientSeed,
    SetFantasyland,
    StartHand,
    TimeOut,
)
from ofc_service.application.deadlines import seat_deadlines
from ofc_service.application.presenter import Presenter
from ofc_service.application.records import (
    HAND_PREFIX,
    POLICY_PLAYERS,
    ClientSeedPolicyError,
    ClientSeedSet,
    Layout,
    LeaveChangesSpentError,
    SeatLeaving,
    TableEvent,
    TableRecord,
    pack_history,
    unpack_history,
)
from ofc_service.application.requests import (
    INTERNAL_CALLER,
    new_table_id,
    request_key,
    request_lane,
)
from ofc_service.application.settlements import SettlementRecord, SettlementRelay, money_totals
from ofc_service.application.watch import WatchHub
from ofc_service.auth import (
    Authenticator,
    AuthError,
    Credentials,
    UnauthenticatedError,
    caller_identity,
    new_seat_token,
    token_hash,
)
from ofc_service.metrics import CUSTOM_RULESET_LABEL, MOVES_BY_KIND, settled_counters
from ofc_service.store import (
    DEFAULT_REQUEST_TTL_SECONDS,
    RECORD_SEGMENTS,
    AlreadyAppliedError,
    Commit,
    RequestIdReusedError,
    StaleVersionError,
    StoredEvent,
    StoredTable,
    StoreUnavailableError,
    TableExistsError,
    TableNotFoundError,
    TableStore,
)

log = logging.getLogger("ofc.tables")

RELAY_WAIT_S = 1.0
"""How long the move that ends a hand waits for its settlement's relay to the feed before it
is answered (then the relay's sweep delivers it): a feed whose Redis node is paused or
failing over costs such a move this much, not the outage. Above the default
``OFC_REDIS_WAIT_TIMEOUT_MS`` (0.5 s), so that a replica slow to confirm only costs its wait."""
DEFAULT_EVENT_LOG_HANDS = 2  # the current hand and the one before, for watchers resuming
# How long a replica's claim on a due timeout keeps the others from choosing the same move
# (a timeout waits at most this long more when its claimant dies mid-way).
TIMEOUT_CLAIM_MS = 2_000
# Commits a due timeout tries when changes beside the hand (seeds, leave marks, seats taken
# and left) keep landing first; its claim's time bounds them too.
TIMEOUT_ATTEMPTS = 50
KEPT_RECORDS = 1024  # per replica: the tables in play here (a few MB)
# Leave marks set or withdrawn per seat and hand: each is a commit, which a move sent at the
# version before meets as STALE_VERSION; a player's human changes of mind fit, a loop does not.
MAX_LEAVE_CHANGES = 4
_MOVE_KINDS: dict[type, str] = {PlaceCards: "place", SetFantasyland: "set_fantasyland"}


class HandNotFoundError(OfcError):
    """A hand history asked for that is not stored: the hand is not over, or never began."""

    reason = "HAND_NOT_FOUND"


@dataclass(slots=True)
class _Kept:
    """A table's record as this replica last wrote or read it, with its layout (the base
    the table's next record is read against); ``record`` None: bytes a watch feed read
    with the table's events, decoded (against ``base``, the record kept before) when a
    move needs them."""

    raw: bytes
    record: TableRecord | None
    version: int
    layout: Layout | None = None
    base: Layout | None = None
    _sha1: str = ""

    def decoded(self) -> TableRecord:
        if self.record is None:
            self.record, self.layout = TableRecord.read(self.raw, self.base)
            self.base = None
        return self.record

    def sha1(self) -> str:
        if not self._sha1:
            self._sha1 = hashlib.sha1(self.raw).hexdigest()
        return self._sha1


@dataclass(frozen=True, slots=True)
class Request:
    """Where and how a command is asked: the table, the version the caller saw, the
    client's request id and the digest of the request's fields (see :mod:`.requests`)."""

    table_id: str
    expected_version: int
    request_id: str
    digest: str = ""


@dataclass(frozen=True, slots=True)
class StoredHand:
    """A finished hand's history as stored (JSON) and read."""

    number: int
    json: bytes
    history: dict[str, Any]


@dataclass(frozen=True, slots=True)
class HandPage:
    hands: tuple[StoredHand, ...]
    next_start: int | None


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class TableManager:
    """Runs commands on tables and serves what the API reads; the deadline sweeper uses it
    too. Its collaborators are given once, here: the store, the authenticator and the
    presenter (the wire encoding)."""

    def __init__(
        self,
        store: TableStore,
        authenticator: Authenticator,
        presenter: Presenter,
        *,
        clock_ms: Callable[[], int] = now_ms,
        server_seed: Callable[[], bytes] = lambda: secrets.token_bytes(32),
        relay: SettlementRelay | None = None,
        event_log_hands: int = DEFAULT_EVENT_LOG_HANDS,
        request_ttl_seconds: int = DEFAULT_REQUEST_TTL_SECONDS,
        policy: DefaultMovePolicy = DEFAULT_POLICY,
        history_ttl_seconds: int = 0,
    ) -> None:
        self.store = store
        self.auth = authenticator
        self.presenter = presenter
        self.clock_ms = clock_ms
        self.server_seed = server_seed
        self.relay = relay  # relays a settling commit's outbox at once (else: its sweep)
        self.event_log_hands = event_log_hands  # 0: no per-hand trim (the store's cap only)
        self.request_ttl_seconds = request_ttl_seconds  # the retry window of request ids
        # how long a hand's history stays after it was written; 0: as long as its table
        self.history_ttl_seconds = history_ttl_seconds
        self.policy = policy  # chooses the move of a seat whose clock ran out
        # One log reader per watched table, shared by its watchers; it reads the state of a
        # table kept here with its events (see offer).
        self.hub = WatchHub(store, self)
        self._kept: OrderedDict[str, _Kept] = OrderedDict()

    # --- reads ----------------------------------------------------------------------------
    async def load(self, table_id: str) -> tuple[TableRecord, int, str]:
        """The record, its version and the id of the last event it includes."""
        stored = await self.store.load(table_id)
        record = await self._decoded(stored)
        return record, stored.version, stored.last_event_id

    async def shown(self, table_id: str) -> tuple[TableRecord, int, str]:
        """:meth:`load` for a caller to be shown the table: confirmed as a commit is before
        it is acknowledged (:meth:`~ofc_service.store.base.TableStore.confirm`)."""
        loaded = await self.load(table_id)
        await self.store.confirm(table_id)
        return loaded

    async def _decoded(self, stored: StoredTable) -> TableRecord:
        """:meth:`decode` of a table as loaded, its money restored when its record did not
        keep it (:meth:`_with_money`)."""
        record = self.decode(stored.table_id, stored.state, stored.version)
        if record.seat_units is None:
            record = await self._with_money(record)
            self._keep(stored.table_id, stored.state, record, stored.version)
        return record

    async def _with_money(self, record: TableRecord) -> TableRecord:
        """A table stored before money was kept (record format 1) with each seat's money as
        its finished hands' histories give it: the money :func:`ofc.verify.verify_match`
        chains from hand 1 to the table as it is (or as its hand in play started; a seat
        taken since has none). Unchanged when they cannot give it (a hand's history is gone
        or does not verify): its money stays not known, and so its next hands' histories
        say (``seat_units`` null)."""
        match = record.match
        hand = match.hand
        playing = hand is not None and not hand.over
        finished = match.hands_played - playing
        if finished == 0:
            return dataclasses.replace(record, seat_units=())
        table = record.hand_start if playing and record.hand_start is not None else match
        histories: list[tuple[str, bytes]] = []
        start: int | None = 1
        while start is not None:
            page = await self.store.list_extra(
                record.table_id, HAND_PREFIX, start=start, count=1000
            )
            histories += [(f"hand {n}", unpack_history(raw)) for n, raw in page.items]
            start = page.next_start
        report = verify_match(histories)
        units = money_at(report, dataclasses.replace(table, hand=None))
        if units is None:
            return record
        # a seat taken since the hand in play started has none
        units = tuple(
            u if now.player_id == then.player_id else 0
            for u, now, then in zip(units, match.seats, table.seats, strict=True)
        )
        return dataclasses.replace(record, seat_units=units)

    def decode(self, table_id: str, raw: bytes, version: int) -> TableRecord:
        """The record stored as ``raw`` at ``version``. Decoding is a good part of a move's
        work, so the record this replica last wrote or read of each table is kept, with its
        bytes (a load of other bytes decodes them) and its version (see :meth:`run`)."""
        kept = self._kept.get(table_id)
        if kept is not None and kept.raw == raw:
            self._kept.move_to_end(table_id)
            kept.version = version
            return kept.decoded()
        record, layout = TableRecord.read(raw, _base(kept))
        self._keep(table_id, raw, record, version, layout)
        return record

    def _keep(
        self,
        table_id: str,
        raw: bytes,
        record: TableRecord | None,
        version: int,
        layout: Layout | None = None,
        base: Layout | None = None,
    ) -> None:
        self._kept[table_id] = _Kept(raw, record, version, layout, base)
        self._kept.move_to_end(table_id)
        if len(self._kept) > KEPT_RECORDS:
            self._kept.popitem(last=False)

    def wants(self, table_id: str) -> bool:
        """Whether a watch feed of the table should read its state too: a table kept here
        (one this replica moves), so that its next move here need not load it."""
        return table_id in self._kept

    def offer(self, table: StoredTable) -> None:
        """A table as a watch feed read it with its newest events (another replica's move,
        usually). Kept undecoded, in place of an older version; the next move at its version
        decodes it and commits with one store round trip. Nothing is trusted: the commit
        still requires the stored state to have these bytes' SHA-1 at that version."""
        kept = self._kept.get(table.table_id)
        if kept is None or table.version <= kept.version:
            return
        if kept.raw == table.state:
            kept.version = table.version
        else:
            self._keep(table.table_id, table.state, None, table.version, base=_base(kept))

    def viewer(self, creds: Credentials, record: TableRecord, as_seat: int | None) -> int | None:
        """The seat whose view the caller gets: the seat token's, or ``as_seat`` for an
        operator (None: a spectator's view)."""
        if self.auth.is_operator_at(creds, record.token_hashes, record.table_id):
            if as_seat is not None and not 0 <= as_seat < len(record.match.seats):
                raise UnknownSeatError(f"no seat {as_seat} at this table", field="as_seat")
            return as_seat
        return self.auth.seat_of(creds, record.token_hashes, record.table_id)

    async def reader(self, table_id: str, creds: Credentials) -> None:
        """Check that ``creds`` may read the table's finished hands: anyone may, but
        credentials presented must hold (a wrong API key, or a seat token this table does
        not know, is refused as GetTable refuses it, never read as no credentials);
        NOT_FOUND for an unknown table."""
        record, _, _ = await self.load(table_id)
        self.viewer(creds, record, None)

    async def hand(self, table_id: str, number: int, creds: Credentials) -> StoredHand:
        """A finished hand's history (:class:`HandNotFoundError` when it is not stored)."""
        await self.reader(table_id, creds)
        raw = await self.store.get_extra(table_id, f"{HAND_PREFIX}:{number}")
        if raw is None:
            raise HandNotFoundError(
                f"hand {number} of table {table_id!r} is not over (or never started)",
                field="hand_number",
            )
        await self.store.confirm(table_id)  # a history shows the hand's server seed
        return _stored_hand(number, raw)

    async def hands(self, table_id: str, creds: Credentials, *, start: int, count: int) -> HandPage:
        """Finished hands from number ``start`` on, ascending, up to ``count``."""
        await self.reader(table_id, creds)
        page = await self.store.list_extra(table_id, HAND_PREFIX, start=start, count=count)
        await self.store.confirm(table_id)
        return HandPage(tuple(_stored_hand(n, raw) for n, raw in page.items), page.next_start)

    async def read_events(self, table_id: str, *, after: str) -> list[StoredEvent]:
        """The log's events after ``after``, unconfirmed (:meth:`shown`): for looking
        through, not for a caller; what a Watch sends comes through :meth:`follow`."""
        return await self.store.read_events(table_id, after=after)

    def follow(
        self, table_id: str, cursor: str, *, newest: str
    ) -> AsyncGenerator[list[StoredEvent], None]:
        """The table's events after ``cursor``, batch by batch, as they are committed."""
        return self.hub.follow(table_id, cursor, newest=newest)

    # --- creating tables ------------------------------------------------------------------
    def new_record(self, table_id: str, spec: NewTable) -> TableRecord:
        return TableRecord(
            table_id=table_id,
            match=spec.match,
            turn_time_limit_ms=spec.turn_time_limit_ms,
            fantasyland_time_limit_ms=spec.fantasyland_time_limit_ms,
            client_seed=spec.client_seed,
            created_at_ms=self.clock_ms(),
            client_seed_policy=spec.client_seed_policy,
            # The first hand's server seed, committed before anyone can pick a seed.
            next_server_seed=self.server_seed(),
        )

    async def create(self, record: TableRecord) -> int:
        """Store a new table (:class:`~ofc_service.store.TableExistsError`); its version."""
        result = await self.store.create_table(record.table_id, record.to_bytes())
        return result.version

    async def create_for_request(
        self, claim_id: str, spec: NewTable, request_digest: str = ""
    ) -> tuple[TableRecord, int, str]:
        """The table of one create request: a table made from ``spec`` under a table id
        claimed for ``claim_id`` (the caller's request, hashed) for the retry window; then
        :meth:`shown`'s answer. The claim keeps ``request_digest``: the same claim for another
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
            await self.create(self.new_record(table_id, spec))
        return await self.shown(table_id)  # a retry's: perhaps another replica's creation

    # --- the pipeline ---------------------------------------------------------------------
    async def run(
        self, request: Request, command: Command, creds: Credentials | None = None
    ) -> bytes:
        """Run ``command`` on the table at ``request.expected_version``, exactly once per
        request id; the response's bytes (the presenter's).

        A retry of a request already committed returns its first response unchanged, even
        when the table has moved on, but only to the caller that sent it (``creds``'
        :func:`~ofc_service.auth.caller_identity`: the record is stored under both; no
        credentials: the server's own request) and only for the same request
        (``request.digest``; another request with the id is
        :class:`~ofc_service.store.RequestIdReusedError`). Anyone else is judged as if there
        were no record. Once the caller has made a newer move, or the request's hand is the
        previous one, a move's record keeps only that it was applied, and its retry gets the
        response with the table as it is now (:meth:`_as_table_is`); records of older hands
        are gone (judged afresh).
        """
        caller = INTERNAL_CALLER if creds is None else caller_identity(creds)
        key = request_key(request.request_id, caller)
        table_id = request.table_id
        # One store round trip when this replica holds the record at that version (it made
        # or read the table's last change, or its watch feed read it with the change's
        # events): the commit itself checks the request id, the version and the state (by
        # its SHA-1, so neither a store that lost writes nor a stale feed can fool it).
        kept = self._kept.get(table_id)
        if kept is not None and kept.version == request.expected_version:
            now = self.clock_ms()
            try:
                record = kept.decoded()
                # money not known (a record of format 1): restored below, from the histories
                done = (
                    None if record.seat_units is None else self.decide(record, command, creds, now)
                )
            except Exception:  # judged against the store's table below, as a retry may be
                done = None
            if done is not None:
                try:
                    return await self._commit(request, command, creds, key, done, now, kept.sha1())
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
            return await self._replayed(request, command, creds, key, missing)
        record = await self._decoded(stored)
        now = self.clock_ms()
        # Credentials first, even for a request that is stale or names no seat of the table:
        # a caller the table refuses is refused whatever else (and gets only its own record,
        # if any).
        try:
            actor = self.authorise(record, command, creds)
        except AuthError as refused:
            return await self._replayed(request, command, creds, key, refused)
        error: Exception
        try:
            _check_seat(command, record)
            done = self.step(record, command, actor, now)
        except _Unchanged as unchanged:
            if request.expected_version > stored.version:
                error = unchanged  # a version the table never had (writes lost): stale, below
            else:
                # The caller's own record answers if the id made a change once (a retry of
                # the mark it set; another request under the id is REQUEST_ID_REUSED); else it
                # changes nothing still, as it did when first sent (it kept no record).
                with contextlib.suppress(_Unchanged):
                    return await self._replayed(
                        request, command, creds, key, unchanged, legacy=True, actor=actor
                    )
                # Nothing to commit: the table as it is, confirmed as a commit would be.
                await self.store.confirm(table_id)
                same = Change(record, (), actor)
                return self.presenter.response(
                    Outcome(command, request.request_id, same, stored.version)
                )
        except Exception as refused:
            error = refused
        else:
            if stored.version == request.expected_version:
                # The state judged, by its SHA-1, as on the path above: a store that lost a
                # write and took another at this version since the load refuses the commit.
                sha1 = hashlib.sha1(stored.state).hexdigest()
                return await self._commit(request, command, creds, key, done, now, sha1)
        if stored.version != request.expected_version:
            error = StaleVersionError(
                table_id,
                expected_version=request.expected_version,
                current_version=stored.version,
            )
        # The caller passed the table's credential checks: a record of the release before
        # records were bound to callers may answer it too, if it is the answer this caller
        # would have had (see docs/security.md).
        return await self._replayed(request, command, creds, key, error, legacy=True, actor=actor)

    def decide(
        self, record: TableRecord, command: Command, creds: Credentials | None, now: int
    ) -> Change:
        """Stages 2 and 3: the caller authorised for the seat the command names, that seat
        checked against the table, then the engine step."""
        actor = self.authorise(record, command, creds)
        _check_seat(command, record)
        return self.step(record, command, actor, now)

    def authorise(
        self, record: TableRecord, command: Command, creds: Credentials | None
    ) -> int | None:
        """The seat the caller acts for (None: an operator, or the server itself); raises
        :class:`~ofc_service.auth.AuthError` when the credentials do not allow the command.
        The seat the command names is not yet checked against the table's seats: an
        operator passes for any, a seat token only for its own."""
        seat: int | None = getattr(command, "seat", None)
        if creds is None:  # the server's own move (a timeout)
            return None
        if isinstance(command, JoinSeat):  # anyone may take a free seat, with credentials
            self.viewer(creds, record, None)  # that hold, if any are sent
            return seat
        if isinstance(command, StartHand):
            if self.auth.is_operator_at(creds, record.token_hashes, record.table_id):
                return None
            actor = self.auth.seat_of(creds, record.token_hashes, record.table_id)
            if actor is None:  # no credentials at all
                raise UnauthenticatedError(
                    "starting a hand needs a seat token of this table or an API key"
                )
            return actor
        assert seat is not None
        self.auth.may_act_for(creds, seat, record.token_hashes, record.table_id)
        return seat

    def step(self, record: TableRecord, command: Command, actor: int | None, now: int) -> Change:
        """Stage 3: the command applied to the record by the rules; then every seat marked
        leaving (LeaveSeat after the hand) that the rules now let go is stood up, in the
        same change: the move that ends a hand vacates them before anyone can start the
        next one."""
        done = self._ruled(record, command, actor, now)
        if done.record.leaving_changes and _hand_began_or_ended(done.events):
            done = dataclasses.replace(
                done, record=dataclasses.replace(done.record, leaving_changes=())
            )
        if done.record.leaving_seats and not done.record.match.hand_in_progress:
            return self._vacate_leaving(done, now)
        return done

    def _ruled(self, record: TableRecord, command: Command, actor: int | None, now: int) -> Change:
        if isinstance(command, JoinSeat):
            token = new_seat_token(record.table_id)
            sit = engine.SitDown(command.seat, command.player_id, now)
            new, events = self.apply_action(record, sit, now)
            tokens = (
                *(t for t in new.seat_tokens if t[0] != command.seat),
                (command.seat, token_hash(token)),
            )
            return Change(dataclasses.replace(new, seat_tokens=tokens), events, actor, token)
        if isinstance(command, LeaveSeat):
            return self._leave(record, command, actor, now)
        if isinstance(command, StartHand):
            # A seat still marked leaving that may go is not dealt in: a replica of the
            # release before ends hands without standing marked seats up (it ignores marks).
            record, left, actor = self._vacate_marked(record, actor, now)
            # The seed committed one hand ahead (a record from before format 3 has none yet).
            seed = record.next_server_seed or self.server_seed()
            new, events = self.apply_action(
                record, engine.StartHand(seed, record.hand_client_seed(), now), now
            )
            new = dataclasses.replace(new, next_server_seed=self.server_seed())
            return Change(new, (*left, *events), actor)
        if isinstance(command, SetClientSeed):
            return _set_client_seed(record, command, actor, now)
        if isinstance(command, TimeOut):
            deadline = (
                dict(record.seat_deadlines).get(command.seat) if record.hand_deadlines else None
            )
            chosen = command.chosen if command.chosen_for is record.match else None
            move = timeout(
                record.match,
                command.seat,
                at_ms=now,
                deadline_ms=deadline,
                policy=self.policy,
                chosen=chosen,
            )
            new, events = self.apply_action(record, move, now)
            return Change(new, events, None, move="timeout")
        action: Action
        if isinstance(command, PlaceCards):
            action = engine.Place(command.seat, command.placements, command.discard, now)
        else:
            action = engine.SetFantasyland(
                command.seat, command.top, command.middle, command.bottom, command.discards, now
            )
        new, events = self.apply_action(record, action, now)
        return Change(new, events, actor, move=_MOVE_KINDS[type(command)])

    def _leave(
        self, record: TableRecord, command: LeaveSeat, actor: int | None, now: int
    ) -> Change:
        """A seat left now; or, after the hand, marked leaving when the rules keep it for now
        (its hand is in play, a Fantasyland hand is owed); or that mark withdrawn."""
        seat = command.seat
        if command.mode == LEAVE_CANCEL:
            return _mark_leaving(record, seat, False, actor)
        try:
            new, events = self._vacate(record, seat, now)
        except (HandInProgressError, FantasylandOwedError):
            if command.mode != LEAVE_AFTER_HAND:
                raise
            return _mark_leaving(record, seat, True, actor)
        return Change(new, events, None)

    def _vacate(
        self, record: TableRecord, seat: int, now: int
    ) -> tuple[TableRecord, tuple[Event, ...]]:
        """The seat stood up: its token, its own client seed and its mark (and the count of
        its changes) gone with it."""
        new, events = self.apply_action(record, engine.StandUp(seat, now), now)
        tokens = tuple(t for t in new.seat_tokens if t[0] != seat)
        # A seat's own client seed is not its next player's.
        seeds = tuple(s for s in new.seat_client_seeds if s[0] != seat)
        leaving = tuple(s for s in new.leaving_seats if s != seat)
        changes = tuple(c for c in new.leaving_changes if c[0] != seat)
        new = dataclasses.replace(
            new,
            seat_tokens=tokens,
            seat_client_seeds=seeds,
            leaving_seats=leaving,
            leaving_changes=changes,
        )
        return new, events

    def _vacate_leaving(self, done: Change, now: int) -> Change:
        """``done`` with every seat marked leaving that the rules let go now stood up (a
        Fantasyland hand owed keeps a seat, and the table, until it is played). The hand's
        history, settlement and events are written from the record as ``done`` left the hand
        (:attr:`~.commands.Change.before_leaving`): who played it and the money they had."""
        record, vacated, actor = self._vacate_marked(done.record, done.actor_seat, now)
        if not vacated:
            return done
        return dataclasses.replace(
            done,
            record=record,
            events=(*done.events, *vacated),
            actor_seat=actor,
            before_leaving=done.record,
        )

    def _vacate_marked(
        self, record: TableRecord, actor: int | None, now: int
    ) -> tuple[TableRecord, tuple[Event, ...], int | None]:
        """Every seat marked leaving that the rules let go now stood up, in seat order: the
        record, the events, and the caller's seat (None once it is one of them: the caller
        holds no seat now)."""
        events: tuple[Event, ...] = ()
        for seat in record.leaving_seats:
            if engine.can_apply(record.match, engine.StandUp(seat, now)):
                record, vacated = self._vacate(record, seat, now)
                events += vacated
                actor = None if seat == actor else actor
        return record, events, actor

    @staticmethod
    def apply_action(
        record: TableRecord, action: Action, now: int
    ) -> tuple[TableRecord, tuple[Event, ...]]:
        """``engine.apply`` plus the bookkeeping of the hand being recorded for its history,
        and the seats' deadlines after the change (made at ``now``: the action's time, the
        new deadlines' and, when the hand ends, its history's, one clock reading)."""
        match, events = engine.apply(record.match, action)
        known = record.seat_units  # None: not known (see _with_money), and so it stays
        units = None if known is None else money_totals(known, len(match.seats), events)
        deadlines = seat_deadlines(record, match, now, events)
        # One copy of the record per move (it has many fields): everything changed at once.
        if isinstance(action, engine.StartHand):
            record = dataclasses.replace(
                record,
                match=match,
                seat_units=units,
                seat_deadlines=deadlines,
                # The match as the hand found it; the hand before, over, is not part of it
                # (its history has it): the record stores a few hundred bytes less.
                hand_start=dataclasses.replace(record.match, hand=None),
                hand_actions=(action,),
                hand_seat_changes=record.seat_changes,  # written into this hand's history
                seat_changes=(),
                hand_deadlines=True,
            )
        elif isinstance(action, engine.Place | engine.SetFantasyland | engine.Timeout):
            actions = (*record.hand_actions, action)
            record = record.with_play(match, record.hand_start, actions, deadlines, units)
        else:  # a seat taken or left: the next hand's history explains the changed seat
            changes = record.seat_changes
            record = dataclasses.replace(
                record,
                match=match,
                seat_units=units,
                seat_deadlines=deadlines,
                seat_changes=None if changes is None else (*changes, action),
            )
        return record, events

    def encode(
        self,
        request: Request,
        command: Command,
        key: str,
        done: Change,
        now: int,
        sha1: str,
        lane: str = "",
    ) -> tuple[Commit, Layout]:
        """Stage 4: the new record, every event for every audience, the hand history and
        settlement when the hand ended, and the response, as one commit; and the new
        record's layout (kept with it once committed)."""
        version = request.expected_version + 1
        # the hand's events as the hand ended, before seats marked leaving were stood up
        played = done.before_leaving or done.record
        blobs = [self.presenter.event(e, version, played) for e in done.events]
        # Event ids are assigned by the commit, so a move's response carries none; watchers
        # resume from the ids in Watch snapshots and events.
        response = self.presenter.response(Outcome(command, request.request_id, done, version))
        # written against the record kept for the table (the one this move was decided
        # from, or read since): the parts the move left as they were are its bytes
        state, layout = done.record.write(_base(self._kept.get(request.table_id)))
        commit = Commit(
            request.table_id,
            expected_version=request.expected_version,
            state=state,
            request_id=key,
            deadline_ms=done.record.deadline_ms,
            events=blobs,
            response=response,
            extra=_history_extra(done, now),
            outbox=_settlement_outbox(done, now),
            # A hand's first events begin a log segment: the log keeps the last few hands (for
            # watchers resuming; 0: all, up to the store's cap), the request records the
            # current and the previous hand whatever it keeps; finished hands live on in
            # their histories.
            keep_segments=(self.event_log_hands or RECORD_SEGMENTS)
            if any(isinstance(e, engine.HandStarted) for e in done.events)
            else 0,
            log_by_segments=self.event_log_hands > 0,
            # Once its hand is over, a move's record may keep just "applied at version n": a
            # retry then gets the table as it is now. A seat change's answer stays whole (a
            # JoinSeat's holds the seat token; a LeaveSeat's caller has lost its seat), and
            # so does a move of a seat marked leaving (its caller loses its seat when the
            # hand ends). Only once the table has played a hand (its log has segments: its
            # records are then ones the release before never reads; the stores check).
            compact_response=done.record.hand_start is not None
            and not isinstance(command, JoinSeat | LeaveSeat)
            and getattr(command, "seat", None) not in played.leaving_seats,
            extra_ttl_seconds=self.history_ttl_seconds,
            expected_state_sha1=sha1,
            request_digest=request.digest,
            # A client retries only its latest request: the caller's next move shrinks this
            # record to its marker already, before its hand is over.
            request_lane=lane,
            request_ttl_seconds=self.request_ttl_seconds,
        )
        return commit, layout

    async def _commit(
        self,
        request: Request,
        command: Command,
        creds: Credentials | None,
        key: str,
        done: Change,
        now: int,
        sha1: str,
    ) -> bytes:
        """Stages 4 to 6: encode, the one store commit, fan-out."""
        caller = INTERNAL_CALLER if creds is None else caller_identity(creds)
        # An operator's key acts for any seat: a lane per seat. A seat token acts for its own
        # seat only, whatever the command names (StartHand names none): one lane.
        operator = creds is None or creds.api_key is not None
        lane = request_lane(caller, getattr(command, "seat", None) if operator else None)
        commit, layout = self.encode(request, command, key, done, now, sha1, lane)
        try:
            result = await self.store.commit(commit)
        except AlreadyAppliedError:
            # A seat's join is never kept as a marker: one under its id was another request.
            return await self._as_table_is(request, command, creds, RequestIdReusedError())
        if not result.replayed:
            await self.fan_out(commit, done, result.version, layout)
        return result.response

    async def fan_out(self, commit: Commit, done: Change, version: int, layout: Layout) -> None:
        """Stage 6, after a commit that took effect: the record kept for the table's next
        move here, the move counted, and a settlement relayed to the feed at once (the
        relay's sweep retries what fails: the move is committed either way). Watchers of
        every replica read the events from the table's log."""
        self._keep(commit.table_id, commit.state, done.record, version, layout)
        if done.move is not None:
            MOVES_BY_KIND[done.move].inc()
        for event in done.events:
            if isinstance(event, engine.HandSettled):
                _count_settled(done.record, event)
        if commit.outbox and self.relay is not None:
            try:  # bounded: a feed's Redis node that is slow holds up no move for long
                await self.relay.relay_table(commit.table_id, within=RELAY_WAIT_S)
            except StoreUnavailableError as error:  # an outage: no traceback
                fields = {"table_id": commit.table_id, "error": str(error)}
                log.warning("relay deferred to the sweep", extra={"fields": fields})
            except Exception:
                log.exception("relay failed", extra={"fields": {"table_id": commit.table_id}})

    async def _replayed(
        self,
        request: Request,
        command: Command,
        creds: Credentials | None,
        key: str,
        error: Exception,
        *,
        legacy: bool = False,
        actor: int | None = None,
    ) -> bytes:
        """The first response of the caller's request already committed (another request
        under its id: RequestIdReusedError; one of an earlier hand whose response is no
        longer kept: the table as it is now, see :meth:`_as_table_is`); else ``error`` is
        raised. ``legacy``: the caller passed the credential checks of a new request just
        now, acting for seat ``actor`` (None: for none): a record written before records
        named their caller and request (a rolling upgrade) answers too, but only when it
        is the answer such a caller got (:meth:`~.presenter.Presenter.answers`), since it
        says neither who asked nor what."""
        table_id = request.table_id
        try:
            prior = await self.store.get_response(table_id, key, request_digest=request.digest)
            if prior is None and legacy:
                prior = await self.store.get_response(table_id, request_key(request.request_id))
                if prior is not None and not self.presenter.answers(
                    command, prior, table_id, actor
                ):
                    prior = None
        except AlreadyAppliedError:  # either record may be a marker by now
            return await self._as_table_is(request, command, creds, error)
        if prior is None:
            raise error
        await self.store.confirm(table_id)  # the commit that recorded it, by any replica
        return prior

    async def _as_table_is(
        self, request: Request, command: Command, creds: Credentials | None, unanswerable: Exception
    ) -> bytes:
        """The answer to a retry of a move superseded by the caller's newer move or applied in
        an earlier hand, whose record kept only that it was applied: the command's response
        with the table as it is now, as the caller's credentials see it now (credentials that
        no longer pass the command's checks are refused as a new request would be). Nothing is
        applied again. A join's answer holds its seat token, which is not kept: a join never
        leaves a marker, so one under its request id was another request (``unanswerable``
        is raised)."""
        if isinstance(command, JoinSeat):
            raise unanswerable
        record, version, _ = await self.shown(request.table_id)
        actor = self.authorise(record, command, creds)
        _check_seat(command, record)
        now = Change(record, (), actor)
        return self.presenter.response(Outcome(command, request.request_id, now, version))

    # --- deadlines ------------------------------------------------------------------------
    async def apply_due_timeouts(self, table_id: str) -> int:
        """Make the timeout move for every seat of ``table_id`` whose time is up; returns how
        many were applied here (0 when another replica got there first)."""
        try:
            record, version, _ = await self.load(table_id)
        except Exception:  # the table expired or was never there: the hint is stale
            return 0
        due = [seat for seat, ms in record.seat_deadlines if ms <= self.clock_ms()]
        if not due:
            return 0
        if not await self.store.claim_timeout(table_id, version, ttl_ms=TIMEOUT_CLAIM_MS):
            return 0  # another replica chooses this move (its commit or its claim's end tells)
        seat = due[0]
        hand = record.match.hand
        number = 0 if hand is None else hand.number
        request = Request(table_id, version, f"timeout:{number}:{seat}:{version}")
        # The policy weighs many placements (tens of ms, more on a big street): in a worker
        # thread, so that the replica's other calls go on meanwhile. A move it cannot choose
        # is judged in the step, as any command is.
        try:
            chosen = await asyncio.to_thread(self.policy.choose, record.match, seat)
        except Exception:
            chosen = None
        for _ in range(TIMEOUT_ATTEMPTS):
            try:
                await self.run(request, TimeOut(seat, chosen, record.match))
            except StaleVersionError:
                pass
            else:
                return 1
            # Another change landed first. A move (or another replica's timeout): nothing to
            # do. A change beside the hand (a seat's seed, a leave mark, a free seat taken
            # or left): the seat is still due, and the move chosen still holds; again at
            # once, or a loop of such changes would keep the clock from ever running out.
            try:
                record, version, _ = await self.load(table_id)
            except Exception:
                return 0
            if record.match.hand != hand or dict(record.seat_deadlines).get(seat) is None:
                return 0
            request = Request(table_id, version, f"timeout:{number}:{seat}:{version}")
        return 0


def _base(kept: _Kept | None) -> Layout | None:
    """The layout a table's next record is read or written against: the kept record's,
    or, kept undecoded, the one it would have been read against."""
    if kept is None:
        return None
    return kept.layout if kept.record is not None else kept.base


def _check_seat(command: Command, record: TableRecord) -> None:
    """The seat a command names (if any) must be one of the table's."""
    seat = getattr(command, "seat", None)
    if seat is not None and seat >= len(record.match.seats):
        raise UnknownSeatError(f"no seat {seat} at this table", field="seat")


class _Unchanged(Exception):
    """A command that would change nothing: a seat's leave mark already as asked. It is
    answered with the table as it is, sent at the table's version or an earlier one (a later
    one is STALE_VERSION), and makes no commit (so it neither counts as a change nor makes
    anyone's move stale). It keeps no record: a retry is judged again, and changes nothing
    again while the mark is as asked."""


def _mark_leaving(record: TableRecord, seat: int, leaving: bool, actor: int | None) -> Change:
    """The seat marked leaving after the hand (or not): it stays seated, with its token. A
    seat changes its mark at most MAX_LEAVE_CHANGES times a hand (LeaveChangesSpentError);
    asking for the mark it has changes nothing (:class:`_Unchanged`)."""
    player = record.match.seats[seat].player_id
    if not player:
        raise UnknownSeatError(f"seat {seat} is empty", field="seat")
    if (seat in record.leaving_seats) == leaving:
        raise _Unchanged
    counts = dict(record.leaving_changes)
    if counts.get(seat, 0) >= MAX_LEAVE_CHANGES:
        raise LeaveChangesSpentError(
            f"seat {seat} changed its leave {MAX_LEAVE_CHANGES} times this hand: it stays "
            f"{'leaving' if seat in record.leaving_seats else 'seated'} until the hand is over",
            field="mode",
        )
    counts[seat] = counts.get(seat, 0) + 1
    marks = set(record.leaving_seats) - {seat} | ({seat} if leaving else set())
    new = dataclasses.replace(
        record, leaving_seats=tuple(sorted(marks)), leaving_changes=tuple(sorted(counts.items()))
    )
    return Change(new, (SeatLeaving(seat, player, leaving),), actor)


def _hand_began_or_ended(events: tuple[TableEvent, ...]) -> bool:
    return any(isinstance(e, engine.HandStarted | engine.HandSettled) for e in events)


def _set_client_seed(
    record: TableRecord, command: SetClientSeed, actor: int | None, now: int
) -> Change:
    """A seat's own client seed (players policy), counted from the next StartHand."""
    seat = command.seat
    if record.client_seed_policy != POLICY_PLAYERS:
        raise ClientSeedPolicyError(
            "this table's hands use the table's client seed only "
            "(create it with CLIENT_SEED_POLICY_PLAYERS)",
            field="table_id",
        )
    if not record.match.seats[seat].player_id:
        raise UnknownSeatError(f"seat {seat} is empty", field="seat")
    own = tuple(s for s in record.seat_client_seeds if s[0] != seat)
    if command.client_seed:
        own = tuple(sorted((*own, (seat, command.client_seed))))
    events = (ClientSeedSet(seat, command.client_seed),)
    deadlines = seat_deadlines(record, record.match, now, events)
    new = dataclasses.replace(record, seat_client_seeds=own, seat_deadlines=deadlines)
    return Change(new, events, actor)


def _stored_hand(number: int, raw: bytes) -> StoredHand:
    text = unpack_history(raw)
    return StoredHand(number, text, json.loads(text))


def _history_extra(done: Change, now: int) -> Mapping[str, bytes]:
    """The hand history blob, written in the same commit as the move that ended the hand."""
    if not any(isinstance(e, engine.HandSettled) for e in done.events):
        return {}
    record = done.before_leaving or done.record
    hand = record.match.hand
    assert record.hand_start is not None and hand is not None
    settled = next(e for e in done.events if isinstance(e, engine.HandSettled))
    won = dict(zip(settled.seats, (p.units for p in settled.settlement.players), strict=True))
    # Money before the hand: every seat that played it, less what it won; a seat empty when
    # the hand started had none (a seat's money restarts at 0 when it is taken).
    before = (
        None  # not known (a table stored before money was kept, see TableManager._with_money)
        if record.seat_units is None
        else tuple(
            record.units_of(seat) - won[seat] if seat in won else 0
            for seat in range(len(record.match.seats))
        )
    )
    context = HandContext(
        next_commitment=record.next_commitment,
        clock=TurnClock(record.turn_time_limit_ms, record.fantasyland_time_limit_ms),
        seat_units=before,
        seat_changes=record.hand_seat_changes,
    )
    # The hand was just played move by move: its history is written from the final state
    # and the actions kept, not from a replay of them (the same bytes, see history_of_hand).
    history = history_of_hand(
        record.hand_start, record.hand_actions, record.match, settled, context
    )
    history["table_id"] = record.table_id
    history["settled_at_ms"] = now
    return {f"{HAND_PREFIX}:{hand.number}": pack_history(history)}


def _count_settled(record: TableRecord, settled: engine.HandSettled) -> None:
    """A hand played to the end at a table, in the metrics the settle RPCs count theirs in
    (``source="table"``; the ruleset's preset name, or "custom" for any other ruleset)."""
    ruleset = record.match.ruleset
    label = ruleset.name if PRESETS.get(ruleset.name) == ruleset else CUSTOM_RULESET_LABEL
    hands, fouls = settled_counters(label, "table")
    hands.inc()
    fouled = sum([player.fouled for player in settled.settlement.players])
    if fouled:
        fouls.inc(fouled)


def _settlement_outbox(done: Change, now: int) -> Mapping[str, bytes]:
    """The settlement record for the feed, written in the same commit as the move that ended
    the hand (into the table's outbox; the relay moves it on to the feed)."""
    record = done.before_leaving or done.record
    settled = [e for e in done.events if isinstance(e, engine.HandSettled)]
    return {
        s.settlement_id: s.to_bytes()
        for s in (
            SettlementRecord.from_event(
                record.table_id,
                e,
                record.match,
                tuple(map(record.units_of, range(len(record.match.seats)))),
                settled_at_ms=now,
            )
            for e in settled
        )
    }


__all__ = [
    "DEFAULT_EVENT_LOG_HANDS",
    "HandNotFoundError",
    "HandPage",
    "Request",
    "StoredHand",
    "TableManager",
]
