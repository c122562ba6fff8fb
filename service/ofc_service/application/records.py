"""The table record: everything stored for one live table, and its byte format.

A record holds the engine's match state, the current hand's start and actions (for its hand
history), the seats' tokens (hashed), deadlines, money totals and seeds. ``to_bytes`` and
``from_bytes`` round-trip; records of every earlier format still load (a rolling upgrade
reads what the previous release wrote), and a record of a newer format is refused with
:class:`NewerRecordError` (retryable: a newer replica reads it).
"""

from __future__ import annotations

import binascii
import dataclasses
import functools
import json
import struct
import zlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Generic, NamedTuple, TypeVar, cast

import pybase64
from isal import isal_zlib
from ofc import engine
from ofc.codec import (
    action_from_dict,
    action_from_own_dict,
    action_to_dict,
    cards_from_own_bytes,
    hand_from_own_parts,
    hand_head_from_own_bytes,
    match_from_own_bytes,
    own_hand_bytes,
    own_match_bytes,
    own_progress_bytes,
    own_seat_bytes,
    seat_from_own_bytes,
    state_from_dict,
    state_from_own_dict,
    state_to_dict,
)
from ofc.engine import Action, Event, MatchState
from ofc.errors import IllegalActionError
from ofc.frozen import maker
from ofc.policy import TIMEOUT_POLICY, identity
from ofc.rulesets import DEFAULT_RULESET, ROWS, Ruleset, ruleset_from_dict
from ofc.scoring import Settlement
from ofc.shuffle import combine_client_seeds, commitment
from zlib_ng import zlib_ng


class NewerRecordError(Exception):
    """A table record written by a newer server version (a rolling upgrade in progress):
    this replica cannot act on it, a replica of the newer version can. Retryable."""

    reason = "NEWER_SERVER"


class ClientSeedPolicyError(IllegalActionError):
    """SetClientSeed at a table whose hands use the table's client seed only."""

    reason = "CLIENT_SEED_POLICY"


class LeaveChangesSpentError(IllegalActionError):
    """A seat that marked or withdrew its leave after the hand as often as a hand allows:
    each change is a commit of the table, and their number is bounded so that no player can
    keep the table busy (every other seat's move, the turn clock's too, would meet a newer
    version)."""

    reason = "LEAVE_CHANGES_SPENT"


# 2 added seat_units, 3 the client seed policy and the next hand's seed, 4 a timeout's move
# (and policy and deadline) in hand_actions and the seat changes between hands, 5 the parts
# laid out by size (the ruleset once, states without their deck; see TableRecord.to_bytes),
# 6 format 5's bytes zlib-compressed, in base64 inside a JSON object (a third of the memory),
# 7 the same wrapper around binary parts that change at different paces (the head without
# its deadlines, the match without its hand, the hand's seeds, its deck, its progress, each
# hand seat; see TableRecord.to_bytes), the deck stored rather than shuffled again.
RECORD_FORMAT = 7
RECORD_FORMATS = (1, 2, 3, 4, 5, 6, RECORD_FORMAT)  # older records load (TableRecord.from_bytes)
POLICY_TABLE = "table"  # every hand's client seed is the table's
POLICY_PLAYERS = "players"  # the table's seed, then each seat's own, length-prefixed
CLIENT_SEED_POLICIES = (POLICY_TABLE, POLICY_PLAYERS)
HAND_PREFIX = "hand"


@dataclass(frozen=True, slots=True)
class ClientSeedSet:
    """A seat set its own client seed (a table event the engine does not know: seeds are
    the shell's business until StartHand hands the engine one combined seed)."""

    seat: int
    client_seed: bytes


@dataclass(frozen=True, slots=True)
class SeatLeaving:
    """A player asked to leave once the rules let it (``leaving``), or withdrew that: the
    seat is marked in :attr:`TableRecord.leaving_seats` (a table event the engine does not
    know: the shell stands the seat up when it may, see ``TableManager.step``)."""

    seat: int
    player_id: str
    leaving: bool


TableEvent = Event | ClientSeedSet | SeatLeaving


def _dumps(data: Any) -> str:
    """Compact JSON, as ``json.dumps(data, separators=(",", ":"))`` writes it (which makes a
    new encoder every call)."""
    return _COMPACT.encode(data)


# No check for circular references: the values written are trees of JSON data made here.
_COMPACT = json.JSONEncoder(separators=(",", ":"), check_circular=False)
# Records are deflated by ISA-L at its level 0 (python-isal; the same zlib streams, which any
# zlib reader reads, every earlier release included): a two-seat record of ~2.3 KB packs
# to ~1.1 KB in ~7 µs with the caches warm and ~27 µs cold, as a move meets it, where
# zlib-ng's level 1 (the release before) took ~19 / ~72 µs for ~1.0 KB; its set-up clears
# and frees tables of over 100 KB each time. ISA-L inflates them too: ~6 µs, where zlib-ng
# takes ~12 on ISA-L's streams (~5 on its own).
_RECORD_LEVEL = 0
# python-isal's stubs type its error as an instance, not the class it is.
_INFLATE_ERROR = cast("type[Exception]", isal_zlib.error)


def _deflate_record(inner: bytes) -> bytes:
    return isal_zlib.compress(inner, _RECORD_LEVEL)


def _deflate_format_6(inner: bytes) -> bytes:
    """Format 6 is written as the release before wrote it (TableRecord.packed_6_bytes)."""
    compressor = zlib.compressobj(1, zlib.DEFLATED, zlib.MAX_WBITS, 7)
    return compressor.compress(inner) + compressor.flush()


T = TypeVar("T")
S = TypeVar("S", str, bytes)
K = TypeVar("K")
V = TypeVar("V")


