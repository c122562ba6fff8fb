// Every RPC of the rules, table and settlement-feed services, from a TypeScript client
// (@connectrpc/connect-node), over each wire protocol the service's HTTP port speaks:
// Connect JSON (HTTP/1.1, as curl and browsers), Connect binary (HTTP/2) and gRPC-Web
// (HTTP/1.1, as browsers). Each protocol plays a Pineapple hand at its own table, watched
// live by one seat, then verifies it, reads it back, leaves, and consumes its settlement from
// the feed; errors arrive with their code and ErrorInfo / BadRequest details, a deadline ends
// a Watch with DEADLINE_EXCEEDED and an abort cancels one.
//
// Run by tests/connect/test_connect_e2e.py against a real `ofc serve`:
//   OFC_HTTP_URL=http://127.0.0.1:8080 OFC_API_KEY=... node --test .test-build/connect/rpcs.e2e.mjs

import assert from "node:assert/strict";
import { test } from "node:test";
import { equals } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { Code, ConnectError, createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { RowPosition } from "../../src/gen/ofcpoker/v1/cards_pb";
import { rulesetSpec } from "../../src/api";
import { RulesetParametersSchema } from "../../src/gen/ofcpoker/v1/ruleset_pb";
import { RulesService } from "../../src/gen/ofcpoker/v1/rules_service_pb";
import { SettlementFeedService } from "../../src/gen/ofcpoker/v1/settlement_feed_pb";
import { ClientSeedPolicy, TableService, type TableView, type WatchResponse } from "../../src/gen/ofcpoker/v1/table_service_pb";

const BASE_URL = required("OFC_HTTP_URL").replace(/\/$/, "");
const API_KEY = required("OFC_API_KEY");
const CALL_MS = 15_000;
const WORKED_EXAMPLE_1 = [
  { board: { top: ["Ac", "3d", "2h"], middle: ["6c", "6d", "9h", "8s", "4c"], bottom: ["9c", "8c", "7d", "6h", "5s"] } },
  { board: { top: ["Kd", "3c", "2d"], middle: ["5c", "5d", "9d", "8h", "4d"], bottom: ["7c", "7h", "Qd", "Js", "4s"] } },
];
const ROWS = [RowPosition.BOTTOM, RowPosition.MIDDLE, RowPosition.TOP] as const;
const ROW_SIZE = new Map<RowPosition, number>([[RowPosition.BOTTOM, 5], [RowPosition.MIDDLE, 5], [RowPosition.TOP, 3]]);
const RANKS = "23456789TJQKA";

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

interface Protocol {
  name: string;
  transport: (interceptors: Interceptor[]) => Transport;
}

const PROTOCOLS: Protocol[] = [
  { name: "connect-json", transport: (interceptors) =>
    createConnectTransport({ baseUrl: BASE_URL, httpVersion: "1.1", useBinaryFormat: false, interceptors }) },
  { name: "connect-binary", transport: (interceptors) =>
    createConnectTransport({ baseUrl: BASE_URL, httpVersion: "2", useBinaryFormat: true, interceptors }) },
  { name: "grpc-web", transport: (interceptors) =>
    createGrpcWebTransport({ baseUrl: BASE_URL, httpVersion: "1.1", useBinaryFormat: true, interceptors }) },
];

interface Clients {
  rules: Client<typeof RulesService>;
  tables: Client<typeof TableService>;
  feed: Client<typeof SettlementFeedService>;
}

/** Clients sending `headers` on every call; every method called is added to `called`. */
function clients(protocol: Protocol, called: Set<string>, headers: Record<string, string> = {}): Clients {
  const record: Interceptor = (next) => async (req) => {
    called.add(`${req.service.typeName}/${req.method.name}`);
    for (const [key, value] of Object.entries(headers)) req.header.set(key, value);
    return await next(req);
  };
  const transport = protocol.transport([record]);
  return {
    rules: createClient(RulesService, transport),
    tables: createClient(TableService, transport),
    feed: createClient(SettlementFeedService, transport),
  };
}

/** Every method of the three services, as `ofcpoker.v1.Service/Method`. */
function everyMethod(): Set<string> {
  const all = new Set<string>();
  for (const service of [RulesService, TableService, SettlementFeedService]) {
    for (const method of service.methods) all.add(`${service.typeName}/${method.name}`);
  }
  return all;
}

// google.rpc.ErrorInfo {1 reason, 2 domain, 3 metadata} and BadRequest {1 field_violations
// {1 field, 2 description}}, read from the wire: the page ships no google.rpc types.
function errorInfo(error: ConnectError): { reason: string; domain: string; metadata: Map<string, string> } | undefined {
  for (const detail of error.details) {
    if (!("type" in detail) || detail.type !== "google.rpc.ErrorInfo") continue;
    const out = { reason: "", domain: "", metadata: new Map<string, string>() };
    const reader = new BinaryReader(detail.value);
    while (reader.pos < reader.len) {
      const [field, wireType] = reader.tag();
      if (field === 1) out.reason = reader.string();
      else if (field === 2) out.domain = reader.string();
      else if (field === 3) {
        const entry = new BinaryReader(reader.bytes());
        let key = "";
        let value = "";
        while (entry.pos < entry.len) {
          const [f, w] = entry.tag();
          if (f === 1) key = entry.string();
          else if (f === 2) value = entry.string();
          else entry.skip(w);
        }
        out.metadata.set(key, value);
      } else reader.skip(wireType);
    }
    return out;
  }
  return undefined;
}

function badRequestFields(error: ConnectError): string[] {
  const fields: string[] = [];
  for (const detail of error.details) {
    if (!("type" in detail) || detail.type !== "google.rpc.BadRequest") continue;
    const reader = new BinaryReader(detail.value);
    while (reader.pos < reader.len) {
      const [field, wireType] = reader.tag();
      if (field !== 1) { reader.skip(wireType); continue; }
      const violation = new BinaryReader(reader.bytes());
      while (violation.pos < violation.len) {
        const [f, w] = violation.tag();
        if (f === 1) fields.push(violation.string());
        else violation.skip(w);
      }
    }
  }
  return fields;
}

/** The ConnectError a call fails with (the test fails if it succeeds). */
async function failure(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (error) {
    return ConnectError.from(error);
  }
  assert.fail("the call succeeded");
}

function assertError(error: ConnectError, code: Code, reason: string, field?: string): void {
  assert.equal(Code[error.code], Code[code], `${error.message}`);
  const info = errorInfo(error);
  assert.ok(info, `no ErrorInfo in ${error.message}`);
  assert.equal(info.reason, reason);
  assert.equal(info.domain, "ofc.poker");
  if (field !== undefined) {
    assert.equal(info.metadata.get("field"), field);
    assert.deepEqual(badRequestFields(error), [field]);
  }
}

/** A legal move for the seat's dealt cards: the highest kept, each into the first row with room. */
function move(view: TableView): { placements: { card: string; row: RowPosition }[]; discard: string } {
  const hand = view.hand!;
  const me = hand.seats.find((s) => s.seat === view.viewerSeat)!;
  const place = view.ruleset!.streets[hand.street]!.place;
  const cards = [...me.pending].sort((a, b) => RANKS.indexOf(b[0]!) - RANKS.indexOf(a[0]!));
  const board = me.board!;
  const room = new Map(ROWS.map((row) => {
    const placed = row === RowPosition.TOP ? board.top : row === RowPosition.MIDDLE ? board.middle : board.bottom;
    return [row, ROW_SIZE.get(row)! - placed.length] as const;
  }));
  const placements = cards.slice(0, place).map((card) => {
    const row = ROWS.find((r) => room.get(r)! > 0)!;
    room.set(row, room.get(row)! - 1);
    return { card, row };
  });
  return { placements, discard: cards.length > place ? cards[cards.length - 1]! : "" };
}

/** The rules service's RPCs; returns nothing, asserts what each answers. */
async function rulesCalls(api: Clients): Promise<void> {
  const presets = await api.rules.listPresets({});
  assert.ok(presets.presets.some((p) => p.name === "pineapple"));
  // The page asks the solver with its table's ruleset written out as overrides of classic:
  // every preset must come back exactly as itself.
  for (const preset of presets.presets) {
    const again = await api.rules.resolveRuleset({ ruleset: rulesetSpec(preset) });
    assert.ok(equals(RulesetParametersSchema, again.ruleset!, preset), `${preset.name} written out as overrides is itself`);
  }
  const resolved = await api.rules.resolveRuleset({ ruleset: { preset: "pineapple" } });
  assert.deepEqual(resolved.ruleset!.streets.map((s) => [s.deal, s.place]), [[5, 5], [3, 2], [3, 2], [3, 2], [3, 2]]);
  const row = await api.rules.evaluateRow({ cards: ["As", "Ad", "Kc"], row: RowPosition.TOP });
  assert.equal(row.hand!.name, "pair of aces, king kicker");
  const board = await api.rules.validateBoard({ board: WORKED_EXAMPLE_1[0]!.board });
  assert.equal(board.assessment!.fouled, false);
  const settled = await api.rules.settleHand({ hand: { players: WORKED_EXAMPLE_1 } });
  assert.deepEqual(settled.settlement!.players.map((p) => p.points), [8, -8]);
  const batch = await api.rules.settleHands({ hands: [{ players: WORKED_EXAMPLE_1 }, { players: WORKED_EXAMPLE_1 }] });
  assert.deepEqual(batch.results.map((r) => r.result.case === "settlement" ? r.result.value.players[0]!.points : r.result.case), [8, 8]);
  async function* hands() {
    for (const id of ["a", "b", "c"]) yield { handId: id, hand: { players: WORKED_EXAMPLE_1 } };
  }
  const streamed: string[] = [];
  for await (const res of api.rules.settleHandsStream(hands(), { timeoutMs: CALL_MS })) {
    const result = res.outcome!.result;
    streamed.push(`${res.handId}:${result.case === "settlement" ? result.value.players[0]!.points : result.case}`);
  }
  assert.deepEqual(streamed, ["a:8", "b:8", "c:8"]);
  const solved = await api.rules.solveFantasyland({
    cards: ["As", "Ah", "Ad", "Kc", "Kd", "Qs", "Qh", "Jc", "Tc", "9c", "8c", "7c", "2d", "3h"],
  });
  assert.equal(solved.board!.top.length + solved.board!.middle.length + solved.board!.bottom.length, 13);
  const seed = "00".repeat(32);
  const deck = await api.rules.deriveDeck({ serverSeed: { case: "serverSeedHex", value: seed }, nonce: 1n });
  assert.equal(deck.deck.length, 52);
  assert.equal(new Set(deck.deck).size, 52);
  const commitment = await api.rules.verifyCommitment({ serverSeed: { case: "serverSeedHex", value: seed }, commitment: deck.commitment });
  assert.equal(commitment.valid, true);
  // An error with its details: the code, the ErrorInfo reason and the BadRequest field.
  assertError(await failure(api.rules.evaluateRow({ cards: ["Zz", "As", "Kd"] })), Code.InvalidArgument, "INVALID_CARD", "cards[0]");
}

/** Reads a Watch until `until(message)` is true; returns everything it read. */
async function readWatch(stream: AsyncIterable<WatchResponse>, until: (m: WatchResponse) => boolean): Promise<WatchResponse[]> {
  const seen: WatchResponse[] = [];
  for await (const message of stream) {
    seen.push(message);
    if (until(message)) break;
  }
  return seen;
}

function events(messages: WatchResponse[]) {
  return messages.flatMap((m) =>
    m.kind.case === "event" ? [m.kind.value] : m.kind.case === "events" ? m.kind.value.events : []);
}

async function playAHand(protocol: Protocol, called: Set<string>): Promise<void> {
  const host = clients(protocol, called, { "x-ofc-api-key": API_KEY });
  const anonymous = clients(protocol, called);
  await rulesCalls(anonymous);

  const refused = await failure(anonymous.tables.createTable({ seats: 2, requestId: `${protocol.name}-refused` }));
  assertError(refused, Code.Unauthenticated, "UNAUTHENTICATED");
  const created = await host.tables.createTable({
    // no Fantasyland: bob leaves after the hand, which a Fantasyland he earned would refuse
    seats: 2, ruleset: { preset: "pineapple", overrides: { fantasylandEntry: { entries: [] } } },
    turnTimeLimitMs: 60_000, requestId: `${protocol.name}-create`,
    clientSeed: `e2e ${protocol.name}`, clientSeedPolicy: ClientSeedPolicy.PLAYERS,
  });
  const tableId = created.tableId;
  const j0 = await anonymous.tables.joinSeat({ tableId, seat: 0, playerId: "ann", expectedVersion: created.table!.version, requestId: `${protocol.name}-j0` });
  const j1 = await anonymous.tables.joinSeat({ tableId, seat: 1, playerId: "bob", expectedVersion: j0.table!.version, requestId: `${protocol.name}-j1` });
  const seats = [
    clients(protocol, called, { "x-ofc-seat-token": j0.seatToken }),
    clients(protocol, called, { "x-ofc-seat-token": j1.seatToken }),
  ];
  // A stale version is refused with its reason, and changes nothing.
  assertError(await failure(seats[0]!.tables.startHand({ tableId, expectedVersion: 1n, requestId: `${protocol.name}-stale` })),
    Code.Aborted, "STALE_VERSION");
  const seeded = await seats[0]!.tables.setClientSeed({
    tableId, seat: 0, clientSeed: "ann's seed", expectedVersion: j1.table!.version, requestId: `${protocol.name}-seed`,
  });
  assert.ok(seeded.table!.seats[0]!.clientSeed.length > 0);

  // Ann watches live: a snapshot first, then every event as her seat sees it.
  const watchAbort = new AbortController();
  const watch = seats[0]!.tables.watch({ tableId, batchEvents: true }, { signal: watchAbort.signal })[Symbol.asyncIterator]();
  const first = await watch.next();
  assert.equal(first.value?.kind.case, "snapshot");
  const watched = (async () => {
    const rest = { [Symbol.asyncIterator]: () => watch };
    return await readWatch(rest, (m) => events([m]).some((e) => e.kind.case === "buttonMoved"));
  })();

  let view = (await seats[0]!.tables.startHand({ tableId, expectedVersion: seeded.table!.version, requestId: `${protocol.name}-start` })).table!;
  let step = 0;
  while (!view.hand!.over) {
    const turn = view.hand!.turn ?? view.hand!.toAct[0]!;
    const mine = (await seats[turn]!.tables.getTable({ tableId })).table!;
    assert.equal(mine.viewerSeat, turn);
    const { placements, discard } = move(mine);
    view = (await seats[turn]!.tables.placeCards({
      tableId, seat: turn, placements, discard, expectedVersion: mine.version, requestId: `${protocol.name}-move-${step++}`,
    })).table!;
  }
  const settlement = view.hand!.settlement!;
  assert.equal(settlement.players.reduce((sum, p) => sum + p.points, 0), 0, "zero-sum");

  const seen = await watched;
  watchAbort.abort();
  const kinds = new Set(events(seen).map((e) => e.kind.case));
  for (const kind of ["handStarted", "cardsDealt", "cardsPlaced", "discardMade", "handSettled", "seedRevealed", "buttonMoved"]) {
    assert.ok(kinds.has(kind as never), `the watch saw no ${kind}`);
  }
  for (const event of events(seen)) {
    if (event.kind.case === "cardsDealt" && event.kind.value.seat === 1) {
      assert.deepEqual(event.kind.value.cards, [], "ann's watch never holds bob's dealt cards");
    }
    if (event.kind.case === "discardMade" && event.kind.value.seat === 1) {
      assert.equal(event.kind.value.card, "", "nor his discards");
    }
  }
  // Fantasyland: a board with a short top row is refused with the field it names.
  assertError(await failure(seats[0]!.tables.setFantasyland({ tableId, seat: 0, expectedVersion: view.version, requestId: `${protocol.name}-fl` })),
    Code.InvalidArgument, "WRONG_ROW_SIZE", "board.top");

  const history = await anonymous.tables.getHandHistory({ tableId, handNumber: 1n });
  assert.equal(history.handNumber, 1n);
  const verified = await anonymous.rules.verifyHandHistory({ historyJson: history.historyJson });
  assert.equal(verified.ok, true, JSON.stringify(verified));
  const match = await anonymous.rules.verifyMatch({ historyJsons: [history.historyJson] });
  assert.equal(match.ok, true, JSON.stringify(match));
  const listed = await anonymous.tables.listHands({ tableId });
  assert.deepEqual(listed.hands.map((h) => h.handNumber), [1n]);
  assert.deepEqual(listed.hands[0]!.points, settlement.players.map((p) => p.points));
  const now = (await seats[1]!.tables.getTable({ tableId })).table!;
  const left = await seats[1]!.tables.leaveSeat({ tableId, seat: 1, expectedVersion: now.version, requestId: `${protocol.name}-leave` });
  assert.equal(left.table!.seats.find((s) => s.seat === 1)?.playerId ?? "", "");

  // The settlement feed: this table's record arrives (the group reads from the start), and is acknowledged.
  const group = `e2e-${protocol.name}`;
  const feedAbort = new AbortController();
  let record;
  for await (const res of host.feed.subscribe({ group, consumer: "c1", batchSize: 10 }, { signal: feedAbort.signal, timeoutMs: CALL_MS })) {
    if (res.record!.tableId === tableId) {
      record = res.record!;
      break;
    }
  }
  feedAbort.abort();
  assert.ok(record, "the hand's settlement record arrived");
  const byPlayer = Object.fromEntries(settlement.players.map((p) => [p.playerId, p.points]));
  assert.deepEqual(Object.fromEntries(record.seats.map((s) => [s.playerId, Number(s.points)])), byPlayer);
  const acked = await host.feed.acknowledge({ group, settlementIds: [record.settlementId] });
  assert.equal(acked.acknowledged, 1);
  assertError(await failure(anonymous.feed.acknowledge({ group, settlementIds: [record.settlementId] })), Code.Unauthenticated, "UNAUTHENTICATED");

  // A deadline ends a Watch that has nothing more to say; an abort cancels one.
  const late = await failure(readWatch(anonymous.tables.watch({ tableId }, { timeoutMs: 400 }), () => false));
  assert.equal(Code[late.code], Code[Code.DeadlineExceeded]);
  const cancel = new AbortController();
  const cancelled = failure(readWatch(anonymous.tables.watch({ tableId }, { signal: cancel.signal }), (m) => {
    if (m.kind.case === "snapshot") cancel.abort();
    return false;
  }));
  assert.equal(Code[(await cancelled).code], Code[Code.Canceled]);
}

for (const protocol of PROTOCOLS) {
  test(`every RPC over ${protocol.name}`, { timeout: 120_000 }, async () => {
    const called = new Set<string>();
    await playAHand(protocol, called);
    assert.deepEqual([...everyMethod()].filter((m) => !called.has(m)), [], "methods not called");
  });
}
