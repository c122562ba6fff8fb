"""The README's curl lines, run as written against a real ``ofc serve`` (what ``make run``
starts: in-memory tables, no API keys), so that they stay true.

The first ``sh`` block under "Talk to the running service" is taken from README.md and run
with bash (``set -euo pipefail``), ``localhost:8080`` pointed at the test server's HTTP port.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from tests.connect.conftest import ROOT, Served, serve, stop
from tests.docs import sh_block

README = ROOT / "README.md"


def readme_curl_block() -> str:
    return sh_block(README, "## Talk to the running service")


@pytest.fixture(scope="module")
def make_run_service() -> Iterator[Served]:
    served = serve(OFC_API_KEYS="")
    try:
        yield served
    finally:
        stop(served)


def test_the_block_is_curl_only() -> None:
    block = readme_curl_block()
    assert "localhost:8080" in block and "grpcurl" not in block
    commands = {line.split()[0] for line in block.splitlines() if line and line[0] not in "# "}
    assert commands <= {
        "curl", "TABLE=$(curl", "JOIN=${JOIN:-$(od", "TOKEN=$(curl", 'WATCH=\'{"tableId":', "printf"
    }  # fmt: skip


def test_the_readme_curl_lines_work_as_written(make_run_service: Served) -> None:
    for tool in ("bash", "curl", "jq", "perl"):
        assert shutil.which(tool), f"{tool} is needed to run the README's lines"
    host = make_run_service.http.removeprefix("http://")
    # the join's request id the lines drew, told on stderr to run them again as retries
    script = readme_curl_block().replace("localhost:8080", host) + 'echo "JOIN=$JOIN" >&2\n'
    environment = {k: v for k, v in os.environ.items() if k != "JOIN"}
    got = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        capture_output=True, text=True, timeout=60, check=False, env=environment,
    )  # fmt: skip
    assert got.returncode == 0, got.stdout + got.stderr
    join = re.findall(r"^JOIN=([0-9a-f]{32})$", got.stderr, re.M)
    assert len(join) == 1, got.stderr  # 128 random bits
    out = got.stdout
    # Worked example 1: ann +8 (with a straight's 2 royalty), bob -8.
    assert re.search(r'"playerId": "ann",.*?"points": 8,', out, re.S)
    assert re.search(r'"playerId": "bob",.*?"points": -8,', out, re.S)
    # ann's watch: the snapshot of a table she sits at, then the deadline's end message.
    snapshot = out[out.index('{"snapshot"') :]
    assert '"viewerSeat":0' in snapshot and '"playerId":"ann"' in snapshot
    assert out.rstrip().endswith(
        '{"error": {"code": "deadline_exceeded", "message": "Request timed out"}}'
    )
    # Run again with JOIN kept: the request ids make every call a retry, answered as the
    # first time (ann's seat token included, so her watch opens again).
    again = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        capture_output=True, text=True, timeout=60, check=False,
        env={**environment, "JOIN": join[0]},
    )  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    assert '"viewerSeat":0' in again.stdout[again.stdout.index('{"snapshot"') :]
    table_ids = set(re.findall(r'"tableId": ?"([^"]+)"', out + again.stdout))
    assert len(table_ids) == 1


def section_curl_block(heading: str) -> str:
    """The first ``sh`` block of a README section (its curl form; grpcurl comes second)."""
    block = sh_block(README, heading)
    assert "grpcurl" not in block, f"the first block under {heading!r} is curl's"
    return block


def test_the_table_and_feed_sections_curl_lines_work_as_written(make_run_service: Served) -> None:
    host = make_run_service.http.removeprefix("http://")
    script = section_curl_block("## Live tables") + section_curl_block("## The settlement feed")
    environment = {k: v for k, v in os.environ.items() if k not in ("CREATE", "SIT")}

    def run() -> str:
        got = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script.replace("localhost:8080", host)],
            capture_output=True, text=True, timeout=60, check=False, env=environment,
        )  # fmt: skip
        assert got.returncode == 0, got.stdout + got.stderr
        return got.stdout

    out = run()
    # run again (a newcomer's second try): a table of its own, ann seated as before
    again = run()
    assert json.loads(again[: again.index("\n}\n") + 2])["table"]["viewerSeat"] == 0, again
    ids = {json.loads(text[: text.index("\n}\n") + 2])["table"]["tableId"] for text in (out, again)}
    assert len(ids) == 2
    # GetTable as ann: the table with her in seat 0, seen from that seat.
    table = json.loads(out[: out.index("\n}\n") + 2])
    assert table["table"]["viewerSeat"] == 0, table
    assert table["table"]["seats"][0]["playerId"] == "ann", table
    # Subscribe: no hand settled yet, so only the deadline's end message; Acknowledge answers.
    assert '{"error": {"code": "deadline_exceeded", "message": "Request timed out"}}' in out
    assert out.rstrip().splitlines()[-1].startswith("{"), out


def test_the_feed_recipe_keeps_records_whole_whatever_their_text(make_run_service: Served) -> None:
    """The Subscribe line saves one record a line even when a player id is not ASCII (what
    ``ofc verify --feed`` reads; docs/hand-history.md points to this recipe)."""
    from ofc_client import TableClient

    players = {0: TableClient(make_run_service.grpc), 1: TableClient(make_run_service.grpc)}
    table_id = players[0].create_table(seats=2).table_id
    players[0].join(table_id, 0, "ann")
    players[1].join(table_id, 1, "zoë 🂡")
    players[0].get(table_id)  # the version bob's join made
    hand = players[0].start_hand(table_id).hand
    while hand is not None and not hand.over:  # each seat fills bottom, then middle, then top
        assert hand.turn is not None
        seat = players[hand.turn]
        me = seat.get(table_id).my_seat
        assert me is not None
        room = {"bottom": 5 - len(me.board.bottom), "middle": 5 - len(me.board.middle),
                "top": 3 - len(me.board.top)}  # fmt: skip
        moves = {}
        for card in me.pending:
            row = next(r for r in room if room[r] > 0)
            room[row] -= 1
            moves[card] = row
        hand = seat.place(table_id, moves).hand
    block = section_curl_block("## The settlement feed")
    acknowledge = block.index("curl -s localhost:8080/ofcpoker.v1.SettlementFeedService/Ack")
    subscribe = block[block.index("SUB=") : acknowledge]
    script = subscribe.replace('"ledger"', '"utf8-check"').replace(
        "localhost:8080", make_run_service.http.removeprefix("http://")
    )
    got = subprocess.run(["bash", "-euo", "pipefail", "-c", script], capture_output=True,
                         timeout=60, check=False)  # fmt: skip
    assert got.returncode == 0, got.stderr
    lines = got.stdout.decode("utf-8").splitlines()
    messages = [json.loads(line) for line in lines]  # every line whole JSON
    records = [m["record"] for m in messages if "record" in m]
    assert [r["settlementId"] for r in records] == [f"{table_id}:1"]
    assert "zoë 🂡" in json.dumps(records[0], ensure_ascii=False)


def buf_curl_commands() -> list[str]:
    """The README's ``buf curl`` lines (continuations joined, comments dropped)."""
    text = README.read_text()
    section = text[text.index("## Talk to the running service") :]
    joined = re.sub(r"\\\n\s*", "", re.findall(r"```sh\n(.*?)```", section, re.S)[1])
    return [line.split("  #")[0] for line in joined.splitlines() if line.startswith("buf curl")]


def test_the_readme_buf_curl_lines_work_as_written(make_run_service: Served) -> None:
    found = subprocess.run(
        ["bash", "-c", "source scripts/npm_tools.sh && ensure_buf >&2 && echo $BUF"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    buf = found.stdout.strip()
    commands = buf_curl_commands()
    assert len(commands) == 2
    http = make_run_service.http.removeprefix("http://")
    for command in commands:
        script = command.replace("buf curl", f"{buf} curl", 1)
        script = script.replace("localhost:50051", make_run_service.grpc)
        script = script.replace("localhost:8080", http)
        got = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True,
                             timeout=60, check=False)  # fmt: skip
        assert got.returncode == 0, command + got.stderr
        assert '"name": "pair of aces, king kicker"' in got.stdout, got.stdout
