"""The TableService servicer: live tables over gRPC, state in the table store.

Requests are read and checked here (cards, rows, ids, limits) into commands, which
:class:`~ofc_service.application.manager.TableManager` runs through the pure engine; every
view and event is built here, from the engine's own per-viewer redaction, so no response
or event carries another seat's hidden cards, the undealt deck or an unrevealed seed.
"""

from __future__ import annotations

import functools
import hashlib
import re
import struct
from collections.abc import AsyncIterator
from typing import Any, Final

from google.protobuf.message import DecodeError, Message
from ofc import engine
from ofc import errors as core
from ofc.cards import Card, card_codes
from ofc.codec import MAX_TURN_TIME_MS
from ofc.rulesets import Row, Ruleset
from ofc.scoring import Board, Settlement
from ofcpoker.v1 import cards_pb2, settlement_pb2
from ofcpoker.v1 import table_service_pb2 as pb

from ofc_service import auth, store
from ofc_service.api import convert, parse, view_wire
from ofc_service.api.outcome_wire import varint
from ofc_service.api.shutdown import Shutdown
from ofc_service.application import commands
from ofc_service.application.manager import Request, TableManager
from ofc_service.application.records import (
    POLICY_PLAYERS,
    POLICY_TABLE,
    ClientSeedSet,
    SeatLeaving,
    TableEvent,
    TableRecord,
    history_settlement,
)
from ofc_service.application.requests import (
    create_claim,
    mask_secret,
    request_key,
    unmask_secret,
)

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["TableService"].full_name
DEFAULT_TURN_MS = 30_000
MIN_LIMIT_MS, MAX_LIMIT_MS = 1_000, MAX_TURN_TIME_MS
MAX_HANDS = 10_000
MAX_CLIENT_SEED_BYTES = 256
_POLICY_TO_PROTO = {
    POLICY_TABLE: pb.CLIENT_SEED_POLICY_TABLE,
    POLICY_PLAYERS: pb.CLIENT_SEED_POLICY_PLAYERS,
}
_POLICY_FROM_PROTO = {
    pb.CLIENT_SEED_POLICY_UNSPECIFIED: POLICY_TABLE,
    pb.CLIENT_SEED_POLICY_TABLE: POLICY_TABLE,
    pb.CLIENT_SEED_POLICY_PLAYERS: POLICY_PLAYERS,
}
MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE = 100, 20
MAX_PLACEMENTS = 13  # a board holds 13 cards: no move can place more
MAX_DISCARDS = 17 - 13  # a Fantasyland hand has at most 17 cards for a 13-card board
_ENGINE_ROW = re.compile(r"\b(top|middle|bottom)\[")  # a Fantasyland set's card, by the engine
MAX_PAIRS = 6  # every pair of a 4-seat table
_PUBLIC = 255

SERVICE = pb.DESCRIPTOR.services_by_name["TableService"]


# --- events ---------------------------------------------------------------------------------
def _board_proto(board: Board) -> cards_pb2.Board:
    return cards_pb2.Board(**_board_fields(board))


def _board_fields(board: Board) -> dict[str, list[str]]:
    """A board's fields, for a message constructor to fill its Board field in place (a Board
    message given instead is built, then copied)."""
    return {
        "top": card_codes(board.top),
        "middle": card_codes(board.middle),
        "bottom": card_codes(board.bottom),
    }


def _placements(placements: tuple[tuple[Card, Row], ...]) -> list[pb.Placement]:
    return [pb.Placement(card=str(c), row=view_wire.ROW_NUMBERS[r]) for c, r in placements]


def write_settlement(
    settlement: Settlement, ids: tuple[str, ...], out: settlement_pb2.Settlement
) -> None:
    fouls = sum(1 for p in settlement.players if p.fouled)
    convert.write_settlement(convert.SettledHand(settlement, ids, "", fouls), out)


