"""Frozen dataclasses for live tables: views, watch events, hand histories.

They mirror ofcpoker.v1 TableService messages field for field (see
protos/ofcpoker/v1/table_service.proto), with cards as codes (``"As"``), rows as
``"top"``/``"middle"``/``"bottom"``, optional fields as ``None`` and every event kind its own
class (``CardsDealtEvent``, ...) inside one :class:`TableEvent`.

>>> from ofcpoker.v1 import table_service_pb2 as pb
>>> m = pb.TableEvent(event_id="1-0", version=3)
>>> m.cards_dealt.CopyFrom(pb.CardsDealtEvent(seat=1, street=0, position=5, count=5))
>>> TableEvent.from_proto(m)
TableEvent(event_id='1-0', version=3, kind='cards_dealt', \
detail=CardsDealtEvent(seat=1, street=0, position=5, count=5, cards=()))
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from ofcpoker.v1 import cards_pb2
from ofcpoker.v1 import table_service_pb2 as pb

from ofc_client.models import Settlement

_ROW_NAMES = {
    cards_pb2.ROW_POSITION_TOP: "top",
    cards_pb2.ROW_POSITION_MIDDLE: "middle",
    cards_pb2.ROW_POSITION_BOTTOM: "bottom",
}


def row_name(row: cards_pb2.RowPosition.ValueType) -> str:
    """``ROW_POSITION_TOP`` -> ``"top"`` (``"unspecified"`` for an unset row)."""
    return _ROW_NAMES.get(row, "unspecified")


@dataclass(frozen=True, slots=True)
class Board:
    """Three rows of card codes; partial while a hand is played.

    >>> str(Board(("Qc", "Qd"), (), ("As",)))
    'Qc Qd /  / As'
    """

    top: tuple[str, ...] = ()
    middle: tuple[str, ...] = ()
    bottom: tuple[str, ...] = ()

    @property
    def cards(self) -> tuple[str, ...]:
        return self.top + self.middle + self.bottom

    def row(self, name: str) -> tuple[str, ...]:
        if name not in ("top", "middle", "bottom"):
            raise ValueError(f"a row is top, middle or bottom, not {name!r}")
        rows: tuple[str, ...] = getattr(self, name)
        return rows

    def __str__(self) -> str:
        return " / ".join(" ".join(r) for r in (self.top, self.middle, self.bottom))

    @classmethod
    def from_proto(cls, m: cards_pb2.Board) -> Board:
        return cls(tuple(m.top), tuple(m.middle), tuple(m.bottom))


@dataclass(frozen=True, slots=True)
class SeatInfo:
    """A seat between hands: who sits there and what they have won at this table."""

    seat: int
    player_id: str  # "" for an empty seat
    points: int
    units: int
    fantasyland_cards: int  # owed next hand; 0 for none
    fantasyland_streak: int
    client_seed: bytes = b""  # the seat's own seed (players policy); b"" for none
    leaving: bool = False  # its player leaves once the rules let it (leave(after_hand=True))

    @property
    def occupied(self) -> bool:
        return bool(self.player_id)


@dataclass(frozen=True, slots=True)
class HandSeat:
    """One seat of a hand as the viewer sees it (``pending``/``discards``: own seat only)."""

    seat: int
    fantasyland_cards: int
    board: Board
    board_hidden: bool  # a Fantasyland set exists but is face down to this viewer
    pending: tuple[str, ...]
    pending_count: int
    discards: tuple[str, ...]
    discard_count: int
    done: bool


@dataclass(frozen=True, slots=True)
class Hand:
    """The current hand (or the last one, once over) as the viewer sees it."""

    number: int
    button: int
    commitment: str
    client_seed: bytes
    server_seed: bytes | None  # only once the hand is over
    street: int
    turn: int | None
    to_act: tuple[int, ...]
    deck_remaining: int
    seats: tuple[HandSeat, ...]  # turn order
    over: bool
    settlement: Settlement | None  # once over; players in the order of ``seats``

    def seat(self, seat: int) -> HandSeat:
        """The hand seat of table seat ``seat`` (``KeyError`` if it is not in the hand)."""
        for s in self.seats:
            if s.seat == seat:
                return s
        raise KeyError(f"seat {seat} is not playing hand {self.number}")


@dataclass(frozen=True, slots=True)
class TableView:
    """A table as one viewer may see it; ``version`` is what the next move must expect."""

    table_id: str
    version: int
    viewer_seat: int | None  # None: a spectator's view
    ruleset: dict[str, Any]  # RulesetParameters in its JSON form
    seats: tuple[SeatInfo, ...]
    button: int
    hands_played: int
    max_hands: int  # 0: no limit
    hand: Hand | None
    turn_time_limit_ms: int
    deadline_ms: int  # 0: nobody is waiting
    last_event_id: str  # "" in a move's response
    pair_units: tuple[tuple[int, int, int], ...] = ()  # (seat a, seat b, unit value) agreed
    client_seed_policy: str = "table"  # "table", or "players": seats add their own seeds
    client_seed: bytes = b""  # the table's own client seed
    next_commitment: str = ""  # SHA-256 of the next hand's server seed, published ahead

    @property
    def my_seat(self) -> HandSeat | None:
        """The viewer's own seat in the current hand, if it plays it."""
        if self.hand is None or self.viewer_seat is None:
            return None
        for s in self.hand.seats:
            if s.seat == self.viewer_seat:
                return s
        return None

    @classmethod
    def from_proto(cls, m: pb.TableView) -> TableView:
        hand = None
        if m.HasField("hand"):
            h = m.hand
            hand = Hand(
                number=h.number,
                button=h.button,
                commitment=h.commitment,
                client_seed=h.client_seed,
                server_seed=h.server_seed or None,
                street=h.street,
                turn=h.turn if h.HasField("turn") else None,
                to_act=tuple(h.to_act),
                deck_remaining=h.deck_remaining,
                seats=tuple(
                    HandSeat(
                        seat=s.seat,
                        fantasyland_cards=s.fantasyland_cards,
                        board=Board.from_proto(s.board),
                        board_hidden=s.board_hidden,
                        pending=tuple(s.pending),
                        pending_count=s.pending_count,
                        discards=tuple(s.discards),
                        discard_count=s.discard_count,
                        done=s.done,
                    )
                    for s in h.seats
                ),
                over=h.over,
                settlement=Settlement.from_proto(h.settlement) if h.over else None,
            )
        return cls(
            table_id=m.table_id,
            version=m.version,
            viewer_seat=m.viewer_seat if m.HasField("viewer_seat") else None,
            ruleset=json_format.MessageToDict(
                m.ruleset,
                preserving_proto_field_name=True,
                always_print_fields_with_no_presence=True,
            ),
            seats=tuple(
                SeatInfo(
                    s.seat,
                    s.player_id,
                    s.points,
                    s.units,
                    s.fantasyland_cards,
                    s.fantasyland_streak,
                    s.client_seed,
                    s.leaving,
                )
                for s in m.seats
            ),
            button=m.button,
            hands_played=m.hands_played,
            max_hands=m.max_hands,
            hand=hand,
            turn_time_limit_ms=m.turn_time_limit_ms,
            deadline_ms=m.deadline_ms,
            last_event_id=m.last_event_id,
            pair_units=tuple((p.a, p.b, p.unit_value) for p in m.pair_unit_values),
            client_seed_policy=_POLICY_NAMES.get(m.client_seed_policy, "table"),
            client_seed=m.client_seed,
            next_commitment=m.next_commitment,
        )


