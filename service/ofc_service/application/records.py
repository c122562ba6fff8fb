"""The table record: everything stored for one live table, and its byte format.

A record holds the engine's match state, the current hand's start and actions (for its hand
history), the seats' tokens (hashed), deadlines, money totals and seeds. ``to_bytes`` and
``from_bytes`` round-trip; records of every earlier format still load (a rolling upgrade
reads what the previous release wrote), and a record of a newer format is refused with
:class:`NewerRecordError` (retryable: a newer replica reads it).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import zlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ofc import engine
from ofc.codec import (
    action_from_dict,
    action_to_dict,
    state_from_dict,
    state_from_own_dict,
    state_to_dict,
)
from ofc.engine import Action, Event, MatchState
from ofc.errors import IllegalActionError
from ofc.policy import TIMEOUT_POLICY, identity
from ofc.rulesets import DEFAULT_RULESET, ROWS, Ruleset, ruleset_from_dict
from ofc.scoring import Settlement
from ofc.shuffle import combine_client_seeds, commitment


class NewerRecordError(Exception):
    """A table record written by a newer server version (a rolling upgrade in progress):
    this replica cannot act on it, a replica of the newer version can. Retryable."""

    reason = "NEWER_SERVER"


class ClientSeedPolicyError(IllegalActionError):
    """SetClientSeed at a table whose hands use the table's client seed only."""

    reason = "CLIENT_SEED_POLICY"


# 2 added seat_units, 3 the client seed policy and the next hand's seed, 4 a timeout's move
# (and policy and deadline) in hand_actions and the seat changes between hands, 5 the parts
# laid out by size (the ruleset once, states without their deck; see TableRecord.to_bytes),
# 6 format 5's bytes zlib-compressed, in base64 inside a JSON object (a third of the memory).
RECORD_FORMAT = 6
RECORD_FORMATS = (1, 2, 3, 4, 5, RECORD_FORMAT)  # older records load (TableRecord.from_bytes)
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


TableEvent = Event | ClientSeedSet


def _dumps(data: Any) -> str:
    """Compact JSON, as ``json.dumps(data, separators=(",", ":"))`` writes it (which makes a
    new encoder every call)."""
    return _COMPACT.encode(data)


# No check for circular references: the values written are trees of JSON data made here.
_COMPACT = json.JSONEncoder(separators=(",", ":"), check_circular=False)
# zlib's window and memory level for records: an 8 KiB window holds a whole record (~3 KB
# for two seats), and memory level 5 compresses it as small as the defaults (15, 8) do,
# with smaller tables to set up (a tenth fewer instructions than 15 and 7). Any zlib
# reader takes a stream of a smaller window than its own.
_RECORD_WINDOW_BITS = 13
_RECORD_MEMORY_LEVEL = 5


T = TypeVar("T")


