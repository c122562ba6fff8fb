"""Write the golden hand histories of one release: the code on ``sys.path`` writes them.

Run it with the interpreter of a venv whose dependencies match the release, and that
release's code first on the path (a checkout of an older commit works without a venv of
its own when its dependencies are the same)::

    git worktree add /tmp/old-971f768 971f768
    PYTHONPATH=/tmp/old-971f768/service:/tmp/old-971f768/clients/python \
        .venv/bin/python tests/golden/generate.py tests/golden/971f768

The project's own editable install stays importable behind that path: a module the old tree
lacks would silently come from today's code. For a release whose modules differ from
today's (75a55fb has no ``ofc.codec``), put a ``sitecustomize.py`` that drops the editable
finder first on the path as well::

    mkdir -p /tmp/nofinder && echo 'import sys; sys.meta_path[:] = [f for f in sys.meta_path
        if "editable" not in repr(f).lower()]' > /tmp/nofinder/sitecustomize.py
    PYTHONPATH=/tmp/nofinder:/tmp/old-75a55fb/service:/tmp/old-75a55fb/clients/python ...

It writes, into the directory given (tests/golden/README.md lists what each file is):

- ``play-<ruleset>-<players>.json``: what ``ofc play`` prints (every move a timeout), for
  the joker presets too in releases that have them (hand-history format 4);
- ``explicit-classic-2.json``, ``explicit-pineapple-pairs-3.json`` (releases with a
  default-move policy): hands whose every move is a player's own, with no table context
  (format 1; with stakes agreed per pair of seats, format 2), built with the core API;
- ``fantasyland-*.json``: hands with Fantasyland seats, every move a timeout, built with the
  core API of that release (``hand_history`` of a table whose seats are owed a Fantasyland);
- ``explicit-fantasyland-pineapple-3.json`` (releases with a default-move policy): Pineapple,
  seat 1 owed a 14-card Fantasyland that it sets itself (a player's ``set_fantasyland``),
  every other move the player's own too; ``house-rules-4.json`` (the same releases, with the
  options below): a four-seat table of two players (seats 1 and 3) under house rules
  (Ukrainian royalties, 2-4 scoring, royalties to the row winner only, unit value 5, loss cap
  30, at most two Fantasylands in a row, the button kept in Fantasyland, max_hands 20);
- ``pairs-pineapple-3.json`` (releases with stakes agreed per pair of seats, 75a55fb on): a
  hand of a three-seat Pineapple table with such stakes, every move a timeout, core API
  (format 1 with the stakes in 75a55fb to c3fb462, format 2 from 49c9360 on);
- ``match/`` (releases with players' client seeds, 9d0467e on): a live table on a real gRPC
  server of that release (in-memory store, its own deadline sweeper and settlement relay):
  pineapple with a loss cap, stakes agreed per pair of seats, players' own client seeds
  (``CLIENT_SEED_POLICY_PLAYERS``), 1-second turns that some seats let run out, a player
  leaving and another joining between hands. Every hand's ``GetHandHistory``
  ``history_json`` as served (``hand-NNNN.json``), hand 1's whole response as protobuf JSON
  (``hand-0001.response.json``) and the settlement feed's records for the table as JSON
  Lines (``feed.jsonl``, read with ``SettlementFeedService.Subscribe``);
- releases with both jokers and Fantasyland tiers: ``match-jokers/``, the same live table
  with the ``pineapple-jokers`` preset (format 4: a 54-card deck, jokers on the boards, and
  the live table's keys);
- releases with Fantasyland tiers (format 4, the ``progressive-pineapple-keep`` preset on):
  ``play-progressive-pineapple-keep-3.json`` and ``play-pineapple-top-high-card-3.json``,
  and ``tiers/hand-0004.json`` … ``hand-0006.json``: three hands in a row of one
  ``progressive-pineapple-keep`` table (core API, every move a timeout) whose seat 0 is owed
  a 16-card and seat 2 a 17-card Fantasyland before hand 4, and who stay at their tiers;
- shapes no earlier golden held (releases with the options they need): ``custom-streets-3.json``
  (a ruleset of its own streets, 5/5, 4/3, 4/3, 2/2), ``fantasyland-everyone-classic-4.json``
  (every seat of four in a 13-card Fantasyland: the whole deck dealt),
  ``joker-top-pineapple-jokers-2.json`` (a joker on a top row),
  ``two-jokers-pineapple-jokers-3.json`` (both jokers on one board),
  ``joker-fantasyland-pineapple-jokers-3.json`` (a joker in the Fantasyland set a player
  sets itself), ``play-classic-3-clock.json`` (``ofc play`` classic, three players, 1-second
  turns) and ``seats/``: two hands of a table where a player sat down at a seat and left it
  again while hand 1 was played (hand 2's ``seat_changes`` hold both);
- releases where a player may ask to leave once the hand ends (``LeaveMode``, 1dfdb1f on):
  ``match-after-hand/``, the table of ``match/`` where cy asks during hand 2 to leave after
  it (bob asks too, and withdraws), is stood up by the server in the commit of the timeout
  that ends hand 2, and dee takes her seat before hand 3; and ``match-joined-in-hand/``, the
  table of ``match/`` where bob sits down at seat 1 while ann (seat 0, the button) and cy
  play hand 1, so that the button moves to him as it ends (hand 2's ``seat_changes`` record
  his sit-down);
- ``SOURCE``: the commit, and the command that wrote the files.

Nothing here is used by the test suite at run time; the files it wrote are committed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import io
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import ofc.engine as engine
from ofc_cli.main import main as ofc_main

try:
    from ofc.codec import hand_history
except ImportError:  # releases before ofc.codec (it was ofc.engine_json then)
    from ofc.engine_json import hand_history  # type: ignore[import-not-found,no-redef]

SEEDS = {
    "classic": "11" * 32,
    "pineapple": "22" * 32,
    "progressive-pineapple": "33" * 32,
    "turbo": "44" * 32,
    "progressive-pineapple-keep": "55" * 32,
    "pineapple-top-high-card": "66" * 32,
    "classic-joker": "55" * 32,
    "pineapple-jokers": "66" * 32,
}
API_KEY = "golden-operator-key"
TURN_MS = 1_000


def tree() -> Path:
    """The checkout the code on the path comes from."""
    return Path(inspect.getfile(engine)).resolve().parents[2]


def commit_of(root: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()


# --- what `ofc play` prints --------------------------------------------------------------------
def play(ruleset: str, players: int, client_seed: str, *extra: str) -> str:
    out = io.StringIO()
    args = ["play", "--seed", SEEDS[ruleset], "--ruleset", ruleset, "--players", str(players)]
    with contextlib.redirect_stdout(out):
        assert ofc_main([*args, "--client-seed", client_seed, *extra]) == 0
    return out.getvalue()


def has_preset(ruleset: str) -> bool:
    from ofc import rulesets

    return ruleset in rulesets.PRESETS


def play_supports(option: str) -> bool:
    from ofc_cli import cmd_play

    return option in inspect.getsource(cmd_play)


# --- hands with Fantasyland seats, through the core API ---------------------------------------
def timeout_for(state: engine.MatchState, seat: int, at_ms: int) -> engine.Action:
    """A Timeout as this release builds one: older engines chose the move themselves."""
    if hasattr(engine, "timeout_action"):  # releases up to 971f768
        return engine.Timeout(seat, at_ms)  # type: ignore[call-arg]
    from ofc import policy

    return policy.timeout(state, seat, at_ms=at_ms)


def fantasyland_hand(
    ruleset: str, players: int, owed: dict[int, int], *, button: int, seed: bytes, client: bytes
) -> dict[str, Any]:
    return timeouts_hand(owing_table(ruleset, players, owed, button=button), seed, client)


def owing_table(
    ruleset: str, players: int, owed: dict[int, int], *, button: int
) -> engine.MatchState:
    """A table of ``players`` after three hands, its seats in ``owed`` owed a Fantasyland of
    that many cards (a streak of one)."""
    table, _ = engine.replay(
        engine.new_match(ruleset, seats=players, button=button),
        [engine.SitDown(s, f"player-{s}") for s in range(players)],
    )
    seats = list(table.seats)
    for seat, cards in owed.items():
        seats[seat] = dataclasses.replace(seats[seat], fantasyland=cards, fantasyland_streak=1)
    return dataclasses.replace(table, seats=tuple(seats), hands_played=3)


def timeouts_hand(table: engine.MatchState, seed: bytes, client: bytes) -> dict[str, Any]:
    """The history of one hand of ``table`` started at 1 000 ms, every move a timeout."""
    return hand_history(table, timeouts_played(table, seed, client, 1_000)[0])


def timeouts_played(
    table: engine.MatchState, seed: bytes, client: bytes, start_ms: int
) -> tuple[list[engine.Action], engine.MatchState]:
    """One hand of ``table`` started at ``start_ms``, every move a timeout (the k-th action
    at ``start_ms + k``): its actions and the table after it."""
    actions: list[engine.Action] = [engine.StartHand(seed, client, start_ms)]
    state, _ = engine.apply(table, actions[0])
    while waiting := engine.seats_to_act(state):
        move = timeout_for(state, waiting[0], start_ms + len(actions))
        state, _ = engine.apply(state, move)
        actions.append(move)
    return actions, state


def pairs_hand(seed: bytes, client: bytes) -> dict[str, Any] | None:
    """A hand of a three-seat Pineapple table with stakes agreed per pair of seats, (0,1) at
    20 and (0,2) at 15 a unit, every move a timeout (core API; format 2, or 1 in the releases
    that had stakes before format 2: 75a55fb to c3fb462). None in releases without stakes."""
    if "pair_units" not in inspect.signature(engine.new_match).parameters:
        return None
    table, _ = engine.replay(
        engine.new_match("pineapple", seats=3, pair_units={(0, 1): 20, (0, 2): 15}),
        [engine.SitDown(s, f"player-{s}") for s in range(3)],
    )
    return timeouts_hand(table, seed, client)


def explicit_hand(
    ruleset: str, players: int, *, seed: bytes, client: bytes, pair_units: dict[Any, int]
) -> dict[str, Any] | None:
    """A hand whose every move is the player's own (the default policy's choice, sent as a
    move, not a timeout) and no table context: format 1, or 2 with ``pair_units``. None in
    releases without a default-move policy to choose them."""
    table, _ = engine.replay(
        engine.new_match(ruleset, seats=players, pair_units=pair_units or None),
        [engine.SitDown(s, f"player-{s}") for s in range(players)],
    )
    return own_moves_hand(table, seed, client)


def own_moves_hand(table: engine.MatchState, seed: bytes, client: bytes) -> dict[str, Any] | None:
    """The history of one hand of ``table`` started at 1 000 ms, every move the player's own
    (a Fantasyland seat sets its board itself); None without a default-move policy."""
    try:
        from ofc.policy import DEFAULT_POLICY
    except ImportError:
        return None
    actions: list[engine.Action] = [engine.StartHand(seed, client, 1_000)]
    state, _ = engine.apply(table, actions[0])
    while waiting := engine.seats_to_act(state):
        move = DEFAULT_POLICY.choose(state, waiting[0])
        state, _ = engine.apply(state, move)
        actions.append(move)
    return hand_history(table, actions)


def explicit_fantasyland_hand(seed: bytes, client: bytes) -> dict[str, Any] | None:
    """Pineapple, three seats, seat 1 owed a 14-card Fantasyland (button 0), every move the
    player's own: seat 1 sets its board itself, a ``set_fantasyland`` action."""
    return own_moves_hand(owing_table("pineapple", 3, {1: 14}, button=0), seed, client)


