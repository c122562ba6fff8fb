// ofc-shuffle-v2 in Node agrees with the committed vectors (tests/vectors/shuffle-v2.json),
// which the Python tests check against ofc.shuffle and a reference of their own.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { ALGORITHM, cardCode, choice, commitment, shuffleDeckV2, wordStream } = require('../lib/shuffle_v2.js');

const VECTORS = JSON.parse(
  fs.readFileSync(path.join(__dirname, '..', '..', '..', 'tests', 'vectors', 'shuffle-v2.json'), 'utf8'),
);

test('the vectors are ofc-shuffle-v2 and cover 52, 53 and 54 cards', () => {
  assert.equal(VECTORS.algorithm, ALGORITHM);
  assert.deepEqual([...new Set(VECTORS.vectors.map((v) => v.deck_size))].sort(), [52, 53, 54]);
});

for (const v of VECTORS.vectors) {
  test(`vector: ${v.name}`, () => {
    const seed = Buffer.from(v.server_seed, 'hex');
    const client = Buffer.from(v.client_seed, 'hex');
    assert.equal(commitment(seed), v.commitment);
    const words = wordStream(seed, client, BigInt(v.nonce));
    const first = Array.from({ length: 8 }, () => words.next().value.toString(16).padStart(8, '0'));
    assert.deepEqual(first, v.words);
    const deck = shuffleDeckV2(seed, client, BigInt(v.nonce), v.deck_size);
    assert.equal(deck.map(cardCode).join(' '), v.deck);
    assert.deepEqual([...deck].sort((a, b) => a - b), Array.from({ length: v.deck_size }, (_, i) => i));
  });
}

for (const r of VECTORS.rejection) {
  test(`rejection: m = ${r.m} discards words at or above ${r.limit}`, () => {
    assert.equal(2 ** 32 - (2 ** 32 % r.m), r.limit);
    assert.equal(choice(r.m, r.words[Symbol.iterator]()), r.result);
  });
}

test('a deck size other than 52..54 is refused', () => {
  assert.throws(() => shuffleDeckV2(Buffer.alloc(32), Buffer.alloc(0), 0, 55), /52\.\.54 cards/);
  assert.throws(() => cardCode(54), /not a card id/);
});

// Every golden hand history with a joker deck (format 4): its deals are the ofc-shuffle-v2
// deck of its seeds, hand number and deck size, position by position.
const GOLDEN = path.join(__dirname, '..', '..', '..', 'tests', 'golden');

function goldenJokerHistories() {
  const found = [];
  for (const release of fs.readdirSync(GOLDEN)) {
    const dir = path.join(GOLDEN, release);
    if (!fs.statSync(dir).isDirectory()) continue;
    for (const name of fs.readdirSync(dir)) {
      if (!name.endsWith('.json')) continue;
      const history = JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8'));
      if (history.algorithm === ALGORITHM) found.push([`${release}/${name}`, history]);
    }
  }
  return found;
}

test('the golden joker histories deal the ofc-shuffle-v2 deck', () => {
  const histories = goldenJokerHistories();
  assert.ok(histories.length >= 4, 'expected the golden joker histories');
  for (const [name, h] of histories) {
    const deck = shuffleDeckV2(
      Buffer.from(h.server_seed, 'hex'),
      Buffer.from(h.client_seed, 'hex'),
      BigInt(h.hand_number),
      h.deck_size,
    ).map(cardCode);
    assert.equal(commitment(Buffer.from(h.server_seed, 'hex')), h.commitment, name);
    for (const d of h.deals) {
      assert.deepEqual(d.cards, deck.slice(d.position, d.position + d.count), `${name} deal at ${d.position}`);
    }
  }
});
