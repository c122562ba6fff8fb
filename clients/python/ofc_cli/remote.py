"""``--server ADDR`` for ``score`` and ``deal``: the same input and output, computed remotely.

:func:`add_server_option` wraps a subcommand's local handler: without ``--server`` the local
path runs unchanged; with it, the request goes to the gRPC server through
:class:`ofc_client.OfcClient` and the output has exactly the local JSON shape.
Exit status: 0 ok, 2 bad input (the server's reason and field path on stderr), 1 when the
server cannot be reached or fails.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the client (and gRPC) load only when --server is used
    from ofc_client import HandInput, OfcClient, Settlement
    from ofc_client.errors import OfcClientError

Handler = Callable[[argparse.Namespace], int]
ROWS = ("top", "middle", "bottom")
BATCH = 1000  # the server's SettleHands limit


def add_server_option(parser: argparse.ArgumentParser, remote: Handler) -> None:
    """Add ``--server`` (default ``$OFC_SERVER``) and send the command there when set."""
    parser.add_argument(
        "--server",
        metavar="ADDR",
        default=os.environ.get("OFC_SERVER") or None,
        help="run on an ofc gRPC server at HOST:PORT instead of locally [env OFC_SERVER]",
    )
    local: Handler = parser.get_default("handler")

    def dispatch(args: argparse.Namespace) -> int:
        return remote(args) if args.server else local(args)

    parser.set_defaults(handler=dispatch)


def _client(args: argparse.Namespace) -> OfcClient:
    from ofc_client import OfcClient

    return OfcClient(args.server)


def _fail(error: OfcClientError) -> int:
    from ofc_client import InvalidRequestError

    print(f"error: {error}", file=sys.stderr)
    return 2 if isinstance(error, InvalidRequestError) else 1


def _invalid(message: str, field: str) -> OfcClientError:
    from ofc_client.requests import invalid

    return invalid(message, field)


# --- score ----------------------------------------------------------------------------------
def hand_input(data: Any) -> HandInput:
    """A hand in the ``ofc score`` JSON form (see examples/) as a client HandInput."""
    from ofc_client import HandInput, PlayerInput

    if not isinstance(data, Mapping):
        raise _invalid("a hand to score is a JSON object", "")
    players = data.get("players")
    if not isinstance(players, list):
        raise _invalid("players must be a list", "players")
    inputs = []
    for i, player in enumerate(players):
        if not isinstance(player, Mapping):
            raise _invalid(f"players[{i}] must be an object", f"players[{i}]")
        in_fl = player.get("in_fantasyland", False)
        streak = player.get("fantasyland_streak", 1 if in_fl else 0)
        player_id = player.get("id", str(i))
        if not isinstance(player_id, str) or not isinstance(in_fl, bool):
            raise _invalid(
                f"players[{i}]: id is a string, in_fantasyland a boolean", f"players[{i}]"
            )
        if isinstance(streak, bool) or not isinstance(streak, int) or streak < 0:
            raise _invalid("fantasyland_streak is a non-negative integer", f"players[{i}]")
        board = {row: player.get(row, []) for row in ROWS}
        inputs.append(PlayerInput(board, player_id, in_fl, streak))
    return HandInput(inputs, data.get("ruleset"))


def settlement_json(s: Settlement) -> dict[str, Any]:
    """The local ``ofc score`` output shape, from a remote settlement."""
    ids = [p.player_id for p in s.players]
    players = [
        {
            "id": p.player_id,
            "points": p.points,
            "units": p.units,
            "fouled": p.board.fouled,
            "royalties": {
                "top": p.board.royalties.top,
                "middle": p.board.royalties.middle,
                "bottom": p.board.royalties.bottom,
                "total": p.board.royalties.total,
            },
            "hands": {
                row: {"category": hand.category, "name": hand.name, "value": hand.value}
                for row, hand in zip(
                    ROWS, (p.board.top, p.board.middle, p.board.bottom), strict=True
                )
            },
            "fantasyland_next": {
                "qualifies": p.board.fantasyland.qualifies,
                "cards": p.board.fantasyland.cards,
            },
        }
        for p in s.players
    ]
    pairs = [
        {
            "a": ids[pr.a],
            "b": ids[pr.b],
            "rows": dict(zip(ROWS, pr.rows, strict=True)),
            "scoop": pr.scoop,
            "a_fouled": pr.a_fouled,
            "b_fouled": pr.b_fouled,
            "row_points": pr.row_points,
            "royalties": pr.royalties,
            "points": pr.points,
            "capped_points": pr.capped_points,
            "unit_value": pr.unit_value,
            "units": pr.units,
        }
        for pr in s.pairs
    ]
    return {"ruleset": s.ruleset, "players": players, "pairs": pairs}


def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _invalid(f"not JSON: {exc}", "") from None


def _error_json(reason: str, message: str, field: str) -> dict[str, Any]:
    return {"error": {"reason": reason, "message": message, "field": field}}


def run_score(args: argparse.Namespace) -> int:
    from ofc_client import OfcClientError

    from ofc_cli.args import open_lines, read_text

    # Read (or opened) before connecting: bad input is exit 2 whatever the server does.
    stream = open_lines(args.file) if args.jsonl else io.StringIO(read_text(args.file))
    try:
        with stream, _client(args) as client:
            if not args.jsonl:
                hand = hand_input(_load(stream.read()))
                print(
                    json.dumps(
                        settlement_json(client.settle_hand(hand.players, ruleset=hand.ruleset))
                    )
                )
                return 0
            return _score_lines(client, stream)
    except OfcClientError as error:
        return _fail(error)


def _score_lines(client: OfcClient, lines: Iterator[str]) -> int:
    """One result per non-empty line, in order; hands go to the server 1000 at a time."""
    from ofc_client import HandError, HandInput, OfcClientError

    failed = False
    pending: list[HandInput | dict[str, Any]] = []
    count = 0  # hands in pending (the rest are local errors)

    def flush() -> None:
        nonlocal failed, count
        count = 0
        hands = [h for h in pending if isinstance(h, HandInput)]
        results = iter(client.settle_hands(hands))
        for item in pending:
            out = item if isinstance(item, dict) else None
            if out is None:
                result = next(results)
                if isinstance(result, HandError):
                    out = _error_json(result.reason, result.message, result.field)
                else:
                    out = settlement_json(result)
            failed = failed or "error" in out
            print(json.dumps(out))
        pending.clear()

    for line in lines:
        if not line.strip():
            continue
        try:
            pending.append(hand_input(_load(line)))
            count += 1
        except OfcClientError as error:
            pending.append(_error_json(error.reason, error.message, error.field))
        if count >= BATCH:
            flush()
    flush()
    return 2 if failed else 0


# --- deal -----------------------------------------------------------------------------------
def run_deal(args: argparse.Namespace) -> int:
    from ofc.errors import OfcError
    from ofc.shuffle import parse_seed_hex
    from ofc_client import OfcClientError

    from ofc_cli.args import utf8

    try:  # bad input is exit 2, whether or not the server answers (its field name, too)
        parse_seed_hex(args.server_seed)
    except OfcError as error:
        raise type(error)(error.message, field="server_seed_hex") from None
    utf8(args.client_seed, "client_seed")
    try:
        with _client(args) as client:
            deck = client.derive_deck(
                args.server_seed, client_seed=args.client_seed, nonce=args.nonce, jokers=args.jokers
            )
    except OfcClientError as error:
        return _fail(error)
    if args.json:
        print(json.dumps({"commitment": deck.commitment, "deck": list(deck.cards)}))
    else:
        print(f"commitment {deck.commitment}")
        print(" ".join(deck.cards))
    return 0