def event_to_proto(event: TableEvent, version: int, player_ids: tuple[str, ...]) -> pb.TableEvent:
    out = pb.TableEvent(version=version)
    if isinstance(event, ClientSeedSet):
        out.client_seed_set.CopyFrom(
            pb.ClientSeedSetEvent(seat=event.seat, client_seed=event.client_seed)
        )
    elif isinstance(event, SeatLeaving):
        out.seat_leaving.CopyFrom(
            pb.SeatLeavingEvent(seat=event.seat, player_id=event.player_id, leaving=event.leaving)
        )
    elif isinstance(event, engine.SeatTaken):
        out.seat_taken.SetInParent()
        out.seat_taken.seat, out.seat_taken.player_id = event.seat, event.player_id
    elif isinstance(event, engine.SeatVacated):
        out.seat_vacated.CopyFrom(
            pb.SeatVacatedEvent(seat=event.seat, player_id=event.player_id, points=event.points)
        )
    elif isinstance(event, engine.HandStarted):
        out.hand_started.CopyFrom(
            pb.HandStartedEvent(
                number=event.number,
                button=event.button,
                order=event.order,
                fantasyland_seats=[s for s, _ in event.fantasyland],
                fantasyland_cards=[n for _, n in event.fantasyland],
                commitment=event.commitment,
                client_seed=event.client_seed,
            )
        )
    elif isinstance(event, engine.CardsDealt):
        dealt = pb.CardsDealtEvent(
            seat=event.seat,
            position=event.position,
            count=event.count,
            cards=card_codes(event.cards),
        )
        if event.street is not None:
            dealt.street = event.street
        out.cards_dealt.CopyFrom(dealt)
    elif isinstance(event, engine.CardsPlaced):
        out.cards_placed.CopyFrom(
            pb.CardsPlacedEvent(
                seat=event.seat, street=event.street, placements=_placements(event.placements)
            )
        )
    elif isinstance(event, engine.DiscardMade):
        out.discard_made.CopyFrom(
            pb.DiscardMadeEvent(
                seat=event.seat,
                street=event.street,
                card="" if event.card is None else str(event.card),
            )
        )
    elif isinstance(event, engine.TimeoutApplied):
        out.timeout_applied.CopyFrom(pb.TimeoutAppliedEvent(seat=event.seat))
    elif isinstance(event, engine.FantasylandSet):
        out.fantasyland_set.CopyFrom(
            pb.FantasylandSetEvent(
                seat=event.seat,
                board=_board_proto(event.board),
                discards=card_codes(event.discards),
            )
        )
    elif isinstance(event, engine.FantasylandRevealed):
        out.fantasyland_revealed.CopyFrom(
            pb.FantasylandRevealedEvent(seat=event.seat, board=_board_proto(event.board))
        )
    elif isinstance(event, engine.HandSettled):
        settled = pb.HandSettledEvent(
            number=event.number,
            seats=event.seats,
            boards=[_board_proto(b) for b in event.boards],
            totals=event.totals,
        )
        ids = tuple(player_ids[s] if s < len(player_ids) else "" for s in event.seats)
        write_settlement(event.settlement, ids, settled.settlement)
        out.hand_settled.CopyFrom(settled)
    elif isinstance(event, engine.SeedRevealed):
        out.seed_revealed.CopyFrom(
            pb.SeedRevealedEvent(
                number=event.number, server_seed=event.server_seed, commitment=event.commitment
            )
        )
    else:
        assert isinstance(event, engine.ButtonMoved)
        out.button_moved.CopyFrom(
            pb.ButtonMovedEvent(from_seat=event.from_seat, to_seat=event.to_seat)
        )
    return out


def encode_event(event: TableEvent, version: int, record: TableRecord) -> bytes:
    """The stored form of an event: its owner seat (255: public), the owner's full view and,
    for a private event, everyone else's redacted view — so a watcher's copy is a lookup."""
    owner = None if isinstance(event, _TABLE_EVENTS) else engine.visible_to(event)
    full = _event_bytes(event, version, record)
    if owner is None:
        return struct.pack(">BI", _PUBLIC, len(full)) + full
    assert not isinstance(event, _TABLE_EVENTS)  # public, above
    public = _event_bytes(engine.event_for_viewer(event, None), version, record)
    return struct.pack(">BI", owner, len(full)) + full + public


def _event_bytes(event: TableEvent, version: int, record: TableRecord) -> bytes:
    """``event`` as a serialised TableEvent (without event id): a move's own events written
    as wire bytes (:func:`~ofc_service.api.view_wire.move_event_bytes`, the same bytes), the
    others built as messages."""
    if not isinstance(event, _TABLE_EVENTS):
        written = view_wire.move_event_bytes(event, version)
        if written is not None:
            return written
    message = event_to_proto(event, version, record.hand_player_ids())
    if isinstance(event, engine.HandStarted):  # the seed drawn for the next hand, committed
        message.hand_started.next_commitment = record.next_commitment
    data: bytes = message.SerializeToString()
    return data


