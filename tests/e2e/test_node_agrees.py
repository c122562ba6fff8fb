"""The two verifiers agree: ``ofc verify`` (Python, ``ofc.verify``) and the independent Node
verifier (``clients/node/verify.js``) give every row of the deck the same value, and accept
and reject the same documents with the same discrepancy code at the same location — every
golden history, every golden match chain with its settlement feed, and tampered copies of
each (a card, the seed, a placement, a score, a timeout's time and deadline, a stake, a newer
format, malformed JSON, seeded random changes, a missing hand, a doctored running total, a
broken commitment chain, a disagreeing feed record, ...).

Both are run over the same files: Python through the library ``ofc verify`` runs, Node
through its command line (``--json``); and the two command lines' own lines are compared too.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import random
import re
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ofc.evaluator import rank_row
from ofc.rulesets import resolve_ruleset
from ofc.verify import check_history_json, verify_match
from ofc_cli.cmd_verify import read_feed

from tests.ofc.test_golden import FILES, GOLDEN, JOKER_FILES, JOKER_TAMPERS, MATCHES, TAMPERS, load

ROOT = Path(__file__).resolve().parents[2]
VERIFY_JS = ROOT / "clients" / "node" / "verify.js"
OFC = Path(sys.executable).with_name("ofc")
History = dict[str, Any]
Verdict = tuple[str, str, str] | None  # (code, location, engine reason), None: verified


@pytest.fixture(scope="module")
def node() -> str:
    binary = shutil.which("node")
    if binary is None:
        pytest.fail("node is not on PATH: clients/node needs Node.js >= 20")
    return binary


def _node_json(node: str, *args: str) -> list[dict[str, Any]]:
    result = subprocess.run(
        [node, str(VERIFY_JS), "--json", *args], capture_output=True, text=True, timeout=300
    )
    assert result.returncode in (0, 1, 2), result.stderr
    assert result.stderr == "", result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


# --- hand values ------------------------------------------------------------------------------
def _values_digest(size: int, jokers: int = 0) -> str:
    """SHA-256 of the value of every ``size``-card row with exactly ``jokers`` jokers (its
    natural ids in lexicographic order, then X1 and X2; each value u32be)."""
    digest = hashlib.sha256()
    for row in itertools.combinations(range(52), size - jokers):
        digest.update(struct.pack(">I", rank_row((*row, *range(52, 52 + jokers)))))
    return digest.hexdigest()


ROW_KINDS = [(3, 0), (5, 0), (3, 1), (3, 2), (5, 1), (5, 2)]


def test_both_evaluators_give_every_row_of_the_deck_the_same_value(node: str) -> None:
    """All 22,100 three-card and 2,598,960 five-card rows, and every row with one joker
    (1,326 tops, 270,725 five-card rows) and with two (52 and 22,100), compared by one digest
    per kind."""
    script = (
        "const c = require(process.argv[1]);"
        f"console.log({', '.join(f'c.valuesDigest({s}, {j})' for s, j in ROW_KINDS)})"
    )
    cards_js = str(ROOT / "clients" / "node" / "lib" / "cards.js")
    result = subprocess.run(
        [node, "-e", script, cards_js], capture_output=True, text=True, timeout=300
    )
    assert result.stdout.split() == [_values_digest(s, j) for s, j in ROW_KINDS], result.stderr


# --- one history at a time ---------------------------------------------------------------------
def _first_timeout(h: History) -> int:
    return next(i for i, a in enumerate(h["actions"]) if a["type"] == "timeout")


def _timeout_time(h: History) -> None:
    h["actions"][_first_timeout(h)]["resolved"]["at_ms"] += 1


def _deadline(h: History) -> None:
    action = h["actions"][_first_timeout(h)]
    if "deadline_ms" in action and action["deadline_ms"] is not None:
        action["deadline_ms"] += 1
    else:
        action["deadline_ms"] = action["at_ms"]  # a deadline without a clock, or in version 1


def _early(h: History) -> None:
    action = h["actions"][_first_timeout(h)]
    action["at_ms"] -= 1
    action["resolved"]["at_ms"] -= 1


def _board_card(h: History) -> None:
    board = h["boards"][-1]
    board["top"][0], board["bottom"][0] = board["bottom"][0], board["top"][0]


def _swap_rows(h: History) -> None:
    move = h["actions"][1].get("resolved", h["actions"][1])
    if move["type"] == "place":
        move["placements"][0][1] = "top" if move["placements"][0][1] != "top" else "middle"
    else:
        move["top"][0], move["middle"][0] = move["middle"][0], move["top"][0]


def _joker_not_in_deck(h: History) -> None:
    """A move holding X2, which a deck of fewer than two jokers lacks (INVALID_CARD, not
    CARD_NOT_DEALT)."""
    move = h["actions"][1].get("resolved", h["actions"][1])
    if move["type"] == "place":
        move["placements"][0][0] = "X2"
    else:
        move["top"][0] = "X2"


def _stake(h: History) -> None:
    h["settlement"]["pairs"][-1]["unit_value"] += 1


def _loss_cap(h: History) -> None:
    h["initial_state"]["ruleset"]["loss_cap"] = 3


def _royalty_table(h: History) -> None:
    h["initial_state"]["ruleset"]["royalties"]["middle"]["trips"] = 40


def _scoring(h: History) -> None:
    h["initial_state"]["ruleset"]["scoring"]["scoop_bonus"] += 1


def _fantasyland_owed(h: History) -> None:
    seat = h["initial_state"]["seats"][h["order"][0]]
    seat["fantasyland"] = 0 if seat["fantasyland"] else 14


def _newer(h: History) -> None:
    h["format_version"] = 5


def _nested_key(h: History) -> None:
    h["settlement"]["players"][0]["bonus"] = 0


def _missing_key(h: History) -> None:
    del h["boards"]


def _lower_card(h: History) -> None:
    move = h["actions"][1].get("resolved", h["actions"][1])
    if move["type"] == "place":
        move["placements"][0][0] = move["placements"][0][0].lower()
    else:
        move["top"][0] = move["top"][0].lower()


def _dropped_action(h: History) -> None:
    h["actions"].pop()


def _other_nonce(h: History) -> None:
    h["initial_state"]["hands_played"] += 1


def _running_points(h: History) -> None:
    h["initial_state"]["seats"][0]["points"] += 5  # one hand alone cannot tell: both accept


def _row_cards(board: dict[str, Any]) -> list[str]:
    return [c for r in ("top", "middle", "bottom") for c in board[r]]


def _joker_as_its_card(h: History) -> None:
    """The first joker on a board written as a natural card (one no row of that board holds)."""
    board, row, k = next(
        (b, row, k)
        for b in h["boards"]
        for row in ("top", "middle", "bottom")
        for k, card in enumerate(b[row])
        if card.startswith("X")
    )
    held = set(_row_cards(board))
    board[row][k] = next(c for c in ("As", "Ks", "2c", "2d") if c not in held)


def _money_past_2_to_the_53(h: History) -> None:
    """Money no JSON reader that rounds reads the same: refused by both, in the same words."""
    h["settlement"]["players"][0]["units"] = -(2**53 + 1)


def _points_past_2_to_the_53(h: History) -> None:
    """The same deeper in, where each verifier's own reader takes the initial state."""
    h["initial_state"]["seats"][0]["points"] = 2**60


