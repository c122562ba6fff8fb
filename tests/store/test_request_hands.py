"""Retries of a live table's requests, hand by hand, on every store (memory, one Redis, a
Redis Cluster), through the table manager with the real presenter and credentials.

A table keeps request records for its current and previous hand only. A retry (same
caller, same request) gets:

- in the current hand: its first answer, byte for byte, if it is the caller's latest move
  (or a seat change); a move the caller has since made a newer one after keeps only
  "applied", as a previous hand's move does (below);
- in the previous hand: its first answer if that was a seat change (JoinSeat: the seat token
  cannot be made again), else the command's answer with the table *as it is now*, seen
  with the caller's credentials as they are now (the record kept only "applied at version
  n");
- in an older hand: what a new request would get (ABORTED, STALE_VERSION).

In every case nothing is applied twice; another request under the id is REQUEST_ID_REUSED,
and another caller's request with the id is judged as that caller's own new request.
"""

from __future__ import annotations

import hashlib
import itertools
from typing import Any

import pytest
from ofc import engine
from ofc_service.api.tables import ProtobufPresenter, table_view
from ofc_service.application import commands
from ofc_service.application.manager import Request, TableManager
from ofc_service.application.records import TableRecord
from ofc_service.application.requests import unmask_secret
from ofc_service.auth import Authenticator, AuthError, Credentials, PermissionDeniedError
from ofc_service.store import RequestIdReusedError, StaleVersionError
from ofcpoker.v1 import table_service_pb2 as pb

from tests.api.test_turn_clocks import batch_placed

from .conftest import Backend

KEYS = ("hands-key", "other-key")
OPERATOR, OTHER_OPERATOR = (Credentials(api_key=key) for key in KEYS)


class Table:
    """A three-seat classic table; seats 0 and 1 play, seat 2 joins during hand 1."""

    def __init__(self, manager: TableManager) -> None:
        self.manager = manager
        self.tokens: dict[int, str] = {}
        self.first: dict[str, bytes] = {}  # request id -> first answer
        self.requests: dict[str, tuple[Request, commands.Command, Credentials]] = {}
        self.moved: dict[int, str] = {}  # seat -> the request id of its last move

    async def version(self) -> int:
        return (await self.manager.load("t"))[1]

    async def run(self, name: str, command: commands.Command, creds: Credentials) -> bytes:
        request = Request("t", await self.version(), name, digest=name)
        self.requests[name] = (request, command, creds)
        self.first[name] = await self.manager.run(request, command, creds)
        return self.first[name]

    async def retry(self, name: str, creds: Credentials | None = None) -> bytes:
        request, command, sent_by = self.requests[name]
        return await self.manager.run(request, command, sent_by if creds is None else creds)

    async def join(self, seat: int, name: str) -> None:
        answer = pb.JoinSeatResponse.FromString(
            await self.run(name, commands.JoinSeat(seat, f"p{seat}"), Credentials())
        )
        self.tokens[seat] = unmask_secret(answer.seat_token, name)

    def seat(self, seat: int) -> Credentials:
        return Credentials(seat_token=self.tokens[seat])

    async def move(self, name: str) -> int:
        """The seat to act places its batch (:func:`batch_placed`); the seat."""
        record, _, _ = await self.manager.load("t")
        hand = record.match.hand
        assert hand is not None and not hand.over
        seat = next(s.seat for s in hand.seats if s.pending)
        await self.run(name, batch_placed(record.match, seat), self.seat(seat))
        self.moved[seat] = name
        return seat

    async def play_out(self, prefix: str) -> None:
        record, _, _ = await self.manager.load("t")
        moves = 0
        while record.match.hand is not None and not record.match.hand.over:
            moves += 1
            await self.move(f"{prefix}-then-{moves}")
            record, _, _ = await self.manager.load("t")


def view(answer: bytes) -> pb.TableView:
    return pb.PlaceCardsResponse.FromString(answer).table