_TABLE_EVENTS = (ClientSeedSet, SeatLeaving)  # the shell's own events: public


def event_part(blob: bytes, viewer: int | None) -> bytes:
    """``viewer``'s copy of a stored event (None: a spectator's), serialised, without id."""
    owner, size = struct.unpack_from(">BI", blob)
    start = _HEADER_SIZE
    return blob[start : start + size] if owner in (_PUBLIC, viewer) else blob[start + size :]


_HEADER_SIZE = struct.calcsize(">BI")


def decode_event(blob: bytes, viewer: int | None, event_id: str) -> pb.TableEvent:
    event = pb.TableEvent.FromString(event_part(blob, viewer))
    event.event_id = event_id
    return event


# --- views ----------------------------------------------------------------------------------
def table_view(
    record: TableRecord,
    version: int,
    viewer: int | None,
    *,
    last_event_id: str = "",
) -> pb.TableView:
    """``viewer``'s view of the table (:func:`table_view_bytes` writes the same bytes
    without building the message)."""
    view = engine.view(record.match, _hand_viewer(record, viewer))
    out = pb.TableView(
        table_id=record.table_id,
        version=version,
        button=view.button,
        hands_played=view.hands_played,
        max_hands=view.max_hands or 0,
        turn_time_limit_ms=record.turn_time_limit_ms,
        deadline_ms=record.deadline_ms or 0,
        last_event_id=last_event_id,
    )
    if viewer is not None:
        out.viewer_seat = viewer
    out.ruleset.MergeFromString(_ruleset_bytes(record.match.ruleset))
    out.client_seed_policy = _POLICY_TO_PROTO[record.client_seed_policy]
    out.client_seed = record.client_seed
    out.next_commitment = record.next_commitment
    own_seeds = dict(record.seat_client_seeds)
    for s in view.seats:
        out.seats.add(
            seat=s.seat,
            player_id=s.player_id,
            points=s.points,
            fantasyland_cards=s.fantasyland,
            fantasyland_streak=s.fantasyland_streak,
            units=record.units_of(s.seat),
            client_seed=own_seeds.get(s.seat, b""),
            leaving=s.seat in record.leaving_seats,
        )
    for a, b, unit in record.match.pair_units:
        out.pair_unit_values.add(a=a, b=b, unit_value=unit)
    hand = view.hand
    if hand is not None:
        h = out.hand
        h.number, h.button, h.commitment, h.client_seed = (
            hand.number,
            hand.button,
            hand.commitment,
            hand.client_seed,
        )
        h.server_seed = hand.server_seed or b""
        h.street, h.deck_remaining, h.over = hand.street, hand.deck_remaining, hand.over
        if hand.turn is not None:
            h.turn = hand.turn
        h.to_act.extend(hand.to_act)
        for hs in hand.seats:
            h.seats.add(
                seat=hs.seat,
                fantasyland_cards=hs.fantasyland,
                board=_board_fields(hs.board),
                board_hidden=hs.board_hidden,
                pending=card_codes(hs.pending),
                pending_count=hs.pending_count,
                discards=card_codes(hs.discards),
                discard_count=hs.discard_count,
                done=hs.done,
            )
        if hand.settlement is not None:
            players = record.hand_player_ids()
            ids = tuple(players[hs.seat] for hs in hand.seats)
            write_settlement(hand.settlement, ids, h.settlement)
    return out


def table_view_bytes(record: TableRecord, version: int, viewer: int | None) -> bytes:
    """:func:`table_view` serialised, the very bytes ``SerializeToString`` writes, put
    together without the message (:mod:`~ofc_service.api.view_wire`); the ruleset's bytes,
    the same in every view of the table, are spliced in as they are."""
    return view_wire.view_bytes(
        record,
        version,
        viewer,
        _hand_viewer(record, viewer),
        ruleset=_ruleset_bytes(record.match.ruleset),
        policy=_POLICY_TO_PROTO[record.client_seed_policy],
    )


def _hand_viewer(record: TableRecord, viewer: int | None) -> int | None:
    """Whose private cards of the table's hand ``viewer``'s view shows: none when another
    player held the seat when that hand started (the last hand, over, of the player who
    left the seat): a seat's new player never sees what was dealt to the one before."""
    start, hand = record.hand_start, record.match.hand
    if viewer is None or start is None or hand is None:
        return viewer
    if start.seats[viewer].player_id != record.match.seats[viewer].player_id:
        return None
    return viewer


