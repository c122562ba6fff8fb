"""Structured-but-wrong values in every field of every RPC of the three services, on both
stores: never INTERNAL, never UNKNOWN, nothing written by a refused request.

test_fuzz.py throws random messages and raw bytes at the rules service; this one is aimed.
Each RPC has a strategy (``BASES``): a request that is valid against a small world of real
tables. The RPCs come from the service descriptors, so an RPC added later without a strategy
fails ``test_every_rpc_has_a_fuzz_strategy`` (and the fuzz itself) by name. From each base
request the descriptor yields every single-field mutation, by field type: Unicode digits,
numbers past 64 bits in text, huge and empty strings, every enum value and the ones out of
range, the limits of each integer type, ids of the other table, empty and oversized
repeated fields, unset and empty messages, each oneof member; then random combinations of
two or three of them, up to ``REQUESTS_PER_STORE``. Calls carry an operator key (so parsing
is reached), sometimes the other table's seat token, sometimes nothing.

Every answer must be OK or a status with an ErrorInfo reason from the error table (or
RESOURCE_EXHAUSTED for an oversized message; a stream that is fine simply waits:
DEADLINE_EXCEEDED). After every refused call the store's contents (``DEBUG DIGEST`` on
Redis; the in-memory store's tables, records, claims and feed) must be what they were; the
background loops that write on their own (deadlines, relay) are stopped for the run. At the
end health is SERVING and a plain call answers.
"""

# Descriptor-driven: protobuf's descriptor stubs type fields and message classes loosely.
# mypy: disable-error-code="misc,union-attr,arg-type"
from __future__ import annotations

import contextlib
import operator
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
import redis
from google.protobuf import descriptor
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from ofc.codec import hand_history
from ofc.engine import SitDown, StartHand, apply, new_match, seats_to_act
from ofc.policy import timeout
from ofc.shuffle import commitment
from ofc_service.api.errors import REASONS
from ofc_service.server.background import BackgroundServer
from ofc_service.server.config import ServerConfig
from ofcpoker.v1 import cards_pb2, ruleset_pb2, settlement_pb2
from ofcpoker.v1 import rules_service_pb2 as rules_pb
from ofcpoker.v1 import settlement_feed_pb2 as feed_pb
from ofcpoker.v1 import table_service_pb2 as tables_pb

from tests.api.test_fuzz import DOCUMENTED_REASONS
from tests.api.wire import EXAMPLE_1_B, EXAMPLE_A, board, hand
from tests.conftest import RedisServer

SERVICES = (
    rules_pb.DESCRIPTOR.services_by_name["RulesService"],
    tables_pb.DESCRIPTOR.services_by_name["TableService"],
    feed_pb.DESCRIPTOR.services_by_name["SettlementFeedService"],
)
REQUESTS_PER_STORE = 10_000  # two stores: over 20,000 requests in all
API_KEY = "fuzz-operator-key"
SEED = bytes(range(32))
STREAM_TIMEOUT_S = 0.02  # a well-formed Watch or Subscribe waits for news: not a refusal
# RPCs whose valid requests cost milliseconds (a replayed history, the exact solver, a stream
# that waits): their single mutations, and combinations up to this many requests in all.
COSTLY = {
    "ofcpoker.v1.RulesService/VerifyHandHistory": 100,  # a replayed history: ~10 ms
    "ofcpoker.v1.RulesService/VerifyMatch": 100,
    "ofcpoker.v1.RulesService/SolveFantasyland": 250,
    "ofcpoker.v1.SettlementFeedService/Subscribe": 150,
    "ofcpoker.v1.TableService/Watch": 300,
}
KNOWN_REASONS = DOCUMENTED_REASONS | REASONS
QUIET_CODES = {grpc.StatusCode.RESOURCE_EXHAUSTED}  # gRPC's own: no ErrorInfo
FORBIDDEN = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN, grpc.StatusCode.UNAVAILABLE}


