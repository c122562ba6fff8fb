// "Deal verified": the page checks a finished hand's history (TableService.GetHandHistory)
// against ofc-shuffle-v1 (or, for a deck with jokers, ofc-shuffle-v2 on its 53 or 54 cards)
// in the browser, trusting nothing the service computed:
//
//   1. SHA-256(server seed) is the commitment, and the commitment is the one this page saw
//      published before the deal;
//   2. the client seed is the one the table's policy makes from seeds the page knows (the
//      table's own; with CLIENT_SEED_POLICY_PLAYERS, followed by each seat's, length-prefixed,
//      the viewer's own at its seat);
//   3. the deck re-derived from the revealed seeds; every dealt batch is the deal order applied
//      to it (seat, street, position, count, cards), none missing, none extra;
//   4. each final board and its discards are exactly the cards dealt to that seat;
//   5. the batches this page was dealt live are the history's.

import { isCard } from "./cards";
import { ALGORITHM, ALGORITHM_V2, bytesToHex, hexToBytes, sha256Hex, shuffleDeck, splitClientSeed } from "./shuffle";

export interface HistoryDeal {
  seat: number;
  street: number | null;
  position: number;
  count: number;
  cards: string[];
}

export interface HistoryBoard {
  seat: number;
  top: string[];
  middle: string[];
  bottom: string[];
  discards: string[];
}

/** The parts of a hand history (docs/hand-history.md) the deal check reads. */
export interface HandHistory {
  format_version: number;
  algorithm: string;
  hand_number: number;
  server_seed: string;
  client_seed: string;
  commitment: string;
  /** Format 4, a deck with jokers only: 53 or 54. */
  deck_size?: number;
  order: number[];
  players: { seat: number; player_id: string; fantasyland: number }[];
  initial_state: { hands_played: number; ruleset: { streets: [number, number][]; jokers?: number } };
  deals: HistoryDeal[];
  actions: { type: string; server_seed?: string; client_seed?: string }[];
  boards: HistoryBoard[];
}

/** What this page knows independently of the history. */
export interface Expectations {
  /** The commitment the page saw before the first card was dealt. */
  commitment?: string;
  /** The table's own client seed (TableView.client_seed). */
  tableClientSeed?: Uint8Array;
  /** CLIENT_SEED_POLICY_PLAYERS: the seed of each seat (index = seat), own seat included. */
  playersPolicy?: { seats: number; ownSeat?: number; ownSeed?: Uint8Array };
  /** The batches dealt to the viewer's seat as this page received them. */
  ownSeat?: number;
  ownDeals?: { position: number; cards: string[] }[];
}

export interface DealVerified {
  hand: number;
  commitment: string;
  serverSeed: string;
  clientSeed: string;
  seats: number;
  batches: number;
  cards: number;
  checks: string[];
}

export class DealDiscrepancy extends Error {
  constructor(readonly location: string, message: string) {
    super(`${location}: ${message}`);
  }
}

function fail(location: string, message: string): never {
  throw new DealDiscrepancy(location, message);
}

