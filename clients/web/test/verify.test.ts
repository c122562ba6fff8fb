// "Deal verified" on histories built from the spec's deck by the documented deal order, and
// every kind of tampering refused at its place.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { bytesToHex, combineClientSeeds, hexToBytes, sha256Hex, shuffleDeck } from "../src/shuffle";
import { DealDiscrepancy, dealPlan, type HandHistory, verifyDeal } from "../src/verify";

const SERVER_SEED = Uint8Array.from({ length: 32 }, (_, i) => i);
const PINEAPPLE: [number, number][] = [[5, 5], [3, 2], [3, 2], [3, 2], [3, 2]];
const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

async function history(clientSeed: Uint8Array, fantasyland: number[] = [0, 0]): Promise<HandHistory> {
  const deck = await shuffleDeck(SERVER_SEED, clientSeed, 1n);
  const players = [{ seat: 1, player_id: "bob", fantasyland: fantasyland[1]! }, { seat: 0, player_id: "ann", fantasyland: fantasyland[0]! }];
  const deals = dealPlan(players, PINEAPPLE).map((d) => ({ ...d, cards: deck.slice(d.position, d.position + d.count) }));
  const boards = players.map((p) => {
    const mine = deals.filter((d) => d.seat === p.seat);
    const discards = mine.flatMap((d) => (d.street !== null && d.count === 3 ? [d.cards[2]!] : d.street === null ? d.cards.slice(13) : []));
    const kept = mine.flatMap((d) => d.cards).filter((c) => !discards.includes(c));
    return { seat: p.seat, top: kept.slice(0, 3), middle: kept.slice(3, 8), bottom: kept.slice(8, 13), discards };
  });
  const seedHex = bytesToHex(SERVER_SEED);
  return {
    format_version: 1, algorithm: "ofc-shuffle-v1", hand_number: 1, server_seed: seedHex, client_seed: bytesToHex(clientSeed),
    commitment: await sha256Hex(SERVER_SEED), order: [1, 0], players,
    initial_state: { hands_played: 0, ruleset: { streets: PINEAPPLE } }, deals,
    actions: [{ type: "start_hand", server_seed: seedHex, client_seed: bytesToHex(clientSeed) }], boards,
  };
}

async function refused(h: HandHistory, location: string, expect = {}): Promise<string> {
  try {
    await verifyDeal(h, expect);
  } catch (error) {
    assert.ok(error instanceof DealDiscrepancy, String(error));
    assert.equal(error.location, location, error.message);
    return error.message;
  }
  assert.fail(`not refused: expected a discrepancy at ${location}`);
}

test("a fair Pineapple deal verifies, with the page's own knowledge", async () => {
  const h = await history(enc("auditor-test"));
  const own = h.deals.filter((d) => d.seat === 0).map((d) => ({ position: d.position, cards: d.cards }));
  const result = await verifyDeal(h, { commitment: h.commitment, tableClientSeed: enc("auditor-test"), ownSeat: 0, ownDeals: own });
  assert.equal(result.batches, 10);
  assert.equal(result.cards, 34);
  assert.equal(result.checks.length, 5);
  assert.match(result.checks[0]!, /commitment published before the deal/);
});

test("the deal order: Fantasyland blocks first, then streets in turn order", async () => {
  const plan = dealPlan([{ seat: 2, fantasyland: 0 }, { seat: 0, fantasyland: 14 }, { seat: 1, fantasyland: 0 }], PINEAPPLE);
  assert.deepEqual(plan.slice(0, 4), [
    { seat: 0, street: null, position: 0, count: 14 },
    { seat: 2, street: 0, position: 14, count: 5 },
    { seat: 1, street: 0, position: 19, count: 5 },
    { seat: 2, street: 1, position: 24, count: 3 },
  ]);
  const h = await history(enc("fl"), [14, 0]);
  assert.equal((await verifyDeal(h)).batches, 6);
});

test("a changed card is refused where it is", async () => {
  const h = await history(enc("auditor-test"));
  const d = h.deals[3]!;
  const other = h.deals[4]!.cards[0]!;
  h.deals[3] = { ...d, cards: [other, ...d.cards.slice(1)] };
  assert.match(await refused(h, "deals[3].cards[0]"), /deck position/);
});

test("a server seed that is not the commitment's is refused", async () => {
  const h = await history(enc("x"));
  h.server_seed = "ff".repeat(32);
  await refused(h, "commitment");
});

test("a commitment other than the one published before the deal is refused", async () => {
  const h = await history(enc("x"));
  await refused(h, "commitment", { commitment: "00".repeat(32) });
});

test("a client seed that is not the table's is refused", async () => {
  const h = await history(enc("someone else's"));
  await refused(h, "client_seed", { tableClientSeed: enc("ours") });
});

