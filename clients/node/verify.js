#!/usr/bin/env node
// An independent verifier of ofc hand histories, in plain JavaScript.
//
//   node verify.js HISTORY.json [MORE.json ...]     ("-" reads standard input)
//
// For each history it checks, using nothing but Node's built-in `crypto`:
//   1. the revealed server seed matches the commitment published before the deal
//      (SHA-256(server_seed) == commitment);
//   2. the deck, re-derived with ofc-shuffle-v1 (written here from the spec, not from the
//      service's code) from (server_seed, client_seed, nonce = hand_number);
//   3. the deal plan: turn order from the table before the hand (occupied seats after the
//      button), Fantasyland blocks first in turn order, then street by street, each
//      non-Fantasyland seat in turn order taking the street's `deal` cards;
//   4. every dealt batch in `deals`: seat, street, deck position, count and each card equal
//      the plan and the deck, with nothing missing or extra;
//   5. every final board plus its discards holds exactly the cards dealt to that seat.
//
// It prints "OK ..." per history, or "FAIL <file>: <location>: <what differs>" for the first
// discrepancy. Exit status: 0 all OK, 1 a history was rejected (including one that cannot be
// read or parsed), 2 usage. It does not replay the actions or re-score the hand: that is
// `ofc verify`'s job; this file proves the deal algorithm is portable.
'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');

const ALGORITHM = 'ofc-shuffle-v1';
// Version 2 adds initial_state.pair_unit_values (the money side, which this verifier leaves
// to the settlement check of `ofc verify`); the deck and the deals read the same in both.
const FORMAT_VERSIONS = [1, 2];
const RANKS = '23456789TJQKA';
const SUITS = 'cdhs';
const ROW_SIZES = { top: 3, middle: 5, bottom: 5 };
const TWO_32 = 2 ** 32;

// --- ofc-shuffle-v1 -----------------------------------------------------------------------

/** The canonical code of card id 0..51 (id = 4 * rank_index + suit_index): 0 -> "2c". */
function cardCode(id) {
  return RANKS[id >> 2] + SUITS[id & 3];
}

/** SHA-256 of the server seed, lower-case hex: the commitment published before the deal. */
function commitment(serverSeed) {
  return crypto.createHash('sha256').update(serverSeed).digest('hex');
}

/** The HMAC message of block k: domain || 0x00 || u32be(len(client)) || client || u64be(nonce) || u32be(k). */
function blockMessage(clientSeed, nonce, k) {
  const domain = Buffer.from(ALGORITHM + '\0', 'latin1');
  const len = Buffer.alloc(4);
  len.writeUInt32BE(clientSeed.length);
  const n = Buffer.alloc(8);
  n.writeBigUInt64BE(BigInt(nonce));
  const kk = Buffer.alloc(4);
  kk.writeUInt32BE(k);
  return Buffer.concat([domain, len, clientSeed, n, kk]);
}

/** Block k of the word stream: 32 bytes. */
function block(serverSeed, clientSeed, nonce, k) {
  return crypto.createHmac('sha256', serverSeed).update(blockMessage(clientSeed, nonce, k)).digest();
}

/** The endless stream of unsigned 32-bit words: block 0's eight big-endian words, block 1's, ... */
function* wordStream(serverSeed, clientSeed, nonce) {
  if (!Buffer.isBuffer(serverSeed) || serverSeed.length !== 32) {
    throw new RangeError('server seed must be 32 bytes');
  }
  const big = BigInt(nonce);
  if (big < 0n || big >= 2n ** 64n) throw new RangeError(`nonce out of range: ${nonce}`);
  for (let k = 0; ; k += 1) {
    const digest = block(serverSeed, clientSeed, nonce, k);
    for (let i = 0; i < 32; i += 4) yield digest.readUInt32BE(i);
  }
}

/** An unbiased integer in 0..m-1 from an iterator of words (rejection sampling). */
function choice(m, words) {
  const limit = TWO_32 - (TWO_32 % m);
  for (;;) {
    const next = words.next();
    if (next.done) throw new RangeError('word stream ended');
    if (next.value < limit) return next.value % m;
  }
}

