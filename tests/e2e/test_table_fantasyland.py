"""Classic and Pineapple matches with a Fantasyland, played through the Python client.

Two replicas share one Redis; every player has its own client, seat token and watch stream
(on the other replica). Hand 1 is dealt from a server seed chosen so that one seat can earn
Fantasyland (tests/e2e/tablekit.py finds it from the deck); that seat plays for it, the
others play naively. In hand 2 it sets its whole hand at once, face down until the end.
The final scores are checked against ``ofc.scoring.settle`` on the final boards, the
streams against the store, and the store against a replay of its own event stream.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator

import pytest
from ofc.cards import Card
from ofc.rulesets import Ruleset, get_ruleset
from ofc.scoring import Board, settle
from ofc_client import TableClient, TableView
from ofc_client.table_models import (
    CardsDealtEvent,
    DiscardMadeEvent,
    FantasylandSetEvent,
    HandSettledEvent,
    HandStartedEvent,
)

from tests.e2e.tablekit import (
    API_KEY,
    LONG_TURN_MS,
    FantasylandPlan,
    Watcher,
    audit_table,
    check_saw_each_event_once,
    fantasyland_plan,
    naive_move,
    solved_fantasyland,
    start_server,
    stored_table,
)

CLIENT_SEED = "e2e-fantasyland"


def seed_source(first: bytes) -> Callable[[], bytes]:
    """``first``, then a fixed chain of seeds: what the replicas draw for each StartHand."""
    lock = threading.Lock()

    def seeds() -> Iterator[bytes]:
        seed = first
        while True:
            yield seed
            seed = hashlib.sha256(b"next" + seed).digest()

    stream = seeds()

    def draw() -> bytes:
        with lock:
            return next(stream)

    return draw


def board_of(rows: tuple[tuple[str, ...], ...]) -> Board:
    top, middle, bottom = (tuple(Card.parse(c) for c in row) for row in rows)
    return Board(top, middle, bottom)


def play_hand(
    players: list[TableClient], table_id: str, ruleset: Ruleset, plan: FantasylandPlan
) -> TableView:
    """Start a hand and play it out: Fantasyland seats set first (checked face down to the
    others), the plan's seat follows the plan in hand 1, everyone else plays naively."""
    players[0].get(table_id)
    players[0].start_hand(table_id)
    while True:
        table = players[0].get(table_id)
        assert table.hand is not None
        if table.hand.over:
            return table
        hand = table.hand
        seat = min(hand.to_act, key=lambda s: (hand.seat(s).fantasyland_cards == 0, s))
        player = players[seat]
        mine = player.get(table_id)
        me = mine.my_seat
        assert me is not None and mine.hand is not None
        if me.fantasyland_cards:
            assert len(me.pending) == me.fantasyland_cards
            board, discards = solved_fantasyland(mine, ruleset)
            after = player.set_fantasyland(table_id, board, discards)
            assert after.my_seat is not None and str(after.my_seat.board) == board
            other = players[(seat + 1) % len(players)].get(table_id)
            assert other.hand is not None and not other.hand.over
            hidden = other.hand.seat(seat)
            assert hidden.board_hidden and hidden.board.cards == () and hidden.done
        elif seat == plan.seat and mine.hand.number == 1:
            placements, discard = plan.moves[mine.hand.street]
            assert set(placements) | ({discard} - {None}) == set(me.pending)
            player.place(table_id, placements, discard=discard)
        else:
            placements, discard = naive_move(mine, ruleset)
            player.place(table_id, placements, discard=discard)


