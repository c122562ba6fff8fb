"""Leaving after the hand, through the Python client, two replicas sharing one Redis.

A player who asks to leave while its hand is in play keeps its seat and token until the
hand's last move; that move's commit vacates the seat. So another player who starts hands
the moment one settles cannot keep it at the table: its StartHand meets the seat empty.
"""

from __future__ import annotations

import pytest
from ofc.rulesets import get_ruleset
from ofc.verify import verify_match
from ofc_client import FailedPreconditionError, TableClient, UnauthenticatedError
from ofc_client.table_models import HandSettledEvent, SeatLeavingEvent, SeatVacatedEvent

from tests.e2e.tablekit import API_KEY, LONG_TURN_MS, Watcher, naive_move, start_server, wait_until

CLASSIC = get_ruleset("classic")
NO_FANTASYLAND = {"preset": "classic", "fantasyland_entry": []}


# Seat 0 makes the hand's last move (seat 1 acts first in hand 1): the leaver's own
# move ends its hand in one case, the other player's in the other.
@pytest.mark.parametrize("leaver", [0, 1])
def test_a_player_leaving_after_the_hand_is_gone_before_the_next_can_start(
    redis_url: str, leaver: int
) -> None:
    stayer = 1 - leaver
    names = ("ann", "bob")
    with start_server(redis_url) as a, start_server(redis_url) as b:
        host = TableClient(a.address, api_key=API_KEY)
        table_id = host.create_table(
            seats=2, ruleset=NO_FANTASYLAND, turn_time_limit_ms=LONG_TURN_MS
        ).table_id
        players = (TableClient(a.address), TableClient(b.address))
        for seat, player in enumerate(players):
            player.join(table_id, seat, names[seat])
        going, staying = players[leaver], players[stayer]
        spectator = Watcher(TableClient(b.address), table_id).wait_for_snapshot()
        try:
            staying.get(table_id)
            staying.start_hand(table_id)
            going.get(table_id)
            marked = going.leave(table_id, after_hand=True)
            assert marked.viewer_seat == leaver
            assert [s.leaving for s in marked.seats] == [s == leaver for s in range(2)]
            token = going.seat_token(table_id)
            assert token is not None  # kept: it plays the hand out
            with pytest.raises(FailedPreconditionError) as playing:
                going.leave(table_id)  # now: still refused while its hand is in play
            assert playing.value.reason == "HAND_IN_PROGRESS"
            going.leave(table_id, cancel=True)
            assert not any(s.leaving for s in going.get(table_id).seats)
            going.leave(table_id, after_hand=True)

            last, last_seat = None, -1
            while True:
                view = host.get(table_id)
                assert view.hand is not None
                if view.hand.over:
                    break
                last_seat = view.hand.turn or 0
                mover = players[last_seat]
                placements, discard = naive_move(mover.get(table_id), CLASSIC)
                last = mover.place(table_id, placements, discard=discard)
            assert last is not None and last.hand is not None and last.hand.over
            assert last_seat == 0
            # The hand's last move answered with the seat already empty: a StartHand sent
            # the moment the hand settled finds too few players.
            assert [s.player_id for s in last.seats][stayer] == names[stayer]
            assert [s.player_id for s in last.seats][leaver] == ""
            staying.get(table_id)
            with pytest.raises(FailedPreconditionError) as alone:
                staying.start_hand(table_id)
            assert alone.value.reason == "NOT_ENOUGH_PLAYERS"
            if last_seat == leaver:  # its own move's answer says so: the token is dropped
                assert last.viewer_seat is None and going.seat_of(table_id) is None
            else:
                assert going.seat_of(table_id) == leaver  # told of nothing yet
                with pytest.raises(UnauthenticatedError):
                    next(iter(going.watch(table_id)))  # its token went with the seat
                assert going.seat_of(table_id) is None  # and the client's with it
                assert going.get(table_id).viewer_seat is None  # a spectator's view now
                with TableClient(b.address) as twin:  # the token kept elsewhere: a read
                    twin.use_seat(table_id, leaver, token)
                    with pytest.raises(UnauthenticatedError):
                        twin.get(table_id)
                    assert twin.seat_of(table_id) is None

            def vacated() -> bool:
                return any(isinstance(e.detail, SeatVacatedEvent) for e in spectator.events)

            wait_until(vacated, what="the seat vacated")
            details = [e.detail for e in spectator.events]
            name = names[leaver]
            assert [d for d in details if isinstance(d, SeatLeavingEvent)] == [
                SeatLeavingEvent(leaver, name, True),
                SeatLeavingEvent(leaver, name, False),
                SeatLeavingEvent(leaver, name, True),
            ]
            [settled] = [e for e in spectator.events if isinstance(e.detail, HandSettledEvent)]
            [left] = [e for e in spectator.events if isinstance(e.detail, SeatVacatedEvent)]
            assert settled.version == left.version  # one commit
            assert spectator.events[-1] is left  # after the hand's events
        finally:
            spectator.stop()

        # The hand's history names the leaver as its player and verifies.
        history = host.hand_history(table_id, 1).history
        assert {p["seat"]: p["player_id"] for p in history["players"]} == {0: "ann", 1: "bob"}
        assert verify_match([("hand 1", history)]).ok
        for c in (host, *players):
            c.close()
