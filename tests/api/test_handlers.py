"""The handlers without a transport: a request message and credentials in, a response
message out, or an error the one table turns into an ApiError (what a gRPC or any other
adapter sends). Nothing here opens a channel or builds a servicer context."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from ofc import engine
from ofc_service import auth, store
from ofc_service.api import tables
from ofc_service.api.errors import ApiError, Code, api_error
from ofc_service.api.rules import RulesHandlers
from ofc_service.api.tables import ProtobufPresenter, TableHandlers
from ofc_service.application import commands
from ofc_service.application.manager import TableManager
from ofc_service.application.records import TableRecord
from ofc_service.auth import Authenticator, Credentials
from ofcpoker.v1 import cards_pb2
from ofcpoker.v1 import rules_service_pb2 as rules_pb
from ofcpoker.v1 import table_service_pb2 as pb

KEY = "handler-key"
OPERATOR = Credentials(api_key=KEY)


def handlers() -> TableHandlers:
    manager = TableManager(store.MemoryTableStore(), Authenticator([KEY]), ProtobufPresenter())
    return TableHandlers(manager)


def started(raw: bytes) -> pb.StartHandResponse:
    """A move's handler answers with its response serialised (sent as it is, see api.rpc)."""
    return pb.StartHandResponse.FromString(raw)


def refused(call: Any) -> ApiError:
    """The error a client would be sent for the one ``call`` raises."""
    with pytest.raises(Exception) as caught:
        asyncio.run(call())
    return api_error(caught.value)


def refusal(call: Any) -> tuple[str, str, str]:
    """The (code, reason, field) a client would be sent for the error ``call`` raises."""
    error = refused(call)
    return error.code.name, error.reason, error.field


async def seated_table(table: TableHandlers) -> tuple[str, list[str]]:
    created = await table.CreateTable(pb.CreateTableRequest(seats=2, request_id="c"), OPERATOR)
    tokens = []
    for seat, player in enumerate(("ann", "bob")):
        join = pb.JoinSeatRequest(
            table_id=created.table_id, seat=seat, player_id=player,
            expected_version=seat + 1, request_id=f"j{seat}",
        )  # fmt: skip
        tokens.append((await table.JoinSeat(join, Credentials())).seat_token)
    return created.table_id, tokens


def test_a_hand_is_played_through_the_handlers_alone() -> None:
    table = handlers()

    async def play() -> tuple[pb.PlaceCardsResponse, int]:
        table_id, tokens = await seated_table(table)
        start = pb.StartHandRequest(table_id=table_id, expected_version=3, request_id="s")
        turn = started(await table.StartHand(start, OPERATOR)).table.hand.turn
        mine = Credentials(seat_token=tokens[turn])
        view = await table.GetTable(pb.GetTableRequest(table_id=table_id), mine)
        pending = next(s.pending for s in view.table.hand.seats if s.seat == turn)
        place = pb.PlaceCardsRequest(
            table_id=table_id, seat=turn, expected_version=4, request_id="p",
            placements=[pb.Placement(card=c, row=cards_pb2.ROW_POSITION_BOTTOM) for c in pending],
        )  # fmt: skip
        return pb.PlaceCardsResponse.FromString(await table.PlaceCards(place, mine)), len(pending)

    placed, cards = asyncio.run(play())
    assert placed.table.version == 5
    mine = next(s for s in placed.table.hand.seats if s.seat == placed.table.viewer_seat)
    assert len(mine.board.bottom) == cards == 5