def _ruleset_bytes(ruleset: Ruleset) -> bytes:
    """A ruleset's parameters, serialised once: every view carries them, few tables differ.
    Kept by the ruleset object (a table's record keeps its one ruleset from move to move):
    hashing a ruleset, as a cache by value would, costs more than a view's other fields."""
    hit = _RULESET_BYTES.get(id(ruleset))
    if hit is not None and hit[0] is ruleset:
        return hit[1]
    data: bytes = convert.ruleset_to_proto(ruleset).SerializeToString()
    _RULESET_BYTES[id(ruleset)] = (ruleset, data)  # the ruleset held: its id stays its own
    if len(_RULESET_BYTES) > _KEPT_RULESETS:
        del _RULESET_BYTES[next(iter(_RULESET_BYTES))]
    return data


_KEPT_RULESETS = 1024  # the rulesets of the tables in play (records keep theirs)
_RULESET_BYTES: dict[int, tuple[Ruleset, bytes]] = {}


# --- request checks -------------------------------------------------------------------------
def _limit_ms(value: int, default: int, field: str) -> int:
    if value == 0:
        return default
    if not MIN_LIMIT_MS <= value <= MAX_LIMIT_MS:
        raise core.InvalidInputError(
            f"{field} must be {MIN_LIMIT_MS}..{MAX_LIMIT_MS} ms", field=field
        )
    return value


def _card(token: str, field: str) -> Card:
    """One card from a single string field; an error names ``field`` itself (no ``[0]``)."""
    try:
        return convert.parse_cards([token], field)[0]
    except core.OfcError as exc:
        raise convert.with_field(exc, field) from None


def _client_seed(text: str) -> bytes:
    seed = text.encode()
    if len(seed) > MAX_CLIENT_SEED_BYTES:
        raise core.InvalidInputError(
            f"client_seed must be at most {MAX_CLIENT_SEED_BYTES} bytes", field="client_seed"
        )
    return seed


# A field's value that asks what the field unset asks, as releases before the field read
# it (they drop a field they do not know): left out of the digest, so that a retry landing on
# a replica of the release before, during a rolling upgrade, is the same request there.
_SAME_AS_UNSET: Final = {pb.LeaveSeatRequest.DESCRIPTOR.full_name: ("mode", pb.LEAVE_MODE_NOW)}


def request_digest(request: Message) -> str:
    """What a mutating request asks for, as a digest kept with its request record: the
    request's fields in their deterministic wire form, without its ``request_id`` and
    without fields this server does not know (credentials travel in metadata, not here).
    The same ``request_id`` with another digest is a different request (REQUEST_ID_REUSED).

    >>> a = pb.StartHandRequest(table_id="t", expected_version=3, request_id="r1")
    >>> b = pb.StartHandRequest(table_id="t", expected_version=3, request_id="r2")
    >>> request_digest(a) == request_digest(b) != request_digest(pb.StartHandRequest())
    True
    >>> now = pb.LeaveSeatRequest(table_id="t", mode=pb.LEAVE_MODE_NOW)
    >>> request_digest(now) == request_digest(pb.LeaveSeatRequest(table_id="t"))
    True
    """
    fields = type(request)()
    fields.CopyFrom(request)
    fields.ClearField("request_id")
    fields.DiscardUnknownFields()
    same_as_unset = _SAME_AS_UNSET.get(fields.DESCRIPTOR.full_name)
    if same_as_unset is not None and getattr(fields, same_as_unset[0]) == same_as_unset[1]:
        fields.ClearField(same_as_unset[0])
    named = fields.DESCRIPTOR.full_name.encode() + b"\x00"
    return hashlib.sha256(named + fields.SerializeToString(deterministic=True)).hexdigest()[:32]