/** The 52 card ids in deck order (position 0, dealt first, first). */
function shuffleDeck(serverSeed, clientSeed, nonce) {
  const words = wordStream(serverSeed, clientSeed, nonce);
  const deck = Array.from({ length: 52 }, (_, id) => id);
  for (let i = 51; i >= 1; i -= 1) {
    const j = choice(i + 1, words);
    [deck[i], deck[j]] = [deck[j], deck[i]];
  }
  return deck;
}

// --- hand histories -----------------------------------------------------------------------

/** A rejection: `where` is a JSON path into the history. */
class Discrepancy extends Error {
  constructor(where, message) {
    super(`${where}: ${message}`);
    this.name = 'Discrepancy';
    this.where = where;
  }
}

function fail(where, message) {
  throw new Discrepancy(where, message);
}

function field(obj, key, where) {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) fail(where || '$', 'must be a JSON object');
  if (!(key in obj)) fail(join(where, key), 'missing');
  return obj[key];
}

function join(where, key) {
  if (typeof key === 'number') return `${where}[${key}]`;
  return where ? `${where}.${key}` : key;
}

function intField(obj, key, where, min = 0) {
  const value = field(obj, key, where);
  if (!Number.isSafeInteger(value) || value < min) fail(join(where, key), `must be an integer >= ${min}, got ${JSON.stringify(value)}`);
  return value;
}

function listField(obj, key, where) {
  const value = field(obj, key, where);
  if (!Array.isArray(value)) fail(join(where, key), 'must be a JSON array');
  return value;
}

function hexField(obj, key, where, bytes) {
  const value = field(obj, key, where);
  if (typeof value !== 'string' || !/^(?:[0-9a-f]{2})*$/.test(value)) {
    fail(join(where, key), `must be lower-case hex, got ${JSON.stringify(value)}`);
  }
  if (bytes !== undefined && value.length !== 2 * bytes) fail(join(where, key), `must be ${bytes} bytes (${2 * bytes} hex digits), got ${value.length / 2} bytes`);
  return value;
}

/** The turn order: occupied seats (non-empty player_id) from the one after the button, wrapping. */
function turnOrder(seats, button) {
  const order = [];
  for (let k = 1; k <= seats.length; k += 1) {
    const seat = (button + k) % seats.length;
    if (seats[seat].player_id) order.push(seat);
  }
  return order;
}

/**
 * The documented deal plan: Fantasyland blocks first (turn order), then for each street each
 * non-Fantasyland seat in turn order. `players` are [{seat, fantasyland}] in turn order,
 * `streets` [{deal}]. Returns [{seat, street (null: Fantasyland block), position, count}].
 */
function dealPlan(players, streets) {
  const plan = [];
  let position = 0;
  for (const p of players) {
    if (p.fantasyland > 0) {
      plan.push({ seat: p.seat, street: null, position, count: p.fantasyland });
      position += p.fantasyland;
    }
  }
  const normal = players.filter((p) => p.fantasyland === 0);
  streets.forEach((street, s) => {
    for (const p of normal) {
      plan.push({ seat: p.seat, street: s, position, count: street.deal });
      position += street.deal;
    }
  });
  return plan;
}

function sameCards(a, b) {
  const x = [...a].sort();
  const y = [...b].sort();
  return x.length === y.length && x.every((c, i) => c === y[i]);
}

/**
 * Check one parsed hand history; returns a summary, throws a Discrepancy at the first problem.
 */
