"""A live table with jokers over real gRPC and Redis: a pineapple-jokers hand is dealt from
the ofc-shuffle-v2 deck of 54 cards, its players place jokers like any card, and the hand
history (format 4) re-derives the deck and the score."""

from __future__ import annotations

from ofc.cards import parse_cards
from ofc.rulesets import get_ruleset
from ofc.scoring import Board, settle
from ofc.shuffle import commitment, shuffle_deck_v2
from ofc.verify import verify_history
from ofc_client import TableClient

from tests.e2e.tablekit import API_KEY, LONG_TURN_MS, naive_move, start_server

JOKERS = get_ruleset("pineapple-jokers")


def test_a_pineapple_jokers_hand_deals_v2_and_verifies(redis_url: str) -> None:
    with start_server(redis_url) as server:
        host = TableClient(server.address, api_key=API_KEY)
        created = host.create_table(
            ruleset="pineapple-jokers", seats=3, turn_time_limit_ms=LONG_TURN_MS
        )
        table_id = created.table_id
        players = tuple(TableClient(server.address) for _ in range(3))
        for seat, (player, name) in enumerate(zip(players, ("ann", "bob", "cy"), strict=True)):
            player.join(table_id, seat, name)
        players[0].get(table_id)
        view = players[0].start_hand(table_id)
        dealt: list[str] = []
        while view.hand is not None and not view.hand.over:
            assert view.hand.turn is not None
            player = players[view.hand.turn]
            mine = player.get(table_id)
            assert mine.my_seat is not None
            dealt += mine.my_seat.pending
            placements, discard = naive_move(mine, JOKERS)
            view = player.place(table_id, placements, discard=discard)
        history = players[1].hand_history(table_id, 1)

    raw = history.history
    assert verify_history(raw) is None  # deck, replay and score re-derived
    assert (raw["format_version"], raw["algorithm"], raw["deck_size"]) == (4, "ofc-shuffle-v2", 54)
    assert raw["initial_state"]["ruleset"]["jokers"] == 2
    assert commitment(history.server_seed) == raw["commitment"]
    deck = [str(c) for c in shuffle_deck_v2(history.server_seed, b"", 1, deck_size=54)]
    assert all(d["cards"] == deck[d["position"] : d["position"] + d["count"]] for d in raw["deals"])
    assert sorted(dealt) == sorted(deck[:51])  # 3 seats x 17 of the 54 cards
    # The score is the core's for the boards as they stand, jokers and all.
    boards = [
        Board(*(parse_cards(b[row]) for row in ("top", "middle", "bottom"))) for b in raw["boards"]
    ]
    expected = [p.points for p in settle(boards, JOKERS).players]
    assert [p["points"] for p in raw["settlement"]["players"]] == expected
