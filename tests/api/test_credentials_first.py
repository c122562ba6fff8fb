"""Credentials are judged first, on every call that presents them.

A request naming a seat the table does not have is refused for its credentials before its
seat (no credentials: UNAUTHENTICATED; another table's token: PERMISSION_DENIED), as a stale
one is; only a caller who may act at all learns that the seat does not exist. Reads that
anyone may make without credentials (GetHandHistory, ListHands) still refuse credentials
that do not hold, as GetTable does: a wrong API key or a seat token that was left is never
read as no credentials. And a finished hand's settlement, in every view of it, names the
players who played it, whoever holds their seats since.
"""

from __future__ import annotations

import asyncio

import grpc
import pytest
from ofc import engine
from ofc_service.api import settlement_feed
from ofc_service.application.commands import TimeOut
from ofc_service.application.manager import Request
from ofc_service.auth import Authenticator
from ofc_service.store import MemorySettlementFeed
from ofcpoker.v1 import ruleset_pb2
from ofcpoker.v1 import settlement_feed_pb2 as feed_pb
from ofcpoker.v1 import table_service_pb2 as pb

from tests.api.test_create_table import Aborted, Context
from tests.api.test_request_records import OPERATOR, Service, seat_md, seated
from tests.in_process import InProcess


def _table(service: Service, name: str = "") -> tuple[str, list[str]]:
    """A classic table without Fantasyland (a seat owed one may not leave, and these tests
    leave after a hand) of ann (seat 0) and bob (seat 1), its first hand started."""
    spec = ruleset_pb2.RulesetSpec(preset="classic")
    spec.overrides.fantasyland_entry.SetInParent()
    table_id, tokens, _ = seated(service, spec, name)
    return table_id, tokens


def _play_out(service: Service, table_id: str) -> int:
    """Every seat's moves made by the server's timeout policy until the hand is over; the
    table's version then."""
    manager = service.manager

    async def play() -> int:
        while True:
            record, version, _ = await manager.load(table_id)
            waiting = engine.seats_to_act(record.match)
            if not waiting:
                return version
            await manager.run(Request(table_id, version, f"t{version}"), TimeOut(waiting[0]))

    return asyncio.run(play())


REFUSED = grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED"
DENIED = grpc.StatusCode.PERMISSION_DENIED, "PERMISSION_DENIED"


def _seat_0_left(service: Service) -> tuple[str, list[str], str, list[str], int]:
    """A table whose first hand was played out and whose seat 0 was then left, another
    table's tokens beside it: (table id, its tokens, the other's id, its tokens, version)."""
    table_id, tokens = _table(service)
    other_id, other_tokens = _table(service, "other")
    version = _play_out(service, table_id)
    left = pb.LeaveSeatRequest(table_id=table_id, seat=0, expected_version=version,
                               request_id="bye")  # fmt: skip
    service.call("LeaveSeat", left, seat_md(tokens[0]))
    return table_id, tokens, other_id, other_tokens, version + 1


def _version(service: Service, table_id: str) -> int:
    view = service.call("GetTable", pb.GetTableRequest(table_id=table_id), OPERATOR)
    return int(view.table.version)


WRONG_KEY = (("x-ofc-api-key", "not-a-key"),)


@pytest.mark.parametrize("stale", [False, True])
def test_a_seat_the_table_lacks_is_refused_for_the_credentials_first(stale: bool) -> None:
    service = Service()
    table_id, tokens = _table(service)
    other_id, other_tokens = _table(service, "other")
    version = 1 if stale else _version(service, table_id)
    place = pb.PlaceCardsRequest(table_id=table_id, seat=7, expected_version=version,
                                 request_id="r")  # fmt: skip
    refused = grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED"
    assert service.refused("PlaceCards", place) == refused
    assert service.refused("PlaceCards", place, WRONG_KEY) == refused
    assert service.refused("PlaceCards", place, seat_md(f"st_{table_id}.made-up")) == refused
    denied = grpc.StatusCode.PERMISSION_DENIED, "PERMISSION_DENIED"
    assert service.refused("PlaceCards", place, seat_md(other_tokens[0])) == denied
    assert service.refused("PlaceCards", place, seat_md(tokens[0])) == denied  # not its seat
    # a caller who may act for any seat learns what is wrong with the request
    expected = (
        (grpc.StatusCode.ABORTED, "STALE_VERSION")
        if stale
        else (grpc.StatusCode.FAILED_PRECONDITION, "UNKNOWN_SEAT")
    )
    assert service.refused("PlaceCards", place, OPERATOR) == expected
    leave = pb.LeaveSeatRequest(table_id=table_id, seat=9, expected_version=version,
                                request_id="l")  # fmt: skip
    assert service.refused("LeaveSeat", leave) == refused
    assert other_id != table_id


