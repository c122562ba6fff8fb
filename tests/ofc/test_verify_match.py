"""``ofc.verify.verify_match`` and ``ofc verify --match``: a table's hands as one chain.

The match is built as a live table builds it (format 3: each hand's context, the next
hand's commitment published a hand ahead, seat changes between hands, money carried from
hand to hand) and its feed records by the service's own ``SettlementRecord``. Every way of
breaking the chain is named, with the input and the JSON path.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from ofc import engine
from ofc.codec import HandContext, TurnClock, hand_history, state_from_dict
from ofc.engine import SitDown, StandUp, StartHand
from ofc.policy import play_by_timeouts
from ofc.rulesets import resolve_ruleset
from ofc.shuffle import commitment
from ofc.verify import Code, verify_match
from ofc_cli.main import main
from ofc_service.application.settlements import SettlementRecord, money_totals

CLOCK = TurnClock(1_000, 4_000)
RULES = resolve_ruleset({"preset": "pineapple", "loss_cap": 10})
Inputs = list[tuple[str, Any]]


def seed(n: int) -> bytes:
    return hashlib.sha256(b"match-seed-%d" % n).digest()


def build_match(hands: int = 4) -> tuple[Inputs, Inputs]:
    """Pineapple with a loss cap and stakes; cy leaves and dee joins before hand 3."""
    state = engine.new_match(RULES, seats=3, pair_units={(0, 1): 20, (0, 2): 15})
    changes: list[SitDown | StandUp] = [SitDown(0, "ann", 10), SitDown(1, "bob", 20)]
    changes.append(SitDown(2, "cy", 30))
    units: tuple[int, ...] = (0, 0, 0)
    for change in changes:
        state, _ = engine.apply(state, change)
    histories: Inputs = []
    feed: Inputs = []
    now = 1_000
    for number in range(1, hands + 1):
        if number == 3:
            between: list[SitDown | StandUp] = [StandUp(2, now), SitDown(2, "dee", now + 1)]
            for change in between:
                state, events = engine.apply(state, change)
                units = money_totals(units, 3, events)
            changes += between
        start = StartHand(seed(number), b"table-seed", now + 10)
        actions = play_by_timeouts(state, start, clock=CLOCK)
        context = HandContext(commitment(seed(number + 1)), CLOCK, units, tuple(changes))
        history = hand_history(state, actions, context)
        final, events = engine.replay(state, actions)
        now = actions[-1].at_ms
        history.update(table_id="t-1", settled_at_ms=now)
        units = money_totals(units, 3, events)
        settled = next(e for e in events if isinstance(e, engine.HandSettled))
        record = SettlementRecord.from_event("t-1", settled, final, units, settled_at_ms=now)
        histories.append((f"hand-{number}.json", history))
        feed.append((f"feed.jsonl:{number}", record.to_dict()))
        state, changes = dataclasses.replace(final, hand=None), []
    return histories, feed


HANDS, FEED = build_match()


def found(histories: Inputs, feed: Inputs | None = None) -> list[tuple[Code, str, str]]:
    return [(d.code, d.source, d.location) for d in verify_match(histories, feed).discrepancies]


def changed(index: int, edit: Any, hands: Inputs = HANDS) -> Inputs:
    copied = copy.deepcopy(hands)
    edit(copied[index][1])
    return copied


def test_the_match_verifies_with_its_feed_in_any_order() -> None:
    assert all(h["format_version"] == 3 for _, h in HANDS)
    assert HANDS[2][1]["seat_changes"][0] == {"type": "stand_up", "seat": 2, "at_ms": 31_020}
    report = verify_match(HANDS, FEED)
    assert (report.ok, report.hands, report.verified) == (True, 4, 4)
    assert verify_match(HANDS[::-1], FEED[::-1] + FEED[:1]).ok  # sorted; a redelivery is fine
    assert verify_match(HANDS[1:], FEED).ok  # from any hand on; earlier records left alone
    other = {**FEED[0][1], "table_id": "t-2", "settlement_id": "t-2:1"}
    assert verify_match(HANDS, [*FEED, ("other.jsonl:1", other)]).ok  # another table's


def test_every_break_in_the_chain_is_named() -> None:
    _, h2, h3, h4 = (name for name, _ in HANDS)
    cases: list[tuple[str, Inputs, list[tuple[Code, str, str]]]] = [
        ("a hand missing", [HANDS[0], *HANDS[2:]], [(Code.HAND_MISSING, h3, "hand_number")]),
        ("a hand twice", [*HANDS, HANDS[1]], [(Code.HAND_REPEATED, h2, "hand_number")]),
        ("another table", changed(3, lambda h: h.update(table_id="t-9")),
         [(Code.TABLE_MISMATCH, h4, "table_id")]),
        ("the published commitment", changed(1, lambda h: h.update(next_commitment="00" * 32)),
         [(Code.CHAIN_COMMITMENT_MISMATCH, h3, "commitment")]),
        ("a hand dealt from another seed", [*HANDS[:3], build_other_hand_4()],
         [(Code.CHAIN_COMMITMENT_MISMATCH, h4, "commitment")]),
        ("a running total", changed(1, lambda h: h["initial_state"]["seats"][1].update(points=7)),
         [(Code.CHAIN_STATE_MISMATCH, h2, "initial_state.seats[1].points"),
          (Code.CHAIN_STATE_MISMATCH, h3, "initial_state.seats[1].points")]),
        ("the money", changed(1, lambda h: h["seat_units"].__setitem__(0, 1_000)),
         [(Code.CHAIN_STATE_MISMATCH, h2, "seat_units[0]"),
          (Code.CHAIN_STATE_MISMATCH, h3, "seat_units[0]")]),
        ("the match's length", changed(3, lambda h: h["initial_state"].update(max_hands=9)),
         [(Code.CHAIN_STATE_MISMATCH, h4, "initial_state.max_hands")]),
        ("a seat change left out", changed(2, lambda h: h.update(seat_changes=[])),
         [(Code.CHAIN_STATE_MISMATCH, h3, "initial_state.seats[2].player_id"),
          (Code.CHAIN_STATE_MISMATCH, h3, "seat_units[2]")]),
        ("a seat change refused by the rules",
         changed(2, lambda h: h["seat_changes"].insert(0, {"type": "sit_down", "seat": 2,
                                                          "player_id": "eve", "at_ms": 1})),
         [(Code.ILLEGAL_ACTION, h3, "seat_changes[0].seat")]),
        ("a hand that fails alone", changed(1, lambda h: h["deals"][0]["cards"].reverse()),
         [(Code.DEAL_MISMATCH, h2, "deals[0].cards[0]")]),
    ]  # fmt: skip
    for what, histories, expected in cases:
        assert found(histories) == expected, what


def build_other_hand_4() -> tuple[str, Any]:
    """Hand 4 as if dealt from a seed nobody committed to."""
    name, history = HANDS[3]
    initial = state_from_dict(history["initial_state"])
    actions = play_by_timeouts(initial, StartHand(seed(99), b"table-seed", 50_000), clock=CLOCK)
    context = HandContext("", CLOCK, tuple(history["seat_units"]), ())
    return name, hand_history(initial, actions, context)


def test_every_feed_record_is_its_hand_s() -> None:
    h3 = HANDS[2][0]

    def feed_with(index: int, edit: Any) -> Inputs:
        copied = copy.deepcopy(FEED)
        edit(copied[index][1])
        return copied

    cases: list[tuple[str, Inputs, list[tuple[Code, str, str]]]] = [
        ("a record missing", FEED[:2] + FEED[3:], [(Code.FEED_RECORD_MISSING, h3, "")]),
        ("a record too many", [*FEED, ("feed.jsonl:5", {**FEED[0][1], "hand_number": 5})],
         [(Code.FEED_RECORD_EXTRA, "feed.jsonl:5", "hand_number")]),
        ("a seat's units", feed_with(2, lambda r: r["seats"][0].update(units=12_345)),
         [(Code.FEED_RECORD_MISMATCH, "feed.jsonl:3", "seats[0].units")]),
        ("a pair's stake", feed_with(0, lambda r: r["pairs"][0].update(unit_value=99)),
         [(Code.FEED_RECORD_MISMATCH, "feed.jsonl:1", "pairs[0].unit_value")]),
        ("a player", feed_with(3, lambda r: r["seats"][2].update(player_id="cy")),
         [(Code.FEED_RECORD_MISMATCH, "feed.jsonl:4", "seats[2].player_id")]),
        ("the settlement time", feed_with(1, lambda r: r.update(settled_at_ms=1)),
         [(Code.FEED_RECORD_MISMATCH, "feed.jsonl:2", "settled_at_ms")]),
        ("a running money total", feed_with(1, lambda r: r["seats"][1].update(total_units=5)),
         [(Code.RUNNING_TOTAL_MISMATCH, "feed.jsonl:2", "seats[1].total_units")]),
        ("a running points total", feed_with(3, lambda r: r["seats"][0].update(total_points=0)),
         [(Code.RUNNING_TOTAL_MISMATCH, "feed.jsonl:4", "seats[0].total_points")]),
        ("a redelivery that differs", [*FEED, ("late.jsonl:1", {**FEED[1][1], "ruleset": "x"})],
         [(Code.FEED_RECORD_MISMATCH, "late.jsonl:1", "ruleset")]),
    ]  # fmt: skip
    for what, feed, expected in cases:
        if what == "a running points total" and FEED[3][1]["seats"][0]["total_points"] == 0:
            continue  # the doctored value must differ
        assert found(HANDS, feed) == expected, what


def test_a_feed_covers_the_table_from_its_first_record_on() -> None:
    """Hands settled before the feed began (or trimmed by its retention) are a prefix the feed
    cannot hold: said in a note, not a discrepancy; a gap after the first record still is."""
    h4 = HANDS[3][0]
    later = verify_match(HANDS, FEED[2:])
    assert (later.ok, later.verified) == (True, 4)
    assert later.notes == (
        "the feed's first record of this table is hand 3: hands 1-2 not checked against the"
        " feed (settled before the feed began, or dropped by its retention)",
    )
    (one_before,) = verify_match(HANDS, FEED[1:]).notes
    assert one_before.startswith("the feed's first record of this table is hand 2: hand 1 not")
    assert verify_match(HANDS, FEED).notes == ()
    assert found(HANDS, FEED[2:3]) == [(Code.FEED_RECORD_MISSING, h4, "")]
    doctored = copy.deepcopy(FEED[2:])
    doctored[0][1]["seats"][0]["total_units"] += 1  # the chain still checks the totals
    assert [c for c, _, _ in found(HANDS, doctored)] == [Code.RUNNING_TOTAL_MISMATCH]
    # no record of the table at all: nothing says where the feed begins
    others = [(s, {**r, "table_id": "t-other"}) for s, r in FEED]
    assert found(HANDS, others) == [(Code.FEED_RECORD_MISSING, h, "") for h, _ in HANDS]
    # a record only of a hand before the first given: every given hand is missing
    assert found(HANDS[1:], FEED[:1]) == [(Code.FEED_RECORD_MISSING, h, "")
                                          for h, _ in HANDS[1:]]  # fmt: skip


def test_old_versions_chain_as_far_as_they_can() -> None:
    """Versions 1 and 2 record no seat changes, money or next commitment: a seat may change
    only as a seat change leaves it, money is read from the feed."""
    old: Inputs = []
    for name, history in copy.deepcopy(HANDS):
        for key in ("next_commitment", "clock", "seat_units", "seat_changes"):
            del history[key]
        history["format_version"] = 2
        for action in history["actions"][1:]:
            del action["deadline_ms"], action["policy"]
        old.append((name, history))
    assert verify_match(old, FEED).ok
    h4 = old[3][0]
    grown = changed(3, lambda h: h["initial_state"]["seats"][0].update(points=99), old)
    assert found(grown) == [(Code.CHAIN_STATE_MISMATCH, h4, "initial_state.seats[0].points")]


# --- the command line -----------------------------------------------------------------------
def write(tmp_path: Path, hands: Inputs, feed: Inputs | None = None) -> list[str]:
    paths = []
    for name, history in hands:
        (tmp_path / name).write_text(json.dumps(history))
        paths.append(str(tmp_path / name))
    if feed is not None:
        (tmp_path / "feed.jsonl").write_text("".join(json.dumps(r) + "\n" for _, r in feed))
    return paths


def test_cli_match(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = write(tmp_path, HANDS, FEED)
    feed = str(tmp_path / "feed.jsonl")
    assert main(["verify", "--match", *paths, "--feed", feed]) == 0
    assert capsys.readouterr().out == (
        "4 verified, 0 failed; the match of 4 hands: 0 chain discrepancies\n"
    )
    assert main(["verify", "--match", *paths[:1], *paths[2:], "--feed", feed]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{paths[2]}: HAND_MISSING at hand_number: hand 2 is missing")
    assert out[1].startswith(f"{feed}:2: FEED_RECORD_EXTRA at hand_number: ")
    assert out[-1] == "3 verified, 0 failed; the match of 3 hands: 2 chain discrepancies"


def test_cli_match_reads_the_feed_as_protobuf_json_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from google.protobuf import json_format
    from ofc_service.application.settlements import SettlementRecord as Record
    from ofcpoker.v1 import settlement_feed_pb2 as feed_pb

    lines = []
    for _, record in FEED:
        r = Record.from_dict(record)
        message = feed_pb.SubscribeResponse(
            record=feed_pb.SettlementRecord(
                settlement_id=r.settlement_id,
                stream_id="1-0",
                table_id=r.table_id,
                hand_number=r.hand_number,
                ruleset=r.ruleset,
                unit_value=r.unit_value,
                loss_cap=r.loss_cap or 0,
                settled_at_ms=r.settled_at_ms,
                seats=[feed_pb.SeatSettlement(**dataclasses.asdict(s)) for s in r.seats],
                pairs=[feed_pb.PairSettlement(**dataclasses.asdict(p)) for p in r.pairs],
            )
        )
        lines.append(json.dumps(json_format.MessageToDict(message)))
    feed = tmp_path / "subscribe.jsonl"
    feed.write_text("\n".join(lines) + "\n")
    paths = write(tmp_path, HANDS)
    assert main(["verify", "--match", *paths, "--feed", str(feed)]) == 0, capsys.readouterr()
    # as a curl of Subscribe over Connect saves it: the stream's end message last, no record
    end = {"error": {"code": "deadline_exceeded", "message": "Request timed out"}}
    feed.write_text("\n".join([*lines, json.dumps(end)]) + "\n")
    assert main(["verify", "--match", *paths, "--feed", str(feed)]) == 0, capsys.readouterr()
    from ofc_cli.cmd_verify import read_feed

    assert len(read_feed(str(feed))) == len(lines)
    # an object that is not such an end is still read (and judged)
    feed.write_text("\n".join([*lines, json.dumps({**end, "hand_number": 9})]) + "\n")
    assert len(read_feed(str(feed))) == len(lines) + 1
    # bare records with the .proto's names (64-bit numbers as strings, zero values left
    # out), as protobuf JSON printers that preserve field names write them
    snake = [
        json.dumps(
            json_format.MessageToDict(
                feed_pb.SubscribeResponse.FromString(
                    json_format.Parse(line, feed_pb.SubscribeResponse()).SerializeToString()
                ).record,
                preserving_proto_field_name=True,
            )
        )
        for line in lines
    ]
    assert '"hand_number": "1"' in snake[0]
    feed.write_text("\n".join(lines) + "\n")
    camel = [r for _, r in read_feed(str(feed))]
    feed.write_text("\n".join(snake) + "\n")
    assert main(["verify", "--match", *paths, "--feed", str(feed)]) == 0, capsys.readouterr()
    assert [r for _, r in read_feed(str(feed))] == camel


@pytest.mark.parametrize(
    ("seat", "field", "value"),
    [(0, "fantasylandNextCards", 17), (1, "fantasylandCards", 14), (2, "fantasyland_cards", 15)],
)
def test_fantasyland_fields_of_a_record_without_format_are_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], seat: int, field: str, value: int
) -> None:
    """A record in protobuf JSON that sends no ``format`` is read as format 1, which has no
    Fantasyland fields; one that sets them anyway is judged on them (these hands played and
    earned no Fantasyland), never passed with values no check looked at."""
    from ofc_service.api.settlement_feed import record_from_proto_json

    record = copy.deepcopy(FEED[1][1])
    del record["format"]
    for s in record["seats"]:
        s.pop("fantasyland_cards", None), s.pop("fantasyland_next_cards", None)
    as_read = record_from_proto_json(record)
    assert as_read["format"] == 1 and "fantasyland_cards" not in as_read["seats"][seat]
    record["seats"][seat][field] = value
    lines = [json.dumps(r) for _, r in FEED]
    lines[1] = json.dumps({"record": record})
    feed = tmp_path / "subscribe.jsonl"
    feed.write_text("\n".join(lines) + "\n")
    paths = write(tmp_path, HANDS)
    assert main(["verify", "--match", *paths, "--feed", str(feed)]) == 1
    out = capsys.readouterr().out
    shown = "fantasyland_next_cards" if "Next" in field else "fantasyland_cards"
    assert f"{feed}:2: FEED_RECORD_MISMATCH at seats[{seat}].{shown}: recorded {value};" in out


def test_cli_feed_needs_match(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "x.json", "--feed", "f.jsonl"]) == 2
    assert capsys.readouterr().err == "error: INVALID_INPUT at feed: --feed needs --match\n"


def build_tier_match(
    before_hand_5: tuple[StandUp | SitDown, ...] = (), clock: TurnClock = CLOCK
) -> tuple[Inputs, Inputs]:
    """Hands 4-6 of a progressive-pineapple-keep table whose seat 0 owes 16 cards and seat 2
    owes 17 before hand 4 (the seeds of tests/golden's tiers/), with the feed's records;
    ``before_hand_5``: seat changes between hands 4 and 5, as a table of the releases before
    2026-12-06 took them (:func:`ofc.engine.apply_unheld`: a seat could leave while another
    owed a Fantasyland hand); ``clock``: the table's turn clock."""
    table, _ = engine.replay(
        engine.new_match("progressive-pineapple-keep", seats=3),
        [SitDown(s, f"player-{s}") for s in range(3)],
    )
    seats = list(table.seats)
    seats[0] = dataclasses.replace(seats[0], fantasyland=16)
    seats[2] = dataclasses.replace(seats[2], fantasyland=17)
    state = dataclasses.replace(table, seats=tuple(seats), hands_played=3)
    histories: Inputs = []
    feed: Inputs = []
    units: tuple[int, ...] = (0, 0, 0)
    for k in range(3):
        changes = before_hand_5 if k == 1 else ()
        for change in changes:
            if isinstance(change, StandUp):
                state, events = engine.apply_unheld(state, change)
            else:
                state, events = engine.apply(state, change)
            units = money_totals(units, 3, events)
        start = StartHand(hashlib.sha256(b"tiers-0-%d" % k).digest(), b"golden-tiers", 1_000)
        actions = play_by_timeouts(state, start, clock=clock)
        context = HandContext("", clock, units, changes)
        history = hand_history(state, actions, context)
        final, events = engine.replay(state, actions)
        history.update(table_id="t-tiers", settled_at_ms=actions[-1].at_ms)
        units = money_totals(units, 3, events)
        settled = next(e for e in events if isinstance(e, engine.HandSettled))
        record = SettlementRecord.from_event(
            "t-tiers", settled, final, units, settled_at_ms=actions[-1].at_ms
        )
        histories.append((f"hand-{history['hand_number']}.json", history))
        feed.append((f"feed.jsonl:{k + 1}", record.to_dict()))
        state = dataclasses.replace(final, hand=None)
    return histories, feed


def test_a_match_across_fantasyland_tiers_and_its_feed() -> None:
    hands, feed = build_tier_match()
    assert verify_match(hands, feed).ok
    first = hands[0][1]
    assert first["format_version"] == 4
    assert {p["seat"]: p["fantasyland"] for p in first["players"]} == {0: 16, 1: 0, 2: 17}
    seats = feed[0][1]["seats"]
    assert [(s["fantasyland_cards"], s["fantasyland_next_cards"]) for s in seats] == [
        (16, 16),
        (0, 0),
        (17, 17),
    ]
    # the feed saying seat 0 is owed 14 cards, where the hand earned 16
    doctored = copy.deepcopy(feed)
    doctored[0][1]["seats"][0]["fantasyland_next_cards"] = 14
    assert found(hands, doctored) == [
        (Code.FEED_RECORD_MISMATCH, "feed.jsonl:1", "seats[0].fantasyland_next_cards")
    ]
    # or that seat 2 played 14 cards, not 17
    doctored = copy.deepcopy(feed)
    doctored[1][1]["seats"][2]["fantasyland_cards"] = 14
    assert found(hands, doctored) == [
        (Code.FEED_RECORD_MISMATCH, "feed.jsonl:2", "seats[2].fantasyland_cards")
    ]


def test_a_seat_that_left_while_another_owed_a_fantasyland_before_the_hold() -> None:
    """Since 2026-12-06 nobody leaves a table before a Fantasyland hand earned there is
    played; a match of the releases before, where seat 1 left while seats 0 and 2 owed one,
    still verifies. Seat 0 leaving while it owed one was never allowed, and is named."""
    swapped = (StandUp(1, 2_000), SitDown(1, "eve", 2_001))
    hands, feed = build_tier_match(swapped)
    assert engine.can_apply(state_from_dict(hands[0][1]["initial_state"]), StandUp(1)) is False
    assert hands[1][1]["seat_changes"] == [
        {"type": "stand_up", "seat": 1, "at_ms": 2_000},
        {"type": "sit_down", "seat": 1, "player_id": "eve", "at_ms": 2_001},
    ]
    assert verify_match(hands, feed).ok
    owner_left = changed(1, lambda h: h["seat_changes"][0].update(seat=0), hands)
    assert found(owner_left) == [(Code.ILLEGAL_ACTION, "hand-5.json", "seat_changes[0].seat")]


def test_a_table_that_crossed_the_upgrade_while_a_fantasyland_was_owed() -> None:
    """A rolling upgrade: bob leaves on a replica of the release before while ann owes a
    Fantasyland; ann, alone, then leaves on one of this release (which lets the seat owed
    go when no hand can start, else the table is stuck); cy and dee play hand 2. Both
    releases made hand 2's seat changes, and the match verifies, in both verifiers."""
    hands = build_upgraded_match()
    assert hands[1][1]["seat_changes"] == [
        {"type": "stand_up", "seat": 1, "at_ms": 5_000},
        {"type": "stand_up", "seat": 0, "at_ms": 6_000},
        {"type": "sit_down", "seat": 0, "player_id": "cy", "at_ms": 7_000},
        {"type": "sit_down", "seat": 1, "player_id": "dee", "at_ms": 8_000},
    ]
    report = verify_match(hands)
    assert report.ok
    # Bob's stand-up only the release before allowed: an auditor is told (a history cannot
    # say which release made a change, nor tell this from a forger who sends ann's
    # Fantasyland away the same way, so the note is all there is).
    assert report.notes == (
        "hand-2.json: seat_changes[0]: seat 1 left while a Fantasyland hand was owed at the "
        "table, as only releases before 2026-12-06 allowed (a table of those releases, or one "
        "that crossed the upgrade, records this; a table of later releases does not)",
    )
    # Ann leaving first, bob still seated, was never allowed, by either release.
    ann_first = changed(
        1,
        lambda h: h.update(seat_changes=[*h["seat_changes"][1::-1], *h["seat_changes"][2:]]),
        hands,
    )
    assert found(ann_first) == [(Code.ILLEGAL_ACTION, "hand-2.json", "seat_changes[0].seat")]


def build_upgraded_match() -> Inputs:
    """:func:`test_a_table_that_crossed_the_upgrade_while_a_fantasyland_was_owed`'s two
    hands (seed 145 gives ann, and ann only, a 14-card Fantasyland in hand 1)."""
    table, _ = engine.replay(
        engine.new_match("pineapple", seats=2), [SitDown(0, "ann", 10), SitDown(1, "bob", 20)]
    )
    start = StartHand(hashlib.sha256(b"upgrade-seed-145").digest(), b"table-seed", 1_000)
    actions = play_by_timeouts(table, start, clock=CLOCK)
    next_seed = hashlib.sha256(b"upgrade-seed-next").digest()
    sat = (SitDown(0, "ann", 10), SitDown(1, "bob", 20))
    first = hand_history(table, actions, HandContext(commitment(next_seed), CLOCK, (0, 0), sat))
    state, _ = engine.replay(table, actions)
    assert [s.fantasyland for s in state.seats] == [14, 0]
    state, _ = engine.apply_unheld(dataclasses.replace(state, hand=None), StandUp(1, 5_000))
    changes: list[SitDown | StandUp] = [StandUp(1, 5_000), StandUp(0, 6_000)]
    changes += [SitDown(0, "cy", 7_000), SitDown(1, "dee", 8_000)]
    for change in changes[1:]:  # this release's engine
        state, _ = engine.apply(state, change)
    start = StartHand(next_seed, b"table-seed", 9_000)
    context = HandContext(commitment(seed(99)), CLOCK, (0, 0), tuple(changes))  # new seats
    second = hand_history(state, play_by_timeouts(state, start, clock=CLOCK), context)
    return [("hand-1.json", first), ("hand-2.json", second)]
