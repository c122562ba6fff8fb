"""Rules core throughput next to independent evaluators, all measured in the same run.

    .venv/bin/python -m bench.core [--hands 50000] [--deals 4000] [--rounds 7] [--json]

Evaluator: five-card rows from card ids (ours ``rank5(*ids)``; treys ``Evaluator.evaluate``
on its int cards, and its internal ``_five`` for reference; eval7 ``evaluate`` on its Card
objects), five-card rows from card strings (ours through ``Card.parse``, a 52-entry code
table, and through ``parse_cards``; treys through ``treys.Card.new``; eval7 through
``eval7.Card``), and three-card tops (ours ``rank3``; eval7, which ranks three cards on the
same scale as five; treys does not take three cards). Settlement: ``settle`` for 2 and 3
players, classic rules, each settlement thrown away as a server would after sending it.

Hands and deals come from a seeded generator, so every run times the same work. Each
figure is the best of ``--rounds`` interleaved rounds (bench/timing.py). Ratios compare
ours with each library in this run; the issue's targets are printed beside them.
``run()`` returns the figures for the aggregate ``python -m bench``.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from importlib.metadata import version
from typing import Any

import treys
from ofc.cards import CARD_CODES, Card, parse_cards
from ofc.evaluator import rank3, rank5
from ofc.scoring import Board, settle

from bench.timing import Batch, per_second, race

with warnings.catch_warnings():  # eval7 uses pyparsing names that now warn on import
    warnings.simplefilter("ignore", DeprecationWarning)
    import eval7


@dataclass(frozen=True, slots=True)
class Figure:
    group: str
    label: str
    rate: float  # operations per second (best round)
    ratio: float | None = None  # ours / this candidate (or this / ``versus``), same run
    target: float | None = None  # the minimum for that ratio (or rate)
    versus: str = ""  # what a ratio of one of our own candidates is taken against

    @property
    def met(self) -> bool | None:
        if self.target is None:
            return None
        return (self.ratio if self.ratio is not None else self.rate) >= self.target


# --- work: the same every run ---------------------------------------------------------------------
def _hands(count: int, size: int, seed: int) -> list[tuple[int, ...]]:
    rng = random.Random(seed)
    return [tuple(rng.sample(range(52), size)) for _ in range(count)]


def _board(cards: Sequence[Card]) -> Board:
    """13 dealt cards as a board, the stronger five below (a fair share still fouls)."""
    top, middle, bottom = tuple(cards[:3]), tuple(cards[3:8]), tuple(cards[8:13])
    if rank5(*middle) > rank5(*bottom):
        middle, bottom = bottom, middle
    return Board(top, middle, bottom)


def _deals(count: int, players: int, seed: int) -> list[list[Board]]:
    rng = random.Random(seed)
    deals = []
    for _ in range(count):
        cards = [Card(c) for c in rng.sample(range(52), 13 * players)]
        deals.append([_board(cards[13 * i : 13 * i + 13]) for i in range(players)])
    return deals


# --- candidates: one loop shape for all ---------------------------------------------------------
def _five_from_ids(hands: list[tuple[int, ...]]) -> dict[str, Batch]:
    to_treys = [treys.Card.new(code) for code in CARD_CODES]
    to_eval7 = [eval7.Card(code) for code in CARD_CODES]
    treys_hands = [[to_treys[c] for c in h] for h in hands]
    eval7_hands = [[to_eval7[c] for c in h] for h in hands]
    evaluator = treys.Evaluator()

    def ours(rank5: Any = rank5) -> int:
        for h in hands:
            rank5(*h)
        return len(hands)

    def treys_evaluate(evaluate: Any = evaluator.evaluate) -> int:
        for h in treys_hands:
            evaluate(h, [])
        return len(treys_hands)

    def treys_five(five: Any = evaluator._five) -> int:
        for h in treys_hands:
            five(h)
        return len(treys_hands)

    def eval7_evaluate(evaluate: Any = eval7.evaluate) -> int:
        for h in eval7_hands:
            evaluate(h)
        return len(eval7_hands)

    return {
        "ofc rank5(*ids)": ours,
        "treys Evaluator.evaluate(ints, [])": treys_evaluate,
        "treys Evaluator._five(ints) [internal]": treys_five,
        "eval7.evaluate(Cards)": eval7_evaluate,
    }


def _five_from_strings(hands: list[tuple[int, ...]]) -> dict[str, Batch]:
    codes = [tuple(CARD_CODES[c] for c in h) for h in hands]
    evaluator = treys.Evaluator()

    def ours(parse: Any = Card.parse, rank5: Any = rank5) -> int:
        for a, b, c, d, e in codes:
            rank5(parse(a), parse(b), parse(c), parse(d), parse(e))
        return len(codes)

    def ours_parse_cards(parse_cards: Any = parse_cards, rank5: Any = rank5) -> int:
        for h in codes:
            rank5(*parse_cards(h))
        return len(codes)

    def treys_new(new: Any = treys.Card.new, evaluate: Any = evaluator.evaluate) -> int:
        for a, b, c, d, e in codes:
            evaluate([new(a), new(b), new(c), new(d), new(e)], [])
        return len(codes)

    def eval7_card(card: Any = eval7.Card, evaluate: Any = eval7.evaluate) -> int:
        for a, b, c, d, e in codes:
            evaluate([card(a), card(b), card(c), card(d), card(e)])
        return len(codes)

    return {
        "ofc rank5(Card.parse(s) x5)": ours,
        "ofc rank5(*parse_cards(strs))": ours_parse_cards,
        "treys Card.new(s) + evaluate": treys_new,
        "eval7.Card(s) + evaluate": eval7_card,
    }


def _tops(hands: list[tuple[int, ...]]) -> dict[str, Batch]:
    to_eval7 = [eval7.Card(code) for code in CARD_CODES]
    eval7_hands = [[to_eval7[c] for c in h] for h in hands]

    def ours(rank3: Any = rank3) -> int:
        for h in hands:
            rank3(*h)
        return len(hands)

    def eval7_evaluate(evaluate: Any = eval7.evaluate) -> int:
        for h in eval7_hands:
            evaluate(h)
        return len(eval7_hands)

    return {"ofc rank3(*ids)": ours, "eval7.evaluate(3 Cards)": eval7_evaluate}


def _settlements(deals2: list[list[Board]], deals3: list[list[Board]]) -> dict[str, Batch]:
    def two() -> int:
        for boards in deals2:
            settle(boards)
        return len(deals2)

    def three() -> int:
        for boards in deals3:
            settle(boards)
        return len(deals3)

    return {"ofc settle, 2 players": two, "ofc settle, 3 players": three}


# --- the figures ----------------------------------------------------------------------------------
def _group(group: str, rates: dict[str, float], targets: Mapping[str, float]) -> list[Figure]:
    """Our first candidate, then every other one with ``ours / theirs``. A second ofc
    candidate (another way in) is compared with the fastest library instead."""
    ours_label, *others = rates
    ours = rates[ours_label]
    best_library = max(rates[label] for label in others if not label.startswith("ofc"))
    figures = [Figure(group, ours_label, ours)]
    for label in others:
        rate = rates[label]
        if label.startswith("ofc"):
            figures.append(
                Figure(group, label, rate, rate / best_library, versus="fastest library")
            )
        else:
            figures.append(Figure(group, label, rate, ours / rate, targets.get(label)))
    return figures


def run(*, hands: int = 50_000, deals: int = 4_000, rounds: int = 7, seed: int = 1) -> list[Figure]:
    five = _hands(hands, 5, seed)
    tops = _hands(hands, 3, seed + 1)
    deals2, deals3 = _deals(deals, 2, seed + 2), _deals(deals, 3, seed + 3)

    ids = race(_five_from_ids(five), rounds=rounds)
    id_targets = {"treys Evaluator.evaluate(ints, [])": 1.5, "eval7.evaluate(Cards)": 1.0}
    strings = race(_five_from_strings(five), rounds=rounds)
    libraries = {label: rate for label, rate in strings.items() if not label.startswith("ofc")}
    string_targets = {max(libraries, key=libraries.__getitem__): 3.0}
    top = race(_tops(tops), rounds=rounds)
    settled = race(_settlements(deals2, deals3), rounds=rounds)
    two, three = settled.values()
    return [
        *_group("5-card rows from card ids", ids, id_targets),
        *_group("5-card rows from card strings", strings, string_targets),
        *_group("3-card tops", top, {"eval7.evaluate(3 Cards)": 1.0}),
        Figure("settlements", "ofc settle, 2 players", two, target=100_000),
        Figure("settlements", "ofc settle, 3 players", three),
    ]


def fouled_share(deals: list[list[Board]]) -> float:
    results = [p.fouled for boards in deals for p in settle(boards).players]
    return sum(results) / len(results)


def header(*, hands: int, deals: int, rounds: int) -> str:
    return (
        f"Python {platform.python_version()} on {platform.machine()}, "
        f"treys {version('treys')}, eval7 {version('eval7')}; "
        f"{hands:,} hands, {deals:,} deals per player count, best of {rounds} rounds"
    )


def format_figures(figures: list[Figure]) -> list[str]:
    lines: list[str] = []
    group = ""
    for f in figures:
        if f.group != group:
            group = f.group
            lines.append(group)
        line = f"  {f.label:<40} {per_second(f.rate):>11}"
        if f.ratio is not None and f.versus:
            line += f"   {f.ratio:5.2f}x the {f.versus}"
        elif f.ratio is not None:
            line += f"   ofc {f.ratio:5.2f}x"
        if f.target is not None:
            wanted = f"{f.target:.1f}x" if f.ratio is not None else f"{f.target:,.0f}/s"
            line += f"   target >= {wanted} {'ok' if f.met else 'MISSED'}"
        lines.append(line)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.core",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--hands", type=int, default=50_000, help="evaluator hands per batch")
    parser.add_argument("--deals", type=int, default=4_000, help="deals per settlement batch")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds, best kept")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="one JSON list instead of a table")
    args = parser.parse_args(argv)
    figures = run(hands=args.hands, deals=args.deals, rounds=args.rounds, seed=args.seed)
    if args.json:
        print(json.dumps([{**asdict(f), "met": f.met} for f in figures]))
        return 0
    print(header(hands=args.hands, deals=args.deals, rounds=args.rounds))
    for line in format_figures(figures):
        print(line)
    share = fouled_share(_deals(args.deals, 2, args.seed + 2))
    print(f"  (settlement deals: random 13-card boards, stronger five below; {share:.0%} foul)")
    missed = [f for f in figures if f.met is False]
    checked = [f for f in figures if f.met is not None]
    print(f"targets: {len(checked) - len(missed)} of {len(checked)} met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