def test_an_operator_viewing_as_a_seat_the_table_lacks_is_told_so_as_a_mover_is() -> None:
    """``as_seat`` out of the table's seats is the same mistake as a move's unknown seat
    (UNKNOWN_SEAT, a precondition of this table), and without an operator key it is ignored."""
    service = Service()
    table_id, tokens = _table(service)
    unknown = grpc.StatusCode.FAILED_PRECONDITION, "UNKNOWN_SEAT"
    view = pb.GetTableRequest(table_id=table_id, as_seat=2)
    assert service.refused("GetTable", view, OPERATOR) == unknown
    assert service.call("GetTable", view, seat_md(tokens[1])).table.viewer_seat == 1


def test_history_reads_refuse_credentials_that_do_not_hold() -> None:
    service = Service()
    table_id, tokens = _table(service)
    version = _play_out(service, table_id)
    left = pb.LeaveSeatRequest(table_id=table_id, seat=0, expected_version=version,
                               request_id="bye")  # fmt: skip
    service.call("LeaveSeat", left, seat_md(tokens[0]))
    history = pb.GetHandHistoryRequest(table_id=table_id, hand_number=1)
    hands = pb.ListHandsRequest(table_id=table_id)
    refused = grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED"
    for credentials in (WRONG_KEY, seat_md(tokens[0]), seat_md(f"st_{table_id}.made-up")):
        assert service.refused("GetHandHistory", history, credentials) == refused
        assert service.refused("ListHands", hands, credentials) == refused
        assert service.refused("GetTable", pb.GetTableRequest(table_id=table_id),
                               credentials) == refused  # fmt: skip
    # anyone may read them: no credentials, a seat token that holds, an operator key
    for credentials in ((), seat_md(tokens[1]), OPERATOR):
        assert service.call("GetHandHistory", history, credentials).hand_number == 1
        assert [h.hand_number for h in service.call("ListHands", hands, credentials).hands] == [1]
    assert service.refused(
        "GetHandHistory", pb.GetHandHistoryRequest(table_id="t-missing", hand_number=1)
    ) == (grpc.StatusCode.NOT_FOUND, "TABLE_NOT_FOUND")


def test_a_finished_hand_names_its_players_after_their_seats_change_hands() -> None:
    service = Service()
    table_id, tokens = _table(service)
    version = _play_out(service, table_id)

    def named(view: pb.TableView) -> dict[int, str]:  # seat -> the name its result goes by
        players = view.hand.settlement.players
        return {view.hand.seats[p.index].seat: p.player_id for p in players}

    spectator = service.call("GetTable", pb.GetTableRequest(table_id=table_id)).table
    assert named(spectator) == {0: "ann", 1: "bob"}
    left = pb.LeaveSeatRequest(table_id=table_id, seat=0, expected_version=version,
                               request_id="bye")  # fmt: skip
    after_leave = service.call("LeaveSeat", left, seat_md(tokens[0])).table
    join = pb.JoinSeatRequest(table_id=table_id, seat=0, player_id="mallory",
                              expected_version=version + 1, request_id="hi")  # fmt: skip
    joined = service.call("JoinSeat", join)
    for view in (
        after_leave,
        joined.table,
        service.call("GetTable", pb.GetTableRequest(table_id=table_id)).table,
        service.call(
            "GetTable", pb.GetTableRequest(table_id=table_id), seat_md(joined.seat_token)
        ).table,
        service.call("GetTable", pb.GetTableRequest(table_id=table_id, as_seat=0), OPERATOR).table,
    ):
        assert named(view) == {0: "ann", 1: "bob"}
    history = service.call(
        "GetHandHistory", pb.GetHandHistoryRequest(table_id=table_id, hand_number=1)
    )
    assert sorted(p.player_id for p in history.settlement.players) == ["ann", "bob"]