def test_errors_reach_the_caller_as_the_table_says() -> None:
    table = handlers()

    async def other_seats_move() -> None:
        table_id, tokens = await seated_table(table)
        start = pb.StartHandRequest(table_id=table_id, expected_version=3, request_id="s")
        turn = started(await table.StartHand(start, OPERATOR)).table.hand.turn
        place = pb.PlaceCardsRequest(
            table_id=table_id, seat=turn, expected_version=4, request_id="x"
        )
        await table.PlaceCards(place, Credentials(seat_token=tokens[1 - turn]))

    async def stale() -> None:
        table_id, _ = await seated_table(table)
        await table.StartHand(
            pb.StartHandRequest(table_id=table_id, expected_version=1, request_id="old"), OPERATOR
        )

    async def no_such_hand() -> None:
        table_id, _ = await seated_table(table)
        await table.GetHandHistory(
            pb.GetHandHistoryRequest(table_id=table_id, hand_number=1), OPERATOR
        )

    async def no_such_table() -> None:
        await table.GetTable(pb.GetTableRequest(table_id="nowhere"), OPERATOR)

    async def bad_card() -> None:
        await RulesHandlers().EvaluateRow(
            rules_pb.EvaluateRowRequest(cards=["As", "Zz", "Kd"]), Credentials()
        )

    assert refusal(other_seats_move) == ("PERMISSION_DENIED", "PERMISSION_DENIED", "")
    assert refusal(stale) == ("ABORTED", "STALE_VERSION", "expected_version")
    assert refusal(no_such_hand) == ("NOT_FOUND", "HAND_NOT_FOUND", "hand_number")
    assert refusal(no_such_table) == ("NOT_FOUND", "TABLE_NOT_FOUND", "table_id")
    assert refusal(bad_card) == ("INVALID_ARGUMENT", "INVALID_CARD", "cards[1]")


def test_a_leave_s_mode_is_checked_and_is_part_of_its_request() -> None:
    table = handlers()

    def leave(table_id: str, mode: int, version: int, request_id: str) -> pb.LeaveSeatRequest:
        request = pb.LeaveSeatRequest(
            table_id=table_id, seat=1, expected_version=version, request_id=request_id
        )
        request.mode = mode  # type: ignore[assignment]  # an unknown value too
        return request

    async def unknown_mode() -> None:
        table_id, tokens = await seated_table(table)
        await table.LeaveSeat(leave(table_id, 9, 3, "l"), Credentials(seat_token=tokens[1]))

    async def same_id_other_mode() -> None:
        table_id, tokens = await seated_table(table)
        bob = Credentials(seat_token=tokens[1])
        await table.StartHand(
            pb.StartHandRequest(table_id=table_id, expected_version=3, request_id="s"), bob
        )
        marked = pb.LeaveSeatResponse.FromString(
            await table.LeaveSeat(leave(table_id, pb.LEAVE_MODE_AFTER_HAND, 4, "l"), bob)
        )
        assert marked.table.seats[1].leaving and marked.table.viewer_seat == 1
        await table.LeaveSeat(leave(table_id, pb.LEAVE_MODE_CANCEL, 5, "l"), bob)

    assert refusal(unknown_mode) == ("INVALID_ARGUMENT", "INVALID_INPUT", "mode")
    assert refusal(same_id_other_mode) == (
        "INVALID_ARGUMENT",
        "REQUEST_ID_REUSED",
        "request_id",
    )


@pytest.mark.parametrize(
    "player_id",
    ["ann ", " ann", " ", "bob\u00a0", "ann\u200b", "", "p" * 65],
    ids=["trailing space", "leading space", "a space", "nbsp", "zero width", "empty", "65"],
)
def test_a_player_id_that_could_pass_for_another_is_refused_and_changes_nothing(
    player_id: str,
) -> None:
    """ "ann " beside a seated "ann" would look the same in every view, log and history."""
    table = handlers()
    versions = []

    async def join() -> None:
        created = await table.CreateTable(pb.CreateTableRequest(seats=3, request_id="c"), OPERATOR)
        request = pb.JoinSeatRequest(
            table_id=created.table_id, seat=0, player_id="ann", expected_version=1,
            request_id="j0",
        )  # fmt: skip
        await table.JoinSeat(request, Credentials())
        try:
            request.seat, request.player_id = 1, player_id
            request.expected_version, request.request_id = 2, "j1"
            await table.JoinSeat(request, Credentials())
        finally:
            got = await table.GetTable(pb.GetTableRequest(table_id=created.table_id), OPERATOR)
            versions.append((got.table.version, [s.player_id for s in got.table.seats]))

    assert refusal(join) == ("INVALID_ARGUMENT", "INVALID_INPUT", "player_id")
    assert versions == [(2, ["ann", "", ""])]