def house_rules_hand(seed: bytes, client: bytes) -> dict[str, Any] | None:
    """A four-seat table of two players (seats 1 and 3; 0 and 2 empty) under house rules:
    Ukrainian royalties, 2-4 scoring, royalties to the row winner only, 5 a unit, a loss cap
    of 30, at most two Fantasylands in a row, the button kept in Fantasyland, 20 hands at
    most; every move the player's own. None in releases without those options."""
    from ofc import rulesets

    try:
        ruleset = dataclasses.replace(
            rulesets.PRESETS["classic"],
            name="classic+house",
            royalties=rulesets.ROYALTY_TABLES["ukrainian"],
            scoring=rulesets.SCORING_SCHEMES["2-4"],
            royalties_to_row_winner_only=True,
            unit_value=5,
            loss_cap=30,
            max_consecutive_fantasylands=2,
            button_moves_in_fantasyland=False,
        )
        match = engine.new_match(ruleset, seats=4, max_hands=20)
    except (AttributeError, KeyError, TypeError):
        return None
    table, _ = engine.replay(match, [engine.SitDown(1, "player-1"), engine.SitDown(3, "player-3")])
    return own_moves_hand(table, seed, client)


def custom_streets_hand(seed: bytes, client: bytes) -> dict[str, Any] | None:
    """Three seats on a ruleset of its own streets: 5 dealt and placed, then 4 dealt with 3
    placed twice, then 2 dealt and placed (not a preset's); every move the player's own."""
    from ofc import rulesets

    try:
        streets = tuple(rulesets.Street(d, p) for d, p in ((5, 5), (4, 3), (4, 3), (2, 2)))
        ruleset = dataclasses.replace(
            rulesets.PRESETS["pineapple"], name="pineapple+streets", streets=streets
        )
        table, _ = engine.replay(
            engine.new_match(ruleset, seats=3), [engine.SitDown(s, f"player-{s}") for s in range(3)]
        )
    except (AttributeError, KeyError, TypeError):
        return None
    return own_moves_hand(table, seed, client)