def test_a_join_refuses_credentials_that_do_not_hold_and_changes_nothing() -> None:
    """Anyone may take a free seat; credentials sent with the join are checked all the same:
    a left seat's token, a made-up one or a wrong key gets nothing (no seat, no token, no
    request record), another table's token is PERMISSION_DENIED."""
    service = Service()
    table_id, tokens, other_id, other_tokens, version = _seat_0_left(service)
    for n, (credentials, expected) in enumerate(
        [
            (seat_md(tokens[0]), REFUSED),  # its seat was left
            (seat_md(f"st_{table_id}.{'A' * 32}"), REFUSED),  # made up, naming this table
            (seat_md("st_garbage"), REFUSED),  # of no shape ever issued
            (WRONG_KEY, REFUSED),
            (seat_md(other_tokens[0]), DENIED),
        ]
    ):
        for seat, stale in ((0, False), (0, True), (9, False)):  # credentials come first
            join = pb.JoinSeatRequest(
                table_id=table_id, seat=seat, player_id="mallory",
                expected_version=version - stale, request_id=f"j{n}",
            )  # fmt: skip
            assert service.refused("JoinSeat", join, credentials) == expected, (n, seat, stale)
    assert _version(service, table_id) == version  # nothing changed
    # without credentials the join goes on
    join = pb.JoinSeatRequest(table_id=table_id, seat=0, player_id="cy",
                              expected_version=version, request_id="j-ok")  # fmt: skip
    assert service.call("JoinSeat", join).seat_token.startswith(f"st_{table_id}.")
    assert other_id != table_id


def test_a_server_without_keys_refuses_a_key_on_the_calls_about_no_table() -> None:
    """Without operator keys (development) anyone may create a table and read the feed, but
    an API key sent is wrong there as everywhere (UNAUTHENTICATED), never ignored."""
    service = Service(keys=())
    create = pb.CreateTableRequest(seats=2, request_id="c")
    refused = grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED"
    assert service.refused("CreateTable", create, WRONG_KEY) == refused
    assert service.call("CreateTable", create).table_id
    feed = InProcess(
        settlement_feed.SettlementFeedHandlers(MemorySettlementFeed(), Authenticator()),
        settlement_feed.SERVICE,
    )

    def acknowledge(metadata: tuple[tuple[str, str], ...]) -> object:
        ack = feed_pb.AcknowledgeRequest(group="g", settlement_ids=["t:1"])
        return asyncio.run(feed.Acknowledge(ack, Context(metadata=metadata)))

    with pytest.raises(Aborted) as caught:
        acknowledge(WRONG_KEY)
    assert (caught.value.code, caught.value.reason) == refused
    assert acknowledge(()) is not None


def test_a_seat_token_sent_beside_an_operator_key_must_hold_too() -> None:
    """The key decides what a call may do, but a seat token sent with it is checked all the
    same (credentials presented are checked, never ignored): a left seat's or made-up token
    is UNAUTHENTICATED, another table's PERMISSION_DENIED, on reads, joins and moves alike,
    and nothing changes; with a token that holds, the key acts as it would alone."""
    service = Service()
    table_id, tokens, _, other_tokens, version = _seat_0_left(service)
    calls = [
        ("GetTable", pb.GetTableRequest(table_id=table_id, as_seat=1)),
        ("ListHands", pb.ListHandsRequest(table_id=table_id)),
        ("GetHandHistory", pb.GetHandHistoryRequest(table_id=table_id, hand_number=1)),
        ("JoinSeat", pb.JoinSeatRequest(table_id=table_id, seat=0, player_id="mallory",
                                        expected_version=version, request_id="op-j")),
        ("StartHand", pb.StartHandRequest(table_id=table_id, expected_version=version,
                                          request_id="op-s")),
        ("LeaveSeat", pb.LeaveSeatRequest(table_id=table_id, seat=1, expected_version=version,
                                          request_id="op-l")),
    ]  # fmt: skip
    for token, expected in (
        (tokens[0], REFUSED),  # its seat was left
        (f"st_{table_id}.{'A' * 32}", REFUSED),  # made up, naming this table
        ("st_garbage", REFUSED),  # of no shape ever issued
        (other_tokens[0], DENIED),
    ):
        for method, request in calls:
            credentials = (*OPERATOR, *seat_md(token))
            assert service.refused(method, request, credentials) == expected, (method, token)
    assert _version(service, table_id) == version  # nothing changed
    holds = (*OPERATOR, *seat_md(tokens[1]))
    assert service.call("GetTable", calls[0][1], holds).table.viewer_seat == 1
    joined = service.call("JoinSeat", calls[3][1], holds)
    assert joined.table.version == version + 1 and joined.seat_token
