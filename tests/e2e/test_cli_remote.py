"""``ofc score`` and ``ofc deal`` with ``--server``: the same output as the local path."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from ofc_cli.main import main
from ofc_service.server.background import BackgroundServer

from tests.conftest import free_port

EXAMPLE = Path(__file__).parents[2] / "examples" / "worked-example-1.json"
DEAL = ["--server-seed", bytes(range(32)).hex(), "--client-seed", "auditor-test", "--nonce", "1"]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def test_score_remote_equals_local(
    server: BackgroundServer, capsys: pytest.CaptureFixture[str]
) -> None:
    local = run(["score", str(EXAMPLE)], capsys)
    remote = run(["score", "--server", server.address, str(EXAMPLE)], capsys)
    assert remote == local
    assert [p["points"] for p in json.loads(remote[1])["players"]] == [8, -8]


def test_score_jsonl_remote_equals_local_including_errors(
    server: BackgroundServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    hand = json.loads(EXAMPLE.read_text())
    overrides = {**hand, "ruleset": {"preset": "classic", "scoring": "2-4", "loss_cap": 3}}
    duplicate = json.loads(json.dumps(hand).replace('"Kd"', '"Ac"'))
    # refused by the client before any call: each is its line's error, and the batch goes on
    not_a_ruleset = {**hand, "ruleset": 5}
    bad_card = json.loads(json.dumps(hand).replace('"Qd"', '"Q?"'))
    too_deep = "[" * 100_000 + "]" * 100_000  # past Python's recursion limit
    too_long = '{"players": ' + "1" * 5000 + "}"  # past Python's 4300 digits
    misspelt = {**hand, "players": [{**hand["players"][0], "in_fantsyland": True},
                                    hand["players"][1]]}  # fmt: skip
    lines = "\n".join(
        [json.dumps(hand), "", json.dumps(overrides), "{not json", json.dumps(duplicate),
         json.dumps(not_a_ruleset), json.dumps(bad_card), too_deep, too_long,
         json.dumps(misspelt), json.dumps(hand)]
    )  # fmt: skip

    def score(*extra: str) -> tuple[int, list[dict[str, object]]]:
        monkeypatch.setattr("sys.stdin", io.StringIO(lines + "\n"))
        status, out, _ = run(["score", "--jsonl", *extra], capsys)
        return status, [json.loads(line) for line in out.splitlines()]

    local_status, local = score()
    remote_status, remote = score("--server", server.address)
    assert local_status == remote_status == 2
    assert len(local) == len(remote) == 10
    assert remote[:3] == local[:3] and remote[-1] == local[-1] == local[0]
    reasons = [(out["error"]["reason"], out["error"]["message"]) for out in local[4:8]]  # type: ignore[index]
    assert reasons == [
        ("INVALID_RULESET", "ruleset must be a name or an object, not 5"),
        ("INVALID_CARD", "players[1].bottom: invalid card: 'Q?'"),
        ("INVALID_INPUT", "not JSON: nested too deeply"),
        ("INVALID_INPUT", "not JSON: a number of more than 4300 digits"),
    ]
    assert [out["error"]["reason"] for out in remote[4:8]] == [r for r, _ in reasons]  # type: ignore[index]
    # a misspelt key is refused, not ignored (the hand would score as out of Fantasyland)
    fields = "bottom, fantasyland_cards, fantasyland_streak, id, in_fantasyland, middle, top"
    message = f"players[0] has no field 'in_fantsyland' (its fields: {fields})"
    field = "players[0].in_fantsyland"
    assert (
        remote[8]
        == local[8]
        == {"error": {"reason": "INVALID_INPUT", "message": message, "field": field}}
    )
    assert remote[1]["players"][0]["points"] == 3  # type: ignore[index]
    # the same error, named by the wire field path remotely
    assert local[3]["error"]["reason"] == remote[3]["error"]["reason"] == "DUPLICATE_CARD"  # type: ignore[index]
    assert remote[3]["error"]["field"] == "players[1].board.top"  # type: ignore[index]


@pytest.mark.parametrize(
    "option", ["stay_min_row_royalty", "loss_cap", "max_consecutive_fantasylands"]
)
def test_a_limit_of_0_is_refused_locally_and_remotely_alike(
    option: str, server: BackgroundServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """0 written out is no limit in the contract but not in the JSON form (null is): a stay
    threshold of 0 kept every legal board in Fantasyland locally and none on a server."""
    hand = json.loads(EXAMPLE.read_text())
    path = tmp_path / "zero.json"
    path.write_text(json.dumps({**hand, "ruleset": {"preset": "classic", option: 0}}))
    local = run(["score", str(path)], capsys)
    remote = run(["score", "--server", server.address, str(path)], capsys)
    for status, out, err in (local, remote):
        assert (status, out) == (2, "")
        assert err.startswith("error: INVALID_RULESET") and "at least 1" in err, err


def test_score_remote_bad_input_exits_2_with_reason_and_field(
    server: BackgroundServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(EXAMPLE.read_text().replace('"Qd"', '"Q?"'))
    status, out, err = run(["score", "--server", server.address, str(bad)], capsys)
    assert (status, out) == (2, "")
    assert (
        err.strip() == "error: INVALID_CARD at hand.players[1].board.bottom[2]: invalid card: 'Q?'"
    )


def test_deal_remote_equals_local(
    server: BackgroundServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # a seed of bytes (zero bytes among them, as a table's combined seed has) sent as bytes
    hex_seed = [*DEAL[:2], *DEAL[4:], "--client-seed-hex", "0000000574" + "00" * 4]
    for argv in ([*DEAL], [*DEAL, "--json"], [*DEAL, "--jokers", "1"],
                 [*DEAL, "--jokers", "2", "--json"], hex_seed):  # fmt: skip
        assert run(["deal", "--server", server.address, *argv], capsys) == run(
            ["deal", *argv], capsys
        )
    status, _, err = run(
        ["deal", "--server", server.address, "--server-seed", "abc", "--nonce", "1"], capsys
    )
    assert status == 2 and err.startswith("error: INVALID_SEED at server_seed_hex: ")


def test_server_address_from_the_environment(
    server: BackgroundServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OFC_SERVER", server.address)
    status, out, _ = run(["deal", *DEAL, "--json"], capsys)
    assert status == 0 and json.loads(out)["deck"][0] == "Qs"


def test_unreachable_server_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(["deal", "--server", f"127.0.0.1:{free_port()}", *DEAL], capsys)
    assert (status, out) == (1, "")
    assert err.startswith("error: UNAVAILABLE")


def test_export_match_writes_every_hand_and_they_verify_as_one_chain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import grpc
    from ofcpoker.v1 import table_service_pb2 as pb
    from ofcpoker.v1.table_service_pb2_grpc import TableServiceStub

    from tests.e2e.test_tables import Table, start_server

    with start_server() as host, grpc.insecure_channel(host.address) as channel:
        table = Table(TableServiceStub(channel), "export")
        for _ in range(3):
            table.play_hand()
        served = [
            TableServiceStub(channel)
            .GetHandHistory(pb.GetHandHistoryRequest(table_id=table.id, hand_number=n))
            .history_json.encode()
            for n in (1, 2, 3)
        ]
        out = tmp_path / "match"
        status, printed, err = run(
            ["export-match", "--server", host.address, "--", table.id, str(out)], capsys
        )
        assert (status, err) == (0, "")
        assert printed == f"3 hands of table {table.id} written to {out}\n"
        status, _, err = run(
            ["export-match", "--server", host.address, "no-such-table", str(out)], capsys
        )
        assert status == 2 and err.startswith("error: ") and "TABLE_NOT_FOUND" in err, err
        nothing = tmp_path / "not" / "made"  # a failed export leaves no folder of its own
        status, _, _ = run(
            ["export-match", "--server", host.address, "no-such-table", str(nothing)], capsys
        )
        assert status == 2 and not (tmp_path / "not").exists()
    files = sorted(out.glob("*.json"))
    assert [f.name for f in files] == ["hand-00001.json", "hand-00002.json", "hand-00003.json"]
    # the bytes served, as `jq -r .historyJson` writes them: a digest of the file is theirs
    assert [f.read_bytes() for f in files] == [text + b"\n" for text in served]
    status, printed, _ = run(["verify", "--match", *map(str, files)], capsys)
    assert status == 0
    assert printed.endswith("3 verified, 0 failed; the match of 3 hands: 0 chain discrepancies\n")
