"""Deterministic default moves: what the table plays for a seat whose clock ran out.

The table (the shell, ``ofc play``) asks a :class:`DefaultMovePolicy` for the move and hands
it to the engine inside a :class:`~ofc.engine.Timeout`, with the policy's identity; the engine
only checks and applies it, and a history records both (docs/hand-history.md, "Timeout
policies"). :data:`POLICIES` are the versions this release ships: :data:`TIMEOUT_POLICY`,
``ofc-timeout-4``, is the default. :func:`timeout` builds the Timeout in one call:

>>> from ofc.engine import SitDown, StartHand, apply, new_match, replay, seats_to_act
>>> state, _ = replay(new_match(seats=2), [SitDown(0, "a"), SitDown(1, "b"), StartHand(bytes(32))])
>>> action = timeout(state, seats_to_act(state)[0], at_ms=30_000, deadline_ms=30_000)
>>> action.policy, action.seat, len(action.move.placements), action.move.at_ms
('ofc-timeout-4', 1, 5, 30000)
>>> state, events = apply(state, action)
>>> type(events[0]).__name__
'TimeoutApplied'

A new behaviour is a new version: change :data:`TIMEOUT_POLICY`'s ``version`` with it, so
that ``ofc verify --check-policy`` never re-checks a history against moves its policy never
made.

:func:`choose_placement` places a dealt batch (and picks the discard) by playing the rest
of the hand out many times. A *future* is one way the later streets could come to the
seat: the cards it has not seen, in a pseudo-random order that is a pure function of what
the seat can see (its board, its batch and the dead cards). The ways to place the batch
are played out along the same futures and the final boards scored: a foul costs
:data:`FOUL_COST`; a legal board is worth its royalties, a small bonus per row category
(rows that win more often) and a bonus for qualifying for Fantasyland. When the placements
are compared, each future that ends in a foul costs :data:`FOUL_GUARD` more (a guard: of two
placements close in value, the one that fouls less often wins; without it the policy fouled
more often than the first version in pineapple). The best average wins; ties go to the
first placement in a fixed enumeration that prefers lower rows. On the first street two
starts are left out (:func:`_sound_start`: a high unpaired card on top, a middle heavier
than the bottom): futures see their rare fouls poorly, and they caused most of them.

Inside a future the later cards are placed the way a careful player places them: one at a
time, without knowing what comes next, each to the row that scores best on average over
:data:`ROLLOUT_FILLS` random completions of the board (*fills*: other unseen cards of the
same future, none of which the seat is dealt in it); on a street with a discard, the card
whose best row scores lowest is thrown. On the street that fills the board every card is
known, so the cards are placed the best way there is (every choice of cards and slots).
The first version of this policy (kept as ``bench/policy_v1.py``) filled the later slots
at random instead, which plays the future worse than the seat will and so misjudges
boards: it split pairs and let a middle outgrow the bottom. ``python -m bench.policy``
measures this version against that one and against random placement.

The work is bounded. Many candidates (232 for a five-card first street, about 24 for a
pineapple batch) are first cut down on random fills, the first version's cheap estimate,
in stages (:data:`SCREEN`); the few left are played out on as many futures as
:data:`WORK` allows. When one card is still to come, every unseen card is tried once, so
that choice is exact.

:func:`choose_fantasyland` sets a Fantasyland hand with the exact solver
(:func:`ofc.solver.solve_fantasyland`), which never fouls.

>>> from ofc.cards import parse_cards
>>> placements, discards = choose_placement(Board(), parse_cards("Ah Ad 7c 3s 2d"), 5)
>>> sorted((r.value, str(c)) for c, r in placements)
[('bottom', 'Ad'), ('bottom', 'Ah'), ('top', '2d'), ('top', '3s'), ('top', '7c')]
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations, combinations_with_replacement, permutations, product
from typing import Protocol

from ofc.cards import Card, Rank, deck_cards
from ofc.codec import TurnClock
from ofc.engine import (
    Action,
    CardsDealt,
    MatchState,
    Place,
    SetFantasyland,
    StartHand,
    Timeout,
    apply,
    seats_to_act,
    view,
)
from ofc.errors import (
    HandNotInProgressError,
    InvalidInputError,
    NotYourTurnError,
    WrongCardCountError,
)
from ofc.evaluator import rank3, rank5
from ofc.rulesets import BOARD_SIZE, DEFAULT_RULESET, Row, Ruleset
from ofc.scoring import Board, row_royalty
from ofc.solver import solve_fantasyland

__all__ = [
    "CATEGORY_WEIGHT",
    "DEFAULT_POLICY",
    "FANTASYLAND_BONUS",
    "FOUL_COST",
    "FOUL_GUARD",
    "MAX_SAMPLES",
    "MIN_SAMPLES",
    "POLICIES",
    "ROLLOUT_FILLS",
    "SCREEN",
    "TIMEOUT_POLICY",
    "TOP_START_MAX",
    "WORK",
    "DefaultMovePolicy",
    "TimeoutPolicy",
    "choose_fantasyland",
    "choose_placement",
    "identity",
    "is_newer_policy",
    "is_unwritten_policy",
    "play_by_timeouts",
    "policy_named",
    "timeout",
    "unwritten_policy",
]

FOUL_COST = 8.0
"""What a fouled board scores: the 6 a foul pays plus a typical opponent's royalties."""