def test_a_leave_now_is_the_same_request_with_its_mode_unset() -> None:
    """LEAVE_MODE_NOW asks what a LeaveSeat without ``mode`` asks, and what a replica of the
    release before ``mode`` records (it drops the field it does not know): a retry under the
    same request id, with the mode sent or not, gets the first answer, not REQUEST_ID_REUSED,
    whichever way the first went."""

    async def leave_twice(
        first: pb.LeaveMode.ValueType, retry: pb.LeaveMode.ValueType
    ) -> tuple[bytes, bytes]:
        table = handlers()
        table_id, tokens = await seated_table(table)
        bob = Credentials(seat_token=tokens[1])
        requests = [
            pb.LeaveSeatRequest(
                table_id=table_id, seat=1, expected_version=3, request_id="l", mode=mode
            )
            for mode in (first, retry)
        ]
        return await table.LeaveSeat(requests[0], bob), await table.LeaveSeat(requests[1], bob)

    unset, now = pb.LEAVE_MODE_UNSPECIFIED, pb.LEAVE_MODE_NOW
    for first, retry in [(unset, now), (now, unset)]:
        answered, again = asyncio.run(leave_twice(first, retry))
        assert again == answered
        assert pb.LeaveSeatResponse.FromString(answered).table.seats[1].player_id == ""


def test_a_refusal_that_names_the_table_quotes_its_id() -> None:
    # A table id is random text that may hold a card's code ("2h-..."): quoted, a reader (or
    # an audit that looks for cards in messages) can tell it from the message's words.
    table = handlers()
    table_id = ""

    async def no_such_hand() -> None:
        nonlocal table_id
        table_id, _ = await seated_table(table)
        await table.GetHandHistory(
            pb.GetHandHistoryRequest(table_id=table_id, hand_number=1), OPERATOR
        )

    async def no_such_table() -> None:
        await table.GetTable(pb.GetTableRequest(table_id="2h-nowhere"), OPERATOR)

    message = refused(no_such_hand).message  # the call names the table it seats
    assert repr(table_id) in message
    assert "'2h-nowhere'" in refused(no_such_table).message


def test_an_api_error_is_itself_and_names_its_field_violation() -> None:
    error = ApiError(Code.FAILED_PRECONDITION, "NOT_YOUR_TURN", "wait", "seat")
    assert api_error(error) is error
    assert error.field_violations == (("seat", "wait"),)
    assert ApiError(Code.UNAVAILABLE, "NEWER_SERVER", "retry").field_violations == ()


def test_watch_is_an_async_iterator_of_responses_starting_with_a_snapshot() -> None:
    table = handlers()

    async def first() -> pb.WatchResponse:
        table_id, _ = await seated_table(table)
        stream = table.Watch(pb.WatchRequest(table_id=table_id), Credentials())
        try:
            first = await anext(stream)
            assert isinstance(first, pb.WatchResponse)  # a snapshot (events come as bytes)
            return first
        finally:
            await stream.aclose()  # type: ignore[attr-defined]

    snapshot = asyncio.run(first()).snapshot
    assert snapshot.version == 3 and [s.player_id for s in snapshot.seats] == ["ann", "bob"]


