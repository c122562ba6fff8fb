"""The ``ofc`` command line: score (JSON and JSON lines), deal, eval, presets; errors.

Most tests call ``ofc_cli.main.main(argv)`` in-process; one runs the installed console
script in a subprocess.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ofc.cards import card_codes
from ofc.rulesets import PRESETS
from ofc.shuffle import combine_client_seeds, deal_deck
from ofc_cli.main import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _local(monkeypatch: pytest.MonkeyPatch) -> None:
    """Always score locally, whatever the caller's environment says."""
    monkeypatch.delenv("OFC_SERVER", raising=False)


def player(pid: str, board: str, **extra: Any) -> dict[str, Any]:
    top, middle, bottom = (row.split() for row in board.split("/"))
    return {"id": pid, "top": top, "middle": middle, "bottom": bottom, **extra}


def hand(*players: dict[str, Any], ruleset: Any = "classic") -> dict[str, Any]:
    return {"ruleset": ruleset, "players": list(players)}


# rules.md's worked examples (see test_scoring.py for the boards' story)
EX1_A = "Ac 3d 2h / 6c 6d 9h 8s 4c / 9c 8c 7d 6h 5s"
EX1_B = "Kd 3c 2d / 5c 5d 9d 8h 4d / 7c 7h Qd Js 4s"
EX3_B = "Ad Ah 2c / Kc Kd 9d 8d 4d / 9s 8h 7c 6s 5c"
EX4 = "Qc Qd 2c / Th Jh Qh Kh Ah / Ts Js Qs Ks As"
EX4_OPPONENT = "Kd 3c 2d / 5c 5d 9d 8h 4d / 7c 7d Jc 9c 3h"
EX5_A = "Ac 9d 4s / Kh Kd 8s 6c 2d / Ah Ad Qs Tc 3h"
EX5_B = "Ks 8c 3s / Jh Jd 9h 5d 2c / Qh Qc As 7c 4d"
TIED_A = "Ac 3d 2h / 4c 4d Kh Qs Jc / Tc 9c 8d 7h 6s"
TIED_B = "Ad 3c 2d / 4h 4s Kd Qh Jd / Td 9d 8c 7c 6d"

SCORE_TABLE = [
    # a, b, points (a, b), fouled, royalty totals, rows (a's side), Fantasyland cards
    (EX1_A, EX1_B, [8, -8], [False, False], [2, 0], (1, 1, 1), [0, 0]),
    (TIED_A, TIED_B, [0, 0], [False, False], [2, 2], (0, 0, 0), [0, 0]),
    (EX1_A, EX3_B, [8, -8], [False, True], [2, 0], (1, 1, 1), [0, 0]),
    (EX4, EX4_OPPONENT, [88, -88], [False, False], [82, 0], (1, 1, 1), [13, 0]),
    (EX5_A, EX5_B, [6, -6], [False, False], [0, 0], (1, 1, 1), [0, 0]),
]