function verifyHistory(h) {
  if (h === null || typeof h !== 'object' || Array.isArray(h)) fail('$', 'a hand history must be a JSON object');
  const version = field(h, 'format_version', '');
  if (!FORMAT_VERSIONS.includes(version)) fail('format_version', `unsupported ${JSON.stringify(version)} (this verifier reads ${FORMAT_VERSIONS.join(', ')})`);
  const algorithm = field(h, 'algorithm', '');
  if (algorithm !== ALGORITHM) fail('algorithm', `unsupported ${JSON.stringify(algorithm)} (this verifier implements ${ALGORITHM})`);

  // 1. Commitment.
  const serverSeedHex = hexField(h, 'server_seed', '', 32);
  const clientSeedHex = hexField(h, 'client_seed', '');
  const committed = field(h, 'commitment', '');
  const serverSeed = Buffer.from(serverSeedHex, 'hex');
  const clientSeed = Buffer.from(clientSeedHex, 'hex');
  const computed = commitment(serverSeed);
  if (committed !== computed) fail('commitment', `SHA-256(server_seed) is ${computed}, the history says ${JSON.stringify(committed)}`);
  const nonce = intField(h, 'hand_number', '', 1);

  // The seeds the hand was started with must be the ones revealed.
  const actions = listField(h, 'actions', '');
  if (actions.length === 0) fail('actions', 'empty: a hand starts with a start_hand action');
  if (field(actions[0], 'type', 'actions[0]') !== 'start_hand') fail('actions[0].type', `expected "start_hand", got ${JSON.stringify(actions[0].type)}`);
  for (const key of ['server_seed', 'client_seed']) {
    const started = field(actions[0], key, 'actions[0]');
    if (started !== h[key]) fail(`actions[0].${key}`, `${JSON.stringify(started)} differs from the revealed ${key} ${JSON.stringify(h[key])}`);
  }

  // 2. The deck.
  const deck = shuffleDeck(serverSeed, clientSeed, nonce).map(cardCode);

  // 3. The deal plan, from the table as the hand began.
  const initial = field(h, 'initial_state', '');
  const handsPlayed = intField(initial, 'hands_played', 'initial_state');
  if (nonce !== handsPlayed + 1) fail('hand_number', `${nonce} is not initial_state.hands_played + 1 = ${handsPlayed + 1}`);
  const seats = listField(initial, 'seats', 'initial_state');
  seats.forEach((s, i) => {
    const where = `initial_state.seats[${i}]`;
    if (typeof field(s, 'player_id', where) !== 'string') fail(`${where}.player_id`, 'must be a string');
    intField(s, 'fantasyland', where);
  });
  const button = intField(h, 'button', '');
  const initialButton = intField(initial, 'button', 'initial_state');
  if (button !== initialButton) fail('button', `${button} differs from initial_state.button ${initialButton}`);
  if (button >= seats.length) fail('button', `${button} is not a seat (the table has ${seats.length})`);
  const expectedOrder = turnOrder(seats, button);
  const order = listField(h, 'order', '');
  if (JSON.stringify(order) !== JSON.stringify(expectedOrder)) {
    fail('order', `${JSON.stringify(order)} is not the turn order ${JSON.stringify(expectedOrder)} (occupied seats after button ${button})`);
  }
  const players = listField(h, 'players', '');
  if (players.length !== order.length) fail('players', `${players.length} entries for ${order.length} seats in the hand`);
  const plan = dealPlan(
    players.map((p, i) => {
      const where = `players[${i}]`;
      const seat = intField(p, 'seat', where);
      if (seat !== order[i]) fail(`${where}.seat`, `${seat} is not seat ${order[i]}, number ${i} in turn order`);
      const fantasyland = intField(p, 'fantasyland', where);
      const owed = seats[seat].fantasyland;
      if (fantasyland !== owed) fail(`${where}.fantasyland`, `${fantasyland} differs from the ${owed} cards initial_state.seats[${seat}] was owed`);
      return { seat, fantasyland };
    }),
    listField(field(initial, 'ruleset', 'initial_state'), 'streets', 'initial_state.ruleset').map((street, s) => {
      const where = `initial_state.ruleset.streets[${s}]`;
      if (!Array.isArray(street) || street.length !== 2 || !street.every((n) => Number.isSafeInteger(n) && n >= 1)) {
        fail(where, `must be [deal, place], got ${JSON.stringify(street)}`);
      }
      return { deal: street[0] };
    }),
  );
  const total = plan.reduce((n, b) => n + b.count, 0);
  if (total > deck.length) fail('initial_state', `the deal plan needs ${total} cards, the deck has ${deck.length}`);

  // 4. Every dealt batch, against the plan and the deck.
  const deals = listField(h, 'deals', '');
  const dealtTo = new Map(order.map((seat) => [seat, []]));
  for (let i = 0; i < Math.max(deals.length, plan.length); i += 1) {
    const where = `deals[${i}]`;
    const want = plan[i];
    if (want === undefined) fail(where, `an extra batch: the plan has ${plan.length} batches`);
    if (i >= deals.length) fail('deals', `missing batch ${i}: seat ${want.seat}, ${want.street === null ? 'Fantasyland block' : `street ${want.street}`}, ${want.count} cards from position ${want.position}`);
    const got = deals[i];
    if (field(got, 'type', where) !== 'cards_dealt') fail(`${where}.type`, `expected "cards_dealt", got ${JSON.stringify(got.type)}`);
    for (const key of ['seat', 'street', 'position', 'count']) {
      const value = field(got, key, where);
      if (value !== want[key]) fail(`${where}.${key}`, `expected ${JSON.stringify(want[key])}, got ${JSON.stringify(value)}`);
    }
    const cards = listField(got, 'cards', where);
    if (cards.length !== want.count) fail(`${where}.cards`, `${cards.length} cards, expected ${want.count}`);
    cards.forEach((card, c) => {
      const expected = deck[want.position + c];
      if (card !== expected) fail(`${where}.cards[${c}]`, `expected ${expected} (deck position ${want.position + c}), got ${JSON.stringify(card)}`);
    });
    dealtTo.get(want.seat).push(...cards);
  }

  // 5. The final boards hold exactly the dealt cards.
  const boards = listField(h, 'boards', '');
  if (boards.length !== order.length) fail('boards', `${boards.length} boards for ${order.length} seats in the hand`);
  boards.forEach((b, i) => {
    const where = `boards[${i}]`;
    const seat = intField(b, 'seat', where);
    if (seat !== order[i]) fail(`${where}.seat`, `${seat} is not seat ${order[i]}, number ${i} in turn order`);
    const held = [];
    for (const row of Object.keys(ROW_SIZES)) {
      const cards = listField(b, row, where);
      if (cards.length !== ROW_SIZES[row]) fail(`${where}.${row}`, `${cards.length} cards, a complete ${row} row has ${ROW_SIZES[row]}`);
      held.push(...cards);
    }
    held.push(...listField(b, 'discards', where));
    const dealt = dealtTo.get(seat);
    if (!sameCards(held, dealt)) {
      const extra = held.filter((c) => !dealt.includes(c));
      const missing = dealt.filter((c) => !held.includes(c));
      fail(where, `board and discards of seat ${seat} are not the cards dealt to it (not dealt: ${extra.join(' ') || '-'}; dealt but missing: ${missing.join(' ') || '-'})`);
    }
  });

  return { hand: nonce, commitment: computed, seats: order.length, batches: plan.length, cards: total };
}