_POLICY_NAMES = {pb.CLIENT_SEED_POLICY_TABLE: "table", pb.CLIENT_SEED_POLICY_PLAYERS: "players"}
CLIENT_SEED_POLICIES = {name: value for value, name in _POLICY_NAMES.items()}


# --- events -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SeatTakenEvent:
    seat: int
    player_id: str


@dataclass(frozen=True, slots=True)
class SeatVacatedEvent:
    seat: int
    player_id: str
    points: int


@dataclass(frozen=True, slots=True)
class HandStartedEvent:
    number: int
    button: int
    order: tuple[int, ...]
    fantasyland: tuple[tuple[int, int], ...]  # (seat, cards) per Fantasyland seat
    commitment: str
    client_seed: bytes
    next_commitment: str = ""  # the next hand's server seed, committed now


@dataclass(frozen=True, slots=True)
class CardsDealtEvent:
    """``cards`` only in the dealt seat's own stream; ``street`` None: a Fantasyland block."""

    seat: int
    street: int | None
    position: int
    count: int
    cards: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CardsPlacedEvent:
    seat: int
    street: int
    placements: tuple[tuple[str, str], ...]  # (card, row)


@dataclass(frozen=True, slots=True)
class DiscardMadeEvent:
    """``card`` only in the discarding seat's own stream (None for everyone else)."""

    seat: int
    street: int
    card: str | None