def _seat_past_2_to_the_53(h: History) -> None:
    h["actions"][1]["seat"] = 2**60


EXTRA: dict[str, Callable[[History], None]] = {
    "timeout-time": _timeout_time,
    "deadline": _deadline,
    "early-timeout": _early,
    "board-card": _board_card,
    "row": _swap_rows,
    "joker-not-in-deck": _joker_not_in_deck,
    "stake": _stake,
    "loss-cap": _loss_cap,
    "royalty-table": _royalty_table,
    "scoring": _scoring,
    "fantasyland-owed": _fantasyland_owed,
    "newer-format": _newer,
    "nested-key": _nested_key,
    "missing-key": _missing_key,
    "lower-case-card": _lower_card,
    "dropped-action": _dropped_action,
    "other-nonce": _other_nonce,
    "running-points": _running_points,
    "money-past-2^53": _money_past_2_to_the_53,
    "points-past-2^53": _points_past_2_to_the_53,
    "seat-past-2^53": _seat_past_2_to_the_53,
}
RAW_TEXTS = {
    "repeated-key.json": b'{"format_version": 1, "format_version": 1}',
    "float.json": b'{"format_version": 1.0}',
    "nan.json": b'{"format_version": NaN}',
    "not-utf8.json": b'{"format_version": "\xff"}',
    "a-list.json": b"[]",
    "response-newer.json": b'{"historyJson": "{\\"format_version\\": 9}"}',
}