FOUL_GUARD = 6.0
"""What a foul costs on top of :data:`FOUL_COST` when the candidates played out are
compared (not inside a future)."""

TOP_START_MAX = Rank.EIGHT
"""The highest unpaired card the first street may put on top (see :func:`_sound_start`)."""

CATEGORY_WEIGHT = 0.35
"""Bonus per category step of each row (a pair beats high cards more often, and so on)."""

FANTASYLAND_BONUS = 6.0
"""Bonus for a board that qualifies for Fantasyland next hand."""

WORK = 3200
"""What one decision may play out in all: the candidates played, times their futures, times
the choices each future makes (a card placed, or weighed for a discard). This bounds the
time of a move; futures are as many as it allows, within :data:`MIN_SAMPLES` and
:data:`MAX_SAMPLES`."""

MIN_SAMPLES = 16
"""Futures per candidate at least, however long the futures."""

MAX_SAMPLES = 128
"""Futures per candidate at most (late in a hand, when futures are short)."""

ROLLOUT_FILLS = 2
"""Random completions behind each greedy choice inside a future."""

SCREEN = ((8, 48), (24, 6))
"""How a large set of candidates (a five-card first street, a pineapple batch) is cut down
before anything is played out, on random fills: ``(n, k)`` keeps the ``k`` best after
``n`` fills."""

_MASK = (1 << 64) - 1
_TOP, _MIDDLE, _BOTTOM = 0, 1, 2
_SIZES = (3, 5, 5)
# Rows in the order candidates try them: ties go to the lower row.
_ROW_ORDER = (Row.BOTTOM, Row.MIDDLE, Row.TOP)

Placements = tuple[tuple[Card, Row], ...]
_Rows = tuple[tuple[Card, ...], tuple[Card, ...], tuple[Card, ...]]
_Candidate = tuple[_Rows, Placements, tuple[Card, ...]]
_Streets = tuple[tuple[int, int], ...]