@pytest.mark.parametrize(("preset", "seats"), [("classic", 2), ("pineapple", 3)])
def test_hands_with_a_fantasyland_score_as_the_rules_core_settles_the_final_boards(
    redis_url: str, preset: str, seats: int
) -> None:
    ruleset = get_ruleset(preset)
    plan = fantasyland_plan(ruleset, seats, CLIENT_SEED.encode())
    draw = seed_source(plan.server_seed)
    # The audit below replays the whole event log: keep all of it (no per-hand trim).
    with (
        start_server(redis_url, event_log_hands=0) as a,
        start_server(redis_url, event_log_hands=0) as b,
    ):
        for replica in (a, b):
            replica.server.sweeper.manager.server_seed = draw
        addresses = [a.address, b.address]
        host = TableClient(a.address, api_key=API_KEY)
        table_id = host.create_table(
            ruleset=preset, seats=seats, client_seed=CLIENT_SEED, turn_time_limit_ms=LONG_TURN_MS
        ).table_id
        players = [TableClient(addresses[s % 2]) for s in range(seats)]
        watchers = []
        for s, player in enumerate(players):
            token = player.join(table_id, s, f"p{s}")
            eyes = TableClient(addresses[(s + 1) % 2])  # the seat's watch, on the other replica
            eyes.use_seat(table_id, s, token)
            watchers.append(Watcher(eyes, table_id))
        spectator = Watcher(TableClient(addresses[1]), table_id)
        everyone = [*watchers, spectator]
        for watcher in everyone:
            watcher.wait_for_snapshot()
        try:
            first = play_hand(players, table_id, ruleset, plan)
            owed = host.get(table_id).seats[plan.seat]
            assert owed.fantasyland_cards == plan.fantasyland_cards > 0, first.hand
            second = play_hand(players, table_id, ruleset, plan)
            assert second.hand is not None and second.hand.number == 2
            record, version, stream = stored_table(redis_url, table_id)
            for watcher in everyone:
                watcher.wait_for_event_id(stream[-1].event_id)
        finally:
            for watcher in everyone:
                watcher.stop()

        # Every watcher saw each event of the stream exactly once, in order; the stream
        # replays through the engine to the stored table.
        for watcher in everyone:
            check_saw_each_event_once(watcher, stream)
        audit_table(record, version, stream)

        # Scores: the rules core on the final boards, hand by hand and cumulated.
        started = [e.detail for e in spectator.events if isinstance(e.detail, HandStartedEvent)]
        settled = [e.detail for e in spectator.events if isinstance(e.detail, HandSettledEvent)]
        assert [h.number for h in started] == [h.number for h in settled] == [1, 2]
        assert started[0].fantasyland == ()
        assert started[1].fantasyland == ((plan.seat, plan.fantasyland_cards),)
        totals = dict.fromkeys(range(seats), 0)
        for start, result in zip(started, settled, strict=True):
            fantasyland = {s for s, _ in start.fantasyland}
            expected = settle(
                [board_of((b.top, b.middle, b.bottom)) for b in result.boards],
                ruleset,
                in_fantasyland=[s in fantasyland for s in result.seats],
                fantasyland_streaks=[1 if s in fantasyland else 0 for s in result.seats],
            )
            points = tuple(p.points for p in expected.players)
            assert result.settlement.points == points
            history = host.hand_history(table_id, result.number)
            assert history.settlement.points == points
            assert hashlib.sha256(history.server_seed).hexdigest() == start.commitment
            for s, p in zip(result.seats, points, strict=True):
                totals[s] += p
            assert result.totals == tuple(totals[s] for s in result.seats)
        final = host.get(table_id)
        assert [s.points for s in final.seats] == [totals[s] for s in range(seats)]
        assert sum(totals.values()) == 0
        assert [h.hand_number for h in host.iter_hands(table_id, page_size=1)] == [1, 2]

        # Each seat saw its own cards and nobody else's.
        for s, watcher in enumerate(watchers):
            for event in watcher.events:
                d = event.detail
                if isinstance(d, CardsDealtEvent):
                    assert (len(d.cards) == d.count) if d.seat == s else d.cards == ()
                elif isinstance(d, DiscardMadeEvent):
                    assert (d.card is not None) == (d.seat == s)
                elif isinstance(d, FantasylandSetEvent):
                    own = d.seat == s
                    assert bool(d.board.cards) == own and (len(d.discards) > 0) == (
                        own and plan.fantasyland_cards > 13
                    )
            fantasyland_deals = [
                e.detail
                for e in watcher.events
                if isinstance(e.detail, CardsDealtEvent) and e.detail.street is None
            ]
            assert [(d.seat, d.count) for d in fantasyland_deals] == [
                (plan.seat, plan.fantasyland_cards)
            ]