test("players' policy: the table's seed then every seat's, the viewer's own where it sits", async () => {
  const combined = combineClientSeeds([enc("table"), enc("ann's"), enc("")]);
  const h = await history(combined);
  const ok = await verifyDeal(h, { tableClientSeed: enc("table"), playersPolicy: { seats: 2, ownSeat: 0, ownSeed: enc("ann's") } });
  assert.match(ok.checks.join(" "), /yours \("ann's"\) included/);
  assert.match(await refused(h, "client_seed", { tableClientSeed: enc("table"), playersPolicy: { seats: 2, ownSeat: 1, ownSeed: enc("bob's") } }), /not your seed/);
  await refused(h, "client_seed", { tableClientSeed: enc("table"), playersPolicy: { seats: 3 } });
});

test("a missing batch, a moved batch, a board that is not what was dealt", async () => {
  const missing = await history(enc("x"));
  missing.deals.pop();
  await refused(missing, "deals");
  const moved = await history(enc("x"));
  moved.deals[1] = { ...moved.deals[1]!, position: 0 };
  await refused(moved, "deals[1].position");
  const swapped = await history(enc("x"));
  const [a, b] = [swapped.boards[0]!, swapped.boards[1]!];
  [a.top[0], b.top[0]] = [b.top[0]!, a.top[0]!];
  await refused(swapped, "boards[0]");
});

test("cards this page was dealt that the history does not have are refused", async () => {
  const h = await history(enc("x"));
  const mine = h.deals.find((d) => d.seat === 0)!;
  await refused(h, "deals[1]", { ownSeat: 0, ownDeals: [{ position: mine.position, cards: ["As", "Ks", "Qs", "Js", "Ts"] }] });
});

test("the hand must start from the revealed seeds and count hands", async () => {
  const h = await history(enc("x"));
  h.actions[0] = { type: "start_hand", server_seed: "00".repeat(32), client_seed: h.client_seed };
  await refused(h, "actions[0]");
  const n = await history(enc("x"));
  n.initial_state.hands_played = 3;
  await refused(n, "hand_number");
});

// Decks with jokers (hand-history format 4): the golden Pineapple hand with two jokers, as
// the service wrote it, verifies against ofc-shuffle-v2 on 54 cards; its deck keys are held
// to its ruleset's jokers.
// The unit tests run in clients/web (scripts/check_web.sh).
const GOLDEN_JOKERS = "../../tests/golden/c044494/play-pineapple-jokers-3.json";

async function jokerHistory(): Promise<HandHistory> {
  return JSON.parse(await readFile(GOLDEN_JOKERS, "utf8")) as HandHistory;
}

test("a hand dealt from a deck with two jokers verifies with ofc-shuffle-v2 on 54 cards", async () => {
  const h = await jokerHistory();
  assert.equal(h.algorithm, "ofc-shuffle-v2");
  assert.ok(h.deals.some((d) => d.cards.includes("X1") || d.cards.includes("X2")), "the golden hand deals a joker");
  const v = await verifyDeal(h);
  assert.ok(v.checks.some((c) => c.startsWith("the deck re-derived with ofc-shuffle-v2 (54 cards, 2 jokers)")), v.checks.join("; "));
  const deck = await shuffleDeck(hexToBytes(h.server_seed), hexToBytes(h.client_seed), BigInt(h.hand_number), 54);
  assert.deepEqual([...deck].sort(), [...(await shuffleDeck(SERVER_SEED, enc(""), 1n, 54))].sort()); // the 52 cards, X1 and X2
  assert.ok(deck.includes("X1") && deck.includes("X2"));
});

test("a joker deck's algorithm, size and jokers must agree", async () => {
  const named = await jokerHistory();
  named.algorithm = "ofc-shuffle-v1";
  assert.match(await refused(named, "algorithm"), /not ofc-shuffle-v2 \(a 54-card deck\)/);
  const sized = await jokerHistory();
  sized.deck_size = 53;
  await refused(sized, "deck_size");
  const fewer = await jokerHistory();
  fewer.initial_state.ruleset.jokers = 1;
  fewer.deck_size = 53;
  // one joker fewer: another deck (53 cards), so the first dealt card is not the deck's
  await assert.rejects(verifyDeal(fewer), (e: unknown) => e instanceof DealDiscrepancy && /^deals\[\d+\]\.cards\[\d+\]$/.test(e.location));
  const older = await jokerHistory();
  older.format_version = 3;
  await refused(older, "initial_state.ruleset.jokers");
  const natural = await history(enc("t"));
  natural.deck_size = 52;
  await refused(natural, "deck_size");
});
