"""RulesService.VerifyHandHistory over a real channel: the same answers as ``ofc.verify``.

A bad history is an answer (ok false), never an error; only a request the service will
not read is an error (over the size limit, an unknown expected ruleset). The histories of
a whole match, exported with TableService.ListHands + GetHandHistory, verify.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from ofc.codec import FORMAT_VERSION
from ofc.verify import Code, verify_history
from ofc_service.api.rules import MAX_HISTORY_BYTES
from ofc_service.server.background import BackgroundServer
from ofc_service.server.config import ServerConfig
from ofcpoker.v1 import rules_service_pb2 as pb
from ofcpoker.v1 import ruleset_pb2
from ofcpoker.v1 import settlement_feed_pb2 as feed_pb
from ofcpoker.v1 import table_service_pb2 as tables_pb
from ofcpoker.v1.rules_service_pb2_grpc import RulesServiceStub
from ofcpoker.v1.table_service_pb2_grpc import TableServiceStub

from tests.api.conftest import MAX_MESSAGE_BYTES
from tests.api.test_create_table import KEYS, Context, Service
from tests.api.wire import wire_error
from tests.e2e.test_tables import Table, start_server
from tests.ofc.test_golden import match_inputs
from tests.ofc.test_verify import BASES, TAMPERING, Mutation


def verify(stub: RulesServiceStub, history: Any, **kwargs: Any) -> pb.VerifyHandHistoryResponse:
    text = history if isinstance(history, str) else json.dumps(history)
    response: pb.VerifyHandHistoryResponse = stub.VerifyHandHistory(
        pb.VerifyHandHistoryRequest(history_json=text, **kwargs)
    )
    return response


@pytest.mark.parametrize("name", list(BASES))
def test_untampered_histories_are_ok(stub: RulesServiceStub, name: str) -> None:
    response = verify(stub, BASES[name])
    assert response.ok and not response.HasField("discrepancy")


@pytest.mark.parametrize(
    ("base", "mutate"), [pytest.param(case[1], case[2], id=case[0]) for case in TAMPERING]
)
def test_the_rpc_names_what_ofc_verify_names(
    stub: RulesServiceStub, base: str, mutate: Mutation
) -> None:
    history = copy.deepcopy(BASES[base])
    mutate(history)
    expected = verify_history(history)
    assert expected is not None
    response = verify(stub, history)
    assert not response.ok
    found = response.discrepancy
    assert (found.code, found.location, found.message) == (
        expected.code,
        expected.location,
        expected.message,
    )


@pytest.mark.parametrize(
    ("text", "location"),
    [("{not json", ""), ("[]", ""), ('{"format_version": 1}', "algorithm")],
    ids=["not json", "not an object", "incomplete"],
)
def test_a_malformed_history_is_an_answer_not_an_error(
    stub: RulesServiceStub, text: str, location: str
) -> None:
    response = verify(stub, text)
    assert not response.ok
    assert (response.discrepancy.code, response.discrepancy.location) == (
        Code.MALFORMED_HISTORY,
        location,
    )
    assert response.discrepancy.message


def test_the_agreed_ruleset(stub: RulesServiceStub) -> None:
    history = BASES["pineapple"]
    pineapple = ruleset_pb2.RulesetSpec(preset="pineapple")
    assert verify(stub, history, expected_ruleset=pineapple).ok
    house = ruleset_pb2.RulesetSpec(
        preset="pineapple", overrides=ruleset_pb2.RulesetOverrides(loss_cap=20)
    )
    response = verify(stub, history, expected_ruleset=house)
    assert not response.ok
    assert (response.discrepancy.code, response.discrepancy.location) == (
        "RULESET_MISMATCH",
        "initial_state.ruleset.loss_cap",
    )


def test_an_unknown_agreed_ruleset_is_an_error(stub: RulesServiceStub) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        verify(stub, BASES["explicit"], expected_ruleset=ruleset_pb2.RulesetSpec(preset="nope"))
    error = wire_error(caught.value)
    assert (error.code, error.reason, error.info_field) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "UNKNOWN_RULESET",
        "expected_ruleset.preset",
    )


def test_over_the_servers_message_limit_is_resource_exhausted(stub: RulesServiceStub) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        verify(stub, " " * (MAX_MESSAGE_BYTES + 1))
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


@pytest.fixture(scope="module")
def roomy_stub() -> Iterator[RulesServiceStub]:
    """A server whose message limit is above the history limit, to reach the latter."""
    size = 4 * MAX_HISTORY_BYTES
    config = ServerConfig(
        listen="127.0.0.1:0",
        metrics_listen="",
        http_listen="",
        max_message_bytes=size,
        grace_seconds=1,
    )
    options = [("grpc.max_send_message_length", size), ("grpc.max_receive_message_length", size)]
    with BackgroundServer(config) as server, grpc.insecure_channel(server.address, options) as ch:
        yield RulesServiceStub(ch)


def test_the_history_size_limit(roomy_stub: RulesServiceStub) -> None:
    text = json.dumps(BASES["timeouts"])
    padded = text + " " * (MAX_HISTORY_BYTES - len(text))  # JSON allows trailing whitespace
    assert verify(roomy_stub, padded).ok
    with pytest.raises(grpc.RpcError) as caught:
        verify(roomy_stub, padded + " ")
    error = wire_error(caught.value)
    assert (error.code, error.reason, error.info_field) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_INPUT",
        "history_json",
    )
    multibyte = "é" * (MAX_HISTORY_BYTES // 2 + 1)  # under the limit in characters, not bytes
    with pytest.raises(grpc.RpcError) as caught:
        verify(roomy_stub, multibyte)
    assert wire_error(caught.value).info_field == "history_json"


# --- a match exported from a live table ------------------------------------------------------
def export_match(tables: TableServiceStub, table_id: str) -> list[dict[str, Any]]:
    """The export of docs/hand-history.md: ListHands page by page, then each GetHandHistory."""
    exported = []
    page_token = ""
    while True:
        page = tables.ListHands(
            tables_pb.ListHandsRequest(table_id=table_id, page_size=1, page_token=page_token)
        )
        for summary in page.hands:
            got = tables.GetHandHistory(
                tables_pb.GetHandHistoryRequest(table_id=table_id, hand_number=summary.hand_number)
            )
            exported.append(json.loads(got.history_json))
        page_token = page.next_page_token
        if not page_token:
            return exported


def test_every_hand_of_an_exported_match_verifies(stub: RulesServiceStub) -> None:
    with start_server() as server, grpc.insecure_channel(server.address) as channel:
        tables = TableServiceStub(channel)
        table = Table(tables, "verify-export")  # two seats, each filling bottom, middle, top
        for _ in range(2):
            table.play_hand()
        exported = export_match(tables, table.id)
        table_id = table.id
    assert [h["hand_number"] for h in exported] == [1, 2]
    assert [h["table_id"] for h in exported] == [table_id] * 2
    for history in exported:
        assert verify_history(history) is None
        assert verify(stub, history).ok
    # the second hand starts where the first left the table
    assert exported[1]["initial_state"]["button"] == exported[0]["button_next"]
    tampered = copy.deepcopy(exported[1])
    tampered["settlement"]["pairs"][0]["points"] += 1
    response = verify(stub, tampered)
    assert (response.ok, response.discrepancy.location) == (False, "settlement.pairs[0].points")


# --- whole matches, check_policy, newer versions ---------------------------------------------
GOLDEN = Path(__file__).parents[1] / "golden"


def feed_protos(feed: list[tuple[str, Any]]) -> list[feed_pb.SettlementRecord]:
    return [
        feed_pb.SettlementRecord(
            **{k: v for k, v in r.items() if k not in ("format", "seats", "pairs", "loss_cap")},
            loss_cap=r["loss_cap"] or 0,
            seats=[feed_pb.SeatSettlement(**s) for s in r["seats"]],
            pairs=[feed_pb.PairSettlement(**p) for p in r["pairs"]],
        )
        for _, r in feed
    ]


def test_verify_match_checks_a_golden_match_with_its_feed(stub: RulesServiceStub) -> None:
    hands, feed = match_inputs(GOLDEN / "971f768" / "match")
    texts = [json.dumps(h) for _, h in hands]
    request = pb.VerifyMatchRequest(
        history_jsons=texts, settlements=feed_protos(feed), check_settlements=True
    )
    response = stub.VerifyMatch(request)
    assert (response.ok, response.hands_verified, list(response.discrepancies)) == (True, 4, [])
    doctored = feed_protos(feed)
    doctored[3].seats[0].total_units += 1
    response = stub.VerifyMatch(
        pb.VerifyMatchRequest(history_jsons=texts[:1] + texts[2:], settlements=doctored,
                              check_settlements=True)
    )  # fmt: skip
    assert not response.ok and response.hands_verified == 3
    assert [(d.code, d.source, d.hand_number, d.location) for d in response.discrepancies] == [
        ("HAND_MISSING", "history_jsons[1]", 3, "hand_number"),
        ("RUNNING_TOTAL_MISMATCH", "settlements[3]", 4, "seats[0].total_units"),
        ("FEED_RECORD_EXTRA", "settlements[1]", 2, "hand_number"),
    ]
    # without check_settlements the records are not looked at; none at all is a finding
    assert stub.VerifyMatch(pb.VerifyMatchRequest(history_jsons=texts, settlements=doctored)).ok
    missing = stub.VerifyMatch(pb.VerifyMatchRequest(history_jsons=texts, check_settlements=True))
    assert [d.code for d in missing.discrepancies] == ["FEED_RECORD_MISSING"] * 4
    # a feed that begins at hand 3 (a later release began it, or its retention trimmed it)
    later = stub.VerifyMatch(
        pb.VerifyMatchRequest(
            history_jsons=texts, settlements=feed_protos(feed)[2:], check_settlements=True
        )
    )
    assert (later.ok, list(later.notes)) == (True, [
        "the feed's first record of this table is hand 3: hands 1-2 not checked against the"
        " feed (settled before the feed began, or dropped by its retention)"])  # fmt: skip
    # a record sent without format (1: no Fantasyland fields) that sets them is judged on them
    claimed = feed_protos(feed)
    claimed[1].seats[1].fantasyland_next_cards = 14
    response = stub.VerifyMatch(
        pb.VerifyMatchRequest(history_jsons=texts, settlements=claimed, check_settlements=True)
    )
    assert [(d.code, d.source, d.location) for d in response.discrepancies] == [
        ("FEED_RECORD_MISMATCH", "settlements[1]", "seats[1].fantasyland_next_cards")
    ]


def test_verify_match_refuses_what_it_cannot_take(stub: RulesServiceStub) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        stub.VerifyMatch(pb.VerifyMatchRequest())
    error = wire_error(caught.value)
    assert (error.code, error.reason, error.info_field) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_INPUT",
        "history_jsons",
    )
    bad = stub.VerifyMatch(
        pb.VerifyMatchRequest(history_jsons=["{", json.dumps(BASES["timeouts"])])
    )
    assert [(d.code, d.source) for d in bad.discrepancies] == [
        ("MALFORMED_HISTORY", "history_jsons[0]")
    ]


@pytest.mark.parametrize("number", [-1, 0, 2**53, 2**64, True])
def test_a_history_numbering_no_hand_is_malformed_not_an_error(
    stub: RulesServiceStub, number: int
) -> None:
    """A hand number no hand can have (negative, past 2^53 - 1, past the uint64 of the
    report's field) is a malformed history, numbered as no hand: the report carried it into
    ``MatchDiscrepancy.hand_number`` and the call failed INTERNAL."""
    doctored = json.loads(json.dumps(BASES["timeouts"]))
    doctored["hand_number"] = number
    report = stub.VerifyMatch(
        pb.VerifyMatchRequest(history_jsons=[json.dumps(BASES["timeouts"]), json.dumps(doctored)])
    )
    assert [(d.code, d.source, d.hand_number, d.location) for d in report.discrepancies] == [
        ("MALFORMED_HISTORY", "history_jsons[1]", 0, "hand_number")
    ]
    lone = stub.VerifyMatch(pb.VerifyMatchRequest(history_jsons=['{"hand_number": -1}']))
    assert [(d.code, d.hand_number) for d in lone.discrepancies] == [("MALFORMED_HISTORY", 0)]


def test_check_policy_and_newer_versions(stub: RulesServiceStub) -> None:
    old = (GOLDEN / "f66bf42" / "play-classic-3.json").read_text()
    response = verify(stub, old, check_policy=True)
    assert response.ok and any("not checkable with this release" in n for n in response.notes)
    checked = verify(stub, BASES["timeouts"], check_policy=True)  # ofc-timeout-4, re-run
    assert checked.ok and not checked.notes
    newer = verify(stub, {**BASES["timeouts"], "format_version": FORMAT_VERSION + 1})
    assert (newer.ok, newer.discrepancy.code, newer.discrepancy.location) == (
        False,
        "NEWER_FORMAT_VERSION",
        "format_version",
    )


def test_get_hand_history_replays_the_recorded_moves_of_an_old_history() -> None:
    """A history stored by an earlier release: its settlement is the recorded one (the moves
    it made replayed), not what today's policy would have played (issue: recorded [6, -6],
    recomputed [-1, 1])."""
    service = Service()
    table_id = service.create(tables_pb.CreateTableRequest(seats=3, request_id="old")).table_id
    old = (GOLDEN / "f66bf42" / "play-classic-3.json").read_text()
    history = json.loads(old)
    assert any(a["type"] == "timeout" for a in history["actions"])
    service.store._tables[table_id].extra["hand:1"] = old.encode()
    context: Any = Context(KEYS[0])

    async def get() -> tables_pb.GetHandHistoryResponse:
        request = tables_pb.GetHandHistoryRequest(table_id=table_id, hand_number=1)
        response: tables_pb.GetHandHistoryResponse = await service.servicer.GetHandHistory(
            request, context
        )
        return response

    got = asyncio.run(get())
    assert json.loads(got.history_json) == history
    recorded = [(p["points"], p["units"]) for p in history["settlement"]["players"]]
    assert [(p.points, p.units) for p in got.settlement.players] == recorded


def test_long_match_verifications_leave_the_shared_threads_to_the_timeout_policy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """VerifyMatch runs on threads of its own: more long verifications at once than the
    event loop's default pool has threads (where the timeout policy chooses every table's
    timed-out moves) neither hold that pool up nor run more than VERIFY_THREADS at once."""
    from ofc_service.api import rules
    from ofc_service.auth import Credentials

    release = threading.Event()
    running: list[int] = []
    most = [0]
    lock = threading.Lock()

    def held_verify(*args: Any, **kwargs: Any) -> Any:
        with lock:
            running.append(1)
            most[0] = max(most[0], len(running))
        release.wait(30)
        with lock:
            running.pop()
        return real_verify(*args, **kwargs)

    from ofc.verify import verify_match as real_verify

    monkeypatch.setattr(rules, "verify_match", held_verify)
    hands, _ = match_inputs(GOLDEN / "971f768" / "match")
    request = pb.VerifyMatchRequest(history_jsons=[json.dumps(h) for _, h in hands])
    default_threads = min(32, (os.cpu_count() or 1) + 4)  # ThreadPoolExecutor's default

    async def main() -> list[pb.VerifyMatchResponse]:
        handlers = rules.RulesHandlers()
        calls = [
            asyncio.ensure_future(handlers.VerifyMatch(request, Credentials()))
            for _ in range(default_threads + 2)
        ]
        # every call has asked for its thread, and each verify thread holds one (however
        # slowly a loaded machine starts them)
        for _ in range(3000):
            with lock:
                if len(running) >= rules.VERIFY_THREADS:
                    break
            await asyncio.sleep(0.01)
        # what the timeout policy does (asyncio.to_thread): answered while all are held
        assert await asyncio.wait_for(asyncio.to_thread(lambda: "chosen"), 10) == "chosen"
        release.set()
        return await asyncio.gather(*calls)

    answers = asyncio.run(main())
    assert [(a.ok, a.hands_verified) for a in answers] == [(True, 4)] * (default_threads + 2)
    assert most[0] == rules.VERIFY_THREADS