def choose_placement(
    board: Board,
    batch: Sequence[Card],
    place: int,
    ruleset: Ruleset = DEFAULT_RULESET,
    *,
    dead: Iterable[Card] = (),
    samples: int | None = None,
) -> tuple[Placements, tuple[Card, ...]]:
    """Place ``place`` cards of ``batch`` on ``board`` (discarding the rest); returns the
    (card, row) pairs in batch order and the discards. ``dead``: other cards the seat has
    seen (its earlier discards, the other boards' face-up cards). ``samples``: futures per
    candidate played out (default: as many as :data:`WORK` allows).

    Deterministic: the same arguments always give the same answer.

    >>> from ofc.cards import format_cards, parse_cards
    >>> from ofc.rulesets import get_ruleset
    >>> board = Board.parse("Kc 5d 4h / Qh Qs 9c 8d / Jc Jd Js 2c")
    >>> pineapple = get_ruleset("pineapple")
    >>> placements, discards = choose_placement(board, parse_cards("Kd Jh 3c"), 2, pineapple)
    >>> [(str(c), r.value) for c, r in placements], format_cards(discards)
    ([('Jh', 'bottom'), ('3c', 'middle')], 'Kd')
    """
    batch = tuple(batch)
    candidates = _candidates(board, batch, place)
    if not board.cards:
        candidates = [c for c in candidates if _sound_start(c[0])] or candidates
    if len(candidates) == 1:
        return _answer(candidates[0])
    free = _free(board)
    seen = set(board.cards) | set(batch) | set(dead)
    unknown = [c for c in deck_cards(ruleset.jokers) if c not in seen]
    streets = _later_streets(ruleset, len(board.cards) + place)
    to_fill = BOARD_SIZE - len(board.cards) - place
    if to_fill > len(unknown):
        raise InvalidInputError(
            f"{to_fill} slots to fill but only {len(unknown)} unseen cards", field="dead"
        )
    dealt = sum(deal for deal, _ in streets)
    if dealt > len(unknown):  # not a real deal: no discards
        streets = ((1, 1),) * to_fill
        dealt = to_fill
    keep = min(len(candidates), SCREEN[-1][1])
    choices = sum(deal + (place < deal) for deal, place in streets)  # per future
    if samples is None:
        samples = max(MIN_SAMPLES, min(MAX_SAMPLES, WORK // (keep * max(choices, 1))))
    count = max(1, samples)
    fills = SCREEN[-1][0] if len(candidates) > keep else 0
    futures = _futures(unknown, streets, free, max(count, fills), _seed(board, batch, seen))
    exact = streets == ((1, 1),)  # every unseen card is a future of its own
    scorer = _scorer(ruleset)
    indices = list(range(len(candidates)))
    quick = [0.0] * len(candidates)
    done = 0
    stages = ((len(futures), keep),) if exact else SCREEN
    for n, k in stages:  # random fills: each future's cards, slot by slot
        if len(indices) <= k:
            continue
        screen = [f.cards for f in futures[done:n]]
        for i in indices:
            quick[i] += scorer.filled(candidates[i][0], screen)
        done = n
        indices = sorted(sorted(indices, key=lambda i: -quick[i])[:k])
    if not exact:
        futures = futures[:count]
    best = max(
        indices,
        key=lambda i: (
            sum(_guarded(scorer.play(candidates[i][0], f, streets)) for f in futures),
            -i,
        ),
    )
    return _answer(candidates[best])


def _sound_start(rows: _Rows) -> bool:
    """Whether a first street leaves room to finish: no unpaired card above
    :data:`TOP_START_MAX` on top, and no more cards in the middle than in the bottom.

    Played-out futures see a 1-in-100 foul poorly, and these two starts caused most of the
    policy's fouls in ``bench.policy`` runs: a high top or a heavy middle over a thin bottom
    squeezes the middle between the other rows for the rest of the hand.

    >>> from ofc.cards import parse_cards
    >>> _sound_start(((*parse_cards("Qd Qs"),), (), (*parse_cards("2c 7h 9d"),)))
    True
    >>> _sound_start(((*parse_cards("Qd 4s"),), (), (*parse_cards("2c 7h 9d"),)))
    False
    >>> _sound_start(((), (*parse_cards("Kd Ts"),), (*parse_cards("2c"),)))
    False
    """
    top, middle, bottom = rows
    # A joker on top pairs whatever joins it: as high a start as an ace.
    ranks = [Rank.ACE if card.is_joker else card.rank for card in top]
    high = all(rank <= TOP_START_MAX or ranks.count(rank) > 1 for rank in ranks)
    return high and len(middle) <= len(bottom)


def _guarded(score: float) -> float:
    """A played-out future's worth to the choice: a foul costs :data:`FOUL_GUARD` more."""
    return score if score >= 0.0 else score - FOUL_GUARD


def choose_fantasyland(
    cards: Sequence[Card],
    ruleset: Ruleset = DEFAULT_RULESET,
    *,
    fantasyland_streak: int = 1,
) -> tuple[tuple[Card, ...], tuple[Card, ...], tuple[Card, ...], tuple[Card, ...]]:
    """Top, middle, bottom and discards for a Fantasyland seat (the solver's best set).

    >>> from ofc.cards import format_cards, parse_cards
    >>> rows = choose_fantasyland(parse_cards("As Ks Qs Js Ts 9h 9d 9c 4c 4d 7h 2s 3h Ad"))
    >>> [format_cards(r) for r in rows]
    ['Ad 7h 3h', '9h 9d 9c 4d 4c', 'As Ks Qs Js Ts', '2s']
    """
    solution = solve_fantasyland(
        cards, ruleset, in_fantasyland=True, fantasyland_streak=fantasyland_streak
    )
    return solution.top, solution.middle, solution.bottom, solution.discards


# --- the policy as a strategy the table passes in -------------------------------------------
class DefaultMovePolicy(Protocol):
    """A default-move policy: ``choose`` is deterministic and reads only what ``seat`` may
    see of ``state`` (its own board, batch and discards, the others' face-up cards).
    ``name`` and ``version`` identify it (:func:`identity`) in the histories it plays in."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> int: ...

    def choose(self, state: MatchState, seat: int) -> Place | SetFantasyland:
        """The move for ``seat`` (at time 0: :func:`timeout` sets the time)."""
        ...


def identity(policy: DefaultMovePolicy) -> str:
    """``<name>-<version>``, as a history records it.

    >>> identity(TIMEOUT_POLICY)
    'ofc-timeout-4'
    """
    return f"{policy.name}-{policy.version}"


@dataclass(frozen=True, slots=True)
class TimeoutPolicy:
    """This module's policy: :func:`choose_placement` for a seat holding a batch,
    :func:`choose_fantasyland` for a Fantasyland seat that has not set.

    >>> from ofc.engine import SitDown, StartHand, new_match, replay
    >>> setup = [SitDown(0, "a"), SitDown(1, "b"), StartHand(bytes(32))]
    >>> state, _ = replay(new_match(seats=2), setup)
    >>> TIMEOUT_POLICY.choose(state, 0)
    Traceback (most recent call last):
    ...
    ofc.errors.NotYourTurnError: the table is not waiting for seat 0
    """

    name: str = "ofc-timeout"
    version: int = 4

    def choose(self, state: MatchState, seat: int) -> Place | SetFantasyland:
        table = view(state, seat)  # what the seat may see, and nothing else
        hand = table.hand
        if hand is None or hand.over:
            raise HandNotInProgressError("no hand is in progress", field="")
        if seat not in seats_to_act(state):
            raise NotYourTurnError(f"the table is not waiting for seat {seat}", field="seat")
        ruleset = state.ruleset
        own = next(s for s in hand.seats if s.seat == seat)
        if own.fantasyland:
            streak = table.seats[seat].fantasyland_streak + 1  # this hand counts
            top, middle, bottom, discards = choose_fantasyland(
                own.pending, ruleset, fantasyland_streak=streak
            )
            return SetFantasyland(seat, top, middle, bottom, discards)
        # Dead cards the seat knows of: its own discards and every face-up card on the table.
        dead = list(own.discards)
        for other in hand.seats:
            if other.seat != seat and not other.fantasyland:
                dead.extend(other.board.cards)
        placements, discards = choose_placement(
            own.board, own.pending, ruleset.streets[hand.street].place, ruleset, dead=dead
        )
        return Place(seat, placements, discards[0] if discards else None)


TIMEOUT_POLICY = TimeoutPolicy()
"""``ofc-timeout-4``: the policy of :func:`choose_placement` and :func:`choose_fantasyland`
as they are since commit 5e1dc45."""

DEFAULT_POLICY: DefaultMovePolicy = TIMEOUT_POLICY
"""What the tables and ``ofc play`` use."""

POLICIES: Mapping[str, DefaultMovePolicy] = {identity(TIMEOUT_POLICY): TIMEOUT_POLICY}
"""The policies this release ships, by identity (what ``ofc verify --check-policy`` can
re-run)."""


def policy_named(name: str | None) -> DefaultMovePolicy | None:
    """The shipped policy of that identity, or ``None`` (an older or unknown one).

    >>> policy_named("ofc-timeout-4") is TIMEOUT_POLICY, policy_named("ofc-timeout-2")
    (True, None)
    """
    return None if name is None else POLICIES.get(name)


def is_newer_policy(name: str) -> bool:
    """Whether ``name`` is a later version of the shipped policy (a newer release's): only
    a release that ships it can check its moves.

    >>> is_newer_policy("ofc-timeout-5"), is_newer_policy("ofc-timeout-4")
    (True, False)
    >>> is_newer_policy("ofc-timeout-3"), is_newer_policy("ofc-timeout-05")
    (False, False)
    """
    prefix = f"{TIMEOUT_POLICY.name}-"
    version = name.removeprefix(prefix)
    return (
        name.startswith(prefix)
        and version.isascii()
        and version.isdigit()
        and not version.startswith("0")
        and int(version) > TIMEOUT_POLICY.version
    )


def is_unwritten_policy(name: str) -> bool:
    """Whether ``name`` is of this project's policy's name but none that any release wrote:
    histories name the policy from format 3 on, when ``ofc-timeout-4`` was already the only
    one (versions 1 to 3 are names given afterwards to what older releases played,
    docs/hand-history.md), so only it and later versions occur. Another name (another
    producer's policy) may be anything.

    >>> [is_unwritten_policy(n) for n in ("ofc-timeout-3", "ofc-timeout-04", "ofc-timeout-")]
    [True, True, True]
    >>> [is_unwritten_policy(n) for n in ("ofc-timeout-4", "ofc-timeout-5", "acme-bot-2")]
    [False, False, False]
    """
    return (
        name.startswith(f"{TIMEOUT_POLICY.name}-")
        and name not in POLICIES
        and not is_newer_policy(name)
    )


def unwritten_policy(name: str) -> str:
    """Why ``--check-policy`` refuses a timeout naming ``name`` (:func:`is_unwritten_policy`)."""
    return (
        f"no release of this service wrote a timeout policy {name!r}: its histories name "
        f"{identity(TIMEOUT_POLICY)} or a later version"
    )


def timeout(
    state: MatchState,
    seat: int,
    *,
    at_ms: int = 0,
    deadline_ms: int | None = None,
    policy: DefaultMovePolicy = DEFAULT_POLICY,
    chosen: Place | SetFantasyland | None = None,
) -> Timeout:
    """The :class:`~ofc.engine.Timeout` for ``seat`` now: ``policy``'s move, timed ``at_ms``,
    with the policy's identity and the deadline that ran out. ``chosen``: the move
    ``policy.choose`` gave for this ``state`` and ``seat``, chosen ahead (in a worker thread,
    say: it may take a while).

    >>> from ofc.engine import SitDown, StartHand, new_match, replay
    >>> setup = [SitDown(0, "a"), SitDown(1, "b"), StartHand(bytes(32), at_ms=5)]
    >>> state, _ = replay(new_match(seats=2), setup)
    >>> action = timeout(state, 1, at_ms=1_005, deadline_ms=1_005)
    >>> action.policy, action.deadline_ms, action.move == dataclasses.replace(
    ...     TIMEOUT_POLICY.choose(state, 1), at_ms=1_005)
    ('ofc-timeout-4', 1005, True)
    """
    move = dataclasses.replace(
        policy.choose(state, seat) if chosen is None else chosen, at_ms=at_ms
    )
    return Timeout(seat, move, identity(policy), at_ms, deadline_ms)


def play_by_timeouts(
    table: MatchState,
    start: StartHand,
    *,
    clock: TurnClock | None = None,
    policy: DefaultMovePolicy = DEFAULT_POLICY,
) -> tuple[Action, ...]:
    """A whole hand in which every seat lets its clock run out: ``start``, then each
    :func:`timeout` in the order a table makes them. Without ``clock`` the timeouts are
    timed 1, 2, 3, ... (what ``ofc play`` prints); with it, each comes exactly at its
    deadline (a batch's turn from its deal, a Fantasyland seat's from the start), the
    earliest first, and records it.

    >>> from ofc.engine import SitDown, new_match, replay
    >>> table, _ = replay(new_match(seats=2), [SitDown(0, "a"), SitDown(1, "b")])
    >>> start = StartHand(bytes(32), at_ms=500)
    >>> actions = play_by_timeouts(table, start, clock=TurnClock(1_000, 4_000))
    >>> [(a.seat, a.at_ms, a.deadline_ms) for a in actions[1:4]]
    [(1, 1500, 1500), (0, 2500, 2500), (1, 3500, 3500)]
    """
    actions: list[Action] = [start]
    state, events = apply(table, start)
    dealt_at: dict[int, int] = {}
    now = start.at_ms
    while waiting := seats_to_act(state):
        dealt_at.update(
            (e.seat, now) for e in events if isinstance(e, CardsDealt) and e.street is not None
        )
        if clock is None:
            seat, at_ms, deadline = waiting[0], len(actions), None
        else:
            hand = state.hand
            assert hand is not None
            deadlines = {
                s: start.at_ms + clock.fantasyland_time_limit_ms
                if hand.seat(s).in_fantasyland
                else dealt_at[s] + clock.turn_time_limit_ms
                for s in waiting
            }
            seat = min(waiting, key=deadlines.__getitem__)
            deadline = deadlines[seat]
            at_ms = max(now, deadline)
        action = timeout(state, seat, at_ms=at_ms, deadline_ms=deadline, policy=policy)
        state, events = apply(state, action)
        actions.append(action)
        now = at_ms
    return tuple(actions)


# --- candidates -----------------------------------------------------------------------------
def _free(board: Board) -> tuple[int, int, int]:
    return 3 - len(board.top), 5 - len(board.middle), 5 - len(board.bottom)


def _candidates(board: Board, batch: tuple[Card, ...], place: int) -> list[_Candidate]:
    """Every legal way to place ``place`` cards of ``batch``, in a fixed order that tries
    lower rows first; the question is checked first."""
    free = _free(board)
    if not 0 < place <= len(batch) or place > sum(free):
        raise WrongCardCountError(
            f"cannot place {place} of {len(batch)} cards with {sum(free)} slots free", field="place"
        )
    if len(set(batch)) != len(batch):
        raise InvalidInputError("the batch holds a card twice", field="batch")
    found: list[_Candidate] = []
    for discards in combinations(batch, len(batch) - place):
        keep = [c for c in batch if c not in discards]
        for rows in product(_ROW_ORDER, repeat=len(keep)):
            added: dict[Row, tuple[Card, ...]] = {Row.TOP: (), Row.MIDDLE: (), Row.BOTTOM: ()}
            for card, row in zip(keep, rows, strict=True):
                added[row] += (card,)
            if (
                len(added[Row.TOP]) > free[0]
                or len(added[Row.MIDDLE]) > free[1]
                or len(added[Row.BOTTOM]) > free[2]
            ):
                continue
            after = (
                board.top + added[Row.TOP],
                board.middle + added[Row.MIDDLE],
                board.bottom + added[Row.BOTTOM],
            )
            found.append((after, tuple(zip(keep, rows, strict=True)), discards))
    return found


def _answer(candidate: _Candidate) -> tuple[Placements, tuple[Card, ...]]:
    return candidate[1], candidate[2]


def _later_streets(ruleset: Ruleset, placed: int) -> _Streets:
    """(deal, place) of the streets after the one that brings the board to ``placed``
    cards; one card at a time if the board does not sit on a street boundary."""
    total = 0
    for k, street in enumerate(ruleset.streets):
        total += street.place
        if total == placed:
            return tuple((s.deal, s.place) for s in ruleset.streets[k + 1 :])
    return ((1, 1),) * (BOARD_SIZE - placed)


# --- deterministic futures ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Future:
    cards: tuple[Card, ...]  # the later streets' cards, dealt in this order
    fills: tuple[_Rows, ...]  # completions for the greedy choices: per row, disjoint cards


def _seed(board: Board, batch: tuple[Card, ...], seen: set[Card]) -> int:
    data = bytes([*board.top, 64, *board.middle, 64, *board.bottom, 64, *batch, 64, *sorted(seen)])
    return int.from_bytes(
        hashlib.blake2b(data, digest_size=8, person=b"ofc-policy").digest(), "big"
    )


def _splitmix64(state: int) -> Iterator[int]:
    while True:
        state = (state + 0x9E3779B97F4A7C15) & _MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        yield z ^ (z >> 31)


def _futures(
    unknown: list[Card], streets: _Streets, free: tuple[int, int, int], count: int, seed: int
) -> list[_Future]:
    """``count`` futures (partial Fisher-Yates over the unseen cards); one per unseen card
    when a single card is still to come, none to draw when nothing is. Each has up to
    :data:`ROLLOUT_FILLS` fills, fewer when too few cards are unseen (a full table late in a
    pineapple hand); with none, the later cards go to the lowest row with room."""
    dealt = sum(deal for deal, _ in streets)
    if dealt == 0:
        return [_Future((), ())]
    if streets == ((1, 1),):  # its slot is forced: the expectation over every card is exact
        return [_Future((card,), ()) for card in unknown]
    n = len(unknown)
    size = sum(free)
    fills = max(0, min(ROLLOUT_FILLS, (n - dealt) // size))
    need = min(n, dealt + fills * size)
    words = _splitmix64(seed)
    futures = []
    for _ in range(count):
        pool = unknown[:]
        for i in range(need):
            j = i + next(words) % (n - i)
            pool[i], pool[j] = pool[j], pool[i]
        sets = []
        for k in range(fills):
            at = dealt + k * size
            top, middle = at + free[0], at + free[0] + free[1]
            sets.append(
                (tuple(pool[at:top]), tuple(pool[top:middle]), tuple(pool[middle : at + size]))
            )
        futures.append(_Future(tuple(pool[:dealt]), tuple(sets)))
    return futures


# --- scoring and playing out ----------------------------------------------------------------
@functools.lru_cache(maxsize=32)  # rulesets are frozen and hashable; a table uses one
def _scorer(ruleset: Ruleset) -> _Scorer:
    return _Scorer(ruleset)


class _Scorer:
    """Scores final boards under one ruleset, and plays futures out greedily.

    A future is played with its fills fixed: each fill completes every row (the cards it
    gives a row are that row's, whatever the other rows hold), so placing a card changes
    one row's completed value per fill, and the other two carry over to the next card.
    """

    def __init__(self, ruleset: Ruleset) -> None:
        table = ruleset.royalties
        fantasyland = (
            min(
                (e.requirement.category << 20) | ((e.requirement.min_rank + 1) << 16)
                for e in ruleset.fantasyland_entry
            )
            if ruleset.fantasyland_entry
            else 1 << 40
        )
        self.top: dict[int, float] = {}
        for ranks in combinations_with_replacement(range(13), 3):
            # Distinct cards with these ranks: the k-th copy of a rank gets suit k.
            value = rank3(*(4 * r + ranks[:i].count(r) for i, r in enumerate(ranks)))
            self.top[value] = (
                row_royalty(Row.TOP, value, table)
                + CATEGORY_WEIGHT * (value >> 20)
                + (FANTASYLAND_BONUS if value >= fantasyland else 0.0)
            )
        self.middle = [p + CATEGORY_WEIGHT * c for c, p in enumerate(table.middle)]
        self.bottom = [p + CATEGORY_WEIGHT * c for c, p in enumerate(table.bottom)]

    def value(self, top: int, middle: int, bottom: int) -> float:
        """The score of a complete board from its three row values."""
        if top > middle or middle > bottom:
            return -FOUL_COST
        return self.top[top] + self.middle[middle >> 20] + self.bottom[bottom >> 20]

    def filled(self, rows: _Rows, fills: Sequence[tuple[Card, ...]]) -> float:
        """Total score of ``rows`` with the empty slots filled from each fill in order."""
        top, middle, bottom = rows
        a = 3 - len(top)
        b = a + 5 - len(middle)
        c = b + 5 - len(bottom)
        return sum(
            self.value(rank3(*top, *f[:a]), rank5(*middle, *f[a:b]), rank5(*bottom, *f[b:c]))
            for f in fills
        )

    def play(self, rows: _Rows, future: _Future, streets: _Streets) -> float:
        """The score of the board ``rows`` become when ``future`` is dealt and placed."""
        board = list(rows)
        fills = future.fills
        completed: list[list[int]] = []  # completed[j][row]: that row completed by fill j
        stale = True
        cards = future.cards
        at = 0
        for deal, place in streets:
            batch = cards[at : at + deal]
            at += deal
            rooms = [k for k in (_BOTTOM, _MIDDLE, _TOP) if len(board[k]) < _SIZES[k]]
            if len(rooms) == 1 and place == deal:  # one row left: the cards are forced
                board[rooms[0]] += batch
                stale = True
                continue
            if place == sum(size - len(row) for size, row in zip(_SIZES, board, strict=True)):
                # The last street: every card is seen, so the seat places it exactly.
                return self._best_last(board, batch, place)
            if stale:
                completed = [self._complete(board, fill) for fill in fills]
                stale = False
            if place < deal:  # keep the cards that fit best (ties: the earlier card)
                options = [self._options(board, card, fills, completed) for card in batch]
                kept = sorted(sorted(range(deal), key=lambda k: -options[k][0])[:place])
                changed: set[int] = set()
                for k in kept:
                    option = options[k]
                    if option[1] in changed:  # that row took a card since: look again
                        option = self._options(board, batch[k], fills, completed)
                    self._place(board, batch[k], option, completed)
                    changed.add(option[1])
                continue
            for card in batch:
                self._place(board, card, self._options(board, card, fills, completed), completed)
        return self.value(rank3(*board[0]), rank5(*board[1]), rank5(*board[2]))

    def _best_last(
        self, board: list[tuple[Card, ...]], batch: tuple[Card, ...], place: int
    ) -> float:
        """The best score of the board completed with ``place`` cards of ``batch``."""
        slots = [k for k in (_BOTTOM, _MIDDLE, _TOP) for _ in range(_SIZES[k] - len(board[k]))]
        best = -FOUL_COST
        for kept in combinations(batch, place):
            for order in set(permutations(slots)):
                rows = [board[0], board[1], board[2]]
                for card, k in zip(kept, order, strict=True):
                    rows[k] += (card,)
                score = self.value(rank3(*rows[0]), rank5(*rows[1]), rank5(*rows[2]))
                if score > best:
                    best = score
        return best

    @staticmethod
    def _complete(board: list[tuple[Card, ...]], fill: _Rows) -> list[int]:
        top, middle, bottom = board
        return [
            rank3(*top, *fill[0][: 3 - len(top)]),
            rank5(*middle, *fill[1][: 5 - len(middle)]),
            rank5(*bottom, *fill[2][: 5 - len(bottom)]),
        ]

    def _options(
        self,
        board: list[tuple[Card, ...]],
        card: Card,
        fills: Sequence[_Rows],
        completed: list[list[int]],
    ) -> tuple[float, int, list[int]]:
        """The best row for ``card`` (ties: the lower row), its total score over the fills,
        and that row's completed value per fill with the card in it."""
        top, middle, bottom = board
        tops, middles, bottoms, foul = self.top, self.middle, self.bottom, -FOUL_COST
        best: tuple[float, int, list[int]] | None = None
        # The three rows are written out rather than looped over: this is the hot path
        # (most of a move's time goes here), and each row pairs with the others differently.
        if len(bottom) < 5:
            row, k = (*bottom, card), 4 - len(bottom)
            values = [rank5(*row, *fill[2][:k]) for fill in fills]
            score = sum(
                foul if vt > vm or vm > v else tops[vt] + middles[vm >> 20] + bottoms[v >> 20]
                for v, (vt, vm, _) in zip(values, completed, strict=True)
            )
            best = (score, _BOTTOM, values)
        if len(middle) < 5:
            row, k = (*middle, card), 4 - len(middle)
            values = [rank5(*row, *fill[1][:k]) for fill in fills]
            score = sum(
                foul if vt > v or v > vb else tops[vt] + middles[v >> 20] + bottoms[vb >> 20]
                for v, (vt, _, vb) in zip(values, completed, strict=True)
            )
            if best is None or score > best[0]:
                best = (score, _MIDDLE, values)
        if len(top) < 3:
            row, k = (*top, card), 2 - len(top)
            values = [rank3(*row, *fill[0][:k]) for fill in fills]
            score = sum(
                foul if v > vm or vm > vb else tops[v] + middles[vm >> 20] + bottoms[vb >> 20]
                for v, (_, vm, vb) in zip(values, completed, strict=True)
            )
            if best is None or score > best[0]:
                best = (score, _TOP, values)
        assert best is not None, "a card to place needs a row with room"
        return best

    @staticmethod
    def _place(
        board: list[tuple[Card, ...]],
        card: Card,
        option: tuple[float, int, list[int]],
        completed: list[list[int]],
    ) -> None:
        _, row, values = option
        board[row] += (card,)
        for per_fill, value in zip(completed, values, strict=True):
            per_fill[row] = value
