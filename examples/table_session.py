"""A complete live-table session with the Python client (README.md, "Live tables").

Start the service (``make run``), then: ``.venv/bin/python examples/table_session.py``
(or pass HOST:PORT). tests/e2e/test_table_session.py runs this file and checks that the
README shows it verbatim.
"""

import hashlib
import sys
import threading

from ofc_client import TableClient, TableView

ADDRESS = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:50051"


def naive_placements(view: TableView) -> dict[str, str]:
    """Each dealt card to a row with room: the bottom first, then the middle, then the top."""
    me = view.my_seat
    assert me is not None
    sizes = {"bottom": 5, "middle": 5, "top": 3}
    room = {row: size - len(me.board.row(row)) for row, size in sizes.items()}
    chosen = {}
    for card in me.pending:
        row = next(r for r in room if room[r] > 0)
        room[row] -= 1
        chosen[card] = row
    return chosen


host = TableClient(ADDRESS)  # pass api_key="..." when the server has OFC_API_KEYS set
table = host.create_table(seats=2, ruleset="classic", client_seed="readme")
table_id = table.table_id
committed = table.next_commitment  # SHA-256 of hand 1's server seed, drawn already
players = {0: TableClient(ADDRESS), 1: TableClient(ADDRESS)}  # one client per player
players[0].join(table_id, 0, "ann")  # returns ann's seat token; her client keeps and sends it
players[1].join(table_id, 1, "bob")
print("table", table_id, "with ann in seat 0 and bob in seat 1")

# Ann watches in the background: her own cards, everyone's face-up cards, never bob's hand.
watch = players[0].watch(table_id)
snapshot = next(watch)  # her view now; every later event follows on the stream
assert isinstance(snapshot, TableView)
print("ann's watch: snapshot at version", snapshot.version, "then every event")
hand_over = threading.Event()


def follow() -> None:
    for item in watch:
        if isinstance(item, TableView):
            print(f"  ann's watch: a fresh snapshot at version {item.version}")
        elif item.kind in ("cards_dealt", "cards_placed"):
            print(f"  ann's watch: {item.detail}")  # bob's dealt cards arrive as cards=()
        else:
            print(f"  ann's watch: {item.kind}")
            if item.kind == "button_moved":  # the last event of every hand
                hand_over.set()


threading.Thread(target=follow, daemon=True).start()

players[0].get(table_id)  # ann's client learns the current version (bob joined meanwhile)
hand = players[0].start_hand(table_id).hand  # dealt from the seed committed before
assert hand is not None and hand.commitment == committed
commitment = hand.commitment
while not hand.over:
    assert hand.turn is not None
    player = players[hand.turn]
    mine = player.get(table_id)  # the seat's own view: its dealt cards, the current version
    hand = player.place(table_id, naive_placements(mine)).hand
    assert hand is not None

hand_over.wait(timeout=10)
watch.cancel()
assert hand.settlement is not None
for result in hand.settlement.players:
    print(f"{result.player_id}: {result.points:+d} points (fouled: {result.board.fouled})")

history = host.hand_history(table_id, 1)  # the revealed seed re-derives the whole deck
revealed = hashlib.sha256(history.server_seed).hexdigest() == commitment
print("server seed", history.server_seed.hex(), "matches the commitment:", revealed)
