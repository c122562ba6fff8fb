"""Table records across record formats: formats 4 and 5 (tests/store/format4_records and
format5_records, written by those releases' own code) load, are written back in format 7 and
finish their hands with histories that verify; format 6 (tests/store/format6_records,
written by the release before) loads; format 7 (binary parts, compressed) reads back exactly what
was written, its shared parts read once per replica but never across tables' rules."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import itertools
import json
import random
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ofc import engine
from ofc.cards import CODES, Card
from ofc.codec import action_to_dict
from ofc.rulesets import DEFAULT_RULESET, PRESETS, ROWS, ruleset_from_dict
from ofc.verify import check_history
from ofc_service.application import commands, records
from ofc_service.application.manager import Request, TableManager
from ofc_service.application.records import NewerRecordError, TableRecord, unpack_history
from ofc_service.auth import Authenticator, Credentials
from ofc_service.store import MemoryTableStore
from ofc_service.store.redis_io import RESPONSE_DICTIONARY, pack_response, unpack_response

from tests.silent import SilentPresenter

FORMAT4 = sorted((Path(__file__).parent / "format4_records").glob("*.json"))
FORMAT5 = sorted((Path(__file__).parent / "format5_records").glob("*.json"))
FORMAT6 = sorted((Path(__file__).parent / "format6_records").glob("*.json"))
OPERATOR = Credentials(api_key="formats-key")


def test_the_format_4_records_are_there() -> None:
    assert [p.name for p in FORMAT4] == [
        "942c985-classic-hand-over.json",
        "942c985-classic-mid-hand.json",
    ]
    assert all(json.loads(p.read_text())["format"] == 4 for p in FORMAT4)


@pytest.mark.parametrize("path", FORMAT4, ids=[p.stem for p in FORMAT4])
def test_a_format_4_record_loads_and_is_written_as_format_7(path: Path) -> None:
    stored = json.loads(path.read_text())
    record = TableRecord.from_bytes(path.read_bytes())
    assert record.table_id == "t4" and record.match.pair_units == ((0, 1, 25),)
    assert len(record.hand_actions) == len(stored["hand_actions"])
    assert any(isinstance(a, engine.Timeout) for a in record.hand_actions)
    assert record.hand_seat_changes is not None and len(record.hand_seat_changes) == 2
    assert record.hand_start is not None
    replayed, _ = engine.replay(record.hand_start, record.hand_actions)
    assert replayed == record.match
    written = record.to_bytes()
    assert json.loads(written)["format"] == 7  # JSON: a release before reads its format
    assert TableRecord.from_bytes(written) == record
    # the ruleset once, no deck: smaller than the format-4 record it came from, and its
    # format-5 bytes (still read) smaller again once compressed
    parts = record.parts_bytes()
    assert json.loads(parts)["format"] == 5 and "deck" not in parts.decode()
    assert TableRecord.from_bytes(parts) == record
    assert len(written) < len(parts) / 2 < len(path.read_bytes())


def test_the_format_5_records_are_there() -> None:
    assert [p.name for p in FORMAT5] == [
        "cefcfb2-classic-hand-over.json",
        "cefcfb2-classic-mid-hand.json",
    ]


@pytest.mark.parametrize("path", FORMAT5, ids=[p.stem for p in FORMAT5])
def test_a_format_5_record_loads_and_is_written_as_format_7(path: Path) -> None:
    raw = path.read_bytes()
    stored = json.loads(raw)
    assert stored["format"] == 5
    record = TableRecord.from_bytes(raw)
    assert record.table_id == "t4" and record.match.pair_units == ((0, 1, 25),)
    assert record.seat_units == (0, 0)
    assert len(record.hand_actions) == len(stored["hand_actions"])
    assert record.hand_seat_changes is not None
    assert record.hand_start is not None
    replayed, _ = engine.replay(record.hand_start, record.hand_actions)
    assert replayed == record.match  # the deck too: rebuilt from the seeds' shuffle
    if "mid-hand" in path.name:
        assert any(isinstance(a, engine.Timeout) for a in record.hand_actions)
        assert [type(c) for c in record.hand_seat_changes] == [engine.StandUp, engine.SitDown]
    assert record.parts_bytes() == raw  # read exactly: the same bytes written again
    written = record.to_bytes()
    assert json.loads(written)["format"] == 7
    assert TableRecord.from_bytes(written) == record


async def finish(raw: bytes) -> list[dict[str, Any]]:
    """The table of ``raw``'s current hand left to its clocks until it is over, then one more
    hand likewise; the histories written."""
    clock = [raw_clock(raw) + 1]
    store = MemoryTableStore(clock=lambda: clock[0] / 1000)
    manager = TableManager(
        store, Authenticator(("formats-key",)), SilentPresenter(), clock_ms=lambda: clock[0]
    )
    await store.create_table("t4", raw)
    histories = []
    for _ in range(2):
        record, version, _ = await manager.load("t4")
        hand = record.match.hand
        assert hand is not None
        if hand.over:
            await manager.run(
                Request("t4", version, f"start-{version}"), commands.StartHand(), OPERATOR
            )
        for _ in range(100):
            record, _, _ = await manager.load("t4")
            if record.match.hand is not None and record.match.hand.over:
                break
            clock[0] += 200_000
            await manager.apply_due_timeouts("t4")
        stored = await store.get_extra("t4", f"hand:{record.match.hands_played}")
        assert stored is not None
        histories.append(json.loads(unpack_history(stored)))
    return histories


def raw_clock(raw: bytes) -> int:
    return int(json.loads(raw)["match"]["hand"]["updated_at_ms"])


@pytest.mark.parametrize("path", FORMAT4 + FORMAT5, ids=[p.stem for p in FORMAT4 + FORMAT5])
def test_a_format_4_or_5_table_plays_on_and_its_histories_verify(path: Path) -> None:
    histories = asyncio.run(finish(path.read_bytes()))
    numbers = [h["hand_number"] for h in histories]
    assert numbers == ([3, 4] if "hand-over" in path.name else [2, 3])
    for history in histories:
        verdict = check_history(history, check_policy=True)
        assert verdict.ok, str(verdict.discrepancy)
        assert history["initial_state"]["pair_unit_values"] == [{"a": 0, "b": 1, "unit_value": 25}]
    if "mid-hand" in path.name:  # the hand begun by the older release: its seat changes
        assert [c["type"] for c in histories[0]["seat_changes"]] == ["stand_up", "sit_down"]


def _table(ruleset: str) -> TableRecord:
    match, _ = engine.replay(
        engine.new_match(ruleset, seats=2),
        [engine.SitDown(0, "ann", 1), engine.SitDown(1, "bob", 2)],
    )
    return TableRecord("t", match, 30_000, 120_000, b"seed", 0, hand_start=match)


def test_equal_parts_of_tables_with_other_rules_read_as_their_own() -> None:
    classic, pineapple = _table("classic"), _table("pineapple")
    # the same seats before a first hand: the same hand start but for its ruleset
    for record in (classic, pineapple, classic):
        again = TableRecord.from_bytes(record.to_bytes())
        assert again == record
        assert again.hand_start is not None and again.hand_start.ruleset == record.match.ruleset


def test_a_format_5_record_reads_back_whatever_its_fields() -> None:
    record = dataclasses.replace(
        _table("classic"),
        seat_tokens=((0, "a" * 64),),
        seat_deadlines=((1, 99),),
        seat_units=(5, -5),
        client_seed_policy="players",
        seat_client_seeds=((1, b"\x00\xff"),),
        next_server_seed=b"\x01" * 32,
        seat_changes=None,
        hand_seat_changes=(engine.SitDown(0, "ann", 1),),
        hand_deadlines=False,
    )
    assert TableRecord.from_bytes(record.to_bytes()) == record
    changes = (engine.StandUp(1, 7), engine.SitDown(1, "bo", 8))
    record = dataclasses.replace(record, seat_changes=changes, hand_seat_changes=())
    assert TableRecord.from_bytes(record.to_bytes()) == record


@pytest.mark.parametrize(
    "raw",
    [
        b'{"format":5,"parts":[2],"head":{}}',
        b'{"format":5,"parts":[2,2,2,4],"head":{},"ruleset":{},"match":{},"hand_start":null}',
        b'{"format":5,"parts":[2,2,2,4],"head":{},"ruleset":{},"match":{},"hand_start":null,'
        b'"hand_actions":[]}x',
        b'{"format":5,"head":{}}',
    ],
)
def test_a_format_5_record_not_laid_out_by_its_sizes_is_refused(raw: bytes) -> None:
    with pytest.raises(ValueError, match=r"format 5|record format 5"):
        TableRecord.from_bytes(raw)


def test_a_format_5_record_whose_state_is_not_one_is_refused() -> None:
    raw = (
        b'{"format":5,"parts":[2,2,2,4],"head":{},"ruleset":{},"match":{},"hand_start":null,'
        b'"hand_actions":[]}'
    )
    with pytest.raises(ValueError, match="state does not decode"):
        TableRecord.from_bytes(raw)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"format":6,"z":"' + base64.b64encode(zlib.compress(b'{"format":4}')) + b'"}',
        b'{"format":6,"z":"' + base64.b64encode(b"not zlib") + b'"}',
        b'{"format":6,"z":"' + base64.b64encode(zlib.compress(b'{"format":5,"parts":[2]')),
    ],
)
def test_a_format_6_record_that_holds_no_format_5_record_is_refused(raw: bytes) -> None:
    with pytest.raises(ValueError):
        TableRecord.from_bytes(raw)


def test_a_record_of_a_newer_format_is_refused_as_retryable() -> None:
    with pytest.raises(NewerRecordError, match="record format 8"):
        TableRecord.from_bytes(b'{"format":8,"z":"","head":{}}')


def _stored_ruleset(record: TableRecord) -> Any:
    """The ruleset part of the record as written (format 7)."""
    fixed, _, _ = records._cut_layout(record.layout_bytes())
    return json.loads(fixed[2])


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_a_record_stores_its_ruleset_as_the_options_the_default_lacks(name: str) -> None:
    record = _table(name)
    stored = _stored_ruleset(record)
    assert stored["name"] == name and len(stored) < len(record.match.ruleset.to_dict())
    # what every release reads: the options on top of the default ruleset
    assert ruleset_from_dict(stored, base=DEFAULT_RULESET) == record.match.ruleset
    assert TableRecord.from_bytes(record.to_bytes()) == record
    if name == DEFAULT_RULESET.name:
        assert stored == {"name": name}


def test_the_default_a_stored_ruleset_is_read_against_is_format_7_s_own() -> None:
    # A format-7 record stores a ruleset as its options on the default ruleset: records of
    # live tables written by an earlier release read against this release's default. A
    # change to the default's options changes what those records mean: it needs a new
    # record format that stores rulesets against this default, not an edit of this file.
    pinned = json.loads((Path(__file__).parent / "format7_default_ruleset.json").read_text())
    assert DEFAULT_RULESET.to_dict() == pinned


def test_a_ruleset_named_like_the_default_keeps_every_option_it_changed() -> None:
    custom = DEFAULT_RULESET.replace(unit_value=5, loss_cap=40)
    record = dataclasses.replace(_table("classic"), match=engine.new_match(custom, seats=2))
    stored = _stored_ruleset(record)
    assert stored == {"name": "classic", "unit_value": 5, "loss_cap": 40}
    assert TableRecord.from_bytes(record.to_bytes()).match.ruleset == custom


def test_a_hand_s_start_is_kept_without_the_hand_before() -> None:
    async def play() -> tuple[TableRecord, list[dict[str, Any]]]:
        clock = [1_000]
        store = MemoryTableStore(clock=lambda: clock[0] / 1000)
        manager = TableManager(
            store, Authenticator(("formats-key",)), SilentPresenter(), clock_ms=lambda: clock[0]
        )
        await store.create_table("t", _table("classic").to_bytes())
        histories = []
        for number in (1, 2):
            _, version, _ = await manager.load("t")
            await manager.run(Request("t", version, f"s{number}"), commands.StartHand(), OPERATOR)
            while (record := (await manager.load("t"))[0]).match.hand is not None and not (
                record.match.hand.over
            ):
                clock[0] += 200_000
                await manager.apply_due_timeouts("t")
            stored = await store.get_extra("t", f"hand:{number}")
            assert stored is not None
            histories.append(json.loads(unpack_history(stored)))
        return record, histories

    record, histories = asyncio.run(play())
    start = record.hand_start
    assert start is not None and start.hands_played == 1 and start.hand is None
    assert json.loads(record.parts_bytes())["hand_start"]["hand"] is None
    replayed, _ = engine.replay(start, record.hand_actions)
    assert replayed == record.match
    for history in histories:
        verdict = check_history(history, check_policy=True)
        assert verdict.ok, str(verdict.discrepancy)


def test_records_that_differ_in_one_head_field_each_read_back_as_their_own() -> None:
    # The head's steady fields are spliced as this replica wrote them last for the same
    # values: a record differing in any one field, steady or moving, must not get another's.
    base = _table("classic")
    variants = [
        base,
        dataclasses.replace(base, seat_deadlines=((0, 5), (1, 6))),
        dataclasses.replace(base, seat_units=(-7, 7)),
        dataclasses.replace(base, table_id="t2"),
        dataclasses.replace(base, turn_time_limit_ms=31_000),
        dataclasses.replace(base, fantasyland_time_limit_ms=121_000),
        dataclasses.replace(base, client_seed=b"other"),
        dataclasses.replace(base, created_at_ms=9),
        dataclasses.replace(base, seat_tokens=((1, "b" * 64),)),
        dataclasses.replace(base, client_seed_policy="players"),
        dataclasses.replace(base, seat_client_seeds=((0, b"own"),)),
        dataclasses.replace(base, next_server_seed=b"\x02" * 32),
        dataclasses.replace(base, seat_changes=(engine.SitDown(1, "bo", 8),)),
        dataclasses.replace(base, hand_seat_changes=None),
        dataclasses.replace(base, hand_deadlines=False),
    ]
    for record in (*variants, *reversed(variants)):
        assert TableRecord.from_bytes(record.to_bytes()) == record
    # and records whose match differs in one field of its part without the hand (its
    # seats the same object)
    match = base.match
    variants += [
        dataclasses.replace(base, match=dataclasses.replace(match, **change))
        for change in ({"button": 1}, {"hands_played": 3}, {"max_hands": 9},
                       {"pair_units": ((0, 1, 5),)})
    ]  # fmt: skip
    # written against another's layout (all the other fields the same objects), each is
    # written as alone, as read or as written there
    for record in variants:
        alone = record.to_bytes()
        for other in variants:
            raw, layout = other.write()
            assert record.write(layout)[0] == alone
            assert record.write(TableRecord.read(raw)[1])[0] == alone
    with pytest.raises(NewerRecordError, match="record format 8"):
        TableRecord.from_bytes(b'{"format":8,"z":"","head":{}}')


def test_records_whose_hand_head_or_deck_differs_are_written_as_their_own() -> None:
    # The hand's head (number, button, seeds, start) and its deck are spliced from the
    # record written against when they are its values: one that differs in any of them,
    # its seats the same objects, must be written as it would be alone.
    base = _mid_hand("classic", 2, 3)
    hand = base.match.hand
    assert hand is not None
    changes: list[dict[str, Any]] = [
        {}, {"number": hand.number + 1}, {"button": 1 - hand.button},
        {"server_seed": b"\x03" * 32}, {"client_seed": b"other"}, {"started_at_ms": 7},
        {"deck": tuple(reversed(hand.deck))}, {"deck": tuple(list(hand.deck))},
    ]  # fmt: skip
    variants = [
        dataclasses.replace(
            base, match=dataclasses.replace(base.match, hand=dataclasses.replace(hand, **c))
        )
        for c in changes
    ]
    for record in variants:
        alone = record.to_bytes()
        assert TableRecord.from_bytes(alone) == record
        for other in variants:
            raw, layout = other.write()
            assert record.write(layout)[0] == alone
            assert record.write(TableRecord.read(raw)[1])[0] == alone


def test_the_format_6_records_are_there() -> None:
    assert [p.name for p in FORMAT6] == [
        "7cf969b-classic-mid-hand.json",
        "7cf969b-pineapple-hand-over.json",
    ]


@pytest.mark.parametrize("path", FORMAT6, ids=[p.stem for p in FORMAT6])
def test_a_format_6_record_loads_and_is_written_as_format_7(path: Path) -> None:
    raw = path.read_bytes()
    assert json.loads(raw)["format"] == 6
    record = TableRecord.from_bytes(raw)
    assert record.hand_start is not None and record.match.hand is not None
    replayed, _ = engine.replay(record.hand_start, record.hand_actions)
    assert replayed == record.match  # the deck too: the seeds' shuffle
    assert record.packed_6_bytes() == raw  # read exactly: the same bytes written again
    written = record.to_bytes()
    assert json.loads(written)["format"] == 7
    assert TableRecord.from_bytes(written) == record


def _fill(state: engine.MatchState, seat: int) -> engine.Action:
    """The seat's cards in the first rows with room, the rest discarded (fouls and all)."""
    hand = state.hand
    assert hand is not None
    mine = hand.seat(seat)
    batch = mine.pending
    if mine.in_fantasyland:
        return engine.SetFantasyland(seat, batch[:3], batch[3:8], batch[8:13], batch[13:], 11)
    keep = state.ruleset.streets[hand.street].place
    free = [row for row in ROWS for _ in range(row.size - len(mine.board.row(row)))]
    placements = tuple(zip(batch[:keep], free, strict=False))
    return engine.Place(seat, placements, batch[keep] if keep < len(batch) else None, 11)