def everyone_in_fantasyland(seed: bytes, client: bytes) -> dict[str, Any] | None:
    """Classic, four seats, every one owed a 13-card Fantasyland: the whole deck dealt."""
    table = owing_table("classic", 4, dict.fromkeys(range(4), 13), button=3)
    return timeouts_hand(table, seed, client)


def first_seed(
    name: str,
    wanted: Callable[[dict[str, Any]], bool],
    hand: Callable[[bytes], dict[str, Any] | None],
) -> dict[str, Any] | None:
    """The first hand of ``hand(seed)``, seed SHA-256 of ``<name>-<k>`` for k = 0, 1, ...,
    that is ``wanted``; None when ``hand`` gives none (the release lacks it)."""
    import hashlib

    for k in range(5_000):
        history = hand(hashlib.sha256(f"{name}-{k}".encode()).digest())
        if history is None or wanted(history):
            return history
    raise AssertionError(f"no seed of {name} gives the hand wanted")


def joker_hands() -> dict[str, dict[str, Any]]:
    """Hands with jokers where the other goldens have none (releases with the joker presets;
    every move the player's own): ``joker-top-pineapple-jokers-2`` (a joker on a top row),
    ``two-jokers-pineapple-jokers-3`` (both jokers on one board) and
    ``joker-fantasyland-pineapple-jokers-3`` (seat 1 dealt a joker in the 14-card Fantasyland
    it sets itself)."""
    if not has_preset("pineapple-jokers"):
        return {}
    jokers = {"X1", "X2"}

    def seated(players: int) -> engine.MatchState:
        table, _ = engine.replay(
            engine.new_match("pineapple-jokers", seats=players),
            [engine.SitDown(s, f"player-{s}") for s in range(players)],
        )
        return table

    def boards(history: dict[str, Any]) -> list[list[str]]:
        return [b["top"] + b["middle"] + b["bottom"] for b in history["boards"]]

    found = {
        "joker-top-pineapple-jokers-2": first_seed(
            "joker-top",
            lambda h: any(jokers & set(b["top"]) for b in h["boards"]),
            lambda seed: own_moves_hand(seated(2), seed, b"joker-top"),
        ),
        "two-jokers-pineapple-jokers-3": first_seed(
            "two-jokers",
            lambda h: any(jokers <= set(b) for b in boards(h)),
            lambda seed: own_moves_hand(seated(3), seed, b"two-jokers"),
        ),
        "joker-fantasyland-pineapple-jokers-3": first_seed(
            "joker-fantasyland",
            lambda h: bool(jokers & set(h["deals"][0]["cards"])),
            lambda seed: own_moves_hand(
                owing_table("pineapple-jokers", 3, {1: 14}, button=0), seed, b"joker-fantasyland"
            ),
        ),
    }
    return {name: history for name, history in found.items() if history is not None}