class ProtobufPresenter:
    """The :class:`~ofc_service.application.presenter.Presenter` of this API: events and
    responses as ofcpoker.v1 protobuf messages, serialised."""

    def event(self, event: TableEvent, version: int, record: TableRecord) -> bytes:
        return encode_event(event, version, record)

    def response(self, outcome: commands.Outcome) -> bytes:
        change, command = outcome.change, outcome.command
        if isinstance(command, commands.JoinSeat):
            assert change.seat_token is not None
            token = mask_secret(change.seat_token, outcome.request_id)
            view = table_view(change.record, outcome.version, change.actor_seat)
            return pb.JoinSeatResponse(seat_token=token, table=view).SerializeToString()
        if type(command) not in _RESPONSES:  # the server's own move (a timeout): nobody reads it
            return b""
        # The response's one field is the view: its wire form is the view's bytes behind the
        # field's key, without copying the view into a response message first (a deep copy
        # that cost more than the serialisation).
        view_bytes = table_view_bytes(change.record, outcome.version, change.actor_seat)
        return _field(_RESPONSE_TABLE, view_bytes)

    def answers(
        self, command: commands.Command, response: bytes, table_id: str, actor: int | None
    ) -> bool:
        kind = pb.JoinSeatResponse if isinstance(command, commands.JoinSeat) else None
        kind = kind or _RESPONSES.get(type(command))
        if kind is None:
            return False
        try:
            answer = kind.FromString(response)
        except DecodeError:
            return False
        if not answer.HasField("table") or answer.table.table_id != table_id:
            return False
        view = answer.table
        return (view.viewer_seat if view.HasField("viewer_seat") else None) == actor


_LEAVE_MODES = {
    pb.LEAVE_MODE_UNSPECIFIED: commands.LEAVE_NOW,
    pb.LEAVE_MODE_NOW: commands.LEAVE_NOW,
    pb.LEAVE_MODE_AFTER_HAND: commands.LEAVE_AFTER_HAND,
    pb.LEAVE_MODE_CANCEL: commands.LEAVE_CANCEL,
}
assert set(_LEAVE_MODES.values()) == set(commands.LEAVE_MODES)

_RESPONSES: dict[type, Any] = {
    commands.LeaveSeat: pb.LeaveSeatResponse,
    commands.StartHand: pb.StartHandResponse,
    commands.SetClientSeed: pb.SetClientSeedResponse,
    commands.PlaceCards: pb.PlaceCardsResponse,
    commands.SetFantasyland: pb.SetFantasylandResponse,
}
_RESPONSE_TABLE = 1  # the field number of each of those responses' only field, `table`
assert all(
    [(f.name, f.number) for f in r.DESCRIPTOR.fields] == [("table", _RESPONSE_TABLE)]
    for r in _RESPONSES.values()
), "a move's response has a field besides its table view: build the message instead"