function sameCards(a: readonly string[], b: readonly string[]): boolean {
  const x = [...a].sort();
  const y = [...b].sort();
  return x.length === y.length && x.every((c, i) => c === y[i]);
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function text(bytes: Uint8Array): string {
  return JSON.stringify(new TextDecoder().decode(bytes));
}

/** Where each batch must be: Fantasyland seats take their whole hand first, in turn order;
 *  then street by street every other seat in turn order takes that street's deal. */
export function dealPlan(
  players: readonly { seat: number; fantasyland: number }[],
  streets: readonly [number, number][],
): Omit<HistoryDeal, "cards">[] {
  const plan: Omit<HistoryDeal, "cards">[] = [];
  let position = 0;
  for (const p of players) {
    if (p.fantasyland > 0) {
      plan.push({ seat: p.seat, street: null, position, count: p.fantasyland });
      position += p.fantasyland;
    }
  }
  const others = players.filter((p) => p.fantasyland === 0);
  streets.forEach(([deal], street) => {
    for (const p of others) {
      plan.push({ seat: p.seat, street, position, count: deal });
      position += deal;
    }
  });
  return plan;
}

/** Check a parsed hand history; resolves with what was checked, rejects with the first
 *  DealDiscrepancy. */
/** The hand-history formats whose deal this page checks (docs/hand-history.md): the deck and
 *  the deals read the same in each; 3 adds timeouts' moves and the table's context, 4 decks
 *  with jokers (ofc-shuffle-v2, `deck_size`). */
export const FORMAT_VERSIONS: readonly number[] = [1, 2, 3, 4];

export async function verifyDeal(h: HandHistory, expect: Expectations = {}): Promise<DealVerified> {
  const checks: string[] = [];
  if (!FORMAT_VERSIONS.includes(h.format_version)) {
    fail("format_version", `version ${h.format_version} is not one this page reads (${FORMAT_VERSIONS.join(", ")})`);
  }
  const jokers = h.initial_state.ruleset.jokers ?? 0;
  if (![0, 1, 2].includes(jokers) || (jokers > 0 && h.format_version < 4)) {
    fail("initial_state.ruleset.jokers", `${JSON.stringify(jokers)}: a deck has 0..2 jokers, and only from format 4 on`);
  }
  const algorithm = jokers ? ALGORITHM_V2 : ALGORITHM;
  const deckSize = 52 + jokers;
  if (h.algorithm !== algorithm) fail("algorithm", `${JSON.stringify(h.algorithm)} is not ${algorithm} (a ${deckSize}-card deck)`);
  if (jokers ? h.deck_size !== deckSize : h.deck_size !== undefined) {
    fail("deck_size", `${JSON.stringify(h.deck_size)}: the ruleset's deck has ${deckSize} cards${jokers ? "" : ", and a 52-card history says none"}`);
  }
  if (!/^[0-9a-f]{64}$/.test(h.server_seed)) fail("server_seed", "not 64 lower-case hex digits");
  const serverSeed = hexToBytes(h.server_seed);
  const clientSeed = hexToBytes(h.client_seed);

  const computed = await sha256Hex(serverSeed);
  if (computed !== h.commitment) fail("commitment", `SHA-256(server_seed) is ${computed}, the history says ${h.commitment}`);
  if (expect.commitment !== undefined && expect.commitment !== h.commitment) {
    fail("commitment", `this page saw ${expect.commitment} published before the deal, the history says ${h.commitment}`);
  }
  checks.push(expect.commitment !== undefined
    ? "SHA-256 of the revealed server seed is the commitment published before the deal"
    : "SHA-256 of the revealed server seed is the hand's commitment");

  const start = h.actions[0];
  if (start?.type !== "start_hand" || start.server_seed !== h.server_seed || start.client_seed !== h.client_seed) {
    fail("actions[0]", "the hand was not started with the revealed seeds");
  }
  if (h.hand_number !== h.initial_state.hands_played + 1) {
    fail("hand_number", `hand ${h.hand_number} after ${h.initial_state.hands_played} hands played`);
  }

  if (expect.playersPolicy !== undefined && expect.tableClientSeed !== undefined) {
    const parts = splitClientSeed(clientSeed);
    const policy = expect.playersPolicy;
    if (parts === null || parts.length !== 1 + policy.seats) {
      fail("client_seed", `not the table's seed and ${policy.seats} seats' seeds, each length-prefixed`);
    }
    if (!equalBytes(parts[0]!, expect.tableClientSeed)) fail("client_seed", `does not start with the table's seed ${text(expect.tableClientSeed)}`);
    if (policy.ownSeat !== undefined && policy.ownSeed !== undefined) {
      const own = parts[1 + policy.ownSeat]!;
      if (!equalBytes(own, policy.ownSeed)) fail("client_seed", `seat ${policy.ownSeat}'s part is ${text(own)}, not your seed ${text(policy.ownSeed)}`);
      checks.push(`the client seed is the table's seed and every seat's own, yours (${text(policy.ownSeed)}) included`);
    } else {
      checks.push("the client seed is the table's seed and every seat's own");
    }
  } else if (expect.tableClientSeed !== undefined) {
    if (!equalBytes(clientSeed, expect.tableClientSeed)) fail("client_seed", `is not the table's seed ${text(expect.tableClientSeed)}`);
    checks.push(`the client seed is the table's (${text(expect.tableClientSeed)})`);
  }

  const deck = await shuffleDeck(serverSeed, clientSeed, BigInt(h.hand_number), deckSize);
  const plan = dealPlan(h.players, h.initial_state.ruleset.streets);
  if (h.deals.length !== plan.length) fail("deals", `${h.deals.length} batches, the deal order has ${plan.length}`);
  const dealt = new Map<number, string[]>();
  let cards = 0;
  h.deals.forEach((d, k) => {
    const want = plan[k]!;
    for (const key of ["seat", "street", "position", "count"] as const) {
      if (d[key] !== want[key]) fail(`deals[${k}].${key}`, `expected ${want[key]}, got ${d[key]}`);
    }
    if (d.cards.length !== d.count) fail(`deals[${k}].cards`, `${d.cards.length} cards, count is ${d.count}`);
    d.cards.forEach((card, i) => {
      if (!isCard(card) || card !== deck[d.position + i]) {
        fail(`deals[${k}].cards[${i}]`, `expected ${deck[d.position + i]} (deck position ${d.position + i}), got ${JSON.stringify(card)}`);
      }
    });
    dealt.set(d.seat, [...(dealt.get(d.seat) ?? []), ...d.cards]);
    cards += d.count;
  });
  checks.push(`the deck re-derived with ${algorithm}${jokers ? ` (${deckSize} cards, ${jokers} joker${jokers === 1 ? "" : "s"})` : ""}: all ${h.deals.length} batches (${cards} cards) are its cards, in the deal order`);

  h.boards.forEach((b, i) => {
    const all = [...b.top, ...b.middle, ...b.bottom, ...b.discards];
    if (!sameCards(all, dealt.get(b.seat) ?? [])) fail(`boards[${i}]`, `seat ${b.seat}'s board and discards are not the cards dealt to it`);
  });
  checks.push("every final board and its discards are exactly the cards dealt to that seat");

  if (expect.ownSeat !== undefined && expect.ownDeals !== undefined && expect.ownDeals.length > 0) {
    for (const seen of expect.ownDeals) {
      const k = h.deals.findIndex((d) => d.seat === expect.ownSeat && d.position === seen.position);
      if (k < 0 || !sameCards(h.deals[k]!.cards, seen.cards)) {
        fail(k < 0 ? "deals" : `deals[${k}]`, `you were dealt ${seen.cards.join(" ")} at deck position ${seen.position}`);
      }
    }
    checks.push(`the ${expect.ownDeals.length} batches you were dealt are the deck's`);
  }
  return {
    hand: h.hand_number,
    commitment: h.commitment,
    serverSeed: h.server_seed,
    clientSeed: bytesToHex(clientSeed),
    seats: h.players.length,
    batches: h.deals.length,
    cards,
    checks,
  };
}