def seat_taken_and_left(out: Path) -> None:
    """``seats/``: hands 1 and 2 of a three-seat Pineapple table (core API, every move a
    timeout, with a table's context: the next commitment, the seats' money and the seat
    changes). Seats 0 and 1 play hand 1; while it is played, eve sits down at seat 2 and
    stands up again, so hand 2 records both changes of one seat and starts as hand 1 left
    the table."""
    from ofc import shuffle

    try:
        from ofc.codec import HandContext
    except ImportError:  # releases before ofc.codec: no seat changes in a history either
        return
    if not hasattr(HandContext, "seat_changes"):
        return
    table = engine.new_match("pineapple", seats=3, button=0)
    joined = (engine.SitDown(0, "player-0"), engine.SitDown(1, "player-1"))
    table, _ = engine.replay(table, joined)
    seeds = [bytes([11 + k]) * 32 for k in range(3)]
    money: tuple[int, ...] = (0, 0, 0)
    changes: tuple[engine.SitDown | engine.StandUp, ...] = joined
    folder = out / "seats"
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(2):
        actions, state = timeouts_played(table, seeds[k], b"golden-seats", 1_000 * (k + 1))
        context = HandContext(shuffle.commitment(seeds[k + 1]), None, money, changes)
        history = hand_history(table, actions, context)
        (folder / f"hand-{history['hand_number']:04d}.json").write_text(
            json.dumps(history, indent=2) + "\n"
        )
        units = {p["seat"]: p["units"] for p in history["settlement"]["players"]}
        money = tuple(m + units.get(seat, 0) for seat, m in enumerate(money))
        changes = (engine.SitDown(2, "eve"), engine.StandUp(2))
        table, _ = engine.replay(state, changes)