def _case_files(directory: Path) -> list[Path]:
    """Every golden history, and tampered copies of each, written under ``directory``."""
    paths: list[Path] = []
    for source in FILES:
        name = str(source.relative_to(GOLDEN)).replace("/", "--").removesuffix(".json")
        original = directory / f"{name}.json"
        original.write_bytes(source.read_bytes())
        paths.append(original)
        history, rewrap = load(source)
        changes: dict[str, Callable[[History], Any]] = {
            **{k: mutate for k, (mutate, _) in TAMPERS.items()},
            **EXTRA,
        }
        if source in JOKER_FILES:  # the deck's own keys of format 4
            changes.update({f"joker-{k}": mutate for k, (mutate, _) in JOKER_TAMPERS.items()})
            if any(c.startswith("X") for b in history["boards"] for c in _row_cards(b)):
                changes["joker-as-its-card"] = _joker_as_its_card
        for kind, change in changes.items():
            if kind in ("timeout-time", "deadline", "early-timeout") and not any(
                a["type"] == "timeout" for a in history["actions"]
            ):
                continue
            tampered = copy.deepcopy(history)
            change(tampered)
            path = directory / f"{name}--{kind}.json"
            path.write_text(json.dumps(rewrap(tampered)))
            paths.append(path)
    for file_name, text in RAW_TEXTS.items():
        (directory / file_name).write_bytes(text)
        paths.append(directory / file_name)
    return paths


def _python_verdict(path: Path) -> Verdict:
    found = check_history_json(path.read_bytes()).discrepancy
    if found is None:
        return None
    code = str(found.code)
    return (code, found.location, _engine_reason(code, found.message))


def _node_verdict(record: dict[str, Any]) -> Verdict:
    if record["ok"]:
        return None
    code = record["code"]
    return (code, record["location"], _engine_reason(code, record["message"]))


def _engine_reason(code: str, message: str) -> str:
    """An illegal action's message starts with the engine's reason ("CARD_NOT_DEALT: ..."):
    both verifiers' engines must refuse a move for the same reason, not only refuse it."""
    return message.partition(":")[0] if code == "ILLEGAL_ACTION" else ""


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return _case_files(tmp_path_factory.mktemp("agree"))


def test_both_verifiers_give_every_history_the_same_verdict(node: str, cases: list[Path]) -> None:
    records = _node_json(node, "-j", "2", *map(str, cases))
    summary = records.pop()
    by_source = {r["source"]: r for r in records}
    assert len(by_source) == len(cases) > 20 * len(FILES)
    disagreements = []
    codes = set()
    for path in cases:
        mine = by_source[str(path)]
        node_verdict = _node_verdict(mine)
        python = _python_verdict(path)
        codes.add(None if python is None else python[0])
        if node_verdict != python:
            disagreements.append((path.name, python, node_verdict))
    assert disagreements == []
    assert summary["failed"] == sum(1 for r in records if not r["ok"])
    # the cases exercise the checks, not one code
    assert {
        None,
        "MALFORMED_HISTORY",
        "NEWER_FORMAT_VERSION",
        "COMMITMENT_MISMATCH",
        "DECK_MISMATCH",
        "DEAL_MISMATCH",
        "ILLEGAL_ACTION",
        "TIMEOUT_MISMATCH",
        "DEADLINE_MISMATCH",
        "TIMEOUT_BEFORE_DEADLINE",
        "INCOMPLETE_HAND",
        "BOARD_MISMATCH",
        "SETTLEMENT_MISMATCH",
    } <= codes


_LINE = re.compile(
    r"^(?P<error>error: )?(?P<source>.+?\.json): (?P<verdict>OK|[A-Z_]+(?: at \S*)?)"
)


def _verdicts(output: str) -> list[tuple[str, str, str]]:
    lines = output.splitlines()
    parsed = []
    for line in lines:
        match = _LINE.match(line)
        if match is not None:
            parsed.append((match["error"] or "", match["source"], match["verdict"].rstrip(":")))
    return parsed


