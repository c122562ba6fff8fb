"""LeaveSeat after the hand, on every store (memory, one Redis, a Redis Cluster), through
the table manager with the real presenter and credentials.

A seat that may not leave now (its hand is in play, a Fantasyland hand is owed) is marked
leaving; the server stands it up in the same commit as the change after which the rules
let it go. So the move that ends the hand vacates the seat before anyone can start the next
one: a player cannot be kept at the table by another who starts hands the moment one
settles (docs/security.md). The hand's history, settlement and events are the hand's as it
was played: its player and the money it had.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from ofc import engine, errors
from ofc.policy import DEFAULT_POLICY
from ofc.verify import verify_match
from ofc_service.api.tables import ProtobufPresenter, event_part
from ofc_service.application import commands
from ofc_service.application.manager import MAX_LEAVE_CHANGES, Request, TableManager
from ofc_service.application.records import LeaveChangesSpentError, TableRecord
from ofc_service.application.settlements import SettlementRecord
from ofc_service.auth import Authenticator, Credentials, UnauthenticatedError, token_hash
from ofc_service.store import RequestIdReusedError, StaleVersionError
from ofcpoker.v1 import table_service_pb2 as pb

from tests.store.test_request_hands import OPERATOR, Table, open_table

from .conftest import Backend

AFTER_HAND, CANCEL = commands.LEAVE_AFTER_HAND, commands.LEAVE_CANCEL


def view(answer: bytes) -> pb.TableView:
    return pb.LeaveSeatResponse.FromString(answer).table  # every move's response: field 1


async def events_of(table: Table, version: int) -> list[pb.TableEvent]:
    """The events the change to ``version`` produced, as a spectator reads them."""
    stored = await table.manager.read_events("t", after="0")
    return [
        pb.TableEvent.FromString(event_part(e.data, None))
        for e in stored
        if pb.TableEvent.FromString(event_part(e.data, None)).version == version
    ]


async def histories(table: Table) -> list[tuple[str, bytes]]:
    page = await table.manager.hands("t", OPERATOR, start=1, count=100)
    return [(f"hand {h.number}", h.json) for h in page.hands]


async def test_a_seat_marked_leaving_is_vacated_by_the_move_that_ends_its_hand(
    backend: Backend,
) -> None:
    async def test(table: Table, other: TableManager) -> None:
        await table.run("start-1", commands.StartHand(), table.seat(1))
        await table.move("first")
        # Mid-hand: leaving now is refused, as ever; after the hand, the seat is marked.
        with pytest.raises(errors.HandInProgressError):
            await table.run("leave-now", commands.LeaveSeat(0), table.seat(0))
        marked = view(await table.run("leave", commands.LeaveSeat(0, AFTER_HAND), table.seat(0)))
        assert marked.viewer_seat == 0 and marked.seats[0].player_id == "p0"
        assert [s.leaving for s in marked.seats] == [True, False, False]
        version = await table.version()
        [leaving] = await events_of(table, version)
        assert leaving.seat_leaving == pb.SeatLeavingEvent(seat=0, player_id="p0", leaving=True)
        # Its seat token holds while it plays the hand out.
        await table.play_out("hand-1")

        record, version, _ = await table.manager.load("t")
        assert record.match.hand is not None and record.match.hand.over
        assert record.match.seats[0] == engine.Seat()
        assert record.leaving_seats == () and 0 not in record.token_hashes
        last = await events_of(table, version)
        kinds = [e.WhichOneof("kind") for e in last]
        assert kinds[-1] == "seat_vacated" and "hand_settled" in kinds
        settled = last[kinds.index("hand_settled")].hand_settled
        vacated = last[-1].seat_vacated
        players = dict(
            zip(settled.seats, (p.player_id for p in settled.settlement.players), strict=True)
        )
        totals = dict(zip(settled.seats, settled.totals, strict=True))
        assert players == {0: "p0", 1: "p1"}
        assert (vacated.seat, vacated.player_id, vacated.points) == (0, "p0", totals[0])
        with pytest.raises(UnauthenticatedError):
            table.manager.viewer(table.seat(0), record, None)
        # The settlement feed's record names the seat's player and the totals it left with.
        [feed] = (await table.manager.store.read_outbox("t")).values()
        by_seat = {s.seat: s for s in SettlementRecord.from_bytes(feed).seats}
        assert (by_seat[0].player_id, by_seat[0].total_points) == ("p0", totals[0])
        assert by_seat[0].total_units == by_seat[0].units != 0

        # The hand's history is the hand as played, with the money its players had; the
        # next hand's history says that seat 0 left after it, and the chain verifies.
        [(_, first)] = await histories(table)
        history = json.loads(first)
        assert {p["seat"]: p["player_id"] for p in history["players"]} == {0: "p0", 1: "p1"}
        assert history["seat_units"] == [0, 0, 0]
        await table.join(2, "join-2")
        await table.run("start-2", commands.StartHand(), table.seat(1))
        # Its last move of hand 1, retried now (its answer lost; its token is gone with the
        # seat): a marked seat's answers are kept whole, as a LeaveSeat's, so it gets its
        # first answer byte for byte, applied once.
        version = await table.version()
        assert await table.retry(table.moved[0]) == table.first[table.moved[0]]
        assert await table.version() == version
        await table.play_out("hand-2")
        report = verify_match(await histories(table))
        assert report.ok, report
        second = json.loads((await histories(table))[1][1])
        assert [(c["type"], c["seat"]) for c in second["seat_changes"]] == [
            ("stand_up", 0),
            ("sit_down", 2),
        ]

    await open_table(backend, test)


async def test_a_leave_after_the_hand_withdrawn_keeps_the_seat(backend: Backend) -> None:
    async def test(table: Table, other: TableManager) -> None:
        await table.run("start-1", commands.StartHand(), table.seat(0))
        await table.run("leave", commands.LeaveSeat(1, AFTER_HAND), table.seat(1))
        stays = view(await table.run("stay", commands.LeaveSeat(1, CANCEL), table.seat(1)))
        assert stays.viewer_seat == 1 and not any(s.leaving for s in stays.seats)
        [withdrawn] = await events_of(table, await table.version())
        assert withdrawn.seat_leaving == pb.SeatLeavingEvent(seat=1, player_id="p1")
        # Withdrawing twice, or with no leave asked, is the same: the seat stays. It changes
        # nothing, and so makes no change of the table: the table as it is, same version.
        version = await table.version()
        again = view(await table.run("stay-again", commands.LeaveSeat(1, CANCEL), table.seat(1)))
        assert again.version == version == await table.version() and again.viewer_seat == 1
        assert await events_of(table, version) == [withdrawn]
        await table.play_out("hand-1")
        record, _, _ = await table.manager.load("t")
        assert record.match.hand is not None and record.match.hand.over
        assert [s.player_id for s in record.match.seats] == ["p0", "p1", ""]
        assert table.manager.viewer(table.seat(1), record, None) == 1

    await open_table(backend, test)


async def test_leaving_after_the_hand_when_none_is_in_play_leaves_now(backend: Backend) -> None:
    async def test(table: Table, other: TableManager) -> None:
        left = view(await table.run("leave", commands.LeaveSeat(1, AFTER_HAND), table.seat(1)))
        assert not left.HasField("viewer_seat")  # a spectator's view: the seat is gone
        assert [s.player_id for s in left.seats] == ["p0", "", ""]
        record, version, _ = await table.manager.load("t")
        assert record.leaving_seats == () and 1 not in record.token_hashes
        [vacated] = await events_of(table, version)
        assert vacated.seat_vacated.player_id == "p1"
        # Withdrawing a leave names a seat somebody holds.
        with pytest.raises(errors.UnknownSeatError):
            await table.run("stay", commands.LeaveSeat(1, CANCEL), OPERATOR)

    await open_table(backend, test)


@pytest.mark.parametrize("leaver", [0, 1])
async def test_a_seat_marked_leaving_stays_until_the_fantasyland_hand_owed_is_played(
    backend: Backend, leaver: int
) -> None:
    """Seat 1 owes a Fantasyland hand: neither seat may leave before it is played (the
    rule of docs/rules), so a leave after the hand waits for the end of that hand."""
    async with backend.open() as h:
        seeds = iter(bytes([n]) * 32 for n in range(1, 100))
        manager = TableManager(
            h.store,
            Authenticator(("hands-key",)),
            ProtobufPresenter(),
            server_seed=lambda: next(seeds),
        )
        match = engine.new_match("classic", seats=2)
        owing = (engine.Seat("p0"), engine.Seat("p1", fantasyland=14))
        match = dataclasses.replace(match, seats=owing)
        await manager.create(TableRecord("t", match, 3_600_000, 14_400_000, b"", 0))
        table = Table(manager)

        marked = view(await table.run("leave", commands.LeaveSeat(leaver, AFTER_HAND), OPERATOR))
        assert [s.leaving for s in marked.seats] == [leaver == 0, leaver == 1]
        with pytest.raises(errors.FantasylandOwedError):
            await table.run("leave-now", commands.LeaveSeat(leaver), OPERATOR)
        await table.run("start", commands.StartHand(), OPERATOR)
        record, _, _ = await manager.load("t")
        moves = 0
        while record.match.hand is not None and not record.match.hand.over:
            moves += 1
            seat = engine.seats_to_act(record.match)[0]
            move = DEFAULT_POLICY.choose(record.match, seat)
            if isinstance(move, engine.SetFantasyland):
                command: commands.Command = commands.SetFantasyland(
                    seat, move.top, move.middle, move.bottom, move.discards
                )
            else:
                command = commands.PlaceCards(seat, move.placements, move.discard)
            await table.run(f"move-{moves}", command, OPERATOR)
            record, _, _ = await manager.load("t")
        # These seeds deal seat 1 a Fantasyland it does not stay in: nobody owes one now,
        # and the seat marked leaving has gone with the hand's last move.
        assert [s.fantasyland for s in record.match.seats] == [0, 0]
        assert record.match.seats[leaver] == engine.Seat() and record.leaving_seats == ()
        [(_, played)] = [(n, raw) for n, raw in await histories(table)]
        seated = {p["seat"]: p["player_id"] for p in json.loads(played)["players"]}
        assert seated == {0: "p0", 1: "p1"}


def test_leaving_marks_are_kept_in_the_record_s_head_only_when_there_are_any() -> None:
    match = engine.new_match("classic", seats=3)
    plain = TableRecord("t", match, 30_000, 120_000, b"", 0)
    marked = dataclasses.replace(plain, leaving_seats=(0, 2))
    # The same head as before marks existed when there are none: a release before reads it,
    # and writes it, byte for byte.
    assert b"leaving_seats" not in plain.layout_bytes()
    assert TableRecord.from_bytes(marked.to_bytes()).leaving_seats == (0, 2)
    # Read against the layout of the record before (a move's way), and in format 6.
    _, layout = plain.write()
    assert TableRecord.read(marked.write(layout)[0], layout)[0].leaving_seats == (0, 2)
    assert TableRecord.from_bytes(marked.packed_6_bytes()).leaving_seats == (0, 2)


async def test_marked_seats_leave_with_a_timeout_that_ends_the_hand(backend: Backend) -> None:
    """Two seats marked; the server's own moves (turn clocks run out) play the hand out; the
    last one vacates both, in seat order, and the histories verify."""

    async def test(table: Table, other: TableManager) -> None:
        clock = [table.manager.clock_ms()]
        table.manager.clock_ms = lambda: clock[0]
        await table.join(2, "join-2")
        await table.run("start-1", commands.StartHand(), table.seat(2))
        for seat in (1, 0):
            await table.run(f"leave-{seat}", commands.LeaveSeat(seat, AFTER_HAND), table.seat(seat))
        record, version, _ = await table.manager.load("t")
        assert record.leaving_seats == (0, 1)
        while record.match.hand is not None and not record.match.hand.over:
            seat, deadline = min(record.seat_deadlines, key=lambda d: d[1])
            clock[0] = deadline
            request = Request("t", version, f"timeout-{version}")
            await table.manager.run(request, commands.TimeOut(seat))
            record, version, _ = await table.manager.load("t")
        assert [s.player_id for s in record.match.seats] == ["", "", "p2"]
        kinds = [e.WhichOneof("kind") for e in await events_of(table, version)]
        assert kinds[-2:] == ["seat_vacated", "seat_vacated"]
        vacated = [e.seat_vacated.seat for e in (await events_of(table, version))[-2:]]
        assert vacated == [0, 1]
        assert verify_match(await histories(table)).ok

    await open_table(backend, test)


async def test_a_mark_a_hand_s_end_left_in_place_is_honoured_before_the_next_deal(
    backend: Backend,
) -> None:
    """A replica of the release before ignores marks: a hand it ends vacates nobody. The
    next StartHand stands such a seat up before it deals, in the same commit."""
    async with backend.open() as h:
        manager = TableManager(h.store, Authenticator(("hands-key",)), ProtobufPresenter())
        match = engine.new_match("classic", seats=3)
        seated = (engine.Seat("p0"), engine.Seat("p1"), engine.Seat("p2"))
        match = dataclasses.replace(match, seats=seated)
        record = TableRecord("t", match, 3_600_000, 14_400_000, b"", 0, leaving_seats=(0,))
        record = dataclasses.replace(record, seat_tokens=((0, token_hash("t0")),))
        await manager.create(record)
        table = Table(manager)
        # the marked seat's own StartHand: answered as anyone sees the table, its seat gone
        started = view(await table.run("start", commands.StartHand(), Credentials(seat_token="t0")))
        assert not started.HasField("viewer_seat")
        assert [s.player_id for s in started.seats] == ["", "p1", "p2"]
        assert sorted(s.seat for s in started.hand.seats) == [1, 2]
        kinds = [e.WhichOneof("kind") for e in await events_of(table, started.version)]
        assert kinds[:2] == ["seat_vacated", "hand_started"]
        record, _, _ = await manager.load("t")
        assert record.leaving_seats == ()
        assert [type(c).__name__ for c in record.hand_seat_changes or ()] == ["StandUp"]


async def test_a_mark_kept_by_a_fantasyland_owed_stays_through_changes_between_hands(
    backend: Backend,
) -> None:
    async with backend.open() as h:
        manager = TableManager(h.store, Authenticator(("hands-key",)), ProtobufPresenter())
        match = engine.new_match("classic", seats=3)
        owing = (engine.Seat("p0"), engine.Seat("p1", fantasyland=14), engine.Seat())
        record = TableRecord("t", dataclasses.replace(match, seats=owing), 60_000, 240_000, b"", 0)
        await manager.create(record)
        table = Table(manager)
        await table.run("leave", commands.LeaveSeat(0, AFTER_HAND), OPERATOR)
        await table.join(2, "join-2")
        record, _, _ = await manager.load("t")
        assert record.leaving_seats == (0,) and record.match.seats[0].player_id == "p0"


async def test_a_seat_changes_its_leave_a_few_times_a_hand_and_no_more(backend: Backend) -> None:
    """Each change is a commit that a move sent at the version before meets as stale: a
    player looping them would keep the others' moves, and the turn clock's, from landing."""

    async def test(table: Table, other: TableManager) -> None:
        await table.run("start-1", commands.StartHand(), table.seat(0))
        modes = [AFTER_HAND, CANCEL] * (MAX_LEAVE_CHANGES // 2)
        for n, mode in enumerate(modes):
            await table.run(f"change-{n}", commands.LeaveSeat(1, mode), table.seat(1))
        version = await table.version()
        with pytest.raises(LeaveChangesSpentError):
            await table.run("one-more", commands.LeaveSeat(1, AFTER_HAND), table.seat(1))
        assert await table.version() == version
        # Asking for the mark it has is no change: answered, and not refused.
        await table.run("no-change", commands.LeaveSeat(1, CANCEL), table.seat(1))
        assert await table.version() == version
        # Another seat's changes count for it alone; a new hand starts every count again.
        await table.run("seat-0", commands.LeaveSeat(0, AFTER_HAND), table.seat(0))
        await table.run("seat-0-stays", commands.LeaveSeat(0, CANCEL), table.seat(0))
        await table.play_out("hand-1")
        await table.run("start-2", commands.StartHand(), table.seat(0))
        await table.run("again", commands.LeaveSeat(1, AFTER_HAND), table.seat(1))
        record, _, _ = await table.manager.load("t")
        assert record.leaving_seats == (1,) and record.leaving_changes == ((1, 1),)

    await open_table(backend, test)


async def test_a_leave_that_changes_nothing_changes_nothing_again_when_sent_again(
    backend: Backend,
) -> None:
    """It makes no commit and keeps no record: sent again once the table has moved on, it is
    answered with the table as it is then (not STALE_VERSION), and still changes nothing; a
    retry of the mark the seat did set gets that first answer."""

    async def test(table: Table, other: TableManager) -> None:
        await table.run("start-1", commands.StartHand(), table.seat(0))
        marked = await table.run("mark", commands.LeaveSeat(1, AFTER_HAND), table.seat(1))
        again = await table.run("mark-again", commands.LeaveSeat(1, AFTER_HAND), table.seat(1))
        unmarked = await table.run("cancel-0", commands.LeaveSeat(0, CANCEL), table.seat(0))
        version = await table.version()
        assert view(again).version == view(unmarked).version == version
        await table.move("move-1")
        await table.move("move-2")
        for name in ("mark-again", "cancel-0"):
            answer = view(await table.retry(name))
            assert answer.version == version + 2, name
            assert [s.leaving for s in answer.seats[:2]] == [False, True], name
        assert await table.retry("mark") == marked
        record, now, _ = await table.manager.load("t")
        assert now == version + 2
        assert record.leaving_seats == (1,) and record.leaving_changes == ((1, 1),)
        # another request under an id the caller used is refused, at any version
        for version_sent in (now, now - 1):
            reused = Request("t", version_sent, "start-1", digest="another-request")
            with pytest.raises(RequestIdReusedError):
                await table.manager.run(reused, commands.LeaveSeat(0, CANCEL), table.seat(0))
        # a version the table never had (a store that lost writes) is stale, as for any change
        ahead = Request("t", now + 3, "ahead", digest="ahead")
        with pytest.raises(StaleVersionError):
            await table.manager.run(ahead, commands.LeaveSeat(1, AFTER_HAND), table.seat(1))

    await open_table(backend, test)
