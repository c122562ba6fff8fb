"""A record after a hand move is built field by field (``TableRecord.with_play``, cheaper
than ``dataclasses.replace``): rebuilt with nothing else changed, every value must come
back equal, so a field added to TableRecord later cannot be silently reset on every move."""

from __future__ import annotations

import dataclasses

from ofc import engine
from ofc.policy import timeout
from ofc_service.application.records import POLICY_PLAYERS, TableRecord

# What TableRecord.with_play copies: a field added to TableRecord must be copied there
# too, then listed here.
_COPIED = {
    "table_id", "match", "turn_time_limit_ms", "fantasyland_time_limit_ms", "client_seed",
    "created_at_ms", "seat_tokens", "hand_start", "hand_actions", "seat_deadlines",
    "seat_units", "client_seed_policy", "seat_client_seeds", "next_server_seed",
    "seat_changes", "hand_seat_changes", "hand_deadlines", "leaving_seats",
    "leaving_changes",
}  # fmt: skip


def test_every_field_of_a_record_is_one_with_play_copies() -> None:
    assert {f.name for f in dataclasses.fields(TableRecord)} == _COPIED


def test_a_record_rebuilt_after_a_move_changes_only_the_move_s_fields() -> None:
    table, _ = engine.replay(
        engine.new_match(seats=2), [engine.SitDown(0, "ann"), engine.SitDown(1, "bob")]
    )
    start = engine.StartHand(bytes(range(32)), b"c", 5)
    match, _ = engine.apply(table, start)
    # Every field set to a value other than its default, so a field left out shows.
    record = TableRecord(
        table_id="t",
        match=match,
        turn_time_limit_ms=30_000,
        fantasyland_time_limit_ms=120_000,
        client_seed=b"c",
        created_at_ms=1,
        seat_tokens=((0, "h0"), (1, "h1")),
        hand_start=table,
        hand_actions=(start,),
        seat_deadlines=((0, 9),),
        seat_units=(3, -3),
        client_seed_policy=POLICY_PLAYERS,
        seat_client_seeds=((1, b"own"),),
        next_server_seed=b"n" * 32,
        seat_changes=(engine.SitDown(0, "ann", 2),),
        hand_seat_changes=None,
        hand_deadlines=False,
        leaving_seats=(1,),
        leaving_changes=((1, 2),),
    )
    action = timeout(match, engine.seats_to_act(match)[0], at_ms=7)
    after, _ = engine.apply(match, action)
    rebuilt = record.with_play(after, record.hand_start, (start, action), ((1, 11),), (4, -4))
    assert rebuilt == dataclasses.replace(
        record,
        match=after,
        seat_units=(4, -4),
        seat_deadlines=((1, 11),),
        hand_actions=(start, action),
    )