/** Read, parse and verify one file ("-" for standard input). Returns the line to print and whether it passed. */
function verifyFile(path) {
  const name = path === '-' ? '<stdin>' : path;
  let history;
  try {
    history = JSON.parse(fs.readFileSync(path === '-' ? 0 : path, 'utf8'));
  } catch (err) {
    return { ok: false, line: `FAIL ${name}: cannot read a JSON hand history: ${err.message}` };
  }
  try {
    const r = verifyHistory(history);
    return {
      ok: true,
      line: `OK ${name}: hand ${r.hand}, commitment ${r.commitment}, ${r.seats} seats, ${r.batches} batches (${r.cards} cards) match the ${ALGORITHM} deck`,
    };
  } catch (err) {
    if (err instanceof Discrepancy) return { ok: false, line: `FAIL ${name}: ${err.message}` };
    throw err;
  }
}

function main(argv) {
  if (argv.length === 0 || argv.includes('-h') || argv.includes('--help')) {
    process.stderr.write('usage: node verify.js HISTORY.json [MORE.json ...]   ("-" reads standard input)\n');
    return argv.length === 0 ? 2 : 0;
  }
  let status = 0;
  for (const path of argv) {
    const result = verifyFile(path);
    process.stdout.write(result.line + '\n');
    if (!result.ok) status = 1;
  }
  return status;
}

module.exports = {
  ALGORITHM,
  Discrepancy,
  block,
  blockMessage,
  cardCode,
  choice,
  commitment,
  dealPlan,
  shuffleDeck,
  turnOrder,
  verifyHistory,
  wordStream,
};

if (require.main === module) {
  process.exitCode = main(process.argv.slice(2));
}