def tier_chain(out: Path) -> None:
    """``tiers/``: hands 4-6 of a progressive-pineapple-keep table, seat 0 owed 16 cards and
    seat 2 owed 17 before hand 4; each hand's seed is SHA-256 of ``tiers-0-<k>``."""
    import hashlib

    table, _ = engine.replay(
        engine.new_match("progressive-pineapple-keep", seats=3, button=0),
        [engine.SitDown(s, f"player-{s}") for s in range(3)],
    )
    seats = list(table.seats)
    for seat, cards in ((0, 16), (2, 17)):
        seats[seat] = dataclasses.replace(seats[seat], fantasyland=cards)
    table = dataclasses.replace(table, seats=tuple(seats), hands_played=3)
    folder = out / "tiers"
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(3):
        seed = hashlib.sha256(b"tiers-0-%d" % k).digest()
        actions, state = timeouts_played(table, seed, b"golden-tiers", 1_000 * (k + 1))
        history = hand_history(table, actions)
        (folder / f"hand-{history['hand_number']:04d}.json").write_text(
            json.dumps(history, indent=2) + "\n"
        )
        table = state


# --- a live table on a real server ------------------------------------------------------------
class LiveTable:
    """Players of one table over gRPC (the release's own generated stubs)."""

    def __init__(self, address: str) -> None:
        import grpc
        from ofcpoker.v1 import settlement_feed_pb2_grpc, table_service_pb2_grpc

        self.channel = grpc.insecure_channel(address)
        self.tables = table_service_pb2_grpc.TableServiceStub(self.channel)
        self.feed = settlement_feed_pb2_grpc.SettlementFeedServiceStub(self.channel)
        self.tokens: dict[int, str] = {}
        self.table_id = ""
        self.requests = (f"golden-{n}" for n in range(1_000_000))

    def operator(self) -> list[tuple[str, str]]:
        return [("x-ofc-api-key", API_KEY)]

    def as_seat(self, seat: int) -> list[tuple[str, str]]:
        return [("x-ofc-seat-token", self.tokens[seat])]

    def view(self, seat: int | None = None) -> Any:
        from ofcpoker.v1 import table_service_pb2 as pb

        request = pb.GetTableRequest(table_id=self.table_id)
        metadata = self.operator() if seat is None else self.as_seat(seat)
        return self.tables.GetTable(request, metadata=metadata).table

    def create(self, preset: str = "pineapple") -> None:
        from ofcpoker.v1 import ruleset_pb2, settlement_pb2
        from ofcpoker.v1 import table_service_pb2 as pb

        spec = ruleset_pb2.RulesetSpec(
            preset=preset, overrides=ruleset_pb2.RulesetOverrides(loss_cap=10)
        )
        request = pb.CreateTableRequest(
            ruleset=spec,
            seats=3,
            turn_time_limit_ms=TURN_MS,
            fantasyland_time_limit_ms=4 * TURN_MS,
            client_seed="golden-table",
            request_id="golden-create",
            pair_unit_values=[
                settlement_pb2.PairUnitValue(a=0, b=1, unit_value=20),
                settlement_pb2.PairUnitValue(a=0, b=2, unit_value=15),
            ],
            client_seed_policy=pb.CLIENT_SEED_POLICY_PLAYERS,
        )
        self.table_id = self.tables.CreateTable(request, metadata=self.operator()).table_id

    def join(self, seat: int, player_id: str, client_seed: str) -> None:
        from ofcpoker.v1 import table_service_pb2 as pb

        version = self.view().version
        joined = self.tables.JoinSeat(
            pb.JoinSeatRequest(
                table_id=self.table_id,
                seat=seat,
                player_id=player_id,
                expected_version=version,
                request_id=next(self.requests),
            )
        )
        self.tokens[seat] = joined.seat_token
        self.tables.SetClientSeed(
            pb.SetClientSeedRequest(
                table_id=self.table_id,
                seat=seat,
                client_seed=client_seed,
                expected_version=joined.table.version,
                request_id=next(self.requests),
            ),
            metadata=self.as_seat(seat),
        )

    def leave(self, seat: int) -> None:
        from ofcpoker.v1 import table_service_pb2 as pb

        self.tables.LeaveSeat(
            pb.LeaveSeatRequest(
                table_id=self.table_id,
                seat=seat,
                expected_version=self.view().version,
                request_id=next(self.requests),
            ),
            metadata=self.as_seat(seat),
        )
        del self.tokens[seat]

    def mark_leaving(self, seat: int, mode: str) -> None:
        """``LeaveSeat`` with ``LEAVE_MODE_<mode>`` while a hand is played: the seat is marked
        (``AFTER_HAND``) or the mark withdrawn (``CANCEL``); the seat keeps its token."""
        from ofcpoker.v1 import table_service_pb2 as pb

        self.tables.LeaveSeat(
            pb.LeaveSeatRequest(
                table_id=self.table_id,
                seat=seat,
                mode=pb.LeaveMode.Value(f"LEAVE_MODE_{mode}"),
                expected_version=self.view().version,
                request_id=next(self.requests),
            ),
            metadata=self.as_seat(seat),
        )

    def play_hand(
        self,
        lets_run_out: Callable[[int, int, int], bool],
        started: Callable[[int], None] = lambda number: None,
    ) -> int:
        """Start a hand and play it: a seat whose ``lets_run_out(hand, seat, street)`` is true
        waits for the table's timeout, the others place their batch at once (rows with room,
        bottom first; the last card discarded); ``started(number)`` runs once it is dealt.
        Returns the hand's number."""
        from ofcpoker.v1 import table_service_pb2 as pb

        seat = min(self.tokens)
        table = self.tables.StartHand(
            pb.StartHandRequest(
                table_id=self.table_id,
                expected_version=self.view().version,
                request_id=next(self.requests),
            ),
            metadata=self.as_seat(seat),
        ).table
        number = table.hand.number
        started(number)
        while True:
            table = self.view()
            if table.hand.over:
                return number
            for to_act in table.hand.to_act:
                mine = self.view(to_act)
                hand_seat = next(s for s in mine.hand.seats if s.seat == to_act)
                if hand_seat.fantasyland_cards or lets_run_out(number, to_act, mine.hand.street):
                    continue
                with contextlib.suppress(Exception):  # a timeout may have moved the table on
                    self.place(mine, to_act)
                break
            else:
                time.sleep(0.05)

    def place(self, table: Any, seat: int) -> None:
        from ofcpoker.v1 import cards_pb2
        from ofcpoker.v1 import table_service_pb2 as pb

        hand_seat = next(s for s in table.hand.seats if s.seat == seat)
        batch = list(hand_seat.pending)
        street = table.ruleset.streets[table.hand.street]
        discard = batch.pop() if street.deal > street.place else ""
        room = {
            cards_pb2.ROW_POSITION_BOTTOM: 5 - len(hand_seat.board.bottom),
            cards_pb2.ROW_POSITION_MIDDLE: 5 - len(hand_seat.board.middle),
            cards_pb2.ROW_POSITION_TOP: 3 - len(hand_seat.board.top),
        }
        placements = []
        for card in batch:
            row = next(r for r, free in room.items() if free > 0)
            room[row] -= 1
            placements.append(pb.Placement(card=card, row=row))
        self.tables.PlaceCards(
            pb.PlaceCardsRequest(
                table_id=self.table_id,
                seat=seat,
                placements=placements,
                discard=discard,
                expected_version=table.version,
                request_id=next(self.requests),
            ),
            metadata=self.as_seat(seat),
        )

    def history(self, number: int) -> Any:
        from ofcpoker.v1 import table_service_pb2 as pb

        return self.tables.GetHandHistory(
            pb.GetHandHistoryRequest(table_id=self.table_id, hand_number=number)
        )

    def feed_records(self, count: int) -> Iterator[dict[str, Any]]:
        """The table's records from the feed, as the feed stream holds them (format 1)."""
        from ofcpoker.v1 import settlement_feed_pb2 as feed_pb

        stream = self.feed.Subscribe(
            feed_pb.SubscribeRequest(group="golden", consumer="golden-1", batch_size=100),
            metadata=self.operator(),
            timeout=30,
        )
        seen = 0
        for response in stream:
            record = response.record
            if record.table_id != self.table_id:
                continue
            yield {
                "format": 1,
                "settlement_id": record.settlement_id,
                "table_id": record.table_id,
                "hand_number": record.hand_number,
                "ruleset": record.ruleset,
                "unit_value": record.unit_value,
                "loss_cap": record.loss_cap or None,
                "settled_at_ms": record.settled_at_ms,
                "seats": [
                    {
                        "seat": s.seat,
                        "player_id": s.player_id,
                        "points": s.points,
                        "units": s.units,
                        "total_points": s.total_points,
                        "total_units": s.total_units,
                        "fouled": s.fouled,
                    }
                    for s in record.seats
                ],
                "pairs": [
                    {
                        "seat_a": p.seat_a,
                        "seat_b": p.seat_b,
                        "points": p.points,
                        "capped_points": p.capped_points,
                        "unit_value": p.unit_value,
                        "units": p.units,
                    }
                    for p in record.pairs
                ],
            }
            seen += 1
            if seen == count:
                stream.cancel()
                return