@pytest.mark.parametrize("version", [0, 1, 127, 128, 2**40])
@pytest.mark.parametrize(
    "kind",
    [
        pb.TableEvent(seat_taken=pb.SeatTakenEvent(seat=1, player_id="bob")),
        pb.TableEvent(seat_vacated=pb.SeatVacatedEvent(seat=0, player_id="ann", points=-3)),
        pb.TableEvent(cards_placed=pb.CardsPlacedEvent(seat=1, street=2)),
        pb.TableEvent(button_moved=pb.ButtonMovedEvent(from_seat=0, to_seat=1)),
    ],
)
def test_a_watched_event_is_its_stored_bytes_with_its_id_spliced_in(
    kind: pb.TableEvent, version: int
) -> None:
    stored = pb.TableEvent(version=version)
    stored.MergeFrom(kind)
    part = stored.SerializeToString()
    field = kind.WhichOneof("kind")
    assert field is not None
    assert tables._event_kind(part) == pb.TableEvent.DESCRIPTOR.fields_by_name[field].number
    spliced = [tables._with_event_id(part, f"{version}-{k}") for k in range(3)]
    batch = pb.WatchResponse.FromString(tables._watch_events(spliced))
    expected = []
    for k in range(3):
        event = pb.TableEvent.FromString(part)
        event.event_id = f"{version}-{k}"
        expected.append(event)
    assert list(batch.events.events) == expected
    single = pb.WatchResponse.FromString(tables._field(tables._WATCH_EVENT, spliced[0]))
    assert single.event == expected[0]


def test_a_move_s_response_is_the_bytes_of_its_message() -> None:
    """The presenter writes a move's response as its view's bytes behind the `table` key:
    exactly what serialising the response message writes."""
    match, _ = engine.replay(
        engine.new_match(seats=2),
        [engine.SitDown(0, "ann"), engine.SitDown(1, "bob"), engine.StartHand(bytes(32))],
    )
    record = TableRecord("t1", match, 30_000, 120_000, b"seed", 0, seat_deadlines=((1, 99),))
    moves: list[tuple[commands.Command, Any, int | None]] = [
        (commands.LeaveSeat(0), pb.LeaveSeatResponse, None),
        (commands.StartHand(), pb.StartHandResponse, 1),
        (commands.SetClientSeed(1, b"mine"), pb.SetClientSeedResponse, 1),
        (commands.PlaceCards(1, (), None), pb.PlaceCardsResponse, 1),
        (commands.SetFantasyland(0, (), (), (), ()), pb.SetFantasylandResponse, 0),
    ]
    for command, response_type, seat in moves:
        change = commands.Change(record, (), seat)
        raw = ProtobufPresenter().response(commands.Outcome(command, "r", change, 7))
        expected = response_type(table=tables.table_view(record, 7, seat)).SerializeToString()
        assert raw == expected, command
        assert response_type.FromString(raw).table.version == 7
    timeout = commands.Outcome(commands.TimeOut(1), "r", commands.Change(record, ()), 7)
    assert ProtobufPresenter().response(timeout) == b""  # nobody reads the server's own