def _hand_records(ruleset: str, seats: int, client_seed: bytes = b"mid") -> Iterator[TableRecord]:
    """A table's record after each action of a hand, from its start to its end."""
    start, _ = engine.replay(
        engine.new_match(ruleset, seats=seats),
        [engine.SitDown(s, f"p{s}", s) for s in range(seats)],
    )
    actions: list[engine.Action] = [engine.StartHand(bytes(range(32)), client_seed, 9)]
    state, _ = engine.apply(start, actions[0])
    while True:
        yield TableRecord(
            "t", state, 30_000, 120_000, b"seed", 0, hand_start=start,
            hand_actions=tuple(actions), seat_deadlines=((0, 1_700_000_000_000), (2, 5)),
        )  # fmt: skip
        waiting = engine.seats_to_act(state)
        if not waiting:
            return
        actions.append(_fill(state, waiting[-1]))
        state, _ = engine.apply(state, actions[-1])


def _mid_hand(ruleset: str, seats: int, moves: int) -> TableRecord:
    return next(itertools.islice(_hand_records(ruleset, seats), moves, None))


@pytest.mark.parametrize(
    ("ruleset", "seats"),
    [
        ("classic", 2),
        ("pineapple", 3),
        ("classic", 4),
        ("pineapple-jokers", 3),
        ("progressive-pineapple-keep", 2),
    ],
)
def test_a_format_7_record_reads_back_every_move_of_a_hand(ruleset: str, seats: int) -> None:
    records = list(_hand_records(ruleset, seats))
    assert records[-1].match.hand is not None and records[-1].match.hand.over
    for record in records:
        raw = record.to_bytes()
        assert raw.startswith(b'{"format":7,"z":"') and json.loads(raw)["format"] == 7
        again = TableRecord.from_bytes(raw)
        assert again == record
        assert again.match.hand is not None and record.match.hand is not None
        assert again.match.hand.deck == record.match.hand.deck  # stored, not shuffled again
        assert TableRecord.from_bytes(raw) == record  # and again from what was read before