def live_match(
    out: Path,
    preset: str = "pineapple",
    name: str = "match",
    *,
    after_hand: bool = False,
    joined_in_hand: bool = False,
) -> None:
    """``name/``: four hands of a live ``preset`` table (see the module docstring). With
    ``after_hand``, cy asks during hand 2 to leave once it ends (and bob asks and changes
    his mind): the server stands her up in the commit that ends hand 2. With
    ``joined_in_hand``, bob sits down at seat 1 while hand 1 is played by ann (seat 0, the
    button) and cy (seat 2): the button moves to him as the hand ends."""
    from google.protobuf import json_format
    from ofc_service.server.background import BackgroundServer
    from ofc_service.server.config import ServerConfig

    http_off = {"http_listen": ""} if hasattr(ServerConfig, "http_listen") else {}  # not 8080
    config = ServerConfig(listen="127.0.0.1:0", metrics_listen="", api_keys=API_KEY, **http_off)
    with BackgroundServer(config) as server:
        table = LiveTable(server.address)
        table.create(preset)
        for seat, (player, seed) in enumerate(
            [("ann", "ann's seed"), ("bob", "bob-7"), ("cy", "")]
        ):
            if not (joined_in_hand and player == "bob"):
                table.join(seat, player, seed)

        # Hand 1: bob lets his first street run out; hand 2: cy lets every street run out.
        def runs_out(hand: int, seat: int, street: int) -> bool:
            return (
                (hand, seat, street) == (1, 1, 0)
                or (hand == 2 and seat == 2)
                or (hand >= 3 and seat == 0 and street == 4)
            )

        def started(number: int) -> None:
            if joined_in_hand and number == 1:
                table.join(1, "bob", "bob-7")
            if after_hand and number == 2:
                table.mark_leaving(1, "AFTER_HAND")
                table.mark_leaving(1, "CANCEL")
                table.mark_leaving(2, "AFTER_HAND")

        numbers = [table.play_hand(runs_out, started), table.play_hand(runs_out, started)]
        if after_hand:  # stood up by the timeout that ended hand 2
            assert not table.view().seats[2].player_id, "cy is still seated"
            del table.tokens[2]
            table.join(2, "dee", "dee's own seed")
        # Between hands: cy leaves (if she owes no Fantasyland; else the last seat that owes
        # none), dee takes that seat; from 2026-12-06 on, nobody leaves while any seat owes
        # one (the releases before held only the seat owed it).
        seats = table.view().seats
        free = [s.seat for s in seats if not s.fantasyland_cards]
        held = any(s.fantasyland_cards for s in seats) and hasattr(engine, "apply_unheld")
        if free and not held and not after_hand:
            table.leave(free[-1])
            table.join(free[-1], "dee", "dee's own seed")
        numbers += [table.play_hand(runs_out), table.play_hand(runs_out)]
        match = out / name
        match.mkdir(parents=True, exist_ok=True)
        for number in numbers:
            response = table.history(number)
            (match / f"hand-{number:04d}.json").write_text(response.history_json + "\n")
            if number == 1:
                text = json_format.MessageToJson(response)
                (match / "hand-0001.response.json").write_text(text + "\n")
        lines = [json.dumps(r, separators=(",", ":")) for r in table.feed_records(len(numbers))]
        (match / "feed.jsonl").write_text("\n".join(lines) + "\n")
        table.channel.close()


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    root = tree()
    for ruleset, players, client in [
        ("classic", 2, ""),
        ("classic", 3, "golden"),
        ("pineapple", 3, "golden-pineapple"),
        ("progressive-pineapple", 3, "golden-progressive"),
        ("turbo", 2, "golden-turbo"),
        ("classic-joker", 2, "golden-joker"),
        ("classic-joker", 4, "golden-joker-4"),
        ("pineapple-jokers", 3, "golden-jokers"),
    ]:
        if not has_preset(ruleset):  # the joker presets came with format 4
            continue
        (out / f"play-{ruleset}-{players}.json").write_text(play(ruleset, players, client))
    from ofc.rulesets import PRESETS

    tiers = "progressive-pineapple-keep" in PRESETS  # format 4 on
    for ruleset in ("progressive-pineapple-keep", "pineapple-top-high-card") if tiers else ():
        (out / f"play-{ruleset}-3.json").write_text(play(ruleset, 3, f"golden-{ruleset}"))
    if tiers:
        tier_chain(out)
    if play_supports("turn-time-ms"):
        text = play("pineapple", 2, "golden-clock", "--turn-time-ms", str(TURN_MS))
        (out / "play-pineapple-2-clock.json").write_text(text)
    for name, ruleset, players, owed, button in [
        ("fantasyland-classic-4", "classic", 4, {2: 13, 3: 13}, 1),
        ("fantasyland-progressive-3", "progressive-pineapple", 3, {1: 15}, 0),
        ("fantasyland-pineapple-one-left", "pineapple", 3, {0: 14, 2: 14}, 2),
        ("fantasyland-pineapple-jokers-3", "pineapple-jokers", 3, {1: 14, 2: 14}, 0),
    ]:
        if not has_preset(ruleset) or players > engine.new_match(ruleset).ruleset.max_players:
            continue
        history = fantasyland_hand(
            ruleset, players, owed, button=button, seed=bytes([7]) * 32, client=name.encode()
        )
        (out / f"{name}.json").write_text(json.dumps(history, indent=2) + "\n")
    for name, ruleset, players, pairs in [
        ("explicit-classic-2", "classic", 2, {}),
        ("explicit-pineapple-pairs-3", "pineapple", 3, {(0, 1): 20, (0, 2): 15}),
    ]:
        explicit = explicit_hand(
            ruleset, players, seed=bytes([9]) * 32, client=name.encode(), pair_units=pairs
        )
        if explicit is not None:
            (out / f"{name}.json").write_text(json.dumps(explicit, indent=2) + "\n")
    shapes: list[tuple[str, Callable[[bytes, bytes], dict[str, Any] | None], int]] = [
        ("explicit-fantasyland-pineapple-3", explicit_fantasyland_hand, 10),
        ("house-rules-4", house_rules_hand, 10),
        ("custom-streets-3", custom_streets_hand, 12),
        ("fantasyland-everyone-classic-4", everyone_in_fantasyland, 12),
    ]
    for name, written, seed_byte in shapes:
        shaped = written(bytes([seed_byte]) * 32, name.encode())
        if shaped is not None:
            (out / f"{name}.json").write_text(json.dumps(shaped, indent=2) + "\n")
    for name, shaped in joker_hands().items():
        (out / f"{name}.json").write_text(json.dumps(shaped, indent=2) + "\n")
    seat_taken_and_left(out)
    if play_supports("turn-time-ms"):
        text = play("classic", 3, "golden-clock-3", "--turn-time-ms", str(TURN_MS))
        (out / "play-classic-3-clock.json").write_text(text)
    staked = pairs_hand(bytes([8]) * 32, b"golden-pairs")
    if staked is not None:
        (out / "pairs-pineapple-3.json").write_text(json.dumps(staked, indent=2) + "\n")
    from ofcpoker.v1 import table_service_pb2

    if hasattr(table_service_pb2, "CLIENT_SEED_POLICY_PLAYERS"):  # 9d0467e on
        live_match(out)
    if has_preset("pineapple-jokers") and tiers:  # both format-4 features in one release
        live_match(out, "pineapple-jokers", "match-jokers")
    if hasattr(table_service_pb2, "LeaveMode"):  # leaving after the hand, 1dfdb1f on
        live_match(out, name="match-after-hand", after_hand=True)
        live_match(out, name="match-joined-in-hand", joined_in_hand=True)
    (out / "SOURCE").write_text(
        f"commit {commit_of(root)}\n"
        f"PYTHONPATH={root}/service:{root}/clients/python "
        f"python tests/golden/generate.py {out}\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