def test_a_fantasyland_set_s_refusals_name_the_request_s_fields() -> None:
    # The engine names a card of a set by its row ("top[0]"); the request holds the rows
    # in its board, and a client program reads the field to point at the card.
    manager = TableManager(store.MemoryTableStore(), Authenticator([KEY]), ProtobufPresenter())
    table = TableHandlers(manager)
    match, _ = engine.replay(
        engine.new_match("pineapple", seats=2), [engine.SitDown(s, f"p{s}") for s in range(2)]
    )
    owed = dataclasses.replace(match.seats[0], fantasyland=14)
    match = dataclasses.replace(match, seats=(owed, match.seats[1]))
    request = pb.SetFantasylandRequest(table_id="fl", seat=0, request_id="f")

    async def deal() -> list[str]:
        await manager.create(TableRecord("fl", match, 30_000, 60_000, b"", 0))
        start = pb.StartHandRequest(table_id="fl", expected_version=1, request_id="s")
        request.expected_version = started(await table.StartHand(start, OPERATOR)).table.version
        record, _, _ = await manager.load("fl")
        assert record.match.hand is not None
        return [str(c) for c in record.match.hand.seat(0).pending]

    dealt = asyncio.run(deal())
    not_dealt = next(c for c in ("2c", "3c", "4c", "5c") if c not in dealt)

    def refused_set(cards: list[str], discards: list[str]) -> tuple[str, str, str, str]:
        request.board.CopyFrom(cards_pb2.Board(top=cards[:3], middle=cards[3:8], bottom=cards[8:]))
        request.discards[:] = discards

        async def call() -> bytes:
            return await table.SetFantasyland(request, OPERATOR)

        error = refused(call)
        return error.code.name, error.reason, error.field, error.message

    assert refused_set([not_dealt, *dealt[1:13]], dealt[13:]) == (
        "FAILED_PRECONDITION", "CARD_NOT_DEALT", "board.top[0]",
        f"board.top[0]: {not_dealt} was not dealt to seat 0",
    )  # fmt: skip
    assert refused_set([*dealt[:3], dealt[0], *dealt[4:13]], dealt[13:]) == (
        "INVALID_ARGUMENT", "DUPLICATE_CARD", "board.middle[0]",
        f"card {dealt[0]} appears twice: board.top[0] and board.middle[0]",
    )  # fmt: skip
    assert refused_set(dealt[:13], [dealt[12]]) == (
        "INVALID_ARGUMENT", "DUPLICATE_CARD", "discards[0]",
        f"card {dealt[12]} appears twice: board.bottom[4] and discards[0]",
    )  # fmt: skip
    # A card twice is refused whatever the table's state: from the seat that plays this hand
    # street by street too, which without the duplicate is NOT_IN_FANTASYLAND.
    request.seat = 1
    assert refused_set([*dealt[:3], dealt[0], *dealt[4:13]], dealt[13:])[:3] == (
        "INVALID_ARGUMENT", "DUPLICATE_CARD", "board.middle[0]",
    )  # fmt: skip
    assert refused_set(dealt[:13], dealt[13:])[:2] == ("FAILED_PRECONDITION", "NOT_IN_FANTASYLAND")
    # and a street's placement by the Fantasyland seat (IN_FANTASYLAND without the duplicate)
    place = pb.PlaceCardsRequest(table_id="fl", seat=0, request_id="p")
    place.expected_version = request.expected_version
    for _ in range(2):
        place.placements.add(card=dealt[0], row=cards_pb2.ROW_POSITION_BOTTOM)

    async def place_twice() -> bytes:
        return await table.PlaceCards(place, OPERATOR)

    error = refused(place_twice)
    assert (error.reason, error.field, error.message) == (
        "DUPLICATE_CARD", "placements[1].card",
        f"card {dealt[0]} appears twice: placements[0].card and placements[1].card",
    )  # fmt: skip
    del place.placements[1]
    assert refused(place_twice).reason == "IN_FANTASYLAND"


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ((("x-ofc-seat-token", "st_t.a"), ("x-ofc-seat-token", "st_t.a")), ("st_t.a", None)),
        ((("x-ofc-seat-token", "st_t.a"), ("authorization", "Bearer st_t.a")), ("st_t.a", None)),
        ((("x-ofc-api-key", "k"), ("x-ofc-seat-token", "st_t.a")), ("st_t.a", "k")),
        ((("x-ofc-api-key", ""), ("authorization", "Bearer k")), (None, "k")),
        ((("x-ofc-seat-token", "st_t.a"), ("x-ofc-seat-token", "st_t.b")), "seat tokens"),
        ((("authorization", "Bearer st_t.b"), ("x-ofc-seat-token", "st_t.a")), "seat tokens"),
        ((("x-ofc-api-key", "k"), ("authorization", "Bearer other")), "API keys"),
    ],
)
def test_credentials_sent_twice_must_agree(
    metadata: tuple[tuple[str, str], ...], expected: tuple[str | None, str | None] | str
) -> None:
    if isinstance(expected, str):  # which one acts is never the order of the headers'
        with pytest.raises(auth.UnauthenticatedError, match=f"two different {expected}"):
            Credentials.from_metadata(metadata)
        with pytest.raises(auth.UnauthenticatedError):
            Credentials.from_metadata(metadata[::-1])
    else:
        creds = Credentials.from_metadata(metadata)
        assert (creds.seat_token, creds.api_key) == expected