def run(argv: list[str], capsys: pytest.CaptureFixture[str], stdin: str | None = None,
        monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[int, str, str]:  # fmt: skip
    if stdin is not None:
        assert monkeypatch is not None
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize(
    ("a", "b", "points", "fouled", "royalties", "rows", "fantasyland"), SCORE_TABLE
)
def test_score_worked_examples(
    a: str, b: str, points: list[int], fouled: list[bool], royalties: list[int],
    rows: tuple[int, int, int], fantasyland: list[int], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(hand(player("a", a), player("b", b))))
    status, out, err = run(["score", str(path)], capsys)
    assert (status, err) == (0, "")
    assert out.count("\n") == 1
    result = json.loads(out)
    assert result["ruleset"] == "classic"
    assert [p["id"] for p in result["players"]] == ["a", "b"]
    assert [p["points"] for p in result["players"]] == points
    assert [p["units"] for p in result["players"]] == points
    assert [p["fouled"] for p in result["players"]] == fouled
    assert [p["royalties"]["total"] for p in result["players"]] == royalties
    assert [p["fantasyland_next"]["cards"] for p in result["players"]] == fantasyland
    assert [p["fantasyland_next"]["qualifies"] for p in result["players"]] == [
        c > 0 for c in fantasyland
    ]
    (pair,) = result["pairs"]
    assert (pair["a"], pair["b"]) == ("a", "b")
    assert (pair["rows"]["top"], pair["rows"]["middle"], pair["rows"]["bottom"]) == rows
    assert pair["points"] == points[0]
    assert (pair["a_fouled"], pair["b_fouled"]) == tuple(fouled)


def test_score_example_1_in_full(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(["score", str(ROOT / "examples" / "worked-example-1.json")], capsys)
    assert status == 0
    result = json.loads(out)
    a, b = result["players"]
    assert a["royalties"] == {"top": 0, "middle": 0, "bottom": 2, "total": 2}
    assert a["hands"]["bottom"] == {
        "category": "straight", "name": "straight, nine high", "value": (4 << 20) | (8 << 16),
    }  # fmt: skip
    assert b["hands"]["middle"]["name"] == "pair of fives, 9-8-4 kickers"
    assert result["pairs"] == [
        {
            "a": "a", "b": "b", "rows": {"top": 1, "middle": 1, "bottom": 1}, "scoop": 1,
            "a_fouled": False, "b_fouled": False, "row_points": 6, "royalties": 2, "points": 8,
            "capped_points": 8, "unit_value": 1, "units": 8,
        }
    ]  # fmt: skip


def test_score_the_royalty_tables_the_rules_page_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/rules/pineapple-top-high-card.md: a royalty table is whole, never a patch; the
    page's full table pays worked example 1 as it says, and its one-line table 6 and -6."""
    page = (ROOT / "docs" / "rules" / "pineapple-top-high-card.md").read_text(encoding="utf-8")
    (full,) = (json.loads(b) for b in re.findall(r"```json\n(.*?)```", page, re.S))
    shown = re.search(r'`(\{"preset": "pineapple", "royalties".*?\}\}\})`', page.replace("\n", " "))
    assert shown, "the page's one-line royalty table"
    one_line = json.loads(shown.group(1))
    example = json.loads((ROOT / "examples" / "worked-example-1.json").read_text())
    for ruleset, points, royalties in (
        (full, [8, -8], [{"top": 1, "middle": 0, "bottom": 2, "total": 3},
                         {"top": 1, "middle": 0, "bottom": 0, "total": 1}]),
        (one_line, [6, -6], [{"top": 1, "middle": 0, "bottom": 0, "total": 1}] * 2),
    ):  # fmt: skip
        path = tmp_path / "hand.json"
        path.write_text(json.dumps({**example, "ruleset": ruleset}))
        status, out, err = run(["score", str(path)], capsys)
        assert (status, err) == (0, "")
        players = json.loads(out)["players"]
        assert [p["points"] for p in players] == points
        assert [p["royalties"] for p in players] == royalties


def test_score_reads_stdin_with_overrides_and_fantasyland(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    trips_top = "2h 2d 2c / 9c Tc Js Qs Kc / 3d 5d 7d 9d Td"
    queens_top = "Qh Qd Ac / 9h Th Jc Qc Ks / 3s 5s 7s 9s Ts"
    ruleset = {"preset": "progressive-pineapple", "unit_value": 10}
    data = hand(
        player("x", trips_top, in_fantasyland=True), player("y", queens_top), ruleset=ruleset
    )
    status, out, err = run(["score", "-"], capsys, json.dumps(data), monkeypatch)
    assert (status, err) == (0, "")
    result = json.loads(out)
    assert result["ruleset"] == "progressive-pineapple+custom"
    x, y = result["players"]
    # Trips stay in Fantasyland (14 cards); QQ enters it (14 in progressive pineapple).
    assert x["fantasyland_next"] == {"qualifies": True, "cards": 14}
    assert y["fantasyland_next"] == {"qualifies": True, "cards": 14}
    # x: top 222 beats QQ, middles tie (K-high straights), bottom T-high flushes tie.
    # Royalties: x 10 + 4 + 4 = 18, y 7 + 4 + 4 = 15; rows 1 -> 1 + 3 = 4 points, 40 units.
    assert (x["points"], x["units"], y["points"]) == (4, 40, -4)


ERRORS = [
    # input, reason, field (after "at"), message fragment
    (hand(player("a", EX1_A), player("b", "As 3h 2c / 6h 6s 9d 8d 4h / 9s 8h 7c 6d 5c")),
     "DUPLICATE_CARD", "players[1].middle", "duplicate card 6h"),
    (hand(player("a", EX1_A), player("b", "Ac Ad 2c / Kc Kd 9h 8s 4c / 9c 8c 7d 6h 5s")),
     "DUPLICATE_CARD", "players[1].top", "duplicate card Ac"),
    (hand(player("a", "9♣ 9♥ 2♦ / K♥ K♠ Q♦ Q♣ 4♦ / A♠ A♣ A♦ 7♠ 7♠"), player("b", EX1_B)),
     "DUPLICATE_CARD", "players[0].bottom", "duplicate card 7s"),
    (hand(player("a", "Ac 3d 2h / 6c 6d 9h 8s / 9c 8c 7d 6h 5s"), player("b", EX1_B)),
     "WRONG_ROW_SIZE", "players[0].middle", "has 4 cards"),
    (hand(player("a", "Ac 3d Xx / 6c 6d 9h 8s 4c / 9c 8c 7d 6h 5s"), player("b", EX1_B)),
     "INVALID_CARD", "players[0].top", "'Xx'"),
    (hand(player("a", EX1_A)), "WRONG_PLAYER_COUNT", "players", "got 1"),
    (hand(player("a", EX1_A), player("b", EX1_B), ruleset="chinese"),
     "UNKNOWN_RULESET", "ruleset", "'chinese'"),
    (hand(player("a", EX1_A), player("b", EX1_B), ruleset={"scoring": "9-9"}),
     "INVALID_RULESET", "ruleset.scoring", "known schemes"),
    ({"players": []}, "INVALID_INPUT", "players", "non-empty list"),
    ([1, 2], "INVALID_INPUT", None, "JSON object"),
]  # fmt: skip


@pytest.mark.parametrize(("data", "reason", "field", "fragment"), ERRORS)
def test_score_errors_are_one_line_on_stderr(
    data: Any, reason: str, field: str | None, fragment: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    status, out, err = run(["score", str(path)], capsys)
    assert status == 2
    assert out == ""
    assert err.count("\n") == 1
    where = f" at {field}" if field else ""
    assert err.startswith(f"error: {reason}{where}: ")
    assert fragment in err


def test_score_rejects_text_that_is_not_json(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    status, out, err = run(["score"], capsys, "{not json", monkeypatch)
    assert (status, out) == (2, "")
    assert err.startswith("error: INVALID_INPUT: not JSON")
    assert err.count("\n") == 1


def test_score_jsonl_goes_on_past_a_bad_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [
        json.dumps(hand(player("a", EX1_A), player("b", EX1_B))),
        json.dumps(hand(player("a", EX1_A), player("b", EX3_B))),
        "",  # blank lines are skipped
        json.dumps(
            hand(player("a", EX1_A), player("b", "Ac Ad 2c / Kc Kd 9h 8s 4c / 9c 8c 7d 6h 5s"))
        ),
        "{broken",
        json.dumps(hand(player("a", EX5_A), player("b", EX5_B))),
    ]
    status, out, err = run(["score", "--jsonl"], capsys, "\n".join(lines) + "\n", monkeypatch)
    assert status == 2
    assert err == ""
    results = [json.loads(line) for line in out.splitlines()]
    assert len(results) == 5
    assert [r["players"][0]["points"] for r in results[:2]] == [8, 8]
    assert results[2] == {
        "error": {
            "reason": "DUPLICATE_CARD",
            "message": "duplicate card Ac: players[0].top and players[1].top",
            "field": "players[1].top",
        }
    }
    assert results[3]["error"]["reason"] == "INVALID_INPUT"
    assert results[3]["error"]["message"].startswith("not JSON")
    assert results[4]["players"][0]["points"] == 6


def test_score_jsonl_reads_a_line_as_json_loads_does(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Space before or after the hand, a carriage return, a second value, a byte order mark:
    each line read (or refused, with json.loads's message) as json.loads reads it."""
    good = json.dumps(hand(player("a", EX1_A), player("b", EX1_B)))
    lines = ["  " + good, good + " \t", good + "\r", good + " {}", "\ufeff" + good, " \t ", good]
    status, out, err = run(["score", "--jsonl"], capsys, "\n".join(lines) + "\n", monkeypatch)
    assert (status, err) == (2, "")
    expected: list[str | int] = []
    for line in lines:
        try:
            json.loads(line)
        except json.JSONDecodeError as exc:
            if line.strip():
                expected.append(f"not JSON: {exc}")
        else:
            expected.append(8)
    results = [json.loads(line) for line in out.splitlines()]
    got = [r["error"]["message"] if "error" in r else r["players"][0]["points"] for r in results]
    assert got == expected
    assert len(got) == 6


def test_score_jsonl_all_good_exits_zero(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [json.dumps(hand(player("a", a), player("b", b))) for a, b, *_ in SCORE_TABLE]
    status, out, err = run(["score", "--jsonl", "-"], capsys, "\n".join(lines), monkeypatch)
    assert (status, err) == (0, "")
    points = [json.loads(line)["players"][0]["points"] for line in out.splitlines()]
    assert points == [row[2][0] for row in SCORE_TABLE]


def test_the_readmes_jsonl_example_scores_every_line(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/hands.jsonl, which the README's ``--jsonl`` line reads: a classic hand, a
    three-way Pineapple hand with a foul and Fantasyland entries, 2-4 scoring."""
    status, out, err = run(["score", "--jsonl", str(ROOT / "examples" / "hands.jsonl")], capsys)
    assert (status, err) == (0, "")
    got = [
        (r["ruleset"], [(p["id"], p["points"], p["fouled"], p["fantasyland_next"]["qualifies"])
                        for p in r["players"]])
        for r in map(json.loads, out.splitlines())
    ]  # fmt: skip
    assert got == [
        ("classic", [("a", 8, False, False), ("b", -8, False, False)]),
        (
            "pineapple",
            [("ann", 12, False, True), ("bob", 26, False, True), ("cy", -38, True, False)],
        ),
        ("classic+custom", [("a", 18, False, False), ("b", -18, False, False)]),
    ]


# --- deal ---------------------------------------------------------------------------------------
SPEC_SEED_HEX = bytes(range(32)).hex()
SPEC_COMMITMENT = "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd"
SPEC_DECK = (
    "Qs 6d Ad Td 6s 4s 8s Kc Kh 7d 8d Ts Jc 4d Js 5c 5s 7h Ac 9s Kd 9d Ah 3s 9c 2s 3h As 2d Jd "
    "3d 7s 3c 2c Tc Qc 4c 8h Th 4h 5h Qd 6h 8c 5d 7c Jh Ks Qh 6c 9h 2h"
)
DEAL = ["deal", "--server-seed", SPEC_SEED_HEX, "--client-seed", "auditor-test", "--nonce", "1"]


def test_deal_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run([*DEAL, "--json"], capsys)
    assert (status, err) == (0, "")
    assert json.loads(out) == {"commitment": SPEC_COMMITMENT, "deck": SPEC_DECK.split()}


def test_deal_text(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(DEAL, capsys)
    assert status == 0
    assert out == f"commitment {SPEC_COMMITMENT}\n{SPEC_DECK}\n"


def test_deal_with_jokers_is_ofc_shuffle_v2(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run([*DEAL, "--jokers", "2", "--json"], capsys)
    deck = json.loads(out)["deck"]
    assert status == 0 and len(deck) == 54  # docs/shuffle-v2.md's N = 54 vector
    assert (
        deck[:6] == ["8s", "9s", "2d", "7s", "5h", "6h"] and deck[29] == "X2" and deck[42] == "X1"
    )
    assert run([*DEAL, "--jokers", "0"], capsys) == run(DEAL, capsys)
    with pytest.raises(SystemExit) as exit_:  # argparse: a usage error
        main([*DEAL, "--jokers", "3"])
    assert exit_.value.code == 2 and "invalid choice: 3" in capsys.readouterr().err


def test_deal_takes_the_client_seed_as_hex_bytes(capsys: pytest.CaptureFixture[str]) -> None:
    text = ["deal", "--server-seed", SPEC_SEED_HEX, "--nonce", "1", "--json"]
    hex_seed = ["--client-seed-hex", b"auditor-test".hex()]
    assert run([*text, *hex_seed], capsys) == run([*text, "--client-seed", "auditor-test"], capsys)
    # A table's combined seed (u32be lengths: zero bytes) deals as the seed's bytes do; as
    # text an argument cannot hold them at all.
    combined = combine_client_seeds([b"table", b"", b"ann's"])
    status, out, _ = run([*text, "--client-seed-hex", combined.hex()], capsys)
    assert status == 0
    assert json.loads(out)["deck"] == card_codes(deal_deck(bytes(range(32)), combined, 1))
    assert json.loads(out)["deck"] != json.loads(run([*text], capsys)[1])["deck"]
    with pytest.raises(SystemExit) as exit_:  # argparse: not both
        main([*text, *hex_seed, "--client-seed", "x"])
    assert exit_.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (
            ["deal", "--server-seed", SPEC_SEED_HEX, "--client-seed-hex", "abc", "--nonce", "1"],
            "client_seed_hex",
        ),
        (["deal", "--server-seed", "00" * 31, "--nonce", "1"], "server_seed"),
        (["deal", "--server-seed", "xyz", "--nonce", "1"], "server_seed"),
        (["deal", "--server-seed", SPEC_SEED_HEX, "--nonce", "-1"], "nonce"),
        (["deal", "--server-seed", SPEC_SEED_HEX, "--nonce", str(2**64)], "nonce"),
    ],
)
def test_deal_errors(argv: list[str], field: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(argv, capsys)
    assert (status, out) == (2, "")
    assert err.startswith(f"error: INVALID_SEED at {field}: ")
    assert err.count("\n") == 1


# --- eval and presets ---------------------------------------------------------------------------
EVAL = [
    # cards, category, name
    (["Kh", "Kd", "Ac"], "pair", "pair of kings, ace kicker"),
    (["10h", "jh", "Q♥", "Kh", "Ah"], "royal_flush", "royal flush"),
    (["5d", "4c", "3h", "2s", "Ac"], "straight", "straight, five high"),
    (["Ah", "Kh", "Qh"], "high_card", "high card, A-K-Q"),
]


@pytest.mark.parametrize(("cards", "category", "name"), EVAL)
def test_eval(
    cards: list[str], category: str, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = run(["eval", "--json", *cards], capsys)
    assert status == 0
    result = json.loads(out)
    assert (result["category"], result["name"]) == (category, name)
    status, text, _ = run(["eval", *cards], capsys)
    assert status == 0
    assert text == f"{category}\t{name}\t{result['value']}\n"


def test_eval_compares_on_one_scale(capsys: pytest.CaptureFixture[str]) -> None:
    def value(cards: str) -> int:
        main(["eval", "--json", *cards.split()])
        result: int = json.loads(capsys.readouterr().out)["value"]
        return result

    assert value("Kh Kd Ac") > value("Ks Kc Qd 7h 3c")  # rules.md: a foul
    assert value("Kh Kd Qc") < value("Ks Kc Qd 7h 3c")


@pytest.mark.parametrize(
    ("cards", "reason"),
    [(["As", "Kd"], "WRONG_ROW_SIZE"), (["As", "Kd", "Qc", "Jh"], "WRONG_ROW_SIZE"),
     (["As", "Kd", "1c"], "INVALID_CARD")],
)  # fmt: skip
def test_eval_errors(cards: list[str], reason: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(["eval", *cards], capsys)
    assert (status, out) == (2, "")
    assert err.startswith(f"error: {reason}")


def test_presets(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(["presets"], capsys)
    assert status == 0
    printed = json.loads(out)
    assert list(printed) == list(PRESETS)
    for name, r in PRESETS.items():  # every option, the later ones too when unused
        assert printed[name] == {
            "fantasyland_tiers": [],
            **r.to_dict(),
            "royalties": {"top_high_card": {}, **r.to_dict()["royalties"]},
        }
    assert printed["classic"]["fantasyland_tiers"] == []
    keep = printed["progressive-pineapple-keep"]["fantasyland_tiers"]
    assert [(t["cards"], t["stay_cards"]) for t in keep] == [(14, 14), (15, 15), (16, 16), (17, 17)]
    assert printed["pineapple-top-high-card"]["royalties"]["top_high_card"]["A"] == 1


# --- the installed console script -----------------------------------------------------------------
def test_console_script_in_a_subprocess(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("ofc")
    executable = str(script) if script.exists() else shutil.which("ofc")
    assert executable, "the ofc console script is not installed"
    env = {k: v for k, v in os.environ.items() if k != "OFC_SERVER"}
    good = json.dumps(hand(player("a", EX1_A), player("b", EX1_B)))
    done = subprocess.run(
        [executable, "score"], input=good, capture_output=True, text=True, env=env, timeout=60,
        check=False,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    assert [p["points"] for p in json.loads(done.stdout)["players"]] == [8, -8]
    bad = json.dumps(hand(player("a", EX1_A), player("b", EX3_B.replace("Ad Ah", "Ac Ah"))))
    done = subprocess.run(
        [executable, "score", "-"], input=bad, capture_output=True, text=True, env=env,
        timeout=60, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "error: DUPLICATE_CARD at players[1].top: duplicate card Ac: players[0].top and "
        "players[1].top\n"
    )


def test_score_of_a_missing_file_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.json"
    assert main(["score", str(missing)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("error: INVALID_INPUT at file: cannot read") and err.count("\n") == 1