class _Fragments:
    """JSON of immutable values by identity: the few this replica wrote last."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._texts: OrderedDict[int, tuple[object, str]] = OrderedDict()

    def json(self, value: T, to_dict: Callable[[T], Any]) -> str:
        key = id(value)
        hit = self._texts.get(key)
        if hit is not None and hit[0] is value:
            self._texts.move_to_end(key)
            return hit[1]
        text = _dumps(to_dict(value))
        self._texts[key] = (value, text)  # holding the value keeps its id from being reused
        if len(self._texts) > self._size:
            self._texts.popitem(last=False)
        return text

    def keep(self, value: object, text: str) -> None:
        """``value`` was read from ``text``: writing it again splices the same text."""
        self._texts[id(value)] = (value, text)
        if len(self._texts) > self._size:
            self._texts.popitem(last=False)


_FRAGMENTS = _Fragments(16_384)

# The head fields of a record that stay the same from move to move, in TableRecord's order.
_SteadyHead = tuple[
    str, int, int, bytes, int, tuple[tuple[int, str], ...], str, tuple[tuple[int, bytes], ...],
    bytes, "SeatChanges", "SeatChanges", bool,
]  # fmt: skip


def _steady_head_json(head: _SteadyHead) -> str:
    (table_id, turn_ms, fantasyland_ms, client_seed, created_at_ms, seat_tokens, policy,
     seat_client_seeds, next_server_seed, changes, hand_changes, hand_deadlines) = head  # fmt: skip
    return _dumps(
        {
            "table_id": table_id,
            "turn_time_limit_ms": turn_ms,
            "fantasyland_time_limit_ms": fantasyland_ms,
            "client_seed": client_seed.hex(),
            "created_at_ms": created_at_ms,
            "seat_tokens": [list(t) for t in seat_tokens],
            "client_seed_policy": policy,
            "seat_client_seeds": [[s, seed.hex()] for s, seed in seat_client_seeds],
            "next_server_seed": next_server_seed.hex(),
            "seat_changes": _changes_to_list(changes),
            "hand_seat_changes": _changes_to_list(hand_changes),
            "hand_deadlines": hand_deadlines,
        }
    )


class _SteadyHeads:
    """The JSON of the steady part of a record's head, by its values: the few this replica
    wrote last (a table's stays the same for a hand)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._texts: OrderedDict[_SteadyHead, str] = OrderedDict()

    def json(self, head: _SteadyHead) -> str:
        text = self._texts.get(head)
        if text is not None:
            self._texts.move_to_end(head)
            return text
        text = self._texts[head] = _steady_head_json(head)
        if len(self._texts) > self._size:
            self._texts.popitem(last=False)
        return text


_STEADY_HEADS = _SteadyHeads(1024)  # one per table in play (KEPT_RECORDS of the manager)


class _Decoded:
    """Values read from their JSON bytes, by those bytes: the few this replica read last
    (the parts of a record that other replicas write again unchanged, move after move)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._values: OrderedDict[object, Any] = OrderedDict()

    def get(self, text: bytes, parse: Callable[[bytes], T], *, within: bytes = b"") -> T:
        """The value of ``text`` (read in the context of ``within``: a state's ruleset)."""
        key = (within, text) if within else text
        hit = self._values.get(key)
        if hit is not None:
            self._values.move_to_end(key)
            return hit  # type: ignore[no-any-return]
        value = parse(text)
        self._values[key] = value
        _FRAGMENTS.keep(value, text.decode())
        if len(self._values) > self._size:
            self._values.popitem(last=False)
        return value


_RULESETS = _Decoded(256)  # few tables differ in rules
_STARTS = _Decoded(1024)  # one per table in play (KEPT_RECORDS of the manager)
_ACTIONS = _Decoded(16_384)  # up to 17 per hand of each of those tables
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


def _compact_state(state: MatchState) -> dict[str, Any]:
    return state_to_dict(state, compact=True)


def _ruleset_from_json(text: bytes) -> Ruleset:
    return ruleset_from_dict(json.loads(text), base=DEFAULT_RULESET)


def _state_from_json(text: bytes, ruleset: Ruleset) -> MatchState:
    """A state of a record of format 5 (or 6): written by a server, checked by the engine
    as it was made, and stored by a commit that checked the version and state it replaced,
    so it is read back without the strict decoder's checks (:func:`state_from_own_dict`;
    the same state, property-tested)."""
    try:
        return state_from_own_dict(json.loads(text), ruleset=ruleset)
    except (KeyError, TypeError, IndexError, ValueError) as broken:
        raise ValueError(f"a table record's state does not decode: {broken!r}") from None


def _action_from_json(text: bytes) -> Action:
    return action_from_dict(json.loads(text))


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
    seat_units: tuple[int, ...] = ()  # per seat: running money total (smallest currency unit)
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

    @property
    def token_hashes(self) -> dict[int, str]:
        return dict(self.seat_tokens)

    def units_of(self, seat: int) -> int:
        """The seat's running money total at this table (0 before its first hand)."""
        return self.seat_units[seat] if seat < len(self.seat_units) else 0

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
        """The record in format 6: :meth:`parts_bytes` zlib-compressed (level 1; a record
        of ~3 KB takes ~1 KB) and base64-encoded in ``{"format":6,"z":"..."}``, which a
        replica of an earlier release reads as JSON and refuses as a newer format
        (:class:`NewerRecordError`, retryable) rather than failing on binary bytes."""
        packer = zlib.compressobj(1, zlib.DEFLATED, _RECORD_WINDOW_BITS, _RECORD_MEMORY_LEVEL)
        packed = base64.b64encode(packer.compress(self.parts_bytes()) + packer.flush())
        return b"".join((_PACKED_PREFIX_BYTES, packed, b'"}'))

    def parts_bytes(self) -> bytes:
        """The record in format 5: one JSON object whose parts are laid out one after the
        other, their sizes first, so that a reader finds each part's bytes without parsing
        the rest. The parts that stay the same from move to move (the ruleset, the hand's
        start, each action) are written once per replica and spliced in, and read once per
        replica: a record another replica wrote decodes only its small head and match."""
        # The head's fields that a move changes (lists of integers, written as JSON here),
        # then those that stay the same for a hand (the table's settings, seat tokens,
        # seeds, seat changes), spliced as written last.
        deadlines = ",".join([f"[{seat},{ms}]" for seat, ms in self.seat_deadlines])
        units = ",".join(map(str, self.seat_units))
        steady = _STEADY_HEADS.json(self._steady_head())
        head = f'{{"seat_deadlines":[{deadlines}],"seat_units":[{units}],{steady[1:]}'
        ruleset = _FRAGMENTS.json(self.match.ruleset, _stored_ruleset)
        match = _dumps(state_to_dict(self.match, compact=True))
        start = self.hand_start
        hand_start = "null" if start is None else _FRAGMENTS.json(start, _compact_state)
        actions = [_FRAGMENTS.json(a, action_to_dict) for a in self.hand_actions]
        sizes = ",".join(str(len(p)) for p in (head, ruleset, match, hand_start, *actions))
        return (
            f'{_PARTS_PREFIX}{sizes}],"head":{head},"ruleset":{ruleset},"match":{match},'
            f'"hand_start":{hand_start},"hand_actions":[{",".join(actions)}]}}'
        ).encode()

    def _steady_head(self) -> _SteadyHead:
        return (
            self.table_id,
            self.turn_time_limit_ms,
            self.fantasyland_time_limit_ms,
            self.client_seed,
            self.created_at_ms,
            self.seat_tokens,
            self.client_seed_policy,
            self.seat_client_seeds,
            self.next_server_seed,
            self.seat_changes,
            self.hand_seat_changes,
            self.hand_deadlines,
        )

    @classmethod
    def _from_parts(cls, raw: bytes) -> TableRecord:
        """Read a record of format 5 (see :meth:`to_bytes`)."""
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
            table_id=head["table_id"],
            match=match,
            turn_time_limit_ms=head["turn_time_limit_ms"],
            fantasyland_time_limit_ms=head["fantasyland_time_limit_ms"],
            client_seed=bytes.fromhex(head["client_seed"]),
            created_at_ms=head["created_at_ms"],
            seat_tokens=tuple((int(s), str(h)) for s, h in head["seat_tokens"]),
            hand_start=hand_start,
            hand_actions=actions,
            seat_deadlines=tuple((int(s), int(ms)) for s, ms in head["seat_deadlines"]),
            seat_units=tuple(int(u) for u in head["seat_units"]),
            client_seed_policy=head["client_seed_policy"],
            seat_client_seeds=tuple(
                (int(s), bytes.fromhex(seed)) for s, seed in head["seat_client_seeds"]
            ),
            next_server_seed=bytes.fromhex(head["next_server_seed"]),
            seat_changes=_own_changes(head["seat_changes"]),
            hand_seat_changes=_own_changes(head["hand_seat_changes"]),
            hand_deadlines=bool(head["hand_deadlines"]),
        )

    @classmethod
    def from_bytes(cls, raw: bytes) -> TableRecord:
        """Read a record of any format this server knows. Before format 4, a timeout in
        ``hand_actions`` was stored without its move (the engine chose it): the move is
        recovered from the stored hand (:func:`_recover_timeouts`), and the seat changes
        since the last hand are not known."""
        if raw.startswith(_PACKED_PREFIX_BYTES) and raw.endswith(b'"}'):
            try:
                inner = zlib.decompress(base64.b64decode(raw[len(_PACKED_PREFIX_BYTES) : -2]))
            except (binascii.Error, zlib.error) as broken:
                message = f"a table record of format 6 that does not unpack: {broken}"
                raise ValueError(message) from None
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
        if found not in RECORD_FORMATS or found >= 5:  # formats 5 and 6: read above
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
            seat_units=tuple(int(u) for u in data.get("seat_units", ())),
            client_seed_policy=data.get("client_seed_policy", POLICY_TABLE),
            seat_client_seeds=tuple(
                (int(s), bytes.fromhex(seed)) for s, seed in data.get("seat_client_seeds", ())
            ),
            next_server_seed=bytes.fromhex(data.get("next_server_seed", "")),
            seat_changes=changes[0],
            hand_seat_changes=changes[1],
            hand_deadlines=hand_deadlines,
        )


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
    """The seat changes of a record of format 5 or 6, as :func:`_changes_to_list` wrote them
    (read like its states: by the constructors)."""
    return None if raw is None else tuple(map(_own_change, raw))


def _own_change(raw: Mapping[str, Any]) -> engine.SitDown | engine.StandUp:
    kind = raw["type"]
    if kind == "sit_down":
        return engine.SitDown(raw["seat"], raw["player_id"], raw["at_ms"])
    if kind == "stand_up":
        return engine.StandUp(raw["seat"], raw["at_ms"])
    raise ValueError(f"a table record's seat change is a {kind!r}")


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
    a table keeps every finished hand for its lifetime).

    >>> unpack_history(pack_history({"hand_number": 1}))
    b'{"hand_number":1}'
    >>> unpack_history(b'{"hand_number":1}')  # as stored before compression
    b'{"hand_number":1}'
    """
    return zlib.compress(_dumps(history).encode(), 6)


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