def test_the_two_command_lines_print_the_same_verdicts(node: str, cases: list[Path]) -> None:
    folder = str(cases[0].parent)
    python = subprocess.run(
        [str(OFC), "verify", "-j", "2", folder], capture_output=True, text=True, timeout=600
    )
    js = subprocess.run(
        [node, str(VERIFY_JS), "-j", "2", folder], capture_output=True, text=True, timeout=300
    )
    assert js.returncode == python.returncode == 2  # some cases are unreadable
    assert _verdicts(js.stdout) == _verdicts(python.stdout)
    assert _verdicts(js.stderr) == _verdicts(python.stderr)
    assert len(_verdicts(js.stdout) + _verdicts(js.stderr)) == len(cases)
    assert js.stdout.splitlines()[-1] == python.stdout.splitlines()[-1]  # "N verified, M failed"


def test_the_two_command_lines_take_the_same_files_of_a_folder_in_the_same_order(
    node: str, tmp_path: Path
) -> None:
    """Every file named *.json under the folder, in code-point order part by part: not a
    folder named so, nor a link that leads nowhere; names beyond the BMP sort after U+FF01
    (JavaScript's own order would put them first)."""
    history = FILES[0].read_bytes()
    day = tmp_path / "day"
    for name in ("a-\uff01.json", "a-\U0001f600.json", "b/c.json", "b.json", "z.json"):
        (day / name).parent.mkdir(parents=True, exist_ok=True)
        (day / name).write_bytes(history)
    (day / "archive.json").mkdir()  # a folder named *.json: searched, not read
    (day / "archive.json" / "hand.json").write_bytes(history)
    (day / "gone.json").symlink_to(tmp_path / "nowhere.json")
    (day / "link.json").symlink_to(day / "z.json")
    (day / "notes.txt").write_text("not a history")
    python = subprocess.run([str(OFC), "verify", str(day)], capture_output=True, text=True)
    js = subprocess.run([node, str(VERIFY_JS), str(day)], capture_output=True, text=True)
    assert js.returncode == python.returncode == 0, python.stdout + python.stderr + js.stderr
    order = [source for _, source, _ in _verdicts(python.stdout)]
    assert order == [
        str(day / name)
        for name in ("a-\uff01.json", "a-\U0001f600.json", "archive.json/hand.json", "b/c.json",
                     "b.json", "link.json", "z.json")
    ]  # fmt: skip
    assert _verdicts(js.stdout) == _verdicts(python.stdout)
    assert js.stdout.splitlines()[-1] == python.stdout.splitlines()[-1] == "7 verified, 0 failed"


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every JSON path in ``value``, the whole document first."""
    found = [path]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += _paths(inner, (*path, index))
    return found


_NATURAL_CODES = [r + s for r in "23456789TJQKA" for s in "cdhs"]
_ODD_VALUES: list[Any] = [None, True, 0, -1, 1.0, "x", "As", [], {}, 99, "top", 2**40, ""]


def _mutate(history: History, rng: random.Random) -> None:
    """One change somewhere: a key removed or added, an item added or removed, a number, card
    or row changed, another value put in, or two actions swapped."""
    path = rng.choice(_paths(history)[1:])
    parent: Any = history
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    value = parent[last]
    roll = rng.random()
    if roll < 0.2 and isinstance(parent, dict):
        del parent[last]
    elif roll < 0.3 and isinstance(parent, dict):
        parent["extra"] = 1
    elif roll < 0.4 and isinstance(parent, list):
        parent.append(copy.deepcopy(parent[0]))
    elif roll < 0.5 and isinstance(parent, list):
        parent.pop(last)
    elif roll < 0.6 and type(value) is int:
        parent[last] = value + rng.choice([-1, 1, 13])
    elif roll < 0.75 and isinstance(value, str) and re.fullmatch(r"[2-9TJQKA][cdhs]|X[12]", value):
        parent[last] = rng.choice([*_NATURAL_CODES, "X1", "X2"])
    elif roll < 0.8 and value in ("top", "middle", "bottom"):
        parent[last] = rng.choice(["top", "middle", "bottom"])
    elif roll < 0.9:
        actions = history["actions"]
        i, j = rng.randrange(1, len(actions)), rng.randrange(1, len(actions))
        actions[i], actions[j] = actions[j], actions[i]
    else:
        parent[last] = rng.choice(_ODD_VALUES)


def test_both_verifiers_agree_on_random_changes_to_every_golden_history(
    node: str, tmp_path: Path
) -> None:
    """15 seeded random changes to each golden history (the same ones every run)."""
    rng = random.Random(13)
    paths = []
    for k, source in enumerate(FILES):
        history, rewrap = load(source)
        for n in range(15):
            changed = copy.deepcopy(history)
            _mutate(changed, rng)
            path = tmp_path / f"{k:02d}-{n:02d}.json"
            path.write_text(json.dumps(rewrap(changed)))
            paths.append(path)
    records = _node_json(node, "-j", "2", *map(str, paths))[:-1]
    by_source = {r["source"]: _node_verdict(r) for r in records}
    disagreements = [
        (path.name, python, by_source[str(path)])
        for path in paths
        if (python := _python_verdict(path)) != by_source[str(path)]
    ]
    assert disagreements == []


@pytest.mark.parametrize(
    ("spec", "some_pass"),
    [
        ("pineapple", True),  # the Pineapple hands of ofc play
        ({"preset": "pineapple", "loss_cap": 10}, True),  # the golden matches' table
        ({"preset": "classic", "scoring": "2-4", "royalties": "ukrainian"}, False),
        ("pineapple-jokers", True),  # the golden Pineapple hands with two jokers
    ],
    ids=["preset", "loss-cap", "scheme-and-table", "jokers"],
)
def test_both_verifiers_hold_histories_to_an_expected_ruleset(
    node: str, spec: str | dict[str, Any], some_pass: bool
) -> None:
    text = spec if isinstance(spec, str) else json.dumps(spec)
    records = _node_json(node, "-j", "1", "--expect-ruleset", text, *map(str, FILES))[:-1]
    expected = resolve_ruleset(spec)
    verdicts = []
    for path, record in zip(FILES, records, strict=True):
        found = check_history_json(path.read_bytes(), expected_ruleset=expected).discrepancy
        python = None if found is None else (str(found.code), found.location)
        verdicts.append(python)
        assert (record["source"], record["code"], record["location"]) == (
            str(path),
            *(python or (None, None)),
        )
    assert "RULESET_MISMATCH" in {v[0] for v in verdicts if v}
    assert (None in verdicts) == some_pass


@pytest.mark.parametrize(
    ("policy", "code"),
    [
        ("ofc-timeout-4", None),
        ("ofc-timeout-5", None),  # a newer release's: a note
        ("acme-bot-2", None),  # another producer's: a note
        (None, None),
        ("ofc-timeout-3", "POLICY_UNKNOWN"),  # never written: histories name 4 or later
        ("ofc-timeout-04", "POLICY_UNKNOWN"),
        ("ofc-timeout-", "POLICY_UNKNOWN"),
    ],
)
def test_both_verifiers_refuse_a_timeout_policy_no_release_wrote(
    node: str, policy: str | None, code: str | None, tmp_path: Path
) -> None:
    source = ROOT / "tests" / "golden" / "2edd693" / "play-classic-3-clock.json"
    history = json.loads(source.read_text())
    index = _first_timeout(history)
    history["actions"][index]["policy"] = policy
    path = tmp_path / "relabelled.json"
    path.write_text(json.dumps(history))
    # the recorded moves are ofc-timeout-4's: verified as they are under the name it has
    checked = check_history_json(path.read_bytes(), check_policy=True)
    found = checked.discrepancy
    assert (None if found is None else (str(found.code), found.location)) == (
        None if code is None else (code, f"actions[{index}].policy")
    )
    (record,) = _node_json(node, "--check-policy", str(path))[:-1]
    assert (record["code"], record["location"]) == (
        (None, None) if found is None else (str(found.code), found.location)
    )
    if found is not None:
        assert record["message"] == found.message
    assert check_history_json(path.read_bytes()).ok  # without --check-policy: names unchecked


# --- whole matches -----------------------------------------------------------------------------
def _match_cases(directory: Path) -> dict[str, tuple[list[History], list[str]]]:
    """Named variations of one golden match: its hands (as documents) and feed lines."""
    hands = [json.loads(p.read_text()) for p in sorted(directory.glob("hand-????.json"))]
    feed = (directory / "feed.jsonl").read_text().splitlines()
    cases: dict[str, tuple[list[History], list[str]]] = {"as-is": (hands, feed)}
    cases["missing-hand"] = (hands[:1] + hands[2:], feed)
    cases["repeated-hand"] = (hands + hands[1:2], feed)
    cases["feed-missing-record"] = (hands, feed[:1] + feed[2:])
    cases["feed-begins-later"] = (hands, feed[1:])  # a note, not a discrepancy
    cases["feed-redelivered"] = (hands, feed + feed[:2])

    def with_feed(index: int, change: Callable[[dict[str, Any]], None]) -> list[str]:
        records = [json.loads(line) for line in feed]
        change(records[index])
        return [json.dumps(r) for r in records]

    def with_hand(index: int, change: Callable[[History], None]) -> list[History]:
        changed = copy.deepcopy(hands)
        change(changed[index])
        return changed

    def total(r: dict[str, Any]) -> None:
        r["seats"][1]["total_units"] += 5

    def units(r: dict[str, Any]) -> None:
        r["seats"][0]["units"] -= 1

    def points(h: History) -> None:
        h["initial_state"]["seats"][0]["points"] += 3

    def commitment(h: History) -> None:
        h["next_commitment"] = "ab" * 32

    def table(h: History) -> None:
        h["table_id"] = "another-table"

    def seat_change(h: History) -> None:
        h["seat_changes"] = [c for c in h["seat_changes"] if c["type"] != "stand_up"]

    def money(h: History) -> None:
        h["seat_units"][0] += 7

    cases["doctored-running-total"] = (hands, with_feed(2, total))
    cases["disagreeing-feed-record"] = (hands, with_feed(0, units))
    cases["doctored-initial-points"] = (with_hand(1, points), feed)

    def score(h: History) -> None:
        TAMPERS["score"][0](h)

    cases["tampered-hand"] = (with_hand(1, score), feed)
    if hands[0]["format_version"] >= 3:
        cases["broken-commitment-chain"] = (with_hand(1, commitment), feed)
        cases["another-table"] = (with_hand(3, table), feed)
        cases["refused-seat-change"] = (with_hand(2, seat_change), feed)
        cases["doctored-money"] = (with_hand(1, money), feed)
    return cases


@pytest.mark.parametrize("directory", MATCHES, ids=[str(m.relative_to(GOLDEN)) for m in MATCHES])
def test_both_verifiers_find_the_same_in_every_match(
    node: str, directory: Path, tmp_path: Path
) -> None:
    kinds: set[str] = set()
    for name, (hands, feed) in _match_cases(directory).items():
        case = tmp_path / name
        case.mkdir()
        paths = []
        for k, hand in enumerate(hands):
            path = case / f"hand-{k:02d}.json"
            path.write_text(json.dumps(hand))
            paths.append(path)
        feed_path = case / "feed.jsonl"
        feed_path.write_text("".join(line + "\n" for line in feed))
        report = verify_match([(str(p), p.read_bytes()) for p in paths], read_feed(str(feed_path)))
        python = [(str(d.code), d.source, d.hand_number, d.location) for d in report.discrepancies]
        records = _node_json(node, "--match", *map(str, paths), "--feed", str(feed_path))
        summary = records.pop()
        js = [(r["code"], r["source"], r["hand_number"], r["location"]) for r in records]
        assert js == python, name
        assert (summary["verified"], summary["hands"]) == (report.verified, report.hands)
        assert summary["notes"] == list(report.notes), name
        clean = {"as-is", "feed-redelivered", "feed-begins-later"}
        assert (name in clean) == (python == []), name
        kinds.update(code for code, *_ in python)
    assert {
        "HAND_MISSING",
        "HAND_REPEATED",
        "FEED_RECORD_MISSING",
        "FEED_RECORD_EXTRA",
        "FEED_RECORD_MISMATCH",
        "RUNNING_TOTAL_MISMATCH",
        "CHAIN_STATE_MISMATCH",
        "SETTLEMENT_MISMATCH",
    } <= kinds


def test_both_verifiers_read_times_past_2_to_the_53_in_hands_and_feed(
    node: str, tmp_path: Path
) -> None:
    """A table whose clock is 2^53 + 1 ms (as `ofc play --turn-time-ms` of c1bb9f1 to
    30f73dd took it): its deadlines, times and settled_at_ms pass 2^53. Both verifiers
    take the match with its feed, and both find a feed's settled_at_ms one ms off."""
    from ofc.codec import TurnClock

    from tests.ofc.test_verify_match import build_tier_match

    big = 2**53 + 1
    hands, feed = build_tier_match(clock=TurnClock(big, big))
    assert all(h["settled_at_ms"] > big for _, h in hands)
    paths = []
    for name, history in hands:
        paths.append(tmp_path / name)
        paths[-1].write_text(json.dumps(history))
    found = []
    for case in ("as-settled", "a ms off"):
        records = copy.deepcopy(feed)
        if case == "a ms off":
            records[1][1]["settled_at_ms"] += 1
        feed_path = tmp_path / f"{case}.jsonl"
        feed_path.write_text("".join(json.dumps(r) + "\n" for _, r in records))
        report = verify_match([(str(p), p.read_bytes()) for p in paths], read_feed(str(feed_path)))
        python = [(str(d.code), d.location) for d in report.discrepancies]
        *lines, _ = _node_json(node, "--match", *map(str, paths), "--feed", str(feed_path))
        assert [(r["code"], r["location"]) for r in lines] == python, case
        found.append(python)
    assert found == [[], [("FEED_RECORD_MISMATCH", "settled_at_ms")]]