class _Lru(Generic[K, V]):
    """The last ``size`` entries put or found, the least recently used dropped first (a hit
    is looked up in ``_entries`` and moved to its end in place: a call more at each of a
    move's few dozen lookups costs ~2% of a move)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[K, V] = OrderedDict()

    def _put(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        if len(self._entries) > self._size:
            self._entries.popitem(last=False)


class _Fragments(_Lru[int, tuple[object, S]]):
    """The encodings of immutable values by identity: the few this replica wrote last."""

    def text(self, value: T, write: Callable[[T], S], read_back: _Decoded | None = None) -> S:
        """``value``'s encoding; ``read_back``: a value written here is also read back from
        its bytes without parsing (a record another replica writes next holds them)."""
        key = id(value)
        hit = self._entries.get(key)
        if hit is not None and hit[0] is value:
            self._entries.move_to_end(key)
            return hit[1]
        text = write(value)
        self.keep(value, text)
        if read_back is not None:
            read_back._put(text, value)
        return text

    def keep(self, value: object, text: S) -> None:
        """``value`` was read from ``text``: writing it again splices the same text."""
        self._put(id(value), (value, text))  # holding the value keeps its id from being reused


_FRAGMENTS: _Fragments[str] = _Fragments(16_384)  # format 5's JSON (TableRecord.parts_bytes)
_PIECES: _Fragments[bytes] = _Fragments(16_384)  # format 7's parts (TableRecord.to_bytes)


class WrittenCache(_Lru[T, bytes]):
    """The encodings of values by equality (values rebuilt from move to move whose parts
    stay the same): the few this replica wrote last."""

    def text(self, key: T, write: Callable[[], bytes]) -> bytes:
        hit = self._entries.get(key)
        if hit is not None:
            self._entries.move_to_end(key)
            return hit
        text = write()
        self._put(key, text)
        return text


class _Decoded(_Lru[object, Any]):
    """Values read from their bytes, by those bytes: the few this replica read last (the
    parts of a record that other replicas write again unchanged, move after move). ``keep``:
    writing a value read here splices its bytes again (:data:`_PIECES`)."""

    def __init__(self, size: int, *, keep: bool = True) -> None:
        super().__init__(size)
        self._keep = keep

    def get(self, text: bytes, parse: Callable[[bytes], T], *, within: bytes = b"") -> T:
        """The value of ``text`` (read in the context of ``within``: a state's ruleset)."""
        key = (within, text) if within else text
        hit = self._entries.get(key)
        if hit is not None:
            self._entries.move_to_end(key)
            return hit  # type: ignore[no-any-return]
        value = parse(text)
        self._put(key, value)
        if self._keep:
            _PIECES.keep(value, text)
        return value


_RULESETS = _Decoded(256)  # few tables differ in rules
_STARTS = _Decoded(1024)  # one per table in play (KEPT_RECORDS of the manager)
_ACTIONS = _Decoded(16_384)  # up to 17 per hand of each of those tables
# format 7's parts (see TableRecord.to_bytes): the head's and the match's that stay the same
# over a hand, the hand's seeds and its deck. Not the hand seats: a seat a move left as it was
# is the kept record's (the same bytes, compared; the same object, written again), and one
# it changed is new to every replica, so a cache of seats was never hit.
_HEADS = _Decoded(1024, keep=False)
_MATCHES = _Decoded(1024, keep=False)
_HAND_HEADS = _Decoded(1024, keep=False)
_DECKS = _Decoded(1024, keep=False)
_ACTION_RUNS = _Decoded(2048, keep=False)
_HEAD_TEXTS: WrittenCache[tuple[Any, ...]] = WrittenCache(1024)
_MATCH_TEXTS: WrittenCache[tuple[Any, ...]] = WrittenCache(1024)
_HAND_TEXTS: WrittenCache[tuple[Any, ...]] = WrittenCache(1024)


def caches() -> tuple[_Lru[Any, Any], ...]:
    """Every cache of this module: what this process wrote and read of table records (a
    process's, as a replica's; tests empty them, ``bench.miss_path`` gives each of its
    in-process replicas a set of its own)."""
    return tuple(c for c in globals().values() if isinstance(c, _Lru))


_PACKED_7_PREFIX_BYTES = b'{"format":7,"z":"'
# format 7's layout: the number of hand seats and of actions, then each part's size
_LAYOUT = struct.Struct(">HH")
_FIXED_PARTS = 8  # head, deadlines, ruleset, match, hand, deck, progress, hand start
_DEADLINE = struct.Struct(">Hq")
_PARTS_PREFIX = '{"format":5,"parts":['
_PARTS_PREFIX_BYTES = _PARTS_PREFIX.encode()
_PACKED_PREFIX_BYTES = b'{"format":6,"z":"'
_PART_KEYS = tuple(f',"{k}":'.encode() for k in ("head", "ruleset", "match", "hand_start"))
_ACTIONS_KEY = b',"hand_actions":['


def _split_parts(raw: bytes) -> list[bytes]:
    """The parts of a format-5 record: head, ruleset, match, hand start, then each action.
    Each is cut where its size puts it; the record is then checked to be exactly its parts
    behind their keys (one comparison)."""
    start = len(_PARTS_PREFIX_BYTES)
    end = raw.index(b"]", start)
    sizes = [int(n) for n in raw[start:end].split(b",")]
    if len(sizes) < len(_PART_KEYS):
        raise ValueError("a table record of format 5 names fewer than four parts")
    keys = [*_PART_KEYS, _ACTIONS_KEY, *(b"," for _ in range(len(sizes) - 5))]
    parts: list[bytes] = []
    at = end + 1
    for key, size in zip(keys, sizes, strict=False):
        at += len(key)
        parts.append(raw[at : at + size])
        at += size
    layout = [piece for pair in zip(keys, parts, strict=False) for piece in pair]
    if len(sizes) == len(_PART_KEYS):  # no action yet
        layout.append(_ACTIONS_KEY)
    layout.append(b"]}")
    if b"".join(layout) != raw[end + 1 :]:
        raise ValueError("a table record of format 5 is not laid out by its sizes")
    return parts


def _stored_ruleset(ruleset: Ruleset) -> dict[str, Any]:
    """A ruleset as a record stores it: its name and the options where it differs from
    :data:`~ofc.rulesets.DEFAULT_RULESET`, the base the reader (of this release and the ones
    before) applies them to (:func:`_ruleset_from_json`). A classic table's ruleset takes
    ``{"name":"classic"}`` in place of ~1 KB, to compress and store on every move. Written
    in full if the options alone would not read back as the same ruleset.

    >>> _stored_ruleset(DEFAULT_RULESET)
    {'name': 'classic'}
    """
    full = ruleset.to_dict()
    default = _DEFAULT_OPTIONS
    options = {k: v for k, v in full.items() if k == "name" or k not in default or default[k] != v}
    return options if ruleset_from_dict(options, base=DEFAULT_RULESET) == ruleset else full


_DEFAULT_OPTIONS = DEFAULT_RULESET.to_dict()


def _ruleset_json(ruleset: Ruleset) -> str:
    """Format 5's ruleset, in full as the release before wrote it."""
    return _dumps(ruleset.to_dict())


def _cut_layout(inner: bytes) -> tuple[tuple[bytes, ...], tuple[bytes, ...], list[int]]:
    """Format 7's parts (see :meth:`TableRecord.layout_bytes`): the fixed ones, the hand
    seats', and where the actions start and each one ends (:func:`_action_run`). The sizes
    must add up to the record exactly."""
    if len(inner) < _LAYOUT.size:
        raise ValueError("a table record of format 7 is shorter than its layout")
    seats, actions = _LAYOUT.unpack_from(inner)
    count = _FIXED_PARTS + seats + actions
    at = _LAYOUT.size + 4 * count  # a >I size a part
    if len(inner) < at:
        raise ValueError("a table record of format 7 is shorter than its layout")
    ends = list(accumulate(_sizes(count).unpack_from(inner, _LAYOUT.size), initial=at))
    if ends[-1] != len(inner):
        raise ValueError("a table record of format 7 is not laid out by its sizes")
    e = ends  # the fixed parts sliced one by one: slicing in a loop takes twice as long
    fixed = (
        inner[e[0] : e[1]], inner[e[1] : e[2]], inner[e[2] : e[3]], inner[e[3] : e[4]],
        inner[e[4] : e[5]], inner[e[5] : e[6]], inner[e[6] : e[7]], inner[e[7] : e[8]],
    )  # fmt: skip
    cut = _FIXED_PARTS + seats
    starts = e[_FIXED_PARTS:cut]
    hand_seats = tuple([inner[a:b] for a, b in zip(starts, e[_FIXED_PARTS + 1 :], strict=False)])
    return fixed, hand_seats, ends[cut:]


@functools.lru_cache(maxsize=64)
def _sizes(count: int) -> struct.Struct:
    """The sizes of ``count`` parts of format 7 (a ``>I`` each)."""
    return struct.Struct(f">{count}I")


def _action_run(inner: bytes, ends: list[int]) -> tuple[Action, ...]:
    """The actions laid out in ``inner`` from ``ends[0]``, each ending at the next of
    ``ends``: read by the bytes of them all (a hand's actions so far, those of the record
    before and one more), else as the run before them and the last one."""
    if len(ends) == 1:
        return ()
    return _ACTION_RUNS.get(
        inner[ends[0] : ends[-1]],
        lambda _: (
            *_action_run(inner, ends[:-1]),
            _ACTIONS.get(inner[ends[-2] : ends[-1]], _action_from_json),
        ),
    )


def _actions(inner: bytes, ends: list[int], run: bytes, base: Layout | None) -> tuple[Action, ...]:
    """The actions of a record whose actions' bytes are ``run``: ``base``'s when they are
    its bytes, or its and one more (the move made since), else :func:`_action_run`."""
    if base is not None and len(ends) > 1:
        if run == base.actions:
            return base.record.hand_actions
        if len(ends) > 2 and run[: ends[-2] - ends[0]] == base.actions:
            last = _ACTIONS.get(inner[ends[-2] : ends[-1]], _action_from_json)
            return (*base.record.hand_actions, last)
    return _action_run(inner, ends)


def _seats(
    parts: tuple[bytes, ...], base: Layout | None, hand: engine.HandState | None
) -> tuple[engine.HandSeat, ...]:
    """The hand seats of their parts: ``hand``'s (``base``'s) where the bytes are the same,
    the others read."""
    if base is None or hand is None or len(parts) != len(base.seats):
        return tuple([seat_from_own_bytes(part) for part in parts])
    return tuple(
        [
            was if part == then else seat_from_own_bytes(part)
            for part, then, was in zip(parts, base.seats, hand.seats, strict=True)
        ]
    )


def _hand_head_of(hand: engine.HandState) -> tuple[int, int, bytes, bytes, int]:
    return (hand.number, hand.button, hand.server_seed, hand.client_seed, hand.started_at_ms)


def _match_reader(ruleset: Ruleset) -> Callable[[bytes], MatchState]:
    return lambda text: match_from_own_bytes(text, ruleset=ruleset)


def _head_from_json(text: bytes) -> dict[str, Any]:
    """The record's fields in format 7's head (:meth:`TableRecord._head_dict`)."""
    return _head_fields(json.loads(text))


def _head_fields(head: Mapping[str, Any]) -> dict[str, Any]:
    """The record's fields in a head of format 5 or 7 but its deadlines."""
    return {
        "table_id": head["table_id"],
        "turn_time_limit_ms": head["turn_time_limit_ms"],
        "fantasyland_time_limit_ms": head["fantasyland_time_limit_ms"],
        "client_seed": bytes.fromhex(head["client_seed"]),
        "created_at_ms": head["created_at_ms"],
        "seat_tokens": tuple((int(s), str(h)) for s, h in head["seat_tokens"]),
        "seat_units": None if (units := head["seat_units"]) is None else tuple(map(int, units)),
        "client_seed_policy": head["client_seed_policy"],
        "seat_client_seeds": tuple(
            (int(s), bytes.fromhex(seed)) for s, seed in head["seat_client_seeds"]
        ),
        "next_server_seed": bytes.fromhex(head["next_server_seed"]),
        "seat_changes": _own_changes(head["seat_changes"]),
        "hand_seat_changes": _own_changes(head["hand_seat_changes"]),
        "hand_deadlines": bool(head["hand_deadlines"]),
        "leaving_seats": tuple(map(int, head.get("leaving_seats", ()))),
        "leaving_changes": tuple((int(s), int(n)) for s, n in head.get("leaving_changes", ())),
    }


def _compact_state_json(state: MatchState) -> str:
    return _dumps(state_to_dict(state, compact=True))


def _action_json(action: Action) -> str:
    return _dumps(action_to_dict(action))


def _ruleset_json_bytes(ruleset: Ruleset) -> bytes:
    """Format 7's ruleset part (:func:`_stored_ruleset`)."""
    return _dumps(_stored_ruleset(ruleset)).encode()


def _compact_state_json_bytes(state: MatchState) -> bytes:
    return _compact_state_json(state).encode()


def _action_json_bytes(action: Action) -> bytes:
    """An action's part: :func:`_action_json`'s bytes (a move's Place written out directly,
    ≈ 1.4 µs against ≈ 3 through a dict and the JSON encoder, warm; the same bytes)."""
    if type(action) is engine.Place:
        return _place_json_bytes(action)
    return _action_json(action).encode()


def _place_json_bytes(place: engine.Place) -> bytes:
    """``_action_json(place).encode()``, written out: card codes and row names are plain
    ASCII letters and digits (nothing JSON escapes), the seat and time integers.

    >>> from ofc.cards import Card
    >>> move = engine.Place(1, ((Card.parse("Ah"), ROWS[0]),), Card.parse("X1"), 5)
    >>> _place_json_bytes(move) == _action_json(move).encode()
    True
    """
    placed = ",".join([f'["{card}","{row.value}"]' for card, row in place.placements])
    discard = "null" if place.discard is None else f'"{place.discard}"'
    return (
        f'{{"type":"place","seat":{place.seat:d},"placements":[{placed}],'
        f'"discard":{discard},"at_ms":{place.at_ms:d}}}'
    ).encode()


def _pack(
    prefix: bytes, inner: bytes, deflate: Callable[[bytes], bytes] = _deflate_record
) -> bytes:
    """``inner`` deflated by ``deflate`` and base64-encoded in ``prefix`` and ``"}``: a JSON
    object a release that does not know its format reads."""
    return b"".join((prefix, pybase64.b64encode(deflate(inner)), b'"}'))


def _unpack(raw: bytes, prefix: bytes, found: int) -> bytes:
    try:
        return isal_zlib.decompress(pybase64.b64decode(memoryview(raw)[len(prefix) : -2]))
    except (binascii.Error, _INFLATE_ERROR) as broken:
        message = f"a table record of format {found} that does not unpack: {broken}"
        raise ValueError(message) from None


def _ruleset_from_json(text: bytes) -> Ruleset:
    return ruleset_from_dict(json.loads(text), base=DEFAULT_RULESET)


def _state_from_json(text: bytes, ruleset: Ruleset) -> MatchState:
    """A state of a record of format 5 or 6, or format 7's hand start: written by a server,
    checked by the engine as it was made, and stored by a commit that checked the version
    and state it replaced, so it is read back without the strict decoder's checks
    (:func:`state_from_own_dict`; the same state, property-tested)."""
    try:
        return state_from_own_dict(json.loads(text), ruleset=ruleset)
    except (KeyError, TypeError, IndexError, ValueError) as broken:
        raise ValueError(f"a table record's state does not decode: {broken!r}") from None


def _action_from_json(text: bytes) -> Action:
    """An action of a record of format 5 to 7, read by its constructors (as its states)."""
    try:
        return action_from_own_dict(json.loads(text))
    except (KeyError, TypeError, IndexError, ValueError) as broken:
        raise ValueError(f"a table record's action does not decode: {broken!r}") from None


class Layout(NamedTuple):
    """A record of format 7 as its parts (as written, or cut from its bytes) and the record
    they hold: the base the table's next record is read against (:meth:`TableRecord.read`),
    which takes each part of the same bytes from ``record`` without reading it. A move
    changes a few small parts; the rest, most of the record, is compared, not looked up.
    (A named tuple: made at every move, it costs half a frozen dataclass.)"""

    record: TableRecord
    fixed: tuple[bytes, ...]  # the eight fixed parts (TableRecord.layout_bytes)
    seats: tuple[bytes, ...]  # each hand seat's
    actions: bytes  # the actions', back to back
    action_sizes: bytes  # their sizes as the layout writes them (a ``>I`` each)


_NO_BASE = (None,) * _FIXED_PARTS  # compares equal to no part
_ACTION_SIZE = struct.Struct(">I")


def _same_stable(match: MatchState, was: MatchState) -> bool:
    """Whether ``match``'s part without its hand (``own_match_bytes``) is ``was``'s."""
    return (
        match.seats is was.seats
        and match.button == was.button
        and match.hands_played == was.hands_played
        and match.max_hands == was.max_hands
        and match.pair_units == was.pair_units
    )


def _seat_parts(seats: tuple[engine.HandSeat, ...], base: Layout | None) -> tuple[bytes, ...]:
    """Each hand seat's part: ``base``'s where the seat is its record's (the same object)."""
    if base is None or base.record.match.hand is None or len(base.seats) != len(seats):
        return tuple([own_seat_bytes(s) for s in seats])
    then = base.record.match.hand.seats
    return tuple(
        [
            part if seat is was else own_seat_bytes(seat)
            for seat, was, part in zip(seats, then, base.seats, strict=True)
        ]
    )


@dataclass(frozen=True, slots=True)
class TableRecord:
    """Everything stored for one table (server side only: it holds the server seed)."""

    table_id: str
    match: MatchState
    turn_time_limit_ms: int
    fantasyland_time_limit_ms: int
    client_seed: bytes
    created_at_ms: int
    seat_tokens: tuple[tuple[int, str], ...] = ()  # (seat, SHA-256 of its token)
    hand_start: MatchState | None = None  # the match right before the current hand started
    hand_actions: tuple[Action, ...] = ()  # the current hand's actions, StartHand first
    seat_deadlines: tuple[tuple[int, int], ...] = ()  # (seat, Unix ms) for seats to act
    # Per seat: running money total (smallest currency unit). None: not known (a table stored
    # before money was kept, record format 1, whose hands' histories could not give it).
    seat_units: tuple[int, ...] | None = ()
    client_seed_policy: str = POLICY_TABLE
    seat_client_seeds: tuple[tuple[int, bytes], ...] = ()  # (seat, its own seed), players policy
    # The next hand's server seed, drawn (and its commitment published) one hand ahead, so
    # no client seed can be chosen before it. Empty in records written before format 3.
    next_server_seed: bytes = b""
    # Seats taken and left since the current hand started (for the next hand's history),
    # and those before the current hand (for its own). None: not known (a record written
    # before format 4 did not collect them).
    seat_changes: tuple[engine.SitDown | engine.StandUp, ...] | None = ()
    hand_seat_changes: tuple[engine.SitDown | engine.StandUp, ...] | None = ()
    # Whether the current hand's deadlines follow this server's clock rule (seat_deadlines),
    # so that its timeouts can record them: false for a hand begun before format 4.
    hand_deadlines: bool = True
    # Seats whose players asked to leave once the rules let them (LeaveSeat after the hand):
    # the server stands each up at the first change after which it may. In the head's JSON
    # only when any (a replica of a release before ignores the key, and forgets the marks
    # when it writes the table).
    leaving_seats: tuple[int, ...] = ()
    # How often each seat changed its mark (set or withdrew it) since the current hand, or
    # the one before it, started: (seat, count), bounded (LeaveChangesSpentError). In the
    # head's JSON only when any, like the marks.
    leaving_changes: tuple[tuple[int, int], ...] = ()

    @property
    def token_hashes(self) -> dict[int, str]:
        return dict(self.seat_tokens)

    def units_of(self, seat: int) -> int:
        """The seat's running money total at this table (0 before its first hand)."""
        units = self.seat_units
        return units[seat] if units is not None and seat < len(units) else 0

    def with_play(
        self,
        match: MatchState,
        hand_start: MatchState | None,
        hand_actions: tuple[Action, ...],
        seat_deadlines: tuple[tuple[int, int], ...],
        seat_units: tuple[int, ...] | None,
    ) -> TableRecord:
        """This record with the fields a hand's play changes, the others the same: every
        move makes one (after its engine step, and reading a record against the one kept),
        so it is built by :func:`ofc.frozen.maker`'s constructor, not ``dataclasses.replace``
        (half as much again) nor ``__init__`` (tests/store/test_record_rebuild.py checks
        every field)."""
        return _make_record(
            table_id=self.table_id,
            match=match,
            turn_time_limit_ms=self.turn_time_limit_ms,
            fantasyland_time_limit_ms=self.fantasyland_time_limit_ms,
            client_seed=self.client_seed,
            created_at_ms=self.created_at_ms,
            seat_tokens=self.seat_tokens,
            hand_start=hand_start,
            hand_actions=hand_actions,
            seat_deadlines=seat_deadlines,
            seat_units=seat_units,
            client_seed_policy=self.client_seed_policy,
            seat_client_seeds=self.seat_client_seeds,
            next_server_seed=self.next_server_seed,
            seat_changes=self.seat_changes,
            hand_seat_changes=self.hand_seat_changes,
            hand_deadlines=self.hand_deadlines,
            leaving_seats=self.leaving_seats,
            leaving_changes=self.leaving_changes,
        )

    def hand_player_ids(self) -> tuple[str, ...]:
        """Who held each seat when the table's hand (current, or the last, over) started:
        the names its settlement goes by, even once a seat has changed hands since."""
        return tuple(s.player_id for s in (self.hand_start or self.match).seats)

    @property
    def deadline_ms(self) -> int | None:
        deadlines = self.seat_deadlines
        return min([ms for _, ms in deadlines]) if deadlines else None

    @property
    def next_commitment(self) -> str:
        """SHA-256 of the next hand's server seed (hex); empty before one is drawn."""
        return commitment(self.next_server_seed) if self.next_server_seed else ""

    def hand_client_seed(self) -> bytes:
        """The client seed of the next hand to start: the table's seed, or (players policy)
        the table's seed and each seat's own, in seat order, u32be-length-prefixed."""
        if self.client_seed_policy == POLICY_TABLE:
            return self.client_seed
        own = dict(self.seat_client_seeds)
        seats = range(len(self.match.seats))
        return combine_client_seeds([self.client_seed, *(own.get(s, b"") for s in seats)])

    def to_bytes(self) -> bytes:
        """The record in format 7: :meth:`layout_bytes` deflated (ISA-L, level 0) and
        base64-encoded in ``{"format":7,"z":"..."}``, which a replica of an earlier release
        reads as JSON and refuses as a newer format (:class:`NewerRecordError`, retryable)
        rather than failing on binary bytes."""
        return self.write()[0]

    def write(self, base: Layout | None = None) -> tuple[bytes, Layout]:
        """:meth:`to_bytes`, and the record's :class:`Layout` (the base the table's next
        record is read against); written against ``base`` (the layout of an earlier record
        of the table, as :meth:`read` reads against one): each part of a value ``base``'s
        record holds (the same object) is ``base``'s bytes, and the actions of the hand
        there and one more are its run and one action (a move's record)."""
        inner, layout = self._laid_out(base)
        return _pack(_PACKED_7_PREFIX_BYTES, inner), layout

    def layout_bytes(self) -> bytes:
        """Format 7's parts, laid out one after the other behind their sizes (``>HH``: hand
        seats, actions; then a ``>I`` size a part), so that a reader finds each part's bytes
        without reading the others. Each part changes at its own pace and is read once per
        replica by its bytes: the head without its deadlines (JSON), the deadlines (``>Hq``
        each), the ruleset (JSON), the match without its hand, the hand's number, button,
        seeds and start, its deck, its progress and each hand seat
        (:class:`ofc.codec.OwnParts`), the hand's start (compact JSON) and each action
        (JSON). A move changes the deadlines, the progress, the seats that moved or were
        dealt and adds an action; the rest is what the record before held."""
        return self._laid_out()[0]

    def _laid_out(self, base: Layout | None = None) -> tuple[bytes, Layout]:
        match = self.match
        hand = match.hand
        prior = base.record if base is not None else None
        then: tuple[bytes, ...] = base.fixed if base is not None else ()
        was = prior.match if prior is not None else None
        if prior is not None and self._same_head(prior):
            head = then[0]
        else:
            head = _HEAD_TEXTS.text(self._head_key(), self._head_json)
        deadlines = b"".join(_DEADLINE.pack(s, ms) for s, ms in self.seat_deadlines)
        if was is not None and match.ruleset is was.ruleset:
            ruleset = then[2]
        else:
            ruleset = _PIECES.text(match.ruleset, _ruleset_json_bytes)
        if was is not None and _same_stable(match, was):
            stable = then[3]
        else:
            key = (match.seats, match.button, match.hands_played, match.max_hands,
                   match.pair_units)  # fmt: skip
            stable = _MATCH_TEXTS.text(key, lambda: own_match_bytes(match))
        if hand is None:
            hand_head = deck = progress = b""
            seats: tuple[bytes, ...] = ()
        else:
            then_hand = was.hand if was is not None else None
            hand_key = _hand_head_of(hand)
            if then_hand is not None and hand_key == _hand_head_of(then_hand):
                hand_head = then[4]
            else:
                hand_head = _HAND_TEXTS.text(hand_key, lambda: own_hand_bytes(hand))
            same_deck = then_hand is not None and hand.deck is then_hand.deck
            deck = then[5] if same_deck else bytes(hand.deck)
            progress = own_progress_bytes(hand)
            seats = _seat_parts(hand.seats, base)
        start = self.hand_start
        if start is None:
            hand_start = b""
        elif prior is not None and start is prior.hand_start:
            hand_start = then[7]
        else:
            hand_start = _PIECES.text(start, _compact_state_json_bytes)
        acts = self.hand_actions
        if base is not None and acts and acts[:-1] == base.record.hand_actions:  # one more
            # the move just made: new here (no look-up), and read back without parsing
            # when the other replica's next record holds it
            last = _action_json_bytes(acts[-1])
            _ACTIONS._put(last, acts[-1])
            run = base.actions + last
            action_sizes = base.action_sizes + _ACTION_SIZE.pack(len(last))
        else:
            actions = [_PIECES.text(a, _action_json_bytes, _ACTIONS) for a in acts]
            run = b"".join(actions)
            action_sizes = _sizes(len(actions)).pack(*map(len, actions))
        if acts:  # the next record another replica writes holds this run and one more
            _ACTION_RUNS._put(run, acts)
        fixed = (head, deadlines, ruleset, stable, hand_head, deck, progress, hand_start)
        sizes = _sizes(_FIXED_PARTS + len(seats)).pack(*map(len, fixed), *map(len, seats))
        inner = b"".join((_LAYOUT.pack(len(seats), len(acts)), sizes, action_sizes, *fixed,
                          *seats, run))  # fmt: skip
        return inner, Layout(self, fixed, seats, run, action_sizes)

    def _same_head(self, prior: TableRecord) -> bool:
        """Whether this record's head (:meth:`_head_key`) is ``prior``'s: the same values."""
        return (
            self.seat_tokens is prior.seat_tokens
            and self.seat_units is prior.seat_units
            and self.seat_client_seeds is prior.seat_client_seeds
            and self.seat_changes is prior.seat_changes
            and self.hand_seat_changes is prior.hand_seat_changes
            and self.table_id is prior.table_id
            and self.client_seed is prior.client_seed
            and self.next_server_seed is prior.next_server_seed
            and self.turn_time_limit_ms == prior.turn_time_limit_ms
            and self.fantasyland_time_limit_ms == prior.fantasyland_time_limit_ms
            and self.created_at_ms == prior.created_at_ms
            and self.client_seed_policy == prior.client_seed_policy
            and bool(self.hand_deadlines) == bool(prior.hand_deadlines)
            and self.leaving_seats == prior.leaving_seats
            and self.leaving_changes == prior.leaving_changes
        )

    def _head_key(self) -> tuple[Any, ...]:
        return (
            self.table_id,
            self.turn_time_limit_ms,
            self.fantasyland_time_limit_ms,
            self.client_seed,
            self.created_at_ms,
            self.seat_tokens,
            self.seat_units,
            self.client_seed_policy,
            self.seat_client_seeds,
            self.next_server_seed,
            self.seat_changes,
            self.hand_seat_changes,
            bool(self.hand_deadlines),
            self.leaving_seats,
            self.leaving_changes,
        )

    def _head_json(self) -> bytes:
        return _dumps(self._head_dict(deadlines=False)).encode()

    def _head_dict(self, *, deadlines: bool) -> dict[str, Any]:
        """The head of format 5 (``deadlines``) or 7 (its deadlines are a part of their own)."""
        head: dict[str, Any] = {
            "table_id": self.table_id,
            "turn_time_limit_ms": self.turn_time_limit_ms,
            "fantasyland_time_limit_ms": self.fantasyland_time_limit_ms,
            "client_seed": self.client_seed.hex(),
            "created_at_ms": self.created_at_ms,
            "seat_tokens": [list(t) for t in self.seat_tokens],
        }
        if deadlines:
            head["seat_deadlines"] = [list(d) for d in self.seat_deadlines]
        head |= {
            "seat_units": None if self.seat_units is None else list(self.seat_units),
            "client_seed_policy": self.client_seed_policy,
            "seat_client_seeds": [[s, seed.hex()] for s, seed in self.seat_client_seeds],
            "next_server_seed": self.next_server_seed.hex(),
            "seat_changes": _changes_to_list(self.seat_changes),
            "hand_seat_changes": _changes_to_list(self.hand_seat_changes),
            "hand_deadlines": self.hand_deadlines,
        }
        if self.leaving_seats:  # rare: a head without marks is the bytes it always was
            head["leaving_seats"] = list(self.leaving_seats)
        if self.leaving_changes:
            head["leaving_changes"] = [list(c) for c in self.leaving_changes]
        return head

    def packed_6_bytes(self) -> bytes:
        """The record in format 6 (what the release before wrote): :meth:`parts_bytes`
        zlib-compressed and base64-encoded in ``{"format":6,"z":"..."}``."""
        return _pack(_PACKED_PREFIX_BYTES, self.parts_bytes(), _deflate_format_6)

    def parts_bytes(self) -> bytes:
        """The record in format 5: one JSON object whose parts are laid out one after the
        other, their sizes first, so that a reader finds each part's bytes without parsing
        the rest. The parts that stay the same from move to move (the ruleset, the hand's
        start, each action) are written once per replica and spliced in, and read once per
        replica: a record another replica wrote decodes only its small head and match."""
        head = _dumps(self._head_dict(deadlines=True))
        ruleset = _FRAGMENTS.text(self.match.ruleset, _ruleset_json)
        match = _dumps(state_to_dict(self.match, compact=True))
        start = self.hand_start
        hand_start = "null" if start is None else _FRAGMENTS.text(start, _compact_state_json)
        actions = [_FRAGMENTS.text(a, _action_json) for a in self.hand_actions]
        sizes = ",".join(str(len(p)) for p in (head, ruleset, match, hand_start, *actions))
        return (
            f'{_PARTS_PREFIX}{sizes}],"head":{head},"ruleset":{ruleset},"match":{match},'
            f'"hand_start":{hand_start},"hand_actions":[{",".join(actions)}]}}'
        ).encode()

    @classmethod
    def _from_parts(cls, raw: bytes) -> TableRecord:
        """Read a record of format 5 (see :meth:`parts_bytes`)."""
        parts = _split_parts(raw)
        head = json.loads(parts[0])
        ruleset = _RULESETS.get(parts[1], _ruleset_from_json)
        match = _state_from_json(parts[2], ruleset)
        hand_start = (
            None
            if parts[3] == b"null"
            else _STARTS.get(
                parts[3], lambda text: _state_from_json(text, ruleset), within=parts[1]
            )
        )
        actions = tuple(_ACTIONS.get(part, _action_from_json) for part in parts[4:])
        return cls(
            match=match,
            hand_start=hand_start,
            hand_actions=actions,
            seat_deadlines=tuple((int(s), int(ms)) for s, ms in head["seat_deadlines"]),
            **_head_fields(head),
        )

    @classmethod
    def _from_layout(cls, inner: bytes, base: Layout | None) -> tuple[TableRecord, Layout]:
        """Read a record of format 7 (see :meth:`layout_bytes`): each part of the same bytes
        as ``base``'s is taken from its record; each other part that was read here before
        is taken as it was read (by its bytes); what a move changed is read by the
        constructors, like format 5's states (the same state, property-tested)."""
        fixed, seat_parts, action_ends = _cut_layout(inner)
        head, deadlines, rules, stable, hand_head, deck, progress, start = fixed
        prior = base.record if base is not None else None
        same = base.fixed if base is not None else _NO_BASE
        try:
            # a part equal to base's is one base has: ``prior`` is a record then
            if rules == same[2]:
                ruleset = prior.match.ruleset  # type: ignore[union-attr]
                if stable == same[3]:
                    match = prior.match  # type: ignore[union-attr]  # its hand is not read
                else:
                    match = _MATCHES.get(stable, _match_reader(ruleset), within=rules)
            else:
                ruleset = _RULESETS.get(rules, _ruleset_from_json)
                match = _MATCHES.get(stable, _match_reader(ruleset), within=rules)
            hand = None
            if hand_head:
                was = prior.match.hand if prior is not None else None
                hand = hand_from_own_parts(
                    _hand_head_of(was)  # type: ignore[arg-type]
                    if hand_head == same[4]
                    else _HAND_HEADS.get(hand_head, hand_head_from_own_bytes),
                    was.deck  # type: ignore[union-attr]
                    if deck == same[5]
                    else _DECKS.get(deck, cards_from_own_bytes),
                    progress,
                    _seats(seat_parts, base, was),
                )
            match = engine.make_match(ruleset, match.seats, match.button, match.hands_played,
                                match.max_hands, hand, match.pair_units)  # fmt: skip
            if not start:
                hand_start = None
            elif start == same[7] and rules == same[2]:
                hand_start = prior.hand_start  # type: ignore[union-attr]
            else:
                hand_start = _STARTS.get(
                    start, lambda text: _state_from_json(text, ruleset), within=rules
                )
            seat_deadlines = tuple(_DEADLINE.iter_unpack(deadlines))
            fields = None if head == same[0] else _HEADS.get(head, _head_from_json)
        except (KeyError, TypeError, IndexError, struct.error) as broken:
            raise ValueError(f"a table record's state does not decode: {broken!r}") from None
        run = inner[action_ends[0] : action_ends[-1]]
        actions = _actions(inner, action_ends, run, base)
        if fields is None:  # base's head: its fields
            prior = cast(TableRecord, prior)
            record = prior.with_play(match, hand_start, actions, seat_deadlines, prior.seat_units)
        else:
            record = cls(
                match=match,
                hand_start=hand_start,
                hand_actions=actions,
                seat_deadlines=seat_deadlines,
                **fields,
            )
        header = _LAYOUT.size + 4 * (_FIXED_PARTS + len(seat_parts))
        action_sizes = inner[header : header + 4 * (len(action_ends) - 1)]
        return record, Layout(record, fixed, seat_parts, run, action_sizes)

    @classmethod
    def read(cls, raw: bytes, base: Layout | None = None) -> tuple[TableRecord, Layout | None]:
        """:meth:`from_bytes`, read against ``base`` (the layout of an earlier record of the
        same table: the record a replica last wrote or read), and the record's own
        :class:`Layout` (None for a record of a format before 7)."""
        if raw.startswith(_PACKED_7_PREFIX_BYTES) and raw.endswith(b'"}'):
            return cls._from_layout(_unpack(raw, _PACKED_7_PREFIX_BYTES, 7), base)
        return cls._from_older(raw), None

    @classmethod
    def from_bytes(cls, raw: bytes) -> TableRecord:
        """Read a record of any format this server knows. Before format 4, a timeout in
        ``hand_actions`` was stored without its move (the engine chose it): the move is
        recovered from the stored hand (:func:`_recover_timeouts`), and the seat changes
        since the last hand are not known."""
        return cls.read(raw)[0]

    @classmethod
    def _from_older(cls, raw: bytes) -> TableRecord:
        """Read a record of a format before 7."""
        if raw.startswith(_PACKED_PREFIX_BYTES) and raw.endswith(b'"}'):
            inner = _unpack(raw, _PACKED_PREFIX_BYTES, 6)
            if not inner.startswith(_PARTS_PREFIX_BYTES):
                raise ValueError("a table record of format 6 holds no record of format 5")
            return cls._from_parts(inner)
        if raw.startswith(_PARTS_PREFIX_BYTES):
            return cls._from_parts(raw)
        data = json.loads(raw)
        found = data.get("format")
        if isinstance(found, int) and found > RECORD_FORMAT:
            raise NewerRecordError(
                f"table {data.get('table_id')!r} was written by a newer server version "
                f"(record format {found}; this replica reads up to {RECORD_FORMAT}); retry"
            )
        if found not in RECORD_FORMATS or found >= 5:  # formats 5 to 7: read above
            raise ValueError(f"unknown table record format {found!r}")
        match = state_from_dict(data["match"])
        hand_start = None if data["hand_start"] is None else state_from_dict(data["hand_start"])
        if found < 4:
            actions = _recover_timeouts(hand_start, data["hand_actions"], match)
            changes: tuple[SeatChanges, SeatChanges] = (None, None)
            hand_deadlines = match.hand is None or match.hand.over
        else:
            actions = tuple(action_from_dict(a) for a in data["hand_actions"])
            changes = (
                _changes_from_list(data["seat_changes"]),
                _changes_from_list(data["hand_seat_changes"]),
            )
            hand_deadlines = bool(data["hand_deadlines"])
        return cls(
            table_id=data["table_id"],
            match=match,
            turn_time_limit_ms=data["turn_time_limit_ms"],
            fantasyland_time_limit_ms=data["fantasyland_time_limit_ms"],
            client_seed=bytes.fromhex(data["client_seed"]),
            created_at_ms=data["created_at_ms"],
            seat_tokens=tuple((int(s), str(h)) for s, h in data["seat_tokens"]),
            hand_start=hand_start,
            hand_actions=actions,
            seat_deadlines=tuple((int(s), int(ms)) for s, ms in data["seat_deadlines"]),
            # format 1 kept no money: not known (TableManager restores it from the histories)
            seat_units=None if found == 1 else tuple(int(u) for u in data["seat_units"]),
            client_seed_policy=data.get("client_seed_policy", POLICY_TABLE),
            seat_client_seeds=tuple(
                (int(s), bytes.fromhex(seed)) for s, seed in data.get("seat_client_seeds", ())
            ),
            next_server_seed=bytes.fromhex(data.get("next_server_seed", "")),
            seat_changes=changes[0],
            hand_seat_changes=changes[1],
            hand_deadlines=hand_deadlines,
        )


# A record read back from its parts: their values, as written, were checked (ofc.frozen).
_make_record = maker(TableRecord)

SeatChanges = tuple[engine.SitDown | engine.StandUp, ...] | None


def _changes_to_list(changes: SeatChanges) -> list[Any] | None:
    return None if changes is None else [action_to_dict(a) for a in changes]


def _changes_from_list(raw: list[Any] | None) -> SeatChanges:
    if raw is None:
        return None
    changes = tuple(action_from_dict(a) for a in raw)
    assert all(isinstance(a, engine.SitDown | engine.StandUp) for a in changes)
    return changes  # type: ignore[return-value]


def _own_changes(raw: list[Any] | None) -> SeatChanges:
    """The seat changes of a record of format 5 to 7, as :func:`_changes_to_list` wrote them
    (read like its states: by the constructors)."""
    return None if raw is None else tuple(map(_own_change, raw))


def _own_change(raw: Mapping[str, Any]) -> engine.SitDown | engine.StandUp:
    change = action_from_own_dict(raw)
    if not isinstance(change, engine.SitDown | engine.StandUp):
        raise ValueError(f"a table record's seat change is a {raw['type']!r}")
    return change


def _recover_timeouts(
    hand_start: MatchState | None, raw_actions: list[Any], match: MatchState
) -> tuple[Action, ...]:
    """The actions of a record written before format 4, each timeout with the move it made.

    Those servers let the engine choose a timeout's move and stored only ``{type, seat,
    at_ms}``. The move is read back from the stored hand, where it is: the seat's batch
    (the deck's cards at that point of the replay), each card in the row of the final board
    that holds it or among the discards, in batch order as the policy placed them (a
    Fantasyland seat's set as the board shows it). The replay of the recovered actions must
    give the stored hand exactly. The move names ``ofc-timeout-4`` (the policy of the
    servers that wrote format 3) when that policy makes the same move, else no policy (an
    older server's).
    """
    if hand_start is None or match.hand is None:
        return tuple(action_from_dict(a) for a in raw_actions)
    final = match.hand
    state = hand_start
    actions: list[Action] = []
    for raw in raw_actions:
        if raw.get("type") == "timeout" and "resolved" not in raw:
            seat, at_ms = int(raw["seat"]), int(raw["at_ms"])
            move = _move_from_final(state, seat, final, at_ms)
            chosen = dataclasses.replace(TIMEOUT_POLICY.choose(state, seat), at_ms=at_ms)
            policy = identity(TIMEOUT_POLICY) if chosen == move else None
            action: Action = engine.Timeout(seat, move, policy, at_ms)
        else:
            action = action_from_dict(raw)
        state, _ = engine.apply(state, action)
        actions.append(action)
    if state.hand != final:
        raise ValueError("the stored hand is not the replay of its actions")
    return tuple(actions)


def _move_from_final(
    state: MatchState, seat: int, final: engine.HandState, at_ms: int
) -> engine.Place | engine.SetFantasyland:
    hand = state.hand
    assert hand is not None
    batch = hand.seat(seat).pending
    board = final.seat(seat).board
    if hand.seat(seat).in_fantasyland:
        return engine.SetFantasyland(
            seat, board.top, board.middle, board.bottom, final.seat(seat).discards, at_ms
        )
    rows = {card: row for row in ROWS for card in board.row(row)}
    placements = tuple((card, rows[card]) for card in batch if card in rows)
    discards = [card for card in batch if card not in rows]
    return engine.Place(seat, placements, discards[0] if discards else None, at_ms)


def pack_history(history: Mapping[str, Any]) -> bytes:
    """A hand history as stored: compact JSON, zlib-compressed (about a quarter the size;
    a table keeps every finished hand for its lifetime). zlib-ng's level 6: a two-seat
    hand's ~6.7 KB in ~90 µs, where CPython's zlib took ~160 µs, 1% larger.

    >>> unpack_history(pack_history({"hand_number": 1}))
    b'{"hand_number":1}'
    >>> unpack_history(b'{"hand_number":1}')  # as stored before compression
    b'{"hand_number":1}'
    """
    return zlib_ng.compress(_dumps(history).encode(), 6)


def unpack_history(raw: bytes) -> bytes:
    """The JSON of a stored hand history (plain JSON is read as it is)."""
    return raw if raw.startswith(b"{") else zlib.decompress(raw)


def history_settlement(history: Mapping[str, Any]) -> tuple[Settlement, tuple[str, ...]]:
    """The settlement of a stored history and its players' ids, recomputed by replaying its
    actions as recorded, each timeout's move included (what an auditor holding the history
    does too); no policy is run, so a later policy never changes a past hand's result."""
    start = state_from_dict(history["initial_state"])
    actions = [action_from_dict(a) for a in history["actions"]]
    final, _ = engine.replay(start, actions)
    assert final.hand is not None
    settlement = engine.hand_settlement(final.hand, final.ruleset, pair_units=final.pair_units)
    return settlement, tuple(start.seats[s.seat].player_id for s in final.hand.seats)