async def open_table(backend: Backend, test: Any) -> None:
    async with backend.open() as h:
        auth = Authenticator(KEYS)
        # Seeds of a fixed sequence: every hand deals the same cards on every run (with
        # random seeds, a seat that the test has leave earned a Fantasyland now and then).
        count = itertools.count()

        def seed() -> bytes:
            return hashlib.sha256(b"request hands %d" % next(count)).digest()

        manager = TableManager(h.store, auth, ProtobufPresenter(), server_seed=seed)
        other = TableManager(h.other, auth, ProtobufPresenter(), server_seed=seed)  # a replica
        match = engine.new_match("classic", seats=3)
        await manager.create(TableRecord("t", match, 3_600_000, 14_400_000, b"", 0))
        table = Table(manager)
        await table.join(0, "join-0")
        await table.join(1, "join-1")
        await test(table, other)


async def test_retries_in_the_current_previous_and_older_hands(backend: Backend) -> None:
    async def test(table: Table, other: TableManager) -> None:
        await table.run("start-1", commands.StartHand(), OPERATOR)
        mover = await table.move("hand1-first")
        await table.join(2, "join-2")  # seat 2 sits down while hand 1 is played
        # The current hand: the first answer, byte for byte, on either replica.
        request, command, creds = table.requests["hand1-first"]
        assert await other.run(request, command, creds) == table.first["hand1-first"]
        await table.play_out("hand1")
        await table.run("start-2", commands.StartHand(), OPERATOR)
        await table.move("hand2-first")
        now = await table.version()

        # The previous hand: a move's retry gets the table as it is now, as its seat sees it.
        for replica in (table.manager, other):
            request, command, creds = table.requests["hand1-first"]
            again = view(await replica.run(request, command, creds))
            first = view(table.first["hand1-first"])
            assert (first.version, again.version) == (request.expected_version + 1, now)
            record, _, _ = await table.manager.load("t")
            assert again == table_view(record, now, mover)  # the mover's view, hand 2's
            assert again.hand.number == 2 and again.viewer_seat == mover
            others = [s for s in again.hand.seats if s.seat != mover]
            assert others and all(not s.pending for s in others)  # no other seat's cards
        started = pb.StartHandResponse.FromString(await table.retry("start-1"))
        assert (started.table.version, started.table.hand.number) == (now, 2)
        # a seat change keeps its whole first answer: the same seat token again
        assert await table.retry("join-2") == table.first["join-2"]
        # another request under a previous-hand id is refused; the id stays its caller's
        request, command, creds = table.requests["hand1-first"]
        with pytest.raises(RequestIdReusedError):
            await table.manager.run(
                Request("t", request.expected_version, "hand1-first", digest="another"),
                command,
                creds,
            )
        # another caller sending that id makes a new request of its own: stale here
        with pytest.raises(StaleVersionError):
            await table.retry("hand1-first", OTHER_OPERATOR)
        with pytest.raises(PermissionDeniedError):  # another seat's token: refused first
            await table.retry("hand1-first", table.seat(1 - mover))
        assert await table.version() == now  # nothing was applied again

        await table.play_out("hand2")
        await table.run("start-3", commands.StartHand(), OPERATOR)
        # Hand 1 is now older than the previous hand: judged as new, refused as stale.
        for name in ("hand1-first", "start-1", "join-2"):
            with pytest.raises(StaleVersionError):
                await table.retry(name)
        # hand 2's move is the previous hand's now
        assert view(await table.retry("hand2-first")).version == await table.version()

    await open_table(backend, test)