def test_a_format_7_record_and_a_stored_response_inflate_with_the_standard_zlib() -> None:
    # ISA-L deflates records and responses are stored blocks; a replica of an earlier
    # release reads both with CPython's zlib.
    record = _mid_hand("classic", 4, 9)
    raw = record.to_bytes()
    inner = zlib.decompress(base64.b64decode(json.loads(raw)["z"]))
    assert inner == record.layout_bytes()
    view = RESPONSE_DICTIONARY[:665]
    assert zlib.decompress(pack_response(view)) == view


@settings(max_examples=200, deadline=None)
@given(
    seat=st.integers(0, 3),
    cards=st.lists(st.sampled_from(CODES), max_size=13, unique=True),
    rows=st.lists(st.sampled_from(ROWS), min_size=13, max_size=13),
    discard=st.none() | st.sampled_from(CODES),
    at_ms=st.integers(0, 2**53),
)
def test_a_place_is_written_as_the_json_encoder_writes_it(
    seat: int, cards: list[str], rows: list[Any], discard: str | None, at_ms: int
) -> None:
    # a move's action part is written out directly: the encoder's bytes, any card or row
    placements = tuple((Card.parse(c), r) for c, r in zip(cards, rows, strict=False))
    place = engine.Place(seat, placements, None if discard is None else Card.parse(discard), at_ms)
    written = records._action_json_bytes(place)
    assert written == json.dumps(action_to_dict(place), separators=(",", ":")).encode()
    assert records._action_from_json(written) == place