def test_both_verifiers_take_a_seat_change_of_the_releases_before_the_fantasyland_hold(
    node: str, tmp_path: Path
) -> None:
    """A match where seat 1 left while seats 0 and 2 owed a Fantasyland (as tables allowed
    before 2026-12-06) verifies in both; seat 0 leaving while it owed one is named by both;
    a table that crossed the upgrade (one stand-up by each release) verifies in both."""
    from ofc.engine import SitDown, StandUp

    from tests.ofc.test_verify_match import build_tier_match, build_upgraded_match

    hands, feed = build_tier_match((StandUp(1, 2_000), SitDown(1, "eve", 2_001)))
    feed_path = tmp_path / "feed.jsonl"
    feed_path.write_text("".join(json.dumps(record) + "\n" for _, record in feed))
    found = []
    for case in ("as-played", "owner-left", "upgraded"):
        histories = copy.deepcopy([history for _, history in hands])
        feed_args = ["--feed", str(feed_path)]
        if case == "owner-left":
            histories[1]["seat_changes"][0]["seat"] = 0
        if case == "upgraded":  # its own hands, without a feed
            histories, feed_args = [history for _, history in build_upgraded_match()], []
        paths = []
        for k, history in enumerate(histories):
            paths.append(tmp_path / f"{case}-hand-{k}.json")
            paths[-1].write_text(json.dumps(history))
        records_in = read_feed(str(feed_path)) if feed_args else None
        report = verify_match([(str(p), p.read_bytes()) for p in paths], records_in)
        python = [(str(d.code), d.location) for d in report.discrepancies]
        *records, summary = _node_json(node, "--match", *map(str, paths), *feed_args)
        assert [(r["code"], r["location"]) for r in records] == python, case
        assert summary["notes"] == list(report.notes), case
        found.append(python)
    assert found == [[], [("ILLEGAL_ACTION", "seat_changes[0].seat")], []]