async def test_a_previous_hand_retry_is_checked_with_the_credentials_as_they_are_now(
    backend: Backend,
) -> None:
    async def test(table: Table, other: TableManager) -> None:
        await table.run("start-1", commands.StartHand(), OPERATOR)
        await table.play_out("hand1")
        last_move = table.moved[0]
        await table.run("leave-0", commands.LeaveSeat(0), table.seat(0))
        await table.join(0, "join-0-again")  # a new player takes seat 0: a new token
        await table.run("start-2", commands.StartHand(), OPERATOR)
        now = await table.version()
        # seat 0's old token acts for no seat now: its hand-1 move's retry is refused as a
        # new request of that token would be, and tells it nothing of hand 2
        with pytest.raises(AuthError):
            await table.retry(last_move)
        # the record is that token's: an operator sending the id makes its own new request
        with pytest.raises(StaleVersionError):
            await table.retry(last_move, OPERATOR)
        assert await table.version() == now

    await open_table(backend, test)


async def test_an_operator_driving_two_seats_keeps_each_seats_latest_answer(
    backend: Backend,
) -> None:
    # One API key acting for both seats (a back office driving bots): its move for one seat
    # does not supersede its latest move for the other, whose retry still gets its first
    # answer byte for byte; its earlier move for the same seat keeps only "applied".
    async def test(table: Table, other: TableManager) -> None:
        await table.run("start-1", commands.StartHand(), OPERATOR)
        seats = []
        for n in range(1, 4):
            record, _, _ = await table.manager.load("t")
            hand = record.match.hand
            assert hand is not None
            seat = next(s.seat for s in hand.seats if s.pending)
            await table.run(f"op{n}", batch_placed(record.match, seat), OPERATOR)
            seats.append(seat)
        assert seats == [seats[0], 1 - seats[0], seats[0]]
        now = await table.version()
        for replica in (table.manager, other):
            for name in ("op3", "op2"):  # the latest move for each seat
                request, command, creds = table.requests[name]
                assert await replica.run(request, command, creds) == table.first[name], name
            request, command, creds = table.requests["op1"]  # superseded for its seat
            again = view(await replica.run(request, command, creds))
            assert again.version == now != view(table.first["op1"]).version
        assert await table.version() == now  # nothing was applied again

    await open_table(backend, test)


async def test_a_seats_newer_move_leaves_its_earlier_one_applied(backend: Backend) -> None:
    # A client retries only its latest request: once a seat has moved again, its earlier
    # move of the hand keeps only "applied" and its retry gets the table as it is now; the
    # seat's latest move, and every other caller's latest, still get their first answer.
    async def test(table: Table, other: TableManager) -> None:
        await table.run("start-1", commands.StartHand(), OPERATOR)
        seats = [await table.move(f"m{n}") for n in range(1, 4)]
        assert seats == [seats[0], 1 - seats[0], seats[0]]  # the first seat has moved twice
        mover = seats[0]
        now = await table.version()
        for replica in (table.manager, other):
            # the latest move of each seat, and the operator's StartHand: byte for byte
            for name in ("m3", "m2", "start-1"):
                request, command, creds = table.requests[name]
                assert await replica.run(request, command, creds) == table.first[name], name
            # the first seat's earlier move: applied; the table now, as that seat sees it
            request, command, creds = table.requests["m1"]
            again = view(await replica.run(request, command, creds))
            assert view(table.first["m1"]).version == request.expected_version + 1
            record, _, _ = await table.manager.load("t")
            assert again == table_view(record, now, mover)
            assert (again.version, again.hand.number, again.viewer_seat) == (now, 1, mover)
        with pytest.raises(RequestIdReusedError):  # the id stays that request's
            request, command, creds = table.requests["m1"]
            await table.manager.run(
                Request("t", request.expected_version, "m1", digest="another"), command, creds
            )
        with pytest.raises(StaleVersionError):  # another caller: its own new request
            await table.retry("m1", OTHER_OPERATOR)
        with pytest.raises(PermissionDeniedError):  # another seat's token: refused first
            await table.retry("m1", table.seat(1 - mover))
        assert await table.version() == now  # nothing was applied again

    await open_table(backend, test)
