"""Play a live table on a release's own gRPC server and keep what an auditor would hold: each
hand's history as served, and the table's settlement feed in every form it can be saved in.

Run it, like generate.py, with that release's code first on the path::

    git worktree add /tmp/old-7cf969b 7cf969b
    PYTHONPATH=/tmp/old-7cf969b/service:/tmp/old-7cf969b/clients/python \\
        .venv/bin/python tests/golden/live_table.py OUT NAME PRESET SEATS HANDS [players]

It starts the release's server (in-memory store, its own deadline sweeper and settlement
relay, an operator key), creates a ``PRESET`` table of ``SEATS`` seats with a loss cap of 30,
Fantasyland from any pair on the top (``ENTRY``/``ENTRY_RANK`` in the environment change
that: a hand category and its least rank) and 1-second turns, seats ann, bob, cy (and dan),
and plays ``HANDS`` hands: seat 0 lets every turn run out (the server's timeout policy plays
it), Fantasyland seats too, the others place their cards by a simple plan that often earns
Fantasyland; before hand 3 the last seat not owed a Fantasyland leaves and eve sits down.
``players``: the table takes each player's own client seed (releases that have them).
Into ``OUT/NAME``: ``hand-NNNN.json`` (``GetHandHistory``'s ``history_json``),
``hand-NNNN.response.json`` (the whole response in protobuf JSON), ``feed.subscribe.jsonl``
and ``feed.subscribe-protonames.jsonl`` (``Subscribe``'s answers in protobuf JSON, camelCase
and with the .proto's names) and ``feed.raw.jsonl`` (the feed stream's records as stored).
"""

import contextlib
import json
import os
import sys
import time
from pathlib import Path

import grpc
from google.protobuf import json_format
from ofc_service.server.background import BackgroundServer
from ofc_service.server.config import ServerConfig
from ofcpoker.v1 import cards_pb2, ruleset_pb2, settlement_feed_pb2_grpc, table_service_pb2_grpc
from ofcpoker.v1 import settlement_feed_pb2 as feed_pb
from ofcpoker.v1 import table_service_pb2 as pb

KEY = "audit-key"
OPERATOR = [("x-ofc-api-key", KEY)]
RANKS = "23456789TJQKAX"
ROWS = {
    "bottom": cards_pb2.ROW_POSITION_BOTTOM,
    "middle": cards_pb2.ROW_POSITION_MIDDLE,
    "top": cards_pb2.ROW_POSITION_TOP,
}
SIZES = {"bottom": 5, "middle": 5, "top": 3}
NAMES = ["ann", "bob", "cy", "dan"]


def rank(card: str) -> int:
    return RANKS.index(card[0])


class Table:
    def __init__(self, stub, table_id):
        self.stub, self.table_id, self.tokens = stub, table_id, {}
        self.ids = (f"r{n}" for n in range(10**6))

    def view(self, seat=None):
        metadata = OPERATOR if seat is None else [("x-ofc-seat-token", self.tokens[seat])]
        request = pb.GetTableRequest(table_id=self.table_id)
        return self.stub.GetTable(request, metadata=metadata).table

    def join(self, seat, player_id, seed):
        joined = self.stub.JoinSeat(
            pb.JoinSeatRequest(
                table_id=self.table_id, seat=seat, player_id=player_id,
                expected_version=self.view().version, request_id=next(self.ids),
            )
        )  # fmt: skip
        self.tokens[seat] = joined.seat_token
        if hasattr(pb, "SetClientSeedRequest") and seed:
            with contextlib.suppress(grpc.RpcError):
                self.stub.SetClientSeed(
                    pb.SetClientSeedRequest(
                        table_id=self.table_id, seat=seat, client_seed=seed,
                        expected_version=joined.table.version, request_id=next(self.ids),
                    ),
                    metadata=[("x-ofc-seat-token", self.tokens[seat])],
                )  # fmt: skip

    def leave(self, seat):
        self.stub.LeaveSeat(
            pb.LeaveSeatRequest(
                table_id=self.table_id, seat=seat, expected_version=self.view().version,
                request_id=next(self.ids),
            ),
            metadata=[("x-ofc-seat-token", self.tokens.pop(seat))],
        )  # fmt: skip

    def place(self, view, seat, number):
        """Highest cards first, bottom up; a pair of the first five to the top now and then
        (Fantasyland); on a street that discards, the lowest card not matching the board."""
        own = next(s for s in view.hand.seats if s.seat == seat)
        batch = sorted(own.pending, key=rank, reverse=True)
        street = view.ruleset.streets[view.hand.street]
        board = {row: list(getattr(own.board, row)) for row in SIZES}
        discard = ""
        if street.deal > street.place:
            on_board = {c[0] for row in board.values() for c in row}
            choices = [c for c in reversed(batch) if c[0] not in on_board] or batch[::-1]
            discard = choices[0]
            batch.remove(discard)
        placements = []

        def put(card, row):
            board[row].append(card)
            placements.append(pb.Placement(card=card, row=ROWS[row]))

        def room(row):
            return len(board[row]) < SIZES[row]

        if len(batch) == 5:
            ranks = [c[0] for c in batch]
            pairs = [r for r in set(ranks) if r != "X" and ranks.count(r) == 2]
            rest = batch
            if pairs and (number + seat) % 3 != 0:
                for card in [c for c in batch if c[0] == pairs[0]]:
                    put(card, "top")
                rest = [c for c in batch if c[0] != pairs[0]]
            for card in rest:
                put(card, next(r for r in ("bottom", "middle", "top") if room(r)))
        else:
            for card in batch:
                row = next(
                    (r for r in ("bottom", "middle", "top")
                     if room(r) and any(x[0] == card[0] for x in board[r])),
                    None,
                ) or next(r for r in ("bottom", "middle", "top") if room(r))  # fmt: skip
                put(card, row)
        self.stub.PlaceCards(
            pb.PlaceCardsRequest(
                table_id=self.table_id, seat=seat, placements=placements, discard=discard,
                expected_version=view.version, request_id=next(self.ids),
            ),
            metadata=[("x-ofc-seat-token", self.tokens[seat])],
        )  # fmt: skip