# --- the world the base requests are valid in -------------------------------------------------
@dataclass
class World:
    """Two real tables: ``a`` with a hand in progress, ``b`` with one seat taken."""

    channel: grpc.Channel
    table_a: str = ""
    table_b: str = ""
    token_b: str = ""
    last_event_a: str = ""
    history_json: str = ""
    versions: dict[str, int] = field(default_factory=dict)

    def call(self, service: str, method: str, request: Message, response: type[Any]) -> Any:
        raw = self.channel.unary_unary(f"/{service}/{method}")(
            request.SerializeToString(), metadata=(("x-ofc-api-key", API_KEY),), timeout=10
        )
        return response.FromString(raw)

    def build(self) -> World:
        tables = "ofcpoker.v1.TableService"
        created = []
        for k in range(2):
            request = tables_pb.CreateTableRequest(
                request_id=f"world-{k}", seats=2, turn_time_limit_ms=3_600_000
            )
            created.append(
                self.call(tables, "CreateTable", request, tables_pb.CreateTableResponse).table_id
            )
        self.table_a, self.table_b = created
        version = 1
        for seat in range(2):
            joined = self.call(
                tables, "JoinSeat",
                tables_pb.JoinSeatRequest(table_id=self.table_a, seat=seat, player_id=f"p{seat}",
                                          expected_version=version, request_id=f"wa{seat}"),
                tables_pb.JoinSeatResponse,
            )  # fmt: skip
            version = joined.table.version
        self.call(
            tables, "StartHand",
            tables_pb.StartHandRequest(table_id=self.table_a, expected_version=version,
                                       request_id="wstart"),
            tables_pb.StartHandResponse,
        )  # fmt: skip
        joined_b = self.call(
            tables, "JoinSeat",
            tables_pb.JoinSeatRequest(table_id=self.table_b, seat=0, player_id="b0",
                                      expected_version=1, request_id="wb0"),
            tables_pb.JoinSeatResponse,
        )  # fmt: skip
        self.token_b = joined_b.seat_token
        view = self.call(
            tables, "GetTable", tables_pb.GetTableRequest(table_id=self.table_a),
            tables_pb.GetTableResponse,
        ).table  # fmt: skip
        self.last_event_a = view.last_event_id
        self.versions = {self.table_a: view.version, self.table_b: joined_b.table.version}
        self.history_json = _history_json()
        return self


def _history_json() -> str:
    import json

    state = new_match("classic", seats=2)
    for seat in range(2):
        state, _ = apply(state, SitDown(seat, f"p{seat}"))
    actions: list[Any] = [StartHand(SEED, b"fuzz", at_ms=0)]
    initial = state
    state, _ = apply(state, actions[0])
    while waiting := seats_to_act(state):
        action = timeout(state, waiting[0], at_ms=len(actions))
        state, _ = apply(state, action)
        actions.append(action)
    return json.dumps(hand_history(initial, actions))


def _overrides() -> ruleset_pb2.RulesetOverrides:
    o = ruleset_pb2.RulesetOverrides(name="house", loss_cap=30, unit_value=5, stay_cards=14)
    o.streets.streets.add(deal=5, place=5)
    for _ in range(4):
        o.streets.streets.add(deal=3, place=2)
    o.royalty_table = "standard"
    o.scoring.row_value, o.scoring.scoop_bonus = 1, 3
    o.fantasyland_entry.entries.add(category=cards_pb2.HAND_CATEGORY_PAIR, min_rank="Q", cards=14)
    o.stay_conditions.conditions.add(
        row=cards_pb2.ROW_POSITION_TOP, category=cards_pb2.HAND_CATEGORY_TRIPS
    )
    return o


def _ruleset() -> ruleset_pb2.RulesetSpec:
    return ruleset_pb2.RulesetSpec(preset="pineapple", overrides=_overrides())


def _settle_hand() -> settlement_pb2.Hand:
    h = hand(EXAMPLE_A, EXAMPLE_1_B, ids=("alice", "bob"))
    h.players[0].in_fantasyland, h.players[0].fantasyland_streak = True, 1
    h.pair_unit_values.add(a=0, b=1, unit_value=5)
    h.ruleset.CopyFrom(ruleset_pb2.RulesetSpec(preset="classic"))
    return h