class TableHandlers:
    """ofcpoker.v1.TableService, transport-neutral: one method per RPC taking the request
    and the caller's credentials (see :mod:`ofc_service.api.rpc`)."""

    def __init__(self, manager: TableManager, shutdown: Shutdown | None = None) -> None:
        self.manager = manager
        self.auth = manager.auth
        self.shutdown = shutdown or Shutdown()  # ends every Watch when the server stops

    # --- tables and seats -----------------------------------------------------------------
    async def CreateTable(
        self, request: pb.CreateTableRequest, creds: auth.Credentials
    ) -> pb.CreateTableResponse:
        self.auth.require_operator_when_keyed(creds)
        request_key(request.request_id)  # the one request_id check (INVALID_INPUT)
        spec = request.ruleset if request.HasField("ruleset") else None
        ruleset = convert.ruleset_from_proto(spec, "ruleset").ruleset
        if request.max_hands > MAX_HANDS:
            raise core.InvalidInputError(f"max_hands must be 0..{MAX_HANDS}", field="max_hands")
        client_seed = _client_seed(request.client_seed)
        policy = _POLICY_FROM_PROTO.get(request.client_seed_policy)
        if policy is None:
            raise core.InvalidInputError(
                f"unknown client_seed_policy {request.client_seed_policy}",
                field="client_seed_policy",
            )
        turn_ms = _limit_ms(request.turn_time_limit_ms, DEFAULT_TURN_MS, "turn_time_limit_ms")
        fantasyland_ms = _limit_ms(
            request.fantasyland_time_limit_ms, 4 * turn_ms, "fantasyland_time_limit_ms"
        )
        pair_units = convert.pair_units_from_proto(
            parse.bounded(request.pair_unit_values, MAX_PAIRS, "pair_unit_values"),
            request.seats or ruleset.max_players,
            "pair_unit_values",
            what="seat",
        )
        try:
            match = engine.new_match(
                ruleset,
                seats=request.seats or None,
                max_hands=request.max_hands or None,
                pair_units=pair_units,
            )
        except core.InvalidRulesetError as refused:  # a street the engine does not play
            raise convert.with_field(refused, f"ruleset.overrides.{refused.field}") from None
        table = commands.NewTable(match, turn_ms, fantasyland_ms, client_seed, policy)
        # A retry of the same request finds its table: answer with the table as it is now.
        current, version, last = await self.manager.create_for_request(
            create_claim(creds, request.request_id), table, request_digest(request)
        )
        return pb.CreateTableResponse(
            table_id=current.table_id, table=table_view(current, version, None, last_event_id=last)
        )

    async def GetTable(
        self, request: pb.GetTableRequest, creds: auth.Credentials
    ) -> pb.GetTableResponse:
        record, version, last = await self.manager.shown(parse.table_id(request.table_id))
        as_seat = request.as_seat if request.HasField("as_seat") else None
        viewer = self.manager.viewer(creds, record, as_seat)
        return pb.GetTableResponse(table=table_view(record, version, viewer, last_event_id=last))

    async def JoinSeat(
        self, request: pb.JoinSeatRequest, creds: auth.Credentials
    ) -> pb.JoinSeatResponse:
        command = commands.JoinSeat(request.seat, parse.player_id(request.player_id))
        response = pb.JoinSeatResponse.FromString(await self._run(request, creds, command))
        response.seat_token = unmask_secret(response.seat_token, request.request_id)
        return response

    async def LeaveSeat(
        self, request: pb.LeaveSeatRequest, creds: auth.Credentials
    ) -> bytes:  # a LeaveSeatResponse, serialised (see api.rpc)
        mode = _LEAVE_MODES.get(request.mode)
        if mode is None:
            raise core.InvalidInputError(f"unknown mode {request.mode}", field="mode")
        return await self._run(request, creds, commands.LeaveSeat(request.seat, mode))

    async def StartHand(
        self, request: pb.StartHandRequest, creds: auth.Credentials
    ) -> bytes:  # a StartHandResponse, serialised (see api.rpc)
        return await self._run(request, creds, commands.StartHand())

    async def SetClientSeed(
        self, request: pb.SetClientSeedRequest, creds: auth.Credentials
    ) -> bytes:  # a SetClientSeedResponse, serialised (see api.rpc)
        command = commands.SetClientSeed(request.seat, _client_seed(request.client_seed))
        return await self._run(request, creds, command)

    async def PlaceCards(
        self, request: pb.PlaceCardsRequest, creds: auth.Credentials
    ) -> bytes:  # a PlaceCardsResponse, serialised (see api.rpc)
        placements = []
        for k, p in enumerate(parse.bounded(request.placements, MAX_PLACEMENTS, "placements")):
            card = _card(p.card, f"placements[{k}].card")
            row = convert.row_position(p.row, f"placements[{k}].row")
            if row is None:
                raise core.InvalidRowError(
                    "every placement needs a row", field=f"placements[{k}].row"
                )
            placements.append((card, row))
        discard = _card(request.discard, "discard") if request.discard else None
        engine.check_place_unique(placements, discard)  # in every state: before NOT_YOUR_TURN
        command = commands.PlaceCards(request.seat, tuple(placements), discard)
        return await self._run(request, creds, command)

    async def SetFantasyland(
        self, request: pb.SetFantasylandRequest, creds: auth.Credentials
    ) -> bytes:  # a SetFantasylandResponse, serialised (see api.rpc)
        board = convert.board_from_proto(request.board, "board")
        discards = convert.parse_cards(
            parse.bounded(request.discards, MAX_DISCARDS, "discards"), "discards"
        )
        # a card twice is refused whatever the table's state (before NOT_IN_FANTASYLAND)
        engine.check_unique(
            engine.set_card_names((board.top, board.middle, board.bottom), discards, "board.")
        )
        command = commands.SetFantasyland(
            request.seat, board.top, board.middle, board.bottom, tuple(discards)
        )
        try:
            return await self._run(request, creds, command)
        except core.OfcError as refused:
            # The engine names a card by its row ("top[0]"): the request holds the rows in
            # its board ("board.top[0]"), and the field and the message say so.
            local = functools.partial(_ENGINE_ROW.sub, r"board.\1[")
            message, field = local(refused.message), local(refused.field)
            if (message, field) == (refused.message, refused.field):
                raise
            raise type(refused)(message, field=field) from None

    async def _run(self, request: Any, creds: auth.Credentials, command: commands.Command) -> bytes:
        """One mutating request: the caller authenticated first, then the command, applied
        once per (caller, request_id); a retry answered only to its caller, and only when
        it is the same request."""
        self.auth.authenticate(creds)
        where = Request(
            parse.table_id(request.table_id),
            expected_version=request.expected_version,
            request_id=request.request_id,
            digest=request_digest(request),
        )
        return await self.manager.run(where, command, creds)

    # --- histories ------------------------------------------------------------------------
    async def GetHandHistory(
        self, request: pb.GetHandHistoryRequest, creds: auth.Credentials
    ) -> pb.GetHandHistoryResponse:
        hand = await self.manager.hand(parse.table_id(request.table_id), request.hand_number, creds)
        history = hand.history
        response = pb.GetHandHistoryResponse(
            hand_number=request.hand_number,
            commitment=history["commitment"],
            server_seed=bytes.fromhex(history["server_seed"]),
            client_seed=bytes.fromhex(history["client_seed"]),
            history_json=hand.json.decode(),
        )
        write_settlement(*history_settlement(history), response.settlement)
        return response

    async def ListHands(
        self, request: pb.ListHandsRequest, creds: auth.Credentials
    ) -> pb.ListHandsResponse:
        table_id = parse.table_id(request.table_id)
        size = parse.at_most(request.page_size, MAX_PAGE_SIZE, "page_size", zero="20")
        size = size or DEFAULT_PAGE_SIZE
        start = parse.page_token(request.page_token)
        page = await self.manager.hands(table_id, creds, start=start, count=size)
        response = pb.ListHandsResponse(
            next_page_token="" if page.next_start is None else str(page.next_start)
        )
        for hand in page.hands:
            players = hand.history["settlement"]["players"]
            response.hands.add(
                hand_number=hand.number,
                commitment=hand.history["commitment"],
                seats=[p["seat"] for p in players],
                points=[p["points"] for p in players],
                settled_at_ms=hand.history.get("settled_at_ms", 0),
            )
        return response

    # --- watching -------------------------------------------------------------------------
    async def Watch(
        self, request: pb.WatchRequest, creds: auth.Credentials
    ) -> AsyncIterator[pb.WatchResponse | bytes]:  # events: WatchResponses, serialised
        table_id = parse.table_id(request.table_id)
        resume = request.after_event_id
        if resume:
            parse.event_id(resume, "after_event_id")
        as_seat = request.as_seat if request.HasField("as_seat") else None
        record, version, last = await self.manager.shown(table_id)
        audience = _Audience(self.manager, table_id, creds, as_seat, record)
        if resume:
            if store.parse_event_id(resume) > store.parse_event_id(last or "0"):
                raise store.EventIdAheadError(table_id, after=resume, newest=last or "0")
            cursor = resume
            await audience.resume(cursor, last)
        else:
            cursor = last or "0"
            yield pb.WatchResponse(
                snapshot=table_view(record, version, audience.viewer, last_event_id=last)
            )
        follow = self.manager.follow(table_id, cursor, newest=last or "0")
        async for stored in self.shutdown.until(follow, cancellable=True):
            # Each event's stored bytes for this audience, its id spliced in: a message of
            # events is assembled, not parsed and serialised again (see _watch_events).
            ready: list[bytes] = []
            for event in stored:
                part = audience.part(event)
                if _event_kind(part) in _SEAT_CHANGES:
                    # Who holds which seat token changes only here: deliver what came
                    # before, then ask the table whether the credentials still hold.
                    if ready:
                        yield _watch_events(ready)
                        ready = []
                    await audience.recheck()
                spliced = _with_event_id(part, event.event_id)
                if not request.batch_events:
                    yield _field(_WATCH_EVENT, spliced)
                else:
                    ready.append(spliced)
            if ready:
                yield _watch_events(ready)