def main() -> None:
    out, name, preset = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    seats, hands = int(sys.argv[4]), int(sys.argv[5])
    players_seeds = len(sys.argv) > 6 and sys.argv[6] == "players"
    http_off = {"http_listen": ""} if hasattr(ServerConfig, "http_listen") else {}
    config = ServerConfig(listen="127.0.0.1:0", metrics_listen="", api_keys=KEY, **http_off)
    with BackgroundServer(config) as server:
        channel = grpc.insecure_channel(server.address)
        stub = table_service_pb2_grpc.TableServiceStub(channel)
        feed_stub = settlement_feed_pb2_grpc.SettlementFeedServiceStub(channel)
        entry = ruleset_pb2.FantasylandEntry(
            category=getattr(cards_pb2, os.environ.get("ENTRY", "HAND_CATEGORY_PAIR")),
            min_rank=os.environ.get("ENTRY_RANK", "2"),
            cards=14 if "pineapple" in preset else 13,
        )
        overrides = ruleset_pb2.RulesetOverrides(
            loss_cap=30, fantasyland_entry=ruleset_pb2.FantasylandEntryList(entries=[entry])
        )
        create = pb.CreateTableRequest(
            ruleset=ruleset_pb2.RulesetSpec(preset=preset, overrides=overrides),
            seats=seats, turn_time_limit_ms=1000, fantasyland_time_limit_ms=1000,
            client_seed="audit-table", request_id="create",
        )  # fmt: skip
        if players_seeds and hasattr(pb, "CLIENT_SEED_POLICY_PLAYERS"):
            create.client_seed_policy = pb.CLIENT_SEED_POLICY_PLAYERS
        table = Table(stub, stub.CreateTable(create, metadata=OPERATOR).table_id)
        for seat in range(seats):
            table.join(seat, NAMES[seat], f"{NAMES[seat]}-seed" if seat != 2 else "")
        numbers = []
        for played in range(hands):
            if played == 2:  # a player leaves mid-match, another takes the seat
                now = table.view().seats
                free = [s.seat for s in now if s.player_id and not s.fantasyland_cards]
                if free:
                    with contextlib.suppress(grpc.RpcError):
                        table.leave(free[-1])
                        table.join(free[-1], "eve", "eve's seed")
            started = stub.StartHand(
                pb.StartHandRequest(
                    table_id=table.table_id, expected_version=table.view().version,
                    request_id=next(table.ids),
                ),
                metadata=[("x-ofc-seat-token", table.tokens[min(table.tokens)])],
            ).table  # fmt: skip
            number = started.hand.number
            numbers.append(number)
            while not (view := table.view()).hand.over:
                acted = False
                for seat in view.hand.to_act:
                    mine = table.view(seat)
                    own = next(s for s in mine.hand.seats if s.seat == seat)
                    waits = (number, seat, mine.hand.street) == (2, 1, 1)
                    if own.fantasyland_cards or seat == 0 or waits:
                        continue  # the clock runs out: the server's timeout policy moves
                    with contextlib.suppress(grpc.RpcError):
                        table.place(mine, seat, number)
                        acted = True
                    break
                if not acted:
                    time.sleep(0.05)
        kept = out / name
        kept.mkdir(parents=True, exist_ok=True)
        for number in numbers:
            request = pb.GetHandHistoryRequest(table_id=table.table_id, hand_number=number)
            history = stub.GetHandHistory(request)
            (kept / f"hand-{number:04d}.json").write_text(history.history_json + "\n")
            (kept / f"hand-{number:04d}.response.json").write_text(
                json_format.MessageToJson(history) + "\n"
            )
        subscribe = feed_pb.SubscribeRequest(group="audit", consumer="a1", batch_size=100)
        camel, proto_names = [], []
        stream = feed_stub.Subscribe(subscribe, metadata=OPERATOR, timeout=20)
        for answer in stream:
            if answer.record.table_id != table.table_id:
                continue
            for lines, names in ((camel, False), (proto_names, True)):
                as_dict = json_format.MessageToDict(answer, preserving_proto_field_name=names)
                lines.append(json.dumps(as_dict, separators=(",", ":")))
            if len(camel) == len(numbers):
                stream.cancel()
                break
        (kept / "feed.subscribe.jsonl").write_text("\n".join(camel) + "\n")
        (kept / "feed.subscribe-protonames.jsonl").write_text("\n".join(proto_names) + "\n")
        entries = sorted(server.server.feed._entries.items())  # the in-memory feed's stream
        raw = [e.data.decode() if isinstance(e.data, bytes) else json.dumps(e.data)
               for _, e in entries]  # fmt: skip
        raw = [r for r in raw if json.loads(r).get("table_id") == table.table_id]
        (kept / "feed.raw.jsonl").write_text("\n".join(raw) + "\n")
        channel.close()


if __name__ == "__main__":
    main()