# One valid request per RPC, in the world above. An RPC without an entry fails the tests.
Base = Callable[[World], Message]
BASES: dict[str, Base] = {
    "ofcpoker.v1.RulesService/EvaluateRow": lambda w: rules_pb.EvaluateRowRequest(
        cards=["As", "Kd", "Qh"], row=cards_pb2.ROW_POSITION_TOP, ruleset=_ruleset()
    ),
    "ofcpoker.v1.RulesService/ValidateBoard": lambda w: rules_pb.ValidateBoardRequest(
        board=board(EXAMPLE_A), ruleset=_ruleset(), in_fantasyland=True, fantasyland_streak=1
    ),
    "ofcpoker.v1.RulesService/SettleHand": lambda w: rules_pb.SettleHandRequest(
        hand=_settle_hand()
    ),
    "ofcpoker.v1.RulesService/SettleHands": lambda w: rules_pb.SettleHandsRequest(
        hands=[_settle_hand()]
    ),
    "ofcpoker.v1.RulesService/SettleHandsStream": lambda w: rules_pb.SettleHandsStreamRequest(
        hand_id="h-1", hand=_settle_hand()
    ),
    "ofcpoker.v1.RulesService/ListPresets": lambda w: rules_pb.ListPresetsRequest(),
    "ofcpoker.v1.RulesService/ResolveRuleset": lambda w: rules_pb.ResolveRulesetRequest(
        ruleset=_ruleset()
    ),
    "ofcpoker.v1.RulesService/SolveFantasyland": lambda w: rules_pb.SolveFantasylandRequest(
        cards=["As", "Ad", "Ah", "Kc", "Kd", "9s", "8h", "7d", "6c", "5s", "Qc", "Jc", "2c", "3c"],
        ruleset=ruleset_pb2.RulesetSpec(preset="classic"),
        in_fantasyland=True,
        fantasyland_value=10,
        fantasyland_streak=1,
    ),
    "ofcpoker.v1.RulesService/DeriveDeck": lambda w: rules_pb.DeriveDeckRequest(
        server_seed_hex=SEED.hex(), client_seed_text="fuzz", nonce=3, include_first_block=True
    ),
    "ofcpoker.v1.RulesService/VerifyCommitment": lambda w: rules_pb.VerifyCommitmentRequest(
        server_seed_bytes=SEED, commitment=commitment(SEED)
    ),
    "ofcpoker.v1.RulesService/VerifyHandHistory": lambda w: rules_pb.VerifyHandHistoryRequest(
        history_json=w.history_json, expected_ruleset=ruleset_pb2.RulesetSpec(preset="classic")
    ),
    "ofcpoker.v1.RulesService/VerifyMatch": lambda w: rules_pb.VerifyMatchRequest(
        history_jsons=[w.history_json],
        expected_ruleset=ruleset_pb2.RulesetSpec(preset="classic"),
        check_policy=True,
    ),
    "ofcpoker.v1.TableService/CreateTable": lambda w: tables_pb.CreateTableRequest(
        ruleset=ruleset_pb2.RulesetSpec(preset="classic"),
        seats=3,
        turn_time_limit_ms=60_000,
        fantasyland_time_limit_ms=120_000,
        max_hands=10,
        client_seed="house",
        request_id="fuzz-create",
        pair_unit_values=[settlement_pb2.PairUnitValue(a=0, b=1, unit_value=5)],
        client_seed_policy=tables_pb.CLIENT_SEED_POLICY_PLAYERS,
    ),
    "ofcpoker.v1.TableService/GetTable": lambda w: tables_pb.GetTableRequest(
        table_id=w.table_a, as_seat=0
    ),
    "ofcpoker.v1.TableService/JoinSeat": lambda w: tables_pb.JoinSeatRequest(
        table_id=w.table_b, seat=1, player_id="b1",
        expected_version=w.versions[w.table_b], request_id="fuzz-join",
    ),
    "ofcpoker.v1.TableService/LeaveSeat": lambda w: tables_pb.LeaveSeatRequest(
        table_id=w.table_b, seat=0, expected_version=w.versions[w.table_b],
        request_id="fuzz-leave",
    ),
    "ofcpoker.v1.TableService/StartHand": lambda w: tables_pb.StartHandRequest(
        table_id=w.table_b, expected_version=w.versions[w.table_b], request_id="fuzz-start"
    ),
    "ofcpoker.v1.TableService/PlaceCards": lambda w: tables_pb.PlaceCardsRequest(
        table_id=w.table_a, seat=0,
        placements=[tables_pb.Placement(card=c, row=cards_pb2.ROW_POSITION_BOTTOM)
                    for c in ("As", "Kd", "Qh", "Jc", "Ts")],
        discard="", expected_version=w.versions[w.table_a], request_id="fuzz-place",
    ),
    "ofcpoker.v1.TableService/SetFantasyland": lambda w: tables_pb.SetFantasylandRequest(
        table_id=w.table_a, seat=0, board=board(EXAMPLE_A), discards=["Kh"],
        expected_version=w.versions[w.table_a], request_id="fuzz-fantasyland",
    ),
    "ofcpoker.v1.TableService/SetClientSeed": lambda w: tables_pb.SetClientSeedRequest(
        table_id=w.table_b, seat=0, client_seed="mine",
        expected_version=w.versions[w.table_b], request_id="fuzz-seed",
    ),
    "ofcpoker.v1.TableService/GetHandHistory": lambda w: tables_pb.GetHandHistoryRequest(
        table_id=w.table_a, hand_number=1
    ),
    "ofcpoker.v1.TableService/ListHands": lambda w: tables_pb.ListHandsRequest(
        table_id=w.table_a, page_size=10, page_token="1"
    ),
    "ofcpoker.v1.TableService/Watch": lambda w: tables_pb.WatchRequest(
        table_id=w.table_a, as_seat=0, after_event_id=w.last_event_a, batch_events=True
    ),
    "ofcpoker.v1.SettlementFeedService/Subscribe": lambda w: feed_pb.SubscribeRequest(
        group="ledger", consumer="c-1", batch_size=10
    ),
    "ofcpoker.v1.SettlementFeedService/Acknowledge": lambda w: feed_pb.AcknowledgeRequest(
        group="ledger", settlement_ids=[f"{w.table_a}:1"], stream_ids=["1700000000000-0"]
    ),
}


