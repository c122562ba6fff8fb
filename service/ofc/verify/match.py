"""Verifying a table's hands as one chain, with the settlement feed's records.

:func:`verify_match` verifies each hand alone (:func:`ofc.verify.check_history`), then the
links between them: hand numbers consecutive, each hand's initial state and money the
previous hand's end with the recorded seat changes applied, the commitment chain, and every
feed record against its hand (docs/hand-history.md, "Verifying a match"). Every discrepancy
is reported, each naming its input (``source``) and a JSON path in it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ofc.codec import state_as_written
from ofc.engine import (
    Action,
    MatchState,
    Seat,
    SitDown,
    StandUp,
    apply,
    apply_unheld,
    next_occupied,
)
from ofc.errors import FantasylandOwedError, OfcError
from ofc.rulesets import Ruleset
from ofc.verify.codes import Code, MatchDiscrepancy
from ofc.verify.hand import CheckedHand, check_hand
from ofc.verify.shape import SAFE_INTEGER, at
from ofc.verify.values import Found, difference, loads, show, unwrap

Units = list[int | None]  # per seat: money before or after a hand; None: not known


@dataclass(frozen=True, slots=True)
class MatchReport:
    """What :func:`verify_match` found: ``hands`` given, ``verified`` of them alone, every
    discrepancy (of single hands and of the chain) and the hands' notes."""

    hands: int
    verified: int
    discrepancies: tuple[MatchDiscrepancy, ...]
    notes: tuple[str, ...] = ()
    # The table right after the last hand (when that hand verified) and each seat's money
    # then, as the chain gives it (None: not known).
    end: MatchState | None = None
    money: tuple[int | None, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.discrepancies


@dataclass(slots=True)
class _Hand:
    source: str
    number: int | None
    checked: CheckedHand | None  # None: it failed alone

    @property
    def table_id(self) -> str | None:
        if self.checked is None:
            return None
        table_id = self.checked.history.raw.get("table_id")
        return table_id if isinstance(table_id, str) else None


def verify_match(
    histories: Sequence[tuple[str, Any]],
    feed: Sequence[tuple[str, Any]] | None = None,
    *,
    expected_ruleset: Ruleset | None = None,
    check_policy: bool = False,
) -> MatchReport:
    """Check ``histories`` (``(source, history)``: a parsed document, or its JSON text) as
    one table's hands, in any order; with ``feed`` (``(source, record)``: the settlement
    feed's records as the stream holds them, parsed), every record against its hand.
    Never raises for bad input.

    >>> from ofc.verify import example_history
    >>> report = verify_match([("hand-1.json", example_history())])
    >>> report.ok, report.hands, report.verified
    (True, 1, 1)
    """
    found: list[MatchDiscrepancy] = []
    hands: list[_Hand] = []
    notes: list[str] = []
    for source, data in histories:
        hand, discrepancy = _check_one(source, data, expected_ruleset, check_policy)
        hands.append(hand)
        if discrepancy is not None:
            found.append(discrepancy)
        elif hand.checked is not None:
            notes.extend(f"{source}: {n}" for n in hand.checked.notes)
    verified = sum(h.checked is not None for h in hands)
    hands.sort(key=lambda h: (h.number is None, h.number or 0))
    chain = _Chain(found)
    chain.table(hands)
    numbered = chain.numbers(hands)
    records = _Records(feed, chain, numbered) if feed is not None else None
    previous: _Hand | None = None
    units: Units | None = None  # money after the previous hand
    for hand in numbered:
        adjacent = previous is not None and previous.number == (hand.number or 0) - 1
        if hand.checked is None:
            previous, units = hand, None
            continue
        if adjacent and previous is not None and previous.checked is not None:
            before = chain.link(previous, hand, units)
        elif hand.number == 1:
            before = chain.first(hand)
        else:
            before = _recorded_units(hand.checked, None)
        if records is not None:
            before = records.check(hand, before)
        units = _after(hand.checked, before)
        previous = hand
    notes.extend(chain.notes)
    notes.extend(
        f"{h.source}: button_next {h.checked.button_taken_seat}, a seat taken during the "
        "hand, not confirmed: the match has no next hand that records its seat changes"
        for h in numbered
        if h.checked is not None
        and h.checked.button_taken_seat is not None
        and (h.number or 0) not in chain.confirmed
    )
    if records is not None:
        records.extra()
        notes.extend(records.notes())
    last = previous.checked if previous is not None else None
    return MatchReport(
        len(hands),
        verified,
        tuple(found),
        tuple(dict.fromkeys(notes)),
        end=None if last is None else last.final,
        money=() if last is None or units is None else tuple(units),
    )


def money_at(report: MatchReport, table: MatchState) -> tuple[int, ...] | None:
    """Each seat's money at ``table`` (between hands, or as its hand started), right after the
    hands of ``report``, as :func:`verify_match` chains it to the next hand: a seat as the
    last hand left it keeps its money, a seat taken or left since has none; None when the
    hands did not verify as one chain from hand 1, a seat's money is not known, or a seat
    differs from the last hand's end in a way no seat change explains.

    >>> from ofc.verify import example_history
    >>> history = example_history()
    >>> report = verify_match([("hand-1.json", history)])
    >>> assert report.end is not None
    >>> money_at(report, report.end) == tuple(
    ...     p["units"] for p in sorted(history["settlement"]["players"], key=lambda p: p["seat"]))
    True
    """
    end = report.end
    if not report.ok or end is None or len(report.money) != len(table.seats):
        return None
    if report.hands != end.hands_played or table.hands_played != end.hands_played:
        return None  # not every hand from 1 on, or not the table they ended at
    money: list[int] = []
    for was, now, units in zip(end.seats, table.seats, report.money, strict=True):
        if now == was and units is not None:
            money.append(units)
        elif _changed_hands(was, now, end):
            money.append(0)  # a seat's money restarts at 0
        else:
            return None
    return tuple(money)


def _changed_hands(was: Seat, now: Seat, end: MatchState) -> bool:
    """Whether a seat left as ``was`` at ``end`` may be ``now`` by seat changes alone (they
    are not recorded before format version 3): left, or taken afresh (no points, nothing
    owed), and it owed no Fantasyland it had to play first."""
    return (
        now != was and now == Seat(now.player_id) and not (was.fantasyland and not end.match_over)
    )


def _hand_number(data: Any) -> int | None:
    """``data``'s ``hand_number`` if it is one a hand can have (1 to 2^53 - 1), else None:
    a discrepancy names no hand by a number no hand has (-1, 2^64: a report must be able to
    carry it as the unsigned number it is everywhere else).

    >>> _hand_number({"hand_number": 3}), _hand_number({"hand_number": -1}), _hand_number([])
    (3, None, None)
    """
    number = data.get("hand_number") if isinstance(data, dict) else None
    return number if type(number) is int and 1 <= number <= SAFE_INTEGER else None


def _check_one(
    source: str, data: Any, expected_ruleset: Ruleset | None, check_policy: bool
) -> tuple[_Hand, MatchDiscrepancy | None]:
    number = None
    try:
        if isinstance(data, str | bytes):
            data = unwrap(loads(data))
        number = _hand_number(data)
        checked = check_hand(data, expected_ruleset=expected_ruleset, check_policy=check_policy)
    except Found as stop:
        d = stop.discrepancy
        return _Hand(source, number, None), MatchDiscrepancy(
            d.code, source, number, d.location, d.message
        )
    return _Hand(source, number, checked), None


class _Chain:
    """The links between hands; discrepancies go to ``found``."""

    def __init__(self, found: list[MatchDiscrepancy]) -> None:
        self.found = found
        self.notes: list[str] = []
        self.confirmed: set[int] = set()  # hands whose button at a seat taken was checked

    def report(self, code: Code, hand: _Hand, location: str, message: str) -> None:
        self.found.append(MatchDiscrepancy(code, hand.source, hand.number, location, message))

    def table(self, hands: Sequence[_Hand]) -> None:
        first = next((h for h in hands if h.table_id is not None), None)
        for hand in hands:
            if first is not None and hand.table_id not in (None, first.table_id):
                self.report(
                    Code.TABLE_MISMATCH,
                    hand,
                    "table_id",
                    f"recorded {hand.table_id!r}; the match is table {first.table_id!r} "
                    f"({first.source})",
                )

    def numbers(self, hands: Sequence[_Hand]) -> list[_Hand]:
        """The hands with a hand number, each number once; gaps reported."""
        kept: list[_Hand] = []
        for hand in hands:
            if hand.number is None:
                continue
            if kept and kept[-1].number == hand.number:
                self.report(
                    Code.HAND_REPEATED,
                    hand,
                    "hand_number",
                    f"hand {hand.number} is also {kept[-1].source}",
                )
                continue
            if kept and (kept[-1].number or 0) + 1 < hand.number:
                last = kept[-1].number or 0
                missing = (
                    f"hand {last + 1} is"
                    if last + 2 == hand.number
                    else f"hands {last + 1}..{hand.number - 1} are"
                )
                self.report(
                    Code.HAND_MISSING,
                    hand,
                    "hand_number",
                    f"{missing} missing between hand {last} ({kept[-1].source}) and this one",
                )
            kept.append(hand)
        return kept

    def first(self, hand: _Hand) -> Units:
        """Hand 1 starts from an empty table."""
        checked = hand.checked
        assert checked is not None
        initial = checked.history.initial
        empty = dataclasses.replace(
            initial, seats=(Seat(),) * len(initial.seats), hands_played=0, hand=None
        )
        return self._arrive(hand, empty, [0] * len(initial.seats), "an empty table")

    def link(self, previous: _Hand, hand: _Hand, units: Units | None) -> Units:
        assert previous.checked is not None and hand.checked is not None
        context = previous.checked.history.context
        published = "" if context is None else context.next_commitment
        commitment = hand.checked.history.raw["commitment"]
        if published and published != commitment:
            self.report(
                Code.CHAIN_COMMITMENT_MISMATCH,
                hand,
                "commitment",
                f"recorded {commitment!r}; hand {previous.number} ({previous.source}) "
                f"published next_commitment {published!r}",
            )
        end = previous.checked.final
        taken = previous.checked.button_taken_seat
        arrived = hand.checked.history.context
        changes = None if arrived is None else arrived.seat_changes
        if taken is not None and changes is not None:
            self.confirmed.add(previous.number or 0)
            if not _button_stops_at(previous.checked, changes, taken):
                self.report(
                    Code.CHAIN_STATE_MISMATCH,
                    previous,
                    "button_next",
                    f"recorded {taken}, a seat empty when the hand began; no first part of "
                    f"hand {hand.number}'s seat_changes ({hand.source}), the changes made "
                    "during this hand, leaves it the next seat taken after the button",
                )
        return self._arrive(
            hand,
            end,
            units or [None] * len(end.seats),
            f"the end of hand {previous.number} ({previous.source})",
        )

    def _arrive(self, hand: _Hand, end: MatchState, units: Units, what: str) -> Units:
        """The table at ``end`` with ``units``, taken to ``hand``'s start by its recorded
        seat changes (or, without them, by what a seat change may do); reports where the
        hand's initial state or money differ. Returns the money before the hand."""
        checked = hand.checked
        assert checked is not None
        history = checked.history
        units = list(units) + [None] * (len(end.seats) - len(units))
        changes = None if history.context is None else history.context.seat_changes
        if changes is not None:
            state, refused, unheld = _seat_changes(end, changes)
            self.notes.extend(f"{hand.source}: {_unheld_note(k, seat)}" for k, seat in unheld)
            if refused is not None:
                k, exc = refused
                self.report(
                    Code.ILLEGAL_ACTION,
                    hand,
                    at(f"seat_changes[{k}]", exc.field),
                    f"{exc.reason}: {exc.message} (applied to {what})",
                )
                return _recorded_units(checked, units)
            for change in changes:
                if isinstance(change, SitDown | StandUp) and change.seat < len(units):
                    units[change.seat] = 0
        else:
            state = self._explained(hand, end, units)
        written = history.raw["initial_state"]
        differs = difference(state_as_written(state, written), written, "initial_state")
        if differs is not None:
            self.report(
                Code.CHAIN_STATE_MISMATCH,
                hand,
                differs.path,
                f"recorded {show(differs.actual)}; {what}"
                + (" with the recorded seat changes" if changes is not None else "")
                + f" gives {show(differs.expected)}",
            )
        recorded = None if history.context is None else history.context.seat_units
        if recorded is not None:
            for seat, (expected, actual) in enumerate(zip(units, recorded, strict=False)):
                if expected is not None and expected != actual:
                    self.report(
                        Code.CHAIN_STATE_MISMATCH,
                        hand,
                        f"seat_units[{seat}]",
                        f"recorded {actual}; {what} leaves seat {seat} with {expected} units",
                    )
                    break
        return _recorded_units(checked, units)

    def _explained(self, hand: _Hand, end: MatchState, units: Units) -> MatchState:
        """Without recorded seat changes (format versions 1 and 2): a seat may differ from
        ``end`` only as a seat change leaves it (empty, or a new player with nothing), and
        only if it owed no Fantasyland; such a seat's money restarts at 0."""
        assert hand.checked is not None
        recorded = hand.checked.history.initial.seats
        seats = list(end.seats)
        for i, (was, now) in enumerate(zip(end.seats, recorded, strict=False)):
            if _changed_hands(was, now, end):  # else unchanged, or a difference reported
                seats[i] = now
                units[i] = 0
        return dataclasses.replace(end, seats=tuple(seats))


def _recorded_units(checked: CheckedHand, expected: Units | None) -> Units:
    """The money before the hand: the history's own (version 3), else what the chain gave."""
    context = checked.history.context
    if context is not None and context.seat_units is not None:
        return list(context.seat_units)
    count = len(checked.history.initial.seats)
    return list(expected) if expected is not None else [None] * count


def _after(checked: CheckedHand, before: Units) -> Units:
    after = list(before)
    for player in checked.history.raw["settlement"]["players"]:
        seat = player["seat"]
        if after[seat] is not None:
            after[seat] = (after[seat] or 0) + player["units"]
    return after


class _Records:
    """The feed's records of the match's table, each against its hand."""

    def __init__(
        self, feed: Sequence[tuple[str, Any]], chain: _Chain, hands: Sequence[_Hand]
    ) -> None:
        self.chain = chain
        self.hands = hands
        table_id = next((h.table_id for h in hands if h.table_id is not None), None)
        self.by_number: dict[int, tuple[str, Mapping[str, Any]]] = {}
        for source, record in feed:
            if _hand_number(record) is None:
                self._bad(source, None, "", f"not a settlement record: {show(record)}")
                continue
            if table_id is not None and record.get("table_id") != table_id:
                continue  # another table's
            number = record["hand_number"]
            kept = self.by_number.get(number)
            if kept is None:
                self.by_number[number] = (source, record)
            elif kept[1] != record:
                differs = difference(kept[1], record, "")
                where = "" if differs is None else differs.path
                self._bad(
                    source,
                    number,
                    where,
                    f"hand {number}'s record is also {kept[0]}, with other contents",
                )
        # The feed covers a table from its first record on: hands settled before the release
        # that began the feed (e2afa95), or dropped by its retention, were never in it or are
        # gone. Only a prefix can be so; with no record of the table at all, none is.
        self.first = min(self.by_number, default=None)
        self.uncovered: list[int] = []

    def _bad(self, source: str, number: int | None, location: str, message: str) -> None:
        self.chain.found.append(
            MatchDiscrepancy(Code.FEED_RECORD_MISMATCH, source, number, location, message)
        )

    def check(self, hand: _Hand, before: Units) -> Units:
        """Compare hand's record; returns the money before the hand, the unknown seats'
        read from the record."""
        checked = hand.checked
        assert checked is not None and hand.number is not None
        kept = self.by_number.get(hand.number)
        if kept is None and self.first is not None and hand.number < self.first:
            self.uncovered.append(hand.number)
            return before
        if kept is None:
            self.chain.report(
                Code.FEED_RECORD_MISSING,
                hand,
                "",
                f"the feed has no settlement record of hand {hand.number}",
            )
            return before
        source, record = kept
        expected, before = _expected_record(checked, before, record)
        differs = difference(expected, record, "")
        if differs is not None:
            total = differs.path.endswith((".total_points", ".total_units"))
            self.chain.found.append(
                MatchDiscrepancy(
                    Code.RUNNING_TOTAL_MISMATCH if total else Code.FEED_RECORD_MISMATCH,
                    source,
                    hand.number,
                    differs.path,
                    f"recorded {show(differs.actual)}; hand {hand.number} ({hand.source}) "
                    f"gives {show(differs.expected)}",
                )
            )
        return before

    def notes(self) -> list[str]:
        if not self.uncovered:
            return []
        low, high = self.uncovered[0], self.uncovered[-1]
        hands = f"hand {low}" if low == high else f"hands {low}-{high}"
        return [
            f"the feed's first record of this table is hand {self.first}: {hands} not checked"
            " against the feed (settled before the feed began, or dropped by its retention)"
        ]

    def extra(self) -> None:
        numbers = {h.number for h in self.hands}
        first = min((n for n in numbers if n is not None), default=1)
        for number, (source, _) in sorted(self.by_number.items()):
            if number not in numbers and number >= first:
                self.chain.found.append(
                    MatchDiscrepancy(
                        Code.FEED_RECORD_EXTRA,
                        source,
                        number,
                        "hand_number",
                        f"the feed settles hand {number}, which is not in the match",
                    )
                )


def _expected_record(
    checked: CheckedHand, before: Units, record: Mapping[str, Any]
) -> tuple[dict[str, Any], Units]:
    """The feed record a hand gives (what the history cannot say — its table, when it names
    none; money before the hand that the chain does not know — taken from ``record``)."""
    raw = checked.history.raw
    ruleset = checked.history.initial.ruleset
    settlement = raw["settlement"]
    table_id = raw.get("table_id", record.get("table_id"))
    number = raw["hand_number"]
    seats_raw = record.get("seats")
    recorded = {
        s.get("seat"): s
        for s in (seats_raw if isinstance(seats_raw, list) else ())
        if isinstance(s, dict)
    }
    before = list(before)
    record_format = 2 if record.get("format") == 2 else 1  # 2: with the seats' Fantasyland
    played = {p["seat"]: p["fantasyland"] for p in raw["players"]}
    owed = {f["seat"]: f["cards"] for f in raw["fantasyland_next"]}
    seats = []
    for player in sorted(settlement["players"], key=lambda p: p["seat"]):
        seat = player["seat"]
        if before[seat] is None:  # unknown to the chain: the record's says
            mine = recorded.get(seat, {})
            total, units = mine.get("total_units"), mine.get("units")
            if type(total) is int and type(units) is int:
                before[seat] = total - units
        seats.append(
            {
                "seat": seat,
                "player_id": checked.history.initial.seats[seat].player_id,
                "points": player["points"],
                "units": player["units"],
                "total_points": checked.final.seats[seat].points,
                "total_units": (before[seat] or 0) + player["units"],
                "fouled": player["fouled"],
            }
            | (
                {
                    "fantasyland_cards": played.get(seat, 0),
                    "fantasyland_next_cards": owed.get(seat, 0),
                }
                if record_format == 2
                else {}
            )
        )
    expected = {
        "format": record_format,
        "settlement_id": f"{table_id}:{number}",
        "table_id": table_id,
        "hand_number": number,
        "ruleset": settlement["ruleset"],
        "unit_value": ruleset.unit_value,
        "loss_cap": ruleset.loss_cap,
        "settled_at_ms": raw.get("settled_at_ms", record.get("settled_at_ms")),
        "seats": seats,
        "pairs": [
            {
                "seat_a": p["a"],
                "seat_b": p["b"],
                "points": p["points"],
                "capped_points": p["capped_points"],
                "unit_value": p["unit_value"],
                "units": p["units"],
            }
            for p in settlement["pairs"]
        ],
    }
    return expected, before


def _button_stops_at(checked: CheckedHand, changes: Sequence[Action], taken: int) -> bool:
    """Whether the button, moved as the hand of ``checked`` ended, could stop at ``taken``:
    whether some first part of the next hand's ``changes`` (in the order the table accepted
    them, those made during the hand come first; they end before any stand-up of a seat that
    played it, which only its end allows), applied to the seats the hand began with, leaves
    ``taken`` the next seat taken after the hand's button."""
    start = checked.history.initial
    played = {p["seat"] for p in checked.history.raw["settlement"]["players"]}
    seats = list(start.seats)
    for change in changes:
        if isinstance(change, StandUp) and change.seat in played:
            break
        if isinstance(change, SitDown | StandUp) and change.seat < len(seats):
            seats[change.seat] = Seat(change.player_id) if isinstance(change, SitDown) else Seat()
        if next_occupied(seats, start.button) == taken:
            return True
    return False


def _seat_changes(
    state: MatchState, changes: Sequence[Action]
) -> tuple[MatchState, tuple[int, OfcError] | None, list[tuple[int, int]]]:
    """The table after a hand's recorded seat changes, each taken as the engine takes it now
    or, where that refuses a stand-up for a Fantasyland owed, as tables of the releases
    before took it (:func:`~ofc.engine.apply_unheld`: another seat's Fantasyland held
    nobody, and the seat owed one left only at the end of the match). A history does not say
    which release made each change, and during a rolling upgrade both releases serve one
    table: seat 1 leaving on a replica of the release before, then seat 0, owed a
    Fantasyland and alone, on one of this release (which lets it go then, else the table is
    stuck) is what such a table records. Returns the table, the index and error of the first
    change refused (the error of this release's rules) or None, and the index and seat of
    each change taken by the rules of the releases before (each is noted: see
    :func:`_unheld_note`)."""
    unheld: list[tuple[int, int]] = []
    for k, change in enumerate(changes):
        try:
            state, _ = apply(state, change)
        except FantasylandOwedError as held:
            if not isinstance(change, StandUp):  # the only change a Fantasyland owed holds
                return state, (k, held), unheld
            try:
                state, _ = apply_unheld(state, change)
            except OfcError:
                return state, (k, held), unheld
            unheld.append((k, change.seat))
        except OfcError as exc:
            return state, (k, exc), unheld
    return state, None, unheld


def _unheld_note(k: int, seat: int) -> str:
    """What an auditor is told of a seat change only the releases before 2026-12-06 allowed:
    such a history verifies (it cannot say which release made the change), but a table of
    this release alone never writes it, and with it a Fantasyland hand owed may go unplayed.

    >>> print(_unheld_note(1, 1))  # doctest: +NORMALIZE_WHITESPACE
    seat_changes[1]: seat 1 left while a Fantasyland hand was owed at the table, as only
    releases before 2026-12-06 allowed (a table of those releases, or one that crossed the
    upgrade, records this; a table of later releases does not)
    """
    return (
        f"seat_changes[{k}]: seat {seat} left while a Fantasyland hand was owed at the table, "
        "as only releases before 2026-12-06 allowed (a table of those releases, or one that "
        "crossed the upgrade, records this; a table of later releases does not)"
    )


__all__ = ["MatchReport", "money_at", "verify_match"]