def test_both_verifiers_check_a_button_stopped_at_a_seat_taken_in_change_order(
    node: str, tmp_path: Path
) -> None:
    """Hands where the button stopped at a seat taken during a hand (tests/ofc/
    test_verify_button.py), honest and with the next hand's seat changes reordered or cut:
    the same discrepancies and notes from both."""
    from ofc import engine

    from tests.ofc.test_verify_button import hand

    joined = (engine.SitDown(0, "ann", 1), engine.SitDown(3, "dee", 2))
    table, _ = engine.replay(engine.new_match("classic", seats=4), joined)
    bob = engine.SitDown(2, "bob", 1_500)
    first, after = hand(table, 0, joined, (bob,))
    table, _ = engine.apply(after, engine.SitDown(1, "cy", 1_900))
    second, _ = hand(table, 1, (bob, engine.SitDown(1, "cy", 1_900)), (), first)
    reversed_changes, cut = copy.deepcopy(second), copy.deepcopy(second)
    reversed_changes["seat_changes"].reverse()
    cut["seat_changes"].pop(0)
    for name, hands in {
        "honest": [first, second],
        "reversed": [first, reversed_changes],
        "cut": [first, cut],
        "alone": [first],
    }.items():
        paths = []
        for k, history in enumerate(hands):
            paths.append(tmp_path / f"{name}-{k}.json")
            paths[-1].write_text(json.dumps(history))
        report = verify_match([(str(p), p.read_bytes()) for p in paths])
        python = [(str(d.code), d.source, d.hand_number, d.location) for d in report.discrepancies]
        records = _node_json(node, "--match", *map(str, paths))
        summary = records.pop()
        js = [(r["code"], r["source"], r["hand_number"], r["location"]) for r in records]
        assert (js, summary["notes"]) == (python, list(report.notes)), name
        assert (python == []) == (name in ("honest", "alone")), name
