"""``ofc solve CARDS...``: the best Fantasyland set for 13..17 cards (the exact solver).

$ ofc solve Qc Qd Qh 9s 8h 7d 6c 5s Ac Kc Tc 4c 2c
top        Qh Qd Qc
middle     9s 8h 7d 6c 5s
bottom     Ac Kc Tc 4c 2c
discards   -
royalties  28
fantasyland_next  yes, 13 cards (stay rule)
objective  38
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ofc.cards import card_codes, format_cards, parse_cards
from ofc.rulesets import PRESETS, get_ruleset
from ofc.solver import DEFAULT_FANTASYLAND_VALUE, FantasylandSolution, solve_fantasyland

from ofc_cli.args import integer


def register(subparsers: Any) -> None:
    solve = subparsers.add_parser(
        "solve",
        help="best Fantasyland set for 13..17 cards",
        description="Set 13..17 cards at once: maximise royalties plus a value for "
        "qualifying for Fantasyland next hand, among boards that do not foul.",
    )
    solve.add_argument("cards", nargs="+", metavar="CARDS", help="card codes, e.g. As Kd 10h")
    solve.add_argument(
        "--ruleset", default="classic", help=f"preset name ({', '.join(PRESETS)}); default classic"
    )
    mode = solve.add_mutually_exclusive_group()
    mode.add_argument(
        "--in-fantasyland",
        dest="in_fantasyland",
        action="store_true",
        default=True,
        help="the player is in Fantasyland now: the stay rule applies (default)",
    )
    mode.add_argument(
        "--not-in-fantasyland",
        dest="in_fantasyland",
        action="store_false",
        help="the player is not in Fantasyland: the entry rule applies",
    )
    solve.add_argument(
        "--fantasyland-value",
        type=integer,
        default=DEFAULT_FANTASYLAND_VALUE,
        metavar="N",
        help="points for qualifying for Fantasyland next hand (default %(default)s)",
    )
    solve.add_argument(
        "--value-of",
        action="append",
        type=_size_value,
        default=[],
        metavar="CARDS=N",
        help="points for a next Fantasyland hand of CARDS cards (13..17), when sizes differ "
        "in value; repeatable; other sizes are worth --fantasyland-value",
    )
    solve.add_argument("--json", action="store_true", help="one JSON object")
    solve.set_defaults(handler=run_solve)


def _size_value(text: str) -> tuple[int, int]:
    size, sep, points = text.partition("=")
    if not sep or not size.isdecimal() or not points.isdecimal() or not 13 <= int(size) <= 17:
        raise argparse.ArgumentTypeError(f"expected CARDS=N with CARDS 13..17, got {text!r}")
    return int(size), int(points)


def solution_to_dict(solution: FantasylandSolution) -> dict[str, Any]:
    return {
        "top": card_codes(solution.top),
        "middle": card_codes(solution.middle),
        "bottom": card_codes(solution.bottom),
        "discards": card_codes(solution.discards),
        "royalties": solution.royalties,
        "fantasyland_next": solution.fantasyland_next,
        "fantasyland_next_cards": solution.fantasyland_next_cards,
        "objective": solution.objective,
    }


def run_solve(args: argparse.Namespace) -> int:
    ruleset = get_ruleset(args.ruleset)
    cards = parse_cards(" ".join(args.cards))
    solution = solve_fantasyland(
        cards,
        ruleset,
        in_fantasyland=args.in_fantasyland,
        fantasyland_value={
            **dict.fromkeys(range(13, 18), args.fantasyland_value),
            **dict(args.value_of),
        }
        if args.value_of
        else args.fantasyland_value,
    )
    if args.json:
        print(json.dumps(solution_to_dict(solution)))
        return 0
    rule = "stay rule" if args.in_fantasyland else "entry rule"
    print(f"top        {format_cards(solution.top)}")
    print(f"middle     {format_cards(solution.middle)}")
    print(f"bottom     {format_cards(solution.bottom)}")
    print(f"discards   {format_cards(solution.discards) or '-'}")
    print(f"royalties  {solution.royalties}")
    next_hand = (
        f"yes, {solution.fantasyland_next_cards} cards" if solution.fantasyland_next else "no"
    )
    print(f"fantasyland_next  {next_hand} ({rule})")
    print(f"objective  {solution.objective}")
    return 0
