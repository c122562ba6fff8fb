"""``--server ADDR`` for ``score`` and ``deal``: the same input and output, computed remotely;
and how every remote command reaches its server.

:func:`add_server_option` wraps a subcommand's local handler: without ``--server`` the local
path runs unchanged; with it, the request goes to the gRPC server through
:class:`ofc_client.OfcClient` and the output has exactly the local JSON shape.
:func:`add_connection_arguments` (also used by ``export-match``) adds ``--server``,
``--tls``, ``--ca-file`` and ``--api-key``; :func:`describe` words a failed connection so
that a plaintext client at a TLS server (and the reverse) is told what to change.
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
    import grpc
    from ofc_client import HandInput, OfcClient, Settlement, TableClient
    from ofc_client.errors import OfcClientError

Handler = Callable[[argparse.Namespace], int]
ROWS = ("top", "middle", "bottom")
BATCH = 1000  # the server's SettleHands limit


def add_connection_arguments(
    parser: argparse.ArgumentParser,
    *,
    required: bool = False,
    server_help: str = "the ofc gRPC server at HOST:PORT",
) -> None:
    """``--server`` (default ``$OFC_SERVER``) and how to reach it: ``--tls``, ``--ca-file``,
    ``--api-key`` (default ``$OFC_API_KEY``)."""
    from_env = os.environ.get("OFC_SERVER") or None
    parser.add_argument(
        "--server",
        metavar="ADDR",
        default=from_env,
        required=required and from_env is None,
        help=f"{server_help} [env OFC_SERVER]",
    )
    add_tls_arguments(parser)
    parser.add_argument(
        "--api-key",
        metavar="KEY",
        default=os.environ.get("OFC_API_KEY") or None,
        help="operator API key, sent as x-ofc-api-key (prefer the environment: "
        "command lines are visible to other users) [env OFC_API_KEY]",
    )


def add_tls_arguments(parser: argparse.ArgumentParser, *, when: str = "") -> None:
    """``--tls`` and ``--ca-file`` (:func:`channel_credentials` reads them); ``when``: the
    option they go with, said first in their help."""
    parser.add_argument(
        "--tls",
        action="store_true",
        help=f"{when}connect with TLS, trusting the system's certificate authorities "
        "(or --ca-file)",
    )
    parser.add_argument(
        "--ca-file",
        metavar="PEM",
        help=f"{when}trust the server's certificate if this CA (PEM file) signed it; implies --tls",
    )


def add_server_option(parser: argparse.ArgumentParser, remote: Handler) -> None:
    """Add the connection arguments and send the command to ``--server`` when it is set."""
    add_connection_arguments(
        parser, server_help="run on an ofc gRPC server at HOST:PORT instead of locally"
    )
    local: Handler = parser.get_default("handler")

    def dispatch(args: argparse.Namespace) -> int:
        if not args.server:
            return local(args)
        quiet_grpc()
        return remote(args)

    parser.set_defaults(handler=dispatch)


def quiet_grpc() -> None:
    """Only gRPC core's errors on stderr (it reads this once, when it loads: call first); its
    INFO lines, a failed TLS handshake's for one, would follow the command's own error line."""
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")


def uses_tls(args: argparse.Namespace) -> bool:
    return bool(args.tls or args.ca_file)


def channel_credentials(args: argparse.Namespace) -> grpc.ChannelCredentials | None:
    """TLS credentials for ``--tls``/``--ca-file``, None for plaintext (read before any
    connection: an unreadable CA file is bad input, exit 2)."""
    if not uses_tls(args):
        return None
    import grpc

    root = None
    if args.ca_file:
        from ofc.errors import InvalidInputError

        try:
            with open(args.ca_file, "rb") as pem:
                root = pem.read()
        except OSError as exc:
            raise InvalidInputError(
                f"cannot read {args.ca_file}: {exc.strerror}", field="ca_file"
            ) from None
        if not _holds_certificates(root):  # else gRPC's core logs and fails the connection
            raise InvalidInputError(
                f"{args.ca_file} holds no PEM certificate", field="ca_file"
            ) from None
    return grpc.ssl_channel_credentials(root_certificates=root)


def _holds_certificates(pem: bytes) -> bool:
    """Whether ``pem`` is one or more PEM certificates, as a TLS client loads them."""
    import ssl

    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=pem.decode("ascii"))
    except (ValueError, ssl.SSLError):  # not ASCII, not PEM, or no certificate in it
        return False
    return True


def check_target(target: str, field: str) -> str:
    """``target`` unless it is ``HOST:PORT`` with a port out of 1..65535 (gRPC would take
    ``:99999`` modulo 65536 and call another port); other gRPC target forms as given."""
    from ofc.errors import InvalidInputError

    _, sep, port = target.rpartition(":")
    if sep and port.isascii() and port.isdigit() and not 1 <= int(port) <= 65535:
        raise InvalidInputError(f"{target!r}: a port is 1..65535", field=field)
    return target


def rules_client(args: argparse.Namespace) -> OfcClient:
    from ofc_client import OfcClient

    target = check_target(args.server, "server")
    credentials = channel_credentials(args)
    return OfcClient(target, credentials=credentials, api_key=args.api_key)


def table_client(args: argparse.Namespace) -> TableClient:
    from ofc_client import TableClient

    target = check_target(args.server, "server")
    credentials = channel_credentials(args)
    return TableClient(target, credentials=credentials, api_key=args.api_key)


def describe(error: OfcClientError, args: argparse.Namespace) -> str:
    """``error: REASON: message``, and when a connection failed for want of the right
    transport, what to change (a plaintext client at a TLS server is told so)."""
    import grpc

    text = f"error: {error}"
    if error.code != grpc.StatusCode.UNAVAILABLE:
        return text
    if not uses_tls(args):
        if speaks_tls(args.server):
            return (
                f"error: {error.reason}: the server at {args.server} speaks TLS and this client "
                "connected in plaintext: add --tls (and --ca-file PEM when a private CA "
                "signed its certificate)"
            )
        return text
    if "WRONG_VERSION_NUMBER" in error.message:
        return f"{text} (the TLS handshake failed: the server may be plaintext; drop --tls)"
    if "CERTIFICATE_VERIFY_FAILED" in error.message:
        return f"{text} (the server's TLS certificate is not trusted: pass its CA with --ca-file)"
    return text


def speaks_tls(target: str, timeout: float = 2.0) -> bool:
    """Whether ``HOST:PORT`` completes a TLS handshake (certificate not checked: this only
    tells a TLS server from a plaintext one). Other gRPC target forms are not probed."""
    import socket
    import ssl

    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or "/" in host or "," in host:
        return False
    host = host.strip("[]")
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    try:
        with (
            socket.create_connection((host, int(port)), timeout=timeout) as raw,
            context.wrap_socket(raw, server_hostname=host or None),
        ):
            return True
    except (OSError, ssl.SSLError):
        return False


def _fail(error: OfcClientError, args: argparse.Namespace) -> int:
    from ofc_client import InvalidRequestError

    print(describe(error, args), file=sys.stderr)
    return 2 if isinstance(error, InvalidRequestError) else 1


def _invalid(message: str, field: str) -> OfcClientError:
    from ofc_client.requests import invalid

    return invalid(message, field)


# --- score ----------------------------------------------------------------------------------
def hand_input(data: Any) -> HandInput:
    """A hand in the ``ofc score`` JSON form (see examples/) as a client HandInput."""
    from ofc.codec import SCORE_HAND_KEYS, SCORE_PLAYER_KEYS, check_keys
    from ofc.errors import OfcError
    from ofc_client import HandInput, PlayerInput

    if not isinstance(data, Mapping):
        raise _invalid("a hand to score is a JSON object", "")
    players = data.get("players")
    if not isinstance(players, list):
        raise _invalid("players must be a list", "players")

    def known(value: Mapping[str, Any], keys: frozenset[str], place: str) -> None:
        try:  # the keys the local run knows: a misspelt one is refused, not ignored
            check_keys(value, keys, place)
        except OfcError as error:
            raise _invalid(error.message, error.field) from None

    known(data, SCORE_HAND_KEYS, "")
    inputs = []
    for i, player in enumerate(players):
        if not isinstance(player, Mapping):
            raise _invalid(f"players[{i}] must be an object", f"players[{i}]")
        known(player, SCORE_PLAYER_KEYS, f"players[{i}]")
        in_fl = player.get("in_fantasyland", False)
        cards = player.get("fantasyland_cards", 0)
        streak = player.get("fantasyland_streak", 1 if in_fl or cards else 0)
        player_id = player.get("id", str(i))
        if not isinstance(player_id, str) or not isinstance(in_fl, bool):
            raise _invalid(
                f"players[{i}]: id is a string, in_fantasyland a boolean", f"players[{i}]"
            )
        for name, value in (("fantasyland_streak", streak), ("fantasyland_cards", cards)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise _invalid(f"{name} is a non-negative integer", f"players[{i}]")
        board = {row: player.get(row, []) for row in ROWS}
        inputs.append(PlayerInput(board, player_id, in_fl, streak, cards))
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
    from ofc.verify.values import not_json_reason

    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # not JSON, or past Python's limits
        raise _invalid(f"not JSON: {not_json_reason(exc)}", "") from None


def _error_json(reason: str, message: str, field: str) -> dict[str, Any]:
    return {"error": {"reason": reason, "message": message, "field": field}}


def run_score(args: argparse.Namespace) -> int:
    from ofc_client import OfcClientError

    from ofc_cli.args import open_lines, read_text

    # Read (or opened) before connecting: bad input is exit 2 whatever the server does.
    stream = open_lines(args.file) if args.jsonl else io.StringIO(read_text(args.file))
    try:
        with stream, rules_client(args) as client:
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
        return _fail(error, args)


def _score_lines(client: OfcClient, lines: Iterator[str]) -> int:
    """One result per non-empty line, in order; hands go to the server 1000 at a time."""
    from ofc_client import HandError, HandInput, OfcClientError
    from ofc_client.requests import hand_message

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
            hand = hand_input(_load(line))
            hand_message(hand)  # what the client refuses (a ruleset, a card) is this line's
            pending.append(hand)
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

    from ofc_cli.args import client_seed_bytes

    try:  # bad input is exit 2, whether or not the server answers (its field name, too)
        parse_seed_hex(args.server_seed)
    except OfcError as error:
        raise type(error)(error.message, field="server_seed_hex") from None
    seed_bytes = client_seed_bytes(args)
    # text is sent as text (client_seed_text), hex's bytes as bytes (client_seed_bytes)
    client_seed = args.client_seed if args.client_seed_hex is None else seed_bytes
    try:
        with rules_client(args) as client:
            deck = client.derive_deck(
                args.server_seed, client_seed=client_seed, nonce=args.nonce, jokers=args.jokers
            )
    except OfcClientError as error:
        return _fail(error, args)
    if args.json:
        print(json.dumps({"commitment": deck.commitment, "deck": list(deck.cards)}))
    else:
        print(f"commitment {deck.commitment}")
        print(" ".join(deck.cards))
    return 0