# --- wrong values, by field type ----------------------------------------------------------------
def wrong_strings(world: World) -> list[str]:
    return [
        "", " ", "²", "١٢", "٣-٤", "0", "-1", "007", "1e3", "1-99999999999999999999",
        "18446744073709551616-0", "99999999999999999999", f"{2**64 - 1}-{2**64 - 1}",
        "{x}", "a b", "\x00", "\u202e", "\ufffd", "As", "10♠", "zzz", "t:²", "t:-1", ":1",
        "😀" * 20, "x" * 65, "y" * 129, "z" * 300, "w" * 70_000, world.table_b,
        f"{world.table_b}:1", world.token_b, world.last_event_a,
    ]  # fmt: skip


_INT_LIMITS = {
    descriptor.FieldDescriptor.TYPE_UINT32: [0, 1, 4, 13, 255, 2**31 - 1, 2**31, 2**32 - 1],
    descriptor.FieldDescriptor.TYPE_UINT64: [0, 1, 2**32, 2**53 + 1, 2**63, 2**64 - 1],
    descriptor.FieldDescriptor.TYPE_INT32: [-(2**31), -1, 0, 1, 2**31 - 1],
    descriptor.FieldDescriptor.TYPE_SINT32: [-(2**31), -1, 0, 1, 2**31 - 1],
    descriptor.FieldDescriptor.TYPE_INT64: [-(2**63), -1, 0, 2**63 - 1],
    descriptor.FieldDescriptor.TYPE_SINT64: [-(2**63), -1, 0, 2**63 - 1],
}
WRONG_BYTES = [b"", b"\x00" * 32, b"\xff" * 31, b"\xff" * 33, b"x" * 70_000]
OVERSIZED = 2_000  # items in an oversized repeated field (every limit is at most 1000)

Mutation = Callable[[Message], None]


def _enum_values(f: descriptor.FieldDescriptor) -> list[int]:
    defined = [v.number for v in f.enum_type.values]
    return [*defined, -1, max(defined) + 1, 2**31 - 1, -(2**31)]


