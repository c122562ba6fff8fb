"""What a request asks of a table, as values: one command per mutating RPC, and what a
committed command did (an :class:`Outcome`, which the presenter encodes as the response).

The API builds a command from a request's checked fields; :class:`~.manager.TableManager`
runs it through one pipeline. A command names seats and cards, never a table's state: the
seat is checked against the table inside the pipeline, where the table is known.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ofc import engine
from ofc.cards import Card
from ofc.engine import MatchState
from ofc.rulesets import Row

from ofc_service.application.records import TableEvent, TableRecord


@dataclass(frozen=True, slots=True)
class JoinSeat:
    seat: int
    player_id: str


LEAVE_NOW = "now"  # or refused
LEAVE_AFTER_HAND = "after_hand"  # now if the rules allow it; else as soon as they do
LEAVE_CANCEL = "cancel"  # a LEAVE_AFTER_HAND withdrawn
LEAVE_MODES = (LEAVE_NOW, LEAVE_AFTER_HAND, LEAVE_CANCEL)


@dataclass(frozen=True, slots=True)
class LeaveSeat:
    seat: int
    mode: str = LEAVE_NOW


@dataclass(frozen=True, slots=True)
class StartHand:
    pass


@dataclass(frozen=True, slots=True)
class SetClientSeed:
    seat: int
    client_seed: bytes  # empty: back to none


@dataclass(frozen=True, slots=True)
class PlaceCards:
    seat: int
    placements: tuple[tuple[Card, Row], ...]
    discard: Card | None


@dataclass(frozen=True, slots=True)
class SetFantasyland:
    seat: int
    top: tuple[Card, ...]
    middle: tuple[Card, ...]
    bottom: tuple[Card, ...]
    discards: tuple[Card, ...]


@dataclass(frozen=True, slots=True)
class TimeOut:
    """The server's own move for a seat whose clock ran out (the deadline sweeper's).
    ``chosen``: the policy's move, chosen ahead (off the event loop) for ``chosen_for``, the
    match as the sweeper loaded it; the step takes it when it meets that very match, and
    asks the policy itself otherwise."""

    seat: int
    chosen: engine.Place | engine.SetFantasyland | None = None
    chosen_for: MatchState | None = field(default=None, compare=False, repr=False)


Command = JoinSeat | LeaveSeat | StartHand | SetClientSeed | PlaceCards | SetFantasyland | TimeOut
HandMove = PlaceCards | SetFantasyland


@dataclass(frozen=True, slots=True)
class NewTable:
    """A CreateTable request's checked settings (the table id and seeds are drawn later)."""

    match: MatchState  # before any seat is taken
    turn_time_limit_ms: int
    fantasyland_time_limit_ms: int
    client_seed: bytes
    client_seed_policy: str


@dataclass(frozen=True, slots=True)
class Change:
    """What one accepted command did, before it is committed."""

    record: TableRecord
    events: tuple[TableEvent, ...]
    actor_seat: int | None = None  # the seat the caller acted for, if any
    seat_token: str | None = None  # a new seat token (JoinSeat)
    move: str | None = None  # the kind of hand move, counted in ofc_moves_total once committed
    # The record as the command left the hand, when seats marked leaving were stood up after
    # it in the same change: the hand's history, settlement and events are written from it.
    before_leaving: TableRecord | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """A command as it will be stored: the response is built from this, once, before the
    commit (a retry of the request gets those bytes back)."""

    command: Command
    request_id: str  # the client's (a JoinSeat answer masks its seat token with it)
    change: Change
    version: int


__all__ = [
    "LEAVE_AFTER_HAND",
    "LEAVE_CANCEL",
    "LEAVE_MODES",
    "LEAVE_NOW",
    "Change",
    "Command",
    "HandMove",
    "JoinSeat",
    "LeaveSeat",
    "NewTable",
    "Outcome",
    "PlaceCards",
    "SetClientSeed",
    "SetFantasyland",
    "StartHand",
    "TimeOut",
]
