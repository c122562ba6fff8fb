"""``ofc verify --match ... --feed-from ADDR --table T``: the table's settlement-feed records
read from a running ``ofc serve`` (its own process, in-memory store, an operator key) instead
of a JSONL file. Reading never acknowledges, so another group's deliveries are untouched and
a second audit reads the same records; a doctored hand is caught against the live records;
a wrong key and an unreachable server are errors. The Node verifier agrees on the records
fetched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from ofc_cli.feed_remote import fetch_feed
from ofc_cli.main import main
from ofcpoker.v1 import settlement_feed_pb2 as feed_pb
from ofcpoker.v1 import settlement_feed_pb2_grpc as feed_grpc
from ofcpoker.v1.table_service_pb2_grpc import TableServiceStub

from tests.conftest import free_port, self_signed_certificate
from tests.e2e.test_tables import API_KEY, OPERATOR, Table

ROOT = Path(__file__).resolve().parents[2]
OFC = Path(sys.executable).with_name("ofc")


@pytest.fixture(scope="module")
def address() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        # no HTTP port: the default one (8080) may be taken by a service running here
        [
            str(OFC),
            "serve",
            "--listen",
            f"127.0.0.1:{port}",
            "--metrics-listen",
            "",
            "--http-listen",
            "",
        ],
        env={**os.environ, "OFC_API_KEYS": API_KEY},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            health = health_pb2_grpc.HealthStub(channel)
            ready = health.Check(health_pb2.HealthCheckRequest(), timeout=20, wait_for_ready=True)
            assert ready.status == health_pb2.HealthCheckResponse.SERVING
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=15)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def test_verify_reads_the_tables_feed_records_from_the_service(
    address: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with grpc.insecure_channel(address) as channel:
        other = Table(TableServiceStub(channel), "feed-other")  # its records are skipped
        other.play_hand()
        table = Table(TableServiceStub(channel), "feed-from")
        for _ in range(3):
            table.play_hand()
    out = tmp_path / "match"
    assert _run(["export-match", "--server", address, "--", table.id, str(out)], capsys)[0] == 0
    hands = sorted(map(str, out.glob("hand-*.json")))
    live = ["--feed-from", address, f"--table={table.id}", "--api-key", API_KEY]

    status, printed, err = _run(["verify", "--match", *hands, *live], capsys)
    assert (status, err) == (0, "")
    assert printed == "3 verified, 0 failed; the match of 3 hands: 0 chain discrepancies\n"
    # nothing was acknowledged: the same consumer reads the same records again
    again = fetch_feed(address, table.id, api_key=API_KEY, idle_s=1.0)
    assert [r["hand_number"] for _, r in again] == [1, 2, 3]
    assert again[0][0].startswith(f"{address} feed #")
    # and another group still gets every record of the feed
    with grpc.insecure_channel(address) as channel:
        stream = feed_grpc.SettlementFeedServiceStub(channel).Subscribe(
            feed_pb.SubscribeRequest(group="ledger", consumer="ledger-1"), metadata=OPERATOR
        )
        ids = [next(stream).record.settlement_id for _ in range(4)]
        stream.cancel()
    assert sorted(ids) == sorted([f"{other.id}:1"] + [f"{table.id}:{n}" for n in (1, 2, 3)])

    # a doctored running total in a hand: the chain and the live record of that hand disagree
    doctored = json.loads(Path(hands[1]).read_text())
    doctored["initial_state"]["seats"][0]["points"] += 3
    Path(hands[1]).write_text(json.dumps(doctored))
    status, printed, _ = _run(["verify", "--match", *hands, *live], capsys)
    assert status == 1
    found = [_code_and_location(line) for line in printed.splitlines()[:-1]]
    assert found == [
        (hands[1], "CHAIN_STATE_MISMATCH", "initial_state.seats[0].points"),
        ("live", "RUNNING_TOTAL_MISMATCH", "seats[0].total_points"),
        (hands[2], "CHAIN_STATE_MISMATCH", "initial_state.seats[0].points"),
    ]

    # the Node verifier, given the same records as a file, finds the same
    node = shutil.which("node")
    assert node is not None, "node is not on PATH"
    feed_file = tmp_path / "feed.jsonl"
    feed_file.write_text("".join(json.dumps(r) + "\n" for _, r in again))
    js = subprocess.run(
        [node, str(ROOT / "clients/node/verify.js"), "--match", *hands, "--feed", str(feed_file)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert js.returncode == 1
    assert [_code_and_location(line) for line in js.stdout.splitlines()[:-1]] == found


def _code_and_location(line: str) -> tuple[str, str, str]:
    """``SOURCE: CODE at LOCATION: message`` without the message; a feed record's source
    (the server's "ADDR feed #N", or the file's "feed.jsonl:N") as "live"."""
    source, found, _ = line.split(": ", 2)
    code, location = found.split(" at ")
    live = " feed #" in source or Path(source).name.startswith("feed.jsonl:")
    return ("live" if live else source), code, location


def test_a_wrong_key_a_bad_table_and_an_unreachable_server_are_errors(
    address: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hand = str(ROOT / "tests/golden/18a23e9/match/hand-0001.json")
    status, _, err = _run(
        ["verify", "--match", hand, "--feed-from", address, "--table", "t", "--api-key", "no"],
        capsys,
    )
    assert status == 2 and err.startswith("error: UNAUTHENTICATED: cannot read the settlement feed")
    status, _, err = _run(["verify", "--match", hand, "--feed-from", address], capsys)
    assert status == 2 and "--feed-from needs --match and --table" in err
    status, _, err = _run(["verify", hand, "--table", "t"], capsys)
    assert status == 2 and "--table needs --feed-from" in err
    status, _, err = _run(
        ["verify", "--match", hand, "--feed-from", f"127.0.0.1:{free_port()}", "--table", "t"],
        capsys,
    )
    assert status == 1 and err.startswith("error: UNAVAILABLE: cannot read the settlement feed")


def test_a_table_id_that_starts_with_a_dash_is_the_value_of_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ids drawn before ids avoided a leading "-" (one in 64) are read as --table's value
    (argparse alone took one for an option: a USAGE error), and the table is asked for."""
    hand = str(ROOT / "tests/golden/18a23e9/match/hand-0001.json")
    unreachable = f"127.0.0.1:{free_port()}"
    for table in ("-a04JyBQ3bceGma4kVabhw", "-"):
        status, _, err = _run(
            ["verify", "--match", hand, "--feed-from", unreachable, "--table", table], capsys
        )
        assert status == 1 and err.startswith("error: UNAVAILABLE"), err
    with pytest.raises(SystemExit) as exit_:  # an option where the id should be: still USAGE
        main(["verify", "--match", hand, "--feed-from", unreachable, "--table", "--api-key", "k"])
    _, err = capsys.readouterr()
    assert exit_.value.code == 2 and "--table: expected one argument" in err
    assert 'goes as --option=VALUE, or after "--"' in err