def _scalars(f: descriptor.FieldDescriptor, world: World) -> list[Any]:
    if f.type == f.TYPE_STRING:
        return wrong_strings(world)
    if f.type == f.TYPE_BYTES:
        return WRONG_BYTES
    if f.type == f.TYPE_BOOL:
        return [False, True]
    if f.type == f.TYPE_ENUM:
        return _enum_values(f)
    if f.type in _INT_LIMITS:
        return _INT_LIMITS[f.type]
    raise AssertionError(f"no wrong values for {f.full_name} (type {f.type}): add them")


def _at(path: tuple[str, ...], message: Message) -> Message:
    for name in path:
        message = getattr(message, name) if not name.isdigit() else message[int(name)]  # type: ignore[index]
    return message


def mutations(
    template: Message, world: World, path: tuple[str, ...] = (), depth: int = 0
) -> Iterator[tuple[str, Mutation]]:
    """Every single-field change of ``template`` (recursively, 4 levels deep), named."""
    for f in template.DESCRIPTOR.fields:
        name = ".".join((*path, f.name))

        def owner(m: Message, path: tuple[str, ...] = path) -> Message:
            return _at(path, m)

        if f.is_repeated:
            yield f"{name}=[]", lambda m, f=f, owner=owner: owner(m).ClearField(f.name)
            if f.type == f.TYPE_MESSAGE:
                current = getattr(template, f.name)
                element = current[0] if len(current) else f.message_type._concrete_class()

                def oversize(m: Message, f: Any = f, owner: Any = owner, e: Any = element) -> None:
                    getattr(owner(m), f.name).extend([e] * OVERSIZED)

                yield f"{name}*{OVERSIZED}", oversize
                yield f"{name}+=empty", lambda m, f=f, owner=owner: getattr(owner(m), f.name).add()
                if len(current) and depth < 4:
                    yield from mutations(current[0], world, (*path, f.name, "0"), depth + 1)
            else:
                for value in _scalars(f, world):

                    def replace(m: Message, f: Any = f, owner: Any = owner, v: Any = value) -> None:
                        items = getattr(owner(m), f.name)
                        if len(items):
                            items[0] = v
                        else:
                            items.append(v)

                    yield f"{name}[0]={value!r:.30}", replace

                def many(m: Message, f: Any = f, owner: Any = owner) -> None:
                    items = getattr(owner(m), f.name)
                    items.extend([items[0] if len(items) else _scalars(f, world)[-1]] * OVERSIZED)

                yield f"{name}*{OVERSIZED}", many
        elif f.type == f.TYPE_MESSAGE:
            yield f"{name}=unset", lambda m, f=f, owner=owner: owner(m).ClearField(f.name)
            yield f"{name}=empty", lambda m, f=f, owner=owner: (
                owner(m).ClearField(f.name), getattr(owner(m), f.name).SetInParent()
            )
            if depth < 4:
                yield from mutations(getattr(template, f.name), world, (*path, f.name), depth + 1)
        else:
            for value in _scalars(f, world):

                def put(m: Message, f: Any = f, owner: Any = owner, v: Any = value) -> None:
                    setattr(owner(m), f.name, v)

                yield f"{name}={value!r:.30}", put
            if f.containing_oneof is not None or f.has_presence:
                yield f"{name}=unset", lambda m, f=f, owner=owner: owner(m).ClearField(f.name)


def requests_for(method: str, world: World, count: int, rng: random.Random) -> Iterator[Message]:
    """Every single-field mutation of the method's base request, then random pairs and
    triples of them, ``count`` requests in all (at least every single mutation once, except
    for a costly RPC: a sample of them)."""
    base = BASES[method](world)
    single = list(mutations(base, world))
    if not single:  # a request without fields (ListPresets): it is what it is
        yield base
        return
    if method in COSTLY and len(single) > count:
        single = rng.sample(single, count)
    for k in range(max(count, len(single))):
        message = type(base)()
        message.CopyFrom(base)
        picks = [single[k]] if k < len(single) else rng.sample(single, rng.choice((2, 3)))
        for _, mutate in picks:
            with contextlib.suppress(ValueError, TypeError, IndexError):  # a cleared parent
                mutate(message)
        yield message