# Field numbers (protos/ofcpoker/v1/table_service.proto): TableEvent.event_id and its kinds,
# WatchResponse.event and .events, EventBatch.events.
_EVENT_ID, _EVENT_VERSION = 1, 2
_SEAT_TAKEN, _SEAT_VACATED = 3, 4
_WATCH_EVENT, _WATCH_EVENTS, _BATCH_EVENTS = 2, 3, 1


def _field(number: int, data: bytes) -> bytes:
    """A length-delimited field (a message or a string) in protobuf's wire format."""
    return varint(number << 3 | 2) + varint(len(data)) + data


def _with_event_id(part: bytes, event_id: str) -> bytes:
    """A stored TableEvent (no event id) with ``event_id`` set: fields may come in any
    order on the wire, so the id's field is put in front of the stored bytes."""
    return _field(_EVENT_ID, event_id.encode()) + part


def _watch_events(events: list[bytes]) -> bytes:
    """A WatchResponse of an EventBatch of the (serialised) events."""
    return _field(_WATCH_EVENTS, b"".join(_field(_BATCH_EVENTS, e) for e in events))


def _event_kind(part: bytes) -> int:
    """The field number of a stored TableEvent's kind: its version (a varint, absent when 0)
    comes first as this server serialises it, then the kind."""
    at = 0
    if part[:1] == bytes([_EVENT_VERSION << 3]):
        at = 1
        while part[at] & 0x80:
            at += 1
        at += 1
    return part[at] >> 3 if at < len(part) else 0


