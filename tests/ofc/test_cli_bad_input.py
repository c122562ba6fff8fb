"""Every ``ofc`` subcommand answers bad input with one line on stderr and exit status 2.

The line is ``error: REASON[ at FIELD]: message`` (a stable UPPER_SNAKE reason, the place,
why), never a traceback; argument errors are ``error: USAGE: ...``. The cases are listed per
subcommand, and the subcommands are read from the parser: one added later without cases
fails here.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest
from ofc_cli.main import build_parser, main

from tests.conftest import free_port

SEED = "ab" * 32
UNREACHABLE = f"127.0.0.1:{free_port()}"  # --server cases: the input is refused first
# 13 cards: a Fantasyland hand
HAND = ["As", "Kd", "Qd", "Jd", "Td", "9d", "8d", "7d", "6d", "5d", "4d", "3d", "2d"]
LINE = re.compile(r"error: ([A-Z][A-Z_]+)( at [^:]+)?: .+")

# subcommand -> (arguments, the reason the line names)
CASES: dict[str, list[tuple[list[str], str]]] = {
    "eval": [
        (["As", "As", "Qs", "Js", "Ts"], "DUPLICATE_CARD"),  # was a KeyError traceback
        (["As", "As", "As"], "DUPLICATE_CARD"),  # was "three aces"
        (["As", "Kd"], "WRONG_ROW_SIZE"),
        (["Zz", "Kd", "Qd"], "INVALID_CARD"),
        (["\udcffs", "Kd", "Qd"], "INVALID_CARD"),  # bytes that are not UTF-8
        ([], "USAGE"),
        (["As", "Kd", "Qd", "--bogus"], "USAGE"),
    ],
    "deal": [
        (["--server-seed", "zz", "--nonce", "1"], "INVALID_SEED"),
        (["--server-seed", SEED, "--nonce", "-1"], "INVALID_SEED"),
        (["--server-seed", SEED, "--nonce", "99999999999999999999999"], "INVALID_SEED"),
        (["--server-seed", SEED, "--nonce", "²"], "USAGE"),
        # int() would take these: a number is ASCII digits
        (["--server-seed", SEED, "--nonce", "1_000"], "USAGE"),
        (["--server-seed", SEED, "--nonce", " 5"], "USAGE"),
        (["--server-seed", SEED, "--nonce", "\u0661"], "USAGE"),  # ARABIC-INDIC DIGIT ONE
        (["--server-seed", " " + SEED, "--nonce", "1"], "INVALID_SEED"),
        (["--server-seed", SEED, "--nonce", "1", "--client-seed-hex", "00 01"], "INVALID_SEED"),
        (["--server-seed", SEED, "--nonce", "1", "--server", "127.0.0.1:99999"], "INVALID_INPUT"),
        (["--server-seed", SEED, "--nonce", "1", "--client-seed", "\udcff"], "INVALID_INPUT"),
        (["--server-seed", SEED, "--nonce", "1", "--client-seed-hex", "0g"], "INVALID_SEED"),
        (["--server-seed", SEED, "--nonce", "1", "--client-seed-hex", "0"], "INVALID_SEED"),
        (
            [
                "--server-seed",
                SEED,
                "--nonce",
                "1",
                "--client-seed-hex",
                "00",
                "--server",
                UNREACHABLE,
                "--client-seed",
                "x",
            ],
            "USAGE",
        ),
        (["--server-seed", "zz", "--nonce", "1", "--server", UNREACHABLE], "INVALID_SEED"),
        (["--nonce", "1"], "USAGE"),
    ],
    "score": [
        (["/nonexistent/hand.json"], "INVALID_INPUT"),
        (["/nonexistent/hand.json", "--server", UNREACHABLE], "INVALID_INPUT"),
        (["{not-utf8}"], "INVALID_INPUT"),
        (["{not-json}"], "INVALID_INPUT"),
        (["{not-a-hand}"], "INVALID_INPUT"),
    ],
    "presets": [(["extra"], "USAGE")],
    "solve": [
        (["As", "Kd"], "WRONG_CARD_COUNT"),
        (["As", *HAND[:-1]], "DUPLICATE_CARD"),
        (["--ruleset", "nope", *HAND], "UNKNOWN_RULESET"),
        (["--fantasyland-value", "-5", *HAND], "INVALID_INPUT"),
        (["--fantasyland-value", "x", "As"], "USAGE"),
    ],
    "play": [
        (["--seed", "zz"], "INVALID_SEED"),
        (["--seed", SEED, "--players", "9"], "WRONG_PLAYER_COUNT"),
        (["--seed", SEED, "--ruleset", "nope"], "UNKNOWN_RULESET"),
        (["--seed", SEED, "--client-seed", "\udcff"], "INVALID_INPUT"),
        (["--seed", SEED, "--players", "²"], "USAGE"),
        (["--seed", SEED, "--turn-time-ms", "0"], "INVALID_INPUT"),
        (["--seed", SEED, "--turn-time-ms", "3600001"], "INVALID_INPUT"),
    ],
    "serve": [
        (["--listen", "x"], "CONFIG"),
        (["--listen", "127.0.0.1:²"], "CONFIG"),
        (["--max-message-bytes", "²"], "CONFIG"),
        (["--grace-seconds", "-1"], "CONFIG"),
        (["--redis-url", "http://x"], "CONFIG"),
    ],
    "verify": [
        (["/nonexistent/history.json"], "INVALID_INPUT"),
        (["{not-json}"], "MALFORMED_HISTORY"),
        (["--expect-ruleset", "nope", "{not-json}"], "UNKNOWN_RULESET"),
        (["--expect-ruleset", "{oops", "{not-json}"], "INVALID_RULESET"),
        (["-j", "0", "{not-json}"], "INVALID_INPUT"),
        (["--feed", "{not-json}", "{not-json}"], "INVALID_INPUT"),  # --feed needs --match
        (["--match", "--feed", "/nonexistent/feed.jsonl", "{not-json}"], "INVALID_INPUT"),
    ],
    "export-match": [
        (["--server", UNREACHABLE, "a b", "/tmp/unused-export"], "INVALID_INPUT"),
        (["--server", UNREACHABLE, "", "/tmp/unused-export"], "INVALID_INPUT"),
        (["--server", UNREACHABLE, "t-1", "/proc/cannot/write"], "INVALID_INPUT"),
        (["t-1"], "USAGE"),
    ],
}
FILES = {
    "{not-utf8}": b"\xff\xfe{}",
    "{not-json}": b"this is not json",
    "{not-a-hand}": b'{"players": [{"top": 5}]}',
}


def test_every_subcommand_has_bad_input_cases() -> None:
    parser = build_parser()
    (subparsers,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(subparsers.choices) == set(CASES), "a subcommand without bad-input cases"


@pytest.mark.parametrize(
    ("command", "argv", "reason"),
    [(command, argv, reason) for command, cases in CASES.items() for argv, reason in cases],
)
def test_bad_input_is_one_line_with_the_reason_and_exit_2(
    command: str,
    argv: list[str],
    reason: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OFC_SERVER", raising=False)
    for placeholder, data in FILES.items():
        (tmp_path / placeholder.strip("{}")).write_bytes(data)
    argv = [str(tmp_path / a.strip("{}")) if a in FILES else a for a in argv]
    try:
        status = main([command, *argv])
    except SystemExit as exit_:  # argparse's own exit, after our one-line message
        status = int(exit_.code or 0)
    out = capsys.readouterr()
    lines = out.err.splitlines()
    assert status == 2, out.err
    assert len(lines) == 1, out.err
    match = LINE.fullmatch(lines[0])
    assert match is not None, lines[0]
    assert match[1] == reason, lines[0]


def test_the_console_script_says_it_in_one_line_too() -> None:
    ofc = Path(sys.executable).with_name("ofc")
    for argv in (["eval", "As", "As", "Qs", "Js", "Ts"], ["eval", "As", "As", "As"]):
        result = subprocess.run(
            [str(ofc), *argv], capture_output=True, text=True, timeout=30, check=False
        )
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr == "error: DUPLICATE_CARD at cards[1]: duplicate card As\n"
