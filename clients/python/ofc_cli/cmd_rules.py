"""Stateless rules commands: ``score``, ``deal``, ``eval``, ``presets``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ofc.cards import card_codes
from ofc.codec import error_to_dict, score_json
from ofc.errors import InvalidInputError, OfcError
from ofc.evaluator import evaluate
from ofc.rulesets import PRESETS, Ruleset
from ofc.shuffle import commitment, deal_deck, parse_seed_hex
from ofc.verify.values import not_json_reason

from ofc_cli import remote
from ofc_cli.args import client_seed_bytes, distinct_cards, integer, open_lines, read_text


def register(subparsers: Any) -> None:
    score = subparsers.add_parser("score", help="settle a hand given as JSON (file or stdin)")
    score.add_argument("file", nargs="?", default="-", help="JSON file, or - for stdin")
    score.add_argument(
        "--jsonl", action="store_true", help="one hand per line, one result per line"
    )
    score.set_defaults(handler=run_score)
    remote.add_server_option(score, remote.run_score)

    deal = subparsers.add_parser(
        "deal", help="derive a deck with ofc-shuffle-v1 (or v2, for a deck with jokers)"
    )
    deal.add_argument("--server-seed", required=True, help="32 bytes as 64 hex digits")
    client_seed = deal.add_mutually_exclusive_group()
    client_seed.add_argument("--client-seed", default="", help="text, UTF-8 encoded (may be empty)")
    client_seed.add_argument(
        "--client-seed-hex",
        metavar="HEX",
        help="the client seed's bytes as hex digits, as a hand history's client_seed holds "
        "them (any bytes: a table's combined seed holds zero bytes)",
    )
    deal.add_argument("--nonce", type=integer, required=True, help="unsigned 64-bit integer")
    deal.add_argument(
        "--jokers",
        type=integer,
        choices=(0, 1, 2),
        default=0,
        help="jokers in the deck: 0 (52 cards, ofc-shuffle-v1, the default), 1 or 2 (53 or 54 "
        "cards, ofc-shuffle-v2)",
    )
    deal.add_argument("--json", action="store_true")
    deal.set_defaults(handler=run_deal)
    remote.add_server_option(deal, remote.run_deal)

    ev = subparsers.add_parser("eval", help="category and value of a 3- or 5-card row")
    ev.add_argument("cards", nargs="+", help="card codes, e.g. As Kd 10h")
    ev.add_argument("--json", action="store_true")
    ev.set_defaults(handler=run_eval)

    presets = subparsers.add_parser(
        "presets", help="print the ruleset presets with every parameter"
    )
    presets.set_defaults(handler=run_presets)


def _load_json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # not JSON, or past Python's limits
        raise InvalidInputError(f"not JSON: {not_json_reason(exc)}", field="") from None


_JSON_SPACE = " \t\n\r"


def run_score(args: argparse.Namespace) -> int:
    if not args.jsonl:
        print(score_json(_load_json(read_text(args.file))))
        return 0
    write, decode = sys.stdout.write, json.JSONDecoder().raw_decode
    with open_lines(args.file) as stream:
        failed = False
        for line in stream:
            try:
                try:
                    # json.loads's result, without its wrapping: a line that starts with a
                    # value and has only JSON whitespace after it; anything else json.loads
                    # reads (leading space) or refuses, with its message.
                    data, end = decode(line)
                    if line[end:].strip(_JSON_SPACE):
                        raise ValueError("extra data")
                except (ValueError, RecursionError):
                    if not line.strip():
                        continue  # a blank line
                    data = _load_json(line)
                out = score_json(data)
            except OfcError as error:
                failed = True
                out = json.dumps({"error": error_to_dict(error)})
            write(out + "\n")
        return 2 if failed else 0


def run_deal(args: argparse.Namespace) -> int:
    seed = parse_seed_hex(args.server_seed)
    deck = card_codes(deal_deck(seed, client_seed_bytes(args), args.nonce, jokers=args.jokers))
    if args.json:
        print(json.dumps({"commitment": commitment(seed), "deck": deck}))
    else:
        print(f"commitment {commitment(seed)}")
        print(" ".join(deck))
    return 0


def run_eval(args: argparse.Namespace) -> int:
    value = evaluate(distinct_cards(args.cards))
    if args.json:
        print(
            json.dumps(
                {"category": value.category.name.lower(), "name": str(value), "value": value.value}
            )
        )
    else:
        print(f"{value.category.name.lower()}\t{value}\t{value.value}")
    return 0


def run_presets(args: argparse.Namespace) -> int:
    print(json.dumps({name: every_option(r) for name, r in PRESETS.items()}, indent=2))
    return 0


def every_option(ruleset: Ruleset) -> dict[str, Any]:
    """:meth:`Ruleset.to_dict` with the options it leaves out when unused (so that older
    histories stay as they were) written out too: every option, as ListPresets has them."""
    data = ruleset.to_dict()
    data.setdefault("fantasyland_tiers", [])
    data["royalties"].setdefault("top_high_card", {})
    return data