_SEAT_CHANGES = (_SEAT_TAKEN, _SEAT_VACATED)


class _Audience:
    """Whom one Watch stream speaks to, event by event: the view its credentials give now.

    A stream is opened with the credentials' view of the table as it is (as GetTable gives
    it). Seat tokens change only when a seat is taken or left, and those events are in the
    log: at each one, before it or anything after it is sent, the credentials are checked
    again against the table as it is then; a seat token that no longer holds its seat ends
    the stream (UNAUTHENTICATED), so a seat's next player never shares its stream. A
    resumed stream (``after_event_id``) of a seat token sends the events from before the
    token's seat was taken as a spectator sees them: they were dealt to someone else.
    """

    def __init__(
        self,
        manager: TableManager,
        table_id: str,
        creds: auth.Credentials,
        as_seat: int | None,
        record: TableRecord,
    ) -> None:
        self.manager = manager
        self.table_id = table_id
        self.creds = creds
        self.as_seat = as_seat
        self.viewer = manager.viewer(creds, record, as_seat)
        self.credentialed = creds.seat_token is not None or creds.api_key is not None
        self.seat_token_viewer = self.viewer is not None and not manager.auth.is_operator(creds)
        self.public_until = (0, 0)  # events up to this log position: a spectator's view

    async def resume(self, cursor: str, last: str) -> None:
        """Before the events after ``cursor`` (up to ``last``, the table's newest as just
        loaded), find where this seat token's seat was last taken."""
        if not self.seat_token_viewer or not last or last == "0":
            return
        end, after = store.parse_event_id(last), cursor
        while store.parse_event_id(after) < end:
            events = await self.manager.read_events(self.table_id, after=after)
            for event in events:
                at = store.parse_event_id(event.event_id)
                if at > end:
                    return
                if _taken_seat(event.data) == self.viewer:
                    self.public_until = at
            if not events:
                return
            after = events[-1].event_id

    def part(self, event: store.StoredEvent) -> bytes:
        """The stored event's bytes this audience is sent (a TableEvent without its id)."""
        # Nothing is public by position unless resume() found the seat taken in the log: a
        # stored event's id is always after "0-0", so the id is read only then.
        until = self.public_until
        public = until != (0, 0) and store.parse_event_id(event.event_id) <= until
        return event_part(event.data, None if public else self.viewer)

    async def recheck(self) -> None:
        """The credentials against the table as it is now: raises (as GetTable would) when
        they no longer hold. Their seat cannot have changed (one token, one seat; an
        operator's ``as_seat`` is the request's)."""
        if self.credentialed:  # a spectator's view depends on nothing that can be revoked
            record, _, _ = await self.manager.load(self.table_id)
            self.manager.viewer(self.creds, record, self.as_seat)


def _taken_seat(blob: bytes) -> int | None:
    """The seat a stored SeatTaken event names; None for any other event (cheap: most
    events are private, or not seat changes, and are not decoded here)."""
    if blob[0] != _PUBLIC:
        return None
    event = decode_event(blob, None, "")
    return event.seat_taken.seat if event.HasField("seat_taken") else None


__all__ = [
    "SERVICE",
    "SERVICE_NAME",
    "ProtobufPresenter",
    "TableHandlers",
    "decode_event",
    "encode_event",
    "event_to_proto",
    "table_view",
]