# --- calling and judging --------------------------------------------------------------------
def _reason(error: grpc.RpcError) -> str:
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            for detail in status_pb2.Status.FromString(value).details:
                info = error_details_pb2.ErrorInfo()
                if detail.Unpack(info):
                    return str(info.reason)
    return ""


def _metadata(k: int, world: World) -> tuple[tuple[str, str], ...]:
    if k % 11 == 5:
        return ()  # no credentials
    if k % 7 == 3:
        return (("x-ofc-seat-token", world.token_b),)  # the other table's seat
    return (("x-ofc-api-key", API_KEY),)


def call(
    channel: grpc.Channel, method: descriptor.MethodDescriptor, request: Message, k: int,
    world: World,
) -> tuple[grpc.StatusCode, str, bool]:  # fmt: skip
    """(code, reason, refused) of one call; for a stream, of its first message."""
    path = f"/{method.containing_service.full_name}/{method.name}"
    data, metadata = request.SerializeToString(), _metadata(k, world)
    try:
        if method.client_streaming:
            responses = channel.stream_stream(path)(iter([data]), metadata=metadata, timeout=10)
            for raw in responses:
                outcome = rules_pb.SettleHandsStreamResponse.FromString(raw).outcome
                if outcome.WhichOneof("result") == "error":
                    assert outcome.error.reason in KNOWN_REASONS, outcome.error
                    assert outcome.error.code != grpc.StatusCode.INTERNAL.value[0], outcome.error
        elif method.server_streaming:
            stream = channel.unary_stream(path)(data, metadata=metadata, timeout=STREAM_TIMEOUT_S)
            next(stream, None)
            stream.cancel()
        else:
            channel.unary_unary(path)(data, metadata=metadata, timeout=10)
    except grpc.RpcError as error:
        code = error.code()
        if code == grpc.StatusCode.CANCELLED and method.server_streaming:
            return grpc.StatusCode.OK, "", False  # our own cancel after the first message
        if code == grpc.StatusCode.DEADLINE_EXCEEDED and method.server_streaming:
            return code, "", False  # a well-formed stream waiting for news
        return code, _reason(error), True
    return grpc.StatusCode.OK, "", False


def _memory_digest(server: BackgroundServer) -> object:
    store, feed = server.server.store, server.server.feed
    tables = tuple(
        (tid, t.version, t.expires_at, t.deadline_ms, t.last_event, len(t.extra))
        for tid, t in sorted(store._tables.items())  # type: ignore[attr-defined]
    )
    return (
        tables,
        len(store._records),  # type: ignore[attr-defined]
        len(store._claims),  # type: ignore[attr-defined]
        sorted((k, len(v)) for k, v in store._outboxes.items()),  # type: ignore[attr-defined]
        len(feed._ids),
        sorted((g, v.delivered, len(v.pending)) for g, v in feed._groups.items()),
    )


@dataclass
class Run:
    codes: Counter[str] = field(default_factory=Counter)
    by_method: Counter[str] = field(default_factory=Counter)
    method_seconds: Counter[str] = field(default_factory=Counter)  # milliseconds
    requests: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class Store:
    """How to fingerprint a store's contents, and when two fingerprints mean "unchanged"."""

    digest: Callable[[], Any]
    same: Callable[[Any, Any], bool]


def _redis_digest(client: redis.Redis) -> tuple[bytes, int]:
    """DEBUG DIGEST (the whole dataset, expiry times included) and the count of keys that
    expired so far: a create record lives 60 s, and its expiry is no request's write."""
    pipe = client.pipeline(transaction=False)
    pipe.execute_command("DEBUG", "DIGEST")  # type: ignore[no-untyped-call]
    pipe.info("stats")
    digest, stats = pipe.execute()
    return digest, int(stats["expired_keys"])


def _redis_same(before: tuple[bytes, int], after: tuple[bytes, int]) -> bool:
    return before[0] == after[0] or before[1] != after[1]