@dataclass(frozen=True, slots=True)
class TimeoutAppliedEvent:
    seat: int


@dataclass(frozen=True, slots=True)
class FantasylandSetEvent:
    """``board`` and ``discards`` only in the seat's own stream until the reveal."""

    seat: int
    board: Board
    discards: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FantasylandRevealedEvent:
    seat: int
    board: Board


@dataclass(frozen=True, slots=True)
class HandSettledEvent:
    number: int
    seats: tuple[int, ...]  # parallel to boards, totals and the settlement's players
    boards: tuple[Board, ...]
    settlement: Settlement
    totals: tuple[int, ...]  # each seat's cumulative points after the hand


@dataclass(frozen=True, slots=True)
class SeedRevealedEvent:
    number: int
    server_seed: bytes
    commitment: str


@dataclass(frozen=True, slots=True)
class ButtonMovedEvent:
    from_seat: int
    to_seat: int


@dataclass(frozen=True, slots=True)
class ClientSeedSetEvent:
    seat: int
    client_seed: bytes  # b"": cleared


@dataclass(frozen=True, slots=True)
class SeatLeavingEvent:
    """A player asked to leave after the hand (``leaving``), or withdrew that."""

    seat: int
    player_id: str
    leaving: bool


@dataclass(frozen=True, slots=True)
class UnknownEvent:
    """An event kind newer than this client (the server may add kinds): skip it."""


EventDetail = (
    SeatTakenEvent
    | SeatVacatedEvent
    | HandStartedEvent
    | CardsDealtEvent
    | CardsPlacedEvent
    | DiscardMadeEvent
    | TimeoutAppliedEvent
    | FantasylandSetEvent
    | FantasylandRevealedEvent
    | HandSettledEvent
    | SeedRevealedEvent
    | ButtonMovedEvent
    | ClientSeedSetEvent
    | SeatLeavingEvent
    | UnknownEvent
)