@pytest.mark.parametrize("size", [0, 1, 665, 65_535, 65_536, 131_070, 131_071, 200_000])
def test_a_stored_response_of_any_size_inflates_with_the_standard_zlib(size: int) -> None:
    # stored blocks hold at most 65,535 bytes each: the edges of one, two and three blocks
    response = bytes(random.Random(size).getrandbits(8) for _ in range(size))
    packed = pack_response(response)
    assert zlib.decompress(packed) == response == unpack_response(packed)
    if size < 65_532:  # zlib's own level 0 writes the same bytes (it splits 65,532 on)
        assert packed == zlib.compress(response, 0)
    assert size + 11 <= len(packed) <= size + 6 + 5 * (1 + size // 16_384)  # stored blocks
    repeated = b"view" * (size // 4)  # stored as it is, however well it would deflate
    assert len(pack_response(repeated)) >= len(repeated) + 11


@pytest.mark.parametrize("level", [1, 6, 9])
def test_a_response_an_earlier_release_deflated_still_unpacks(level: int) -> None:
    # releases before stored responses deflated with the preset dictionary (FDICT and its
    # Adler-32 in the zlib header), or without it
    view = RESPONSE_DICTIONARY[665:1300]
    packer = zlib.compressobj(level, zlib.DEFLATED, 12, 5, zdict=RESPONSE_DICTIONARY)
    with_dictionary = packer.compress(view) + packer.flush()
    assert with_dictionary[1] & 0x20
    assert unpack_response(with_dictionary) == view == unpack_response(zlib.compress(view, level))


def test_a_format_7_record_holds_its_deck_and_is_smaller_than_format_6() -> None:
    record = _mid_hand("classic", 4, 9)
    assert record.match.hand is not None
    assert bytes(record.match.hand.deck) in record.layout_bytes()
    assert len(record.to_bytes()) < len(record.packed_6_bytes()) + 100


def _layout(record: TableRecord) -> bytes:
    return record.layout_bytes()


def _packed_7(inner: bytes) -> bytes:
    return b'{"format":7,"z":"' + base64.b64encode(zlib.compress(inner)) + b'"}'


@pytest.mark.parametrize(
    "mangle",
    [
        lambda inner: inner[:3],  # shorter than its layout
        lambda inner: inner[:20],  # shorter than its sizes
        lambda inner: inner + b"x",  # longer than its parts
        lambda inner: inner[:-1],  # its last part cut short
        lambda inner: b"\x00\x09" + inner[2:],  # more seats than parts
    ],
)
def test_a_format_7_record_not_laid_out_by_its_sizes_is_refused(mangle: Any) -> None:
    inner = _layout(_mid_hand("classic", 2, 3))
    with pytest.raises(ValueError, match=r"format 7|does not decode"):
        TableRecord.from_bytes(_packed_7(mangle(inner)))


def test_a_format_7_record_that_does_not_unpack_is_refused() -> None:
    with pytest.raises(ValueError, match="format 7 that does not unpack"):
        TableRecord.from_bytes(b'{"format":7,"z":"' + base64.b64encode(b"not zlib") + b'"}')


def _forget_read_parts() -> None:
    """This process's record caches emptied, as a replica that never read these tables."""
    for cache in records.caches():
        cache._entries.clear()


def _table_life() -> list[TableRecord]:
    """A table's records move by move over a hand, a seat changing hands after it (the head
    changes), the same for a hand of other seeds (another deck) and at a pineapple table:
    consecutive records share most parts, records far apart few, two tables' next to none."""
    life: list[TableRecord] = []
    for ruleset, seats, seed in (
        ("classic", 2, b"mid"),
        ("classic", 2, b"new"),
        ("pineapple", 3, b"mid"),
    ):
        first = list(_hand_records(ruleset, seats, seed))
        over = first[-1]
        after = dataclasses.replace(
            over,
            seat_changes=(engine.StandUp(1, 20), engine.SitDown(1, "cy", 21)),
            seat_units=tuple(range(seats)),
            seat_deadlines=(),
            next_server_seed=b"\x01" * 32,
        )
        # the next hand's seed drawn again: a head of the same size, other bytes
        redrawn = dataclasses.replace(after, next_server_seed=b"\x02" * 32)
        life += [
            *first,
            after,
            redrawn,
            *(dataclasses.replace(r, table_id="t2") for r in first[:4]),
        ]
    return life


def test_a_record_read_against_an_earlier_one_of_its_table_is_itself() -> None:
    # A replica reads a table's new record against the one it holds (its own last write,
    # or what it read): parts with the base's bytes are the base's values, the rest read.
    life = _table_life()
    written = [r.write() for r in life]
    for i in range(1, len(life)):
        _forget_read_parts()
        again, layout = TableRecord.read(written[i][0], written[i - 1][1])
        assert again == life[i]
        assert layout is not None and layout.record is again
        # and against the base as read from its bytes, not as written here
        _forget_read_parts()
        read_base = TableRecord.read(written[i - 1][0])[1]
        assert TableRecord.read(written[i][0], read_base)[0] == life[i]


@pytest.mark.parametrize(("ruleset", "seats"), [("classic", 2), ("pineapple", 3)])
def test_a_record_read_against_another_hand_s_at_the_same_point_is_itself(
    ruleset: str, seats: int
) -> None:
    # Two hands of other seeds, move by move: each seat's rows and discards have the same
    # sizes in both, other cards; nothing of the base's hand may be taken for this one's.
    ours = list(_hand_records(ruleset, seats, b"ours"))
    theirs = list(_hand_records(ruleset, seats, b"theirs"))
    for record, other in zip(ours, theirs, strict=True):
        raw, base_raw = record.to_bytes(), other.to_bytes()
        _forget_read_parts()  # (a record written puts its parts in them)
        base = TableRecord.read(base_raw)[1]
        assert TableRecord.read(raw, base)[0] == record


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_a_record_read_against_any_record_is_itself(data: st.DataObject) -> None:
    # Bytes equal to a part of any base are that base's value: whatever the base (another
    # table's, a later record's), the record read is the one written, caches or none.
    life = _TABLE_LIFE
    base_at = data.draw(st.integers(0, len(life) - 1), label="base")
    read_at = data.draw(st.integers(0, len(life) - 1), label="read")
    base_raw, raw = life[base_at].to_bytes(), life[read_at].to_bytes()
    if data.draw(st.booleans(), label="caches emptied"):
        _forget_read_parts()
    base = TableRecord.read(base_raw)[1]
    again, layout = TableRecord.read(raw, base)
    assert again == life[read_at]
    assert layout is not None and TableRecord.read(layout.record.to_bytes())[0] == again


def test_a_record_written_against_an_earlier_one_is_the_record_written_alone() -> None:
    # A replica writes a move's record against the one it kept (as it wrote it, or as it
    # read it), the move's record made from that one: a part of a value the base's record
    # holds is the base's bytes, the actions the base's and one more. The bytes must be
    # those of the record written alone.
    life = _table_life()
    reused = 0
    for i in range(1, len(life)):
        written = life[i - 1].write()
        read = TableRecord.read(written[0])[1]
        assert read is not None
        now = life[i]
        moved = read.record.with_play(  # as the manager makes a move's record
            now.match, now.hand_start, now.hand_actions, now.seat_deadlines, now.seat_units
        )
        for base, record in ((written[1], now), (read, moved)):
            raw, layout = record.write(base)
            assert raw == record.to_bytes()
            assert layout.record is record
            assert layout[1:] == TableRecord.read(raw)[1][1:]  # type: ignore[index]
        reused += layout.fixed[0] is read.fixed[0]  # the head cut from the base's bytes
    assert reused > len(life) // 2  # most moves keep the head: the base's part is taken


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_a_record_written_against_any_record_is_the_record_written_alone(
    data: st.DataObject,
) -> None:
    life = _TABLE_LIFE
    base_at = data.draw(st.integers(0, len(life) - 1), label="base")
    record = life[data.draw(st.integers(0, len(life) - 1), label="written")]
    base_raw, base = life[base_at].write()
    if data.draw(st.booleans(), label="base as read"):
        base = TableRecord.read(base_raw)[1]  # type: ignore[assignment]
    raw, layout = record.write(base)
    assert raw == record.to_bytes()
    assert TableRecord.read(raw)[0] == record
    assert layout[1:] == TableRecord.read(raw)[1][1:]  # type: ignore[index]


_TABLE_LIFE = _table_life()