@pytest.fixture(params=["memory", "redis"])
def store_server(request: pytest.FixtureRequest) -> Iterator[tuple[BackgroundServer, Store]]:
    redis_server = None
    if request.param == "redis":
        redis_server = RedisServer("--enable-debug-command", "local")
    config = ServerConfig(
        listen="127.0.0.1:0", metrics_listen="", http_listen="", api_keys=API_KEY,
        grace_seconds=0.5,
        redis_url=redis_server.url if redis_server else "",
    )  # fmt: skip
    try:
        with BackgroundServer(config) as server:
            # Loops that write on their own would move the digests: stopped for the run.
            server._call(server.server.sweeper.stop())
            if server.server.relay is not None:
                server._call(server.server.relay.stop())
            if redis_server is not None:
                client = redis.Redis(port=redis_server.port)
                yield server, Store(lambda: _redis_digest(client), _redis_same)
                client.close()
            else:
                yield server, Store(lambda: _memory_digest(server), operator.eq)
    finally:
        if redis_server is not None:
            redis_server.stop()


def _all_methods() -> list[descriptor.MethodDescriptor]:
    return [m for service in SERVICES for m in service.methods]


def test_every_rpc_has_a_fuzz_strategy() -> None:
    missing = [
        f"{m.containing_service.full_name}/{m.name}"
        for m in _all_methods()
        if f"{m.containing_service.full_name}/{m.name}" not in BASES
    ]
    assert not missing, (
        f"RPCs without a fuzz strategy: {missing}; add a valid base request for each to "
        "BASES in tests/api/test_fuzz_fields.py (its fields are then mutated one by one)"
    )
    assert len(BASES) == len(_all_methods()), "a strategy for an RPC that no longer exists"


def test_wrong_values_in_every_field_are_refused_cleanly(
    store_server: tuple[BackgroundServer, Store],
) -> None:
    test_every_rpc_has_a_fuzz_strategy()
    server, store = store_server
    digest, same = store.digest, store.same
    run = Run()
    started = time.perf_counter()
    with grpc.insecure_channel(
        server.address, options=[("grpc.max_send_message_length", 64 * 1024 * 1024)]
    ) as channel:
        world = World(channel).build()
        methods = _all_methods()
        cheap = len(methods) - len(COSTLY) - 1  # and ListPresets: one request
        per_method = (REQUESTS_PER_STORE - sum(COSTLY.values())) // cheap + 1
        before = digest()
        for method in methods:
            name = f"{method.containing_service.full_name}/{method.name}"
            rng = random.Random(name)  # deterministic: the same requests every run
            method_started = time.perf_counter()
            count = COSTLY.get(name, per_method)
            for k, request in enumerate(requests_for(name, world, count, rng)):
                code, reason, refused = call(channel, method, request, k, world)
                run.requests += 1
                run.by_method[name] += 1
                run.codes[code.name] += 1
                assert code not in FORBIDDEN, (name, code, reason, str(request)[:300])
                if refused and code not in QUIET_CODES:
                    assert reason in KNOWN_REASONS, (name, code, reason, str(request)[:300])
                after = digest()
                if refused:
                    assert same(before, after), f"{name} refused ({code.name} {reason}), wrote"
                before = after
            run.method_seconds[name] += round(1000 * (time.perf_counter() - method_started))
        run.seconds = time.perf_counter() - started
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", *(s.full_name for s in SERVICES)):
            status = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert status.status == health_pb2.HealthCheckResponse.SERVING, service
        world.call(
            "ofcpoker.v1.RulesService", "EvaluateRow",
            rules_pb.EvaluateRowRequest(cards=["As", "Ad", "Ah"]), rules_pb.EvaluateRowResponse,
        )  # fmt: skip
    print(f"\nfuzz: {run.requests} requests in {run.seconds:.1f} s: {dict(run.codes)}")
    top = run.method_seconds.most_common(4)
    slowest = ", ".join(f"{m.rsplit('/')[1]} {t / 1000:.1f}s" for m, t in top)
    print(f"fuzz: slowest {slowest}")
    assert run.requests >= REQUESTS_PER_STORE
    assert run.codes["OK"] > 0 and run.codes["INVALID_ARGUMENT"] > run.requests // 3