def test_verify_reads_the_feed_over_tls_with_the_servers_ca(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--tls``/``--ca-file`` reach a service that serves TLS only, as the other remote
    commands do; without them, or with a CA file that cannot be read, the audit says why."""
    cert, key = self_signed_certificate(tmp_path)
    port = free_port()
    process = subprocess.Popen(
        [str(OFC), "serve", "--listen", f"127.0.0.1:{port}", "--metrics-listen", "",
         "--http-listen", "", "--tls-cert", str(cert), "--tls-key", str(key)],
        env={**os.environ, "OFC_API_KEYS": API_KEY},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    address = f"127.0.0.1:{port}"
    try:
        trusted = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
        with grpc.secure_channel(address, trusted) as channel:
            health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=20, wait_for_ready=True
            )
            table = Table(TableServiceStub(channel), "feed-tls")
            table.play_hand()
        out = tmp_path / "match"
        export = ["export-match", "--server", address, "--ca-file", str(cert), table.id, str(out)]
        assert _run(export, capsys)[0] == 0
        hands = sorted(map(str, out.glob("hand-*.json")))
        live = ["--feed-from", address, f"--table={table.id}", "--api-key", API_KEY]

        status, printed, err = _run(
            ["verify", "--match", *hands, *live, "--ca-file", str(cert)], capsys
        )
        assert (status, err) == (0, "")
        assert printed == "1 verified, 0 failed; the match of 1 hands: 0 chain discrepancies\n"
        status, _, err = _run(["verify", "--match", *hands, *live], capsys)  # plaintext
        assert status == 1 and "cannot read the settlement feed" in err
        missing = str(tmp_path / "no-such-ca.pem")
        status, _, err = _run(["verify", "--match", *hands, *live, "--ca-file", missing], capsys)
        assert status == 2 and "no-such-ca.pem" in err
        status, _, err = _run(["verify", *hands, "--tls"], capsys)
        assert status == 2 and "--tls and --ca-file need --feed-from" in err
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_a_first_record_slower_than_the_idle_gap_is_still_read() -> None:
    """The wait for the first record (connection, TLS handshake, a loaded server) is not the
    idle gap between records: an audit that gave up after the gap would read nothing."""
    from concurrent import futures

    finished = threading.Event()

    class SlowFeed(feed_grpc.SettlementFeedServiceServicer):
        def Subscribe(self, request: Any, context: Any) -> Iterator[feed_pb.SubscribeResponse]:
            time.sleep(2.0)  # the first record comes after twice the idle gap
            for n in (1, 2):
                record = feed_pb.SettlementRecord(
                    settlement_id=f"t:{n}", table_id="t", hand_number=n, ruleset="classic"
                )
                yield feed_pb.SubscribeResponse(record=record)
            finished.wait(60)  # then nothing, until the test ends: the idle gap ends the read

        def Acknowledge(self, request: Any, context: Any) -> feed_pb.AcknowledgeResponse:
            return feed_pb.AcknowledgeResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    feed_grpc.add_SettlementFeedServiceServicer_to_server(SlowFeed(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        started = time.monotonic()
        records = fetch_feed(f"127.0.0.1:{port}", "t", idle_s=1.0, first_s=30)
        assert [r["hand_number"] for _, r in records] == [1, 2]
        assert time.monotonic() - started < 30  # not the stream's end, a minute on
    finally:
        finished.set()
        server.stop(grace=None)