def _detail(m: pb.TableEvent) -> tuple[str, EventDetail]:
    kind = m.WhichOneof("kind")
    if kind == "seat_taken":
        return kind, SeatTakenEvent(m.seat_taken.seat, m.seat_taken.player_id)
    if kind == "seat_vacated":
        e = m.seat_vacated
        return kind, SeatVacatedEvent(e.seat, e.player_id, e.points)
    if kind == "hand_started":
        h = m.hand_started
        fantasyland = tuple(zip(h.fantasyland_seats, h.fantasyland_cards, strict=True))
        return kind, HandStartedEvent(
            h.number,
            h.button,
            tuple(h.order),
            fantasyland,
            h.commitment,
            h.client_seed,
            h.next_commitment,
        )
    if kind == "cards_dealt":
        d = m.cards_dealt
        street = d.street if d.HasField("street") else None
        return kind, CardsDealtEvent(d.seat, street, d.position, d.count, tuple(d.cards))
    if kind == "cards_placed":
        p = m.cards_placed
        placements = tuple((x.card, row_name(x.row)) for x in p.placements)
        return kind, CardsPlacedEvent(p.seat, p.street, placements)
    if kind == "discard_made":
        x = m.discard_made
        return kind, DiscardMadeEvent(x.seat, x.street, x.card or None)
    if kind == "timeout_applied":
        return kind, TimeoutAppliedEvent(m.timeout_applied.seat)
    if kind == "fantasyland_set":
        f = m.fantasyland_set
        return kind, FantasylandSetEvent(f.seat, Board.from_proto(f.board), tuple(f.discards))
    if kind == "fantasyland_revealed":
        r = m.fantasyland_revealed
        return kind, FantasylandRevealedEvent(r.seat, Board.from_proto(r.board))
    if kind == "hand_settled":
        s = m.hand_settled
        return kind, HandSettledEvent(
            s.number,
            tuple(s.seats),
            tuple(Board.from_proto(b) for b in s.boards),
            Settlement.from_proto(s.settlement),
            tuple(s.totals),
        )
    if kind == "seed_revealed":
        r2 = m.seed_revealed
        return kind, SeedRevealedEvent(r2.number, r2.server_seed, r2.commitment)
    if kind == "button_moved":
        b = m.button_moved
        return kind, ButtonMovedEvent(b.from_seat, b.to_seat)
    if kind == "client_seed_set":
        c = m.client_seed_set
        return kind, ClientSeedSetEvent(c.seat, c.client_seed)
    if kind == "seat_leaving":
        leave = m.seat_leaving
        return kind, SeatLeavingEvent(leave.seat, leave.player_id, leave.leaving)
    return kind or "unknown", UnknownEvent()


@dataclass(frozen=True, slots=True)
class TableEvent:
    """One change at the table as the watcher may see it; ``kind`` is the proto oneof name
    (``"cards_dealt"``, ...) and ``detail`` the matching ``...Event`` record."""

    event_id: str
    version: int  # the table version this event produced
    kind: str
    detail: EventDetail

    @classmethod
    def from_proto(cls, m: pb.TableEvent) -> TableEvent:
        kind, detail = _detail(m)
        return cls(m.event_id, m.version, kind, detail)


# --- hands ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class HandHistory:
    """A finished hand with its seed revealed; ``history`` is the ``ofc-hand-history`` JSON
    document (enough to re-derive the deck and re-score the hand), and ``history_json`` the
    document exactly as the service served it (keep these bytes, or their digest, to show
    later that the file was not re-saved)."""

    hand_number: int
    commitment: str
    server_seed: bytes
    client_seed: bytes
    settlement: Settlement
    history: dict[str, Any]
    history_json: str = ""

    @classmethod
    def from_proto(cls, m: pb.GetHandHistoryResponse) -> HandHistory:
        return cls(
            m.hand_number,
            m.commitment,
            m.server_seed,
            m.client_seed,
            Settlement.from_proto(m.settlement),
            json.loads(m.history_json),
            m.history_json,
        )


@dataclass(frozen=True, slots=True)
class HandSummary:
    """A finished hand in a listing: net points per seat of ``seats``."""

    hand_number: int
    commitment: str
    seats: tuple[int, ...]
    points: tuple[int, ...]
    settled_at_ms: int


@dataclass(frozen=True, slots=True)
class HandPage:
    """One page of :meth:`TableClient.list_hands`; ``next_page_token`` is ``""`` at the end."""

    hands: tuple[HandSummary, ...]
    next_page_token: str

    @classmethod
    def from_proto(cls, m: pb.ListHandsResponse) -> HandPage:
        return cls(
            tuple(
                HandSummary(h.hand_number, h.commitment, tuple(h.seats), tuple(h.points),
                            h.settled_at_ms)
                for h in m.hands
            ),
            m.next_page_token,
        )  # fmt: skip


WatchItem = TableView | TableEvent
"""What a watch yields: a snapshot view (first, and again after a resync), then events."""
