"""Request records during a rolling upgrade, in process on the in-memory store.

Releases before this one kept a request's record under the request id alone, with no digest
and no caller. Such a record still answers a retry during the upgrade's retry window, but
only a retry whose credentials pass the checks a new request meets now (the seat's own
token or an operator key; anyone for JoinSeat, which needs none, as before): a stranger
gets what it would get without the record. Records of this release are found only by the
caller that made them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
from collections.abc import Sequence
from typing import Any

import grpc
import pytest
from ofc_service.api.tables import SERVICE, ProtobufPresenter, TableHandlers
from ofc_service.application import requests
from ofc_service.application.manager import TableManager
from ofc_service.application.requests import request_key
from ofc_service.auth import Authenticator, Credentials, caller_identity
from ofc_service.store import MemoryTableStore
from ofcpoker.v1 import cards_pb2, ruleset_pb2
from ofcpoker.v1 import table_service_pb2 as pb

from tests.api.test_create_table import Aborted, Context
from tests.in_process import InProcess

KEY = "operator-key"
OPERATOR = (("x-ofc-api-key", KEY),)


class Service:
    def __init__(self, keys: Sequence[str] = (KEY,)) -> None:
        self.store = MemoryTableStore()
        self.manager = TableManager(self.store, Authenticator(keys), ProtobufPresenter())
        self.servicer = InProcess(TableHandlers(self.manager), SERVICE)

    def call(self, method: str, request: Any, metadata: Sequence[tuple[str, str]] = ()) -> Any:
        async def run() -> Any:
            context: Any = Context(metadata=metadata)
            return await getattr(self.servicer, method)(request, context)

        return asyncio.run(run())

    def refused(
        self, method: str, request: Any, metadata: Sequence[tuple[str, str]] = ()
    ) -> tuple[grpc.StatusCode, str]:
        with pytest.raises(Aborted) as caught:
            self.call(method, request, metadata)
        return caught.value.code, caught.value.reason

    def as_written_before(self, table_id: str, request_id: str, metadata: Any) -> None:
        """Move a record of this release to where, and as, the release before wrote it."""
        caller = caller_identity(Credentials.from_metadata(metadata))
        record = self.store._records.pop((table_id, request_key(request_id, caller)))
        legacy = dataclasses.replace(record, digest="")
        self.store._records[table_id, request_key(request_id)] = legacy


def seat_md(token: str) -> tuple[tuple[str, str], ...]:
    return (("x-ofc-seat-token", token),)


def seated(
    service: Service, ruleset: ruleset_pb2.RulesetSpec | None = None, name: str = ""
) -> tuple[str, list[str], pb.TableView]:
    """A two-seat table of ann (seat 0) and bob (seat 1) in its first hand, started by the
    operator: the table id, the seat tokens and the table as the start left it (``name``
    begins the requests' ids)."""
    create = pb.CreateTableRequest(seats=2, request_id=f"{name}c", ruleset=ruleset)
    table_id = service.call("CreateTable", create, OPERATOR).table_id
    tokens = []
    for seat, player in enumerate(("ann", "bob")):
        join = pb.JoinSeatRequest(
            table_id=table_id, seat=seat, player_id=player, expected_version=seat + 1,
            request_id=f"{name}join-{seat}",
        )  # fmt: skip
        tokens.append(service.call("JoinSeat", join).seat_token)
    start = pb.StartHandRequest(table_id=table_id, expected_version=3, request_id=f"{name}s")
    return table_id, tokens, service.call("StartHand", start, OPERATOR).table


def test_a_record_of_the_release_before_answers_only_a_caller_passing_todays_checks() -> None:
    service = Service()
    table_id, tokens, started = seated(service)
    turn = started.hand.turn
    mine = service.call("GetTable", pb.GetTableRequest(table_id=table_id), seat_md(tokens[turn]))
    pending = next(s.pending for s in mine.table.hand.seats if s.seat == turn)
    place = pb.PlaceCardsRequest(
        table_id=table_id, seat=turn, expected_version=4, request_id="p",
        placements=[pb.Placement(card=c, row=cards_pb2.ROW_POSITION_BOTTOM) for c in pending],
    )  # fmt: skip
    first = service.call("PlaceCards", place, seat_md(tokens[turn]))
    service.as_written_before(table_id, "p", seat_md(tokens[turn]))
    service.as_written_before(table_id, "join-1", ())

    # the seat's own token and the operator pass today's checks: the first answer
    assert service.call("PlaceCards", place, seat_md(tokens[turn])) == first
    assert service.call("PlaceCards", place, OPERATOR) == first
    # anyone else: what they would get without the record
    assert service.refused("PlaceCards", place, seat_md(tokens[1 - turn])) == (
        grpc.StatusCode.PERMISSION_DENIED, "PERMISSION_DENIED",
    )  # fmt: skip
    assert service.refused("PlaceCards", place) == (
        grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED",
    )  # fmt: skip
    # a join needed no credentials: its old record answers the request id, as it did
    join_1 = pb.JoinSeatRequest(
        table_id=table_id, seat=1, player_id="bob", expected_version=2, request_id="join-1"
    )
    assert service.call("JoinSeat", join_1).seat_token == tokens[1]
    # no digest in an old record: a different request under its id cannot be told apart
    moved = pb.PlaceCardsRequest()
    moved.CopyFrom(place)
    moved.placements[0].row = cards_pb2.ROW_POSITION_TOP
    assert service.call("PlaceCards", moved, seat_md(tokens[turn])) == first


def test_a_record_of_this_release_is_found_by_its_caller_only() -> None:
    service = Service()
    table_id = service.call(
        "CreateTable", pb.CreateTableRequest(seats=2, request_id="c"), OPERATOR
    ).table_id
    join = pb.JoinSeatRequest(
        table_id=table_id, seat=0, player_id="ann", expected_version=1, request_id="j"
    )
    token = service.call("JoinSeat", join, OPERATOR).seat_token
    keys = {key for _, key in service.store._records}
    assert keys == {request_key("j", caller_identity(Credentials(api_key=KEY)))}
    assert request_key("j") not in keys  # nothing where the release before would look
    assert service.call("JoinSeat", join, OPERATOR).seat_token == token
    assert service.refused("JoinSeat", join) == (grpc.StatusCode.ABORTED, "STALE_VERSION")


PINEAPPLE = ruleset_pb2.RulesetSpec(preset="pineapple")


def _play_a_street(service: Service, table_id: str, tokens: list[str], request_id: str) -> Any:
    """The seat to act places its batch (discarding one of three); its answer."""
    view = service.call("GetTable", pb.GetTableRequest(table_id=table_id), OPERATOR).table
    seat = view.hand.turn
    mine = service.call("GetTable", pb.GetTableRequest(table_id=table_id), seat_md(tokens[seat]))
    pending = list(next(s.pending for s in mine.table.hand.seats if s.seat == seat))
    discard = pending.pop() if len(pending) == 3 else ""
    board = next(s.board for s in mine.table.hand.seats if s.seat == seat)
    rows = [cards_pb2.ROW_POSITION_BOTTOM] * (5 - len(board.bottom))
    rows += [cards_pb2.ROW_POSITION_MIDDLE] * (5 - len(board.middle))
    rows += [cards_pb2.ROW_POSITION_TOP] * (3 - len(board.top))
    place = pb.PlaceCardsRequest(
        table_id=table_id, seat=seat, expected_version=view.version, request_id=request_id,
        placements=[pb.Placement(card=c, row=r) for c, r in zip(pending, rows, strict=False)],
        discard=discard,
    )  # fmt: skip
    return place, service.call("PlaceCards", place, seat_md(tokens[seat]))


def test_a_record_of_the_release_before_answers_no_other_seat_under_its_id() -> None:
    """An old record says neither who asked nor what: it answers only a request acting for the
    seat whose view it holds. Another seat sending its own request under the id, a request
    naming a seat the table lacks, and a join under it are judged as new requests."""
    service = Service()
    table_id, tokens, _ = seated(service, PINEAPPLE)
    for street in range(2):  # both seats' first streets
        _play_a_street(service, table_id, tokens, f"first-{street}")
    place, first = _play_a_street(service, table_id, tokens, "secret")  # places 2, discards 1
    mover = place.seat
    assert next(s.discards for s in first.table.hand.seats if s.seat == mover)
    service.as_written_before(table_id, "secret", seat_md(tokens[mover]))
    # its own seat (and an operator acting for that seat) still get the first answer
    assert service.call("PlaceCards", place, seat_md(tokens[mover])) == first
    assert service.call("PlaceCards", place, OPERATOR) == first

    other = 1 - mover
    theirs = pb.PlaceCardsRequest(
        table_id=table_id, seat=other, expected_version=1, request_id="secret",
        placements=[pb.Placement(card="2c", row=cards_pb2.ROW_POSITION_TOP)],
    )  # fmt: skip
    assert service.refused("PlaceCards", theirs, seat_md(tokens[other])) == (
        grpc.StatusCode.ABORTED, "STALE_VERSION",
    )  # fmt: skip
    assert service.refused("PlaceCards", theirs, OPERATOR) == (
        grpc.StatusCode.ABORTED, "STALE_VERSION",
    )  # fmt: skip
    nowhere = pb.PlaceCardsRequest()
    nowhere.CopyFrom(theirs)
    nowhere.seat = 7
    assert service.refused("PlaceCards", nowhere) == (
        grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED",
    )  # fmt: skip
    assert service.refused("PlaceCards", nowhere, OPERATOR) == (
        grpc.StatusCode.ABORTED, "STALE_VERSION",
    )  # fmt: skip
    join = pb.JoinSeatRequest(
        table_id=table_id, seat=other, player_id="mallory", expected_version=1,
        request_id="secret",
    )  # fmt: skip
    assert service.refused("JoinSeat", join) == (grpc.StatusCode.ABORTED, "STALE_VERSION")


def test_a_join_under_the_id_of_an_old_marker_is_refused_not_an_internal_error() -> None:
    """A move's old record that kept only that it was applied (a marker of the release before)
    cannot answer a join under its id: the join has no answer to give back but its token."""
    service = Service()
    table_id, tokens, _ = seated(service, PINEAPPLE)
    place, _ = _play_a_street(service, table_id, tokens, "moved")
    service.as_written_before(table_id, "moved", seat_md(tokens[place.seat]))
    legacy = service.store._records[table_id, request_key("moved")]
    service.store._records[table_id, request_key("moved")] = dataclasses.replace(
        legacy, marker=True
    )
    join = pb.JoinSeatRequest(
        table_id=table_id, seat=0, player_id="mallory", expected_version=1, request_id="moved"
    )
    assert service.refused("JoinSeat", join) == (grpc.StatusCode.ABORTED, "STALE_VERSION")


def test_a_seat_tokens_moves_are_one_lane_its_hand_start_included() -> None:
    """A client retries only its latest request: a seat token's StartHand (which names no
    seat) keeps its whole answer only until the same token's next move, as its moves do;
    a retry after that answers with the table as it is now, applied once."""
    service = Service()
    create = pb.CreateTableRequest(seats=2, request_id="c", ruleset=PINEAPPLE)
    table_id = service.call("CreateTable", create, OPERATOR).table_id
    tokens = [
        service.call("JoinSeat", pb.JoinSeatRequest(
            table_id=table_id, seat=seat, player_id=name, expected_version=seat + 1,
            request_id=f"j{seat}",
        )).seat_token
        for seat, name in enumerate(("ann", "bob"))
    ]  # fmt: skip
    start = pb.StartHandRequest(table_id=table_id, expected_version=3, request_id="s")
    first = service.call("StartHand", start, seat_md(tokens[0]))
    assert service.call("StartHand", start, seat_md(tokens[0])) == first  # its latest: whole
    turn = first.table.hand.turn
    if turn == 1:
        _play_a_street(service, table_id, tokens, "bob-1")  # bob's move is not ann's lane
        assert service.call("StartHand", start, seat_md(tokens[0])) == first
    _, placed = _play_a_street(service, table_id, tokens, "ann-1")
    again = service.call("StartHand", start, seat_md(tokens[0]))
    assert again != first and again.table.version == placed.table.version
    view = service.call("GetTable", pb.GetTableRequest(table_id=table_id), OPERATOR).table
    assert view.version == placed.table.version  # nothing applied again


def test_a_new_table_id_never_starts_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    """A command line (``ofc verify --table``, ``ofc export-match``) reads a leading "-" as an
    option: such a draw is drawn again."""
    draws = iter(["-a04JyBQ3bceGma4kVabhw", "-bbbbbbbbbbbbbbbbbbbbb", "Zk3kA0ZnAAAAAAAAAAAAAA"])
    monkeypatch.setattr(secrets, "token_urlsafe", lambda size: next(draws))
    assert requests.new_table_id() == "Zk3kA0ZnAAAAAAAAAAAAAA"
