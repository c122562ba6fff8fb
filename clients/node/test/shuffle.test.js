// ofc-shuffle-v1 in Node (verify.js) against docs/shuffle-v1.md's worked example and every
// vector of tests/vectors/shuffle-v1.json, which the Python tests check against ofc.shuffle and
// a reference of their own.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { block, blockMessage, cardCode, choice, commitment, shuffleDeck, wordStream } = require('../verify.js');

const VECTORS = JSON.parse(
  fs.readFileSync(path.join(__dirname, '..', '..', '..', 'tests', 'vectors', 'shuffle-v1.json'), 'utf8'),
);

const SEED = Buffer.from(Array.from({ length: 32 }, (_, i) => i)); // 0x00, 0x01, ..., 0x1f
const CLIENT = Buffer.from('auditor-test', 'utf8');
const NONCE = 1;
const DECK =
  'Qs 6d Ad Td 6s 4s 8s Kc Kh 7d 8d Ts Jc 4d Js 5c 5s 7h Ac 9s Kd 9d Ah 3s 9c 2s 3h As 2d Jd 3d 7s ' +
  '3c 2c Tc Qc 4c 8h Th 4h 5h Qd 6h 8c 5d 7c Jh Ks Qh 6c 9h 2h';

test('commitment is SHA-256 of the server seed, lower-case hex', () => {
  assert.equal(commitment(SEED), '630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd');
});

test('block message layout: domain, 0x00, u32be length, client seed, u64be nonce, u32be k', () => {
  assert.equal(
    blockMessage(CLIENT, NONCE, 0).toString('hex'),
    Buffer.from('ofc-shuffle-v1\0', 'latin1').toString('hex') + '0000000c' + CLIENT.toString('hex') + '0000000000000001' + '00000000',
  );
});

test('block 0 vector', () => {
  assert.equal(block(SEED, CLIENT, NONCE, 0).toString('hex'), 'acbcbada65c670e7e5fbcd883f37913b3dbad66fdb57892d906a7028660462e5');
});

test('the word stream is block 0 as eight big-endian u32, then block 1', () => {
  const words = wordStream(SEED, CLIENT, NONCE);
  const first = Array.from({ length: 9 }, () => words.next().value);
  assert.deepEqual(first.slice(0, 2), [0xacbcbada, 0x65c670e7]);
  assert.equal(first[7], 0x660462e5);
  assert.equal(first[8], block(SEED, CLIENT, NONCE, 1).readUInt32BE(0));
});

test('deck vector', () => {
  assert.equal(shuffleDeck(SEED, CLIENT, NONCE).map(cardCode).join(' '), DECK);
});

test('the deck is a permutation of the 52 cards and depends on every input', () => {
  const deck = shuffleDeck(SEED, CLIENT, NONCE);
  assert.deepEqual([...deck].sort((a, b) => a - b), Array.from({ length: 52 }, (_, i) => i));
  const base = deck.join(',');
  assert.notEqual(shuffleDeck(SEED, CLIENT, 2).join(','), base);
  assert.notEqual(shuffleDeck(SEED, Buffer.alloc(0), NONCE).join(','), base);
  assert.notEqual(shuffleDeck(Buffer.alloc(32), CLIENT, NONCE).join(','), base);
});

test('canonical card ids: 4 * rank + suit', () => {
  assert.deepEqual([0, 1, 2, 3, 4, 51].map(cardCode), ['2c', '2d', '2h', '2s', '3c', 'As']);
});

test('rejection example: for m = 52 the words 0xFFFFFFFF, 0xFFFFFFFC, 7 yield 7', () => {
  const words = [0xffffffff, 0xfffffffc, 7][Symbol.iterator]();
  assert.equal(choice(52, words), 7);
  assert.equal(words.next().done, true); // all three consumed: the first two were discarded
});

test('rejection boundary: limit = 2^32 - (2^32 mod 52) = 4294967248 is rejected, one below is kept', () => {
  assert.equal(choice(52, [4294967248, 4294967247][Symbol.iterator]()), 4294967247 % 52);
  assert.equal(choice(52, [4294967247][Symbol.iterator]()), 51);
  assert.throws(() => choice(52, [4294967248][Symbol.iterator]()), /word stream ended/);
});

test('bad inputs are refused', () => {
  assert.throws(() => shuffleDeck(Buffer.alloc(31), CLIENT, NONCE), /32 bytes/);
  assert.throws(() => shuffleDeck(SEED, CLIENT, -1), /nonce/);
  assert.throws(() => shuffleDeck(SEED, CLIENT, 2n ** 64n), /nonce/);
});

test('the vectors file is ofc-shuffle-v1 and opens with the worked example', () => {
  assert.equal(VECTORS.algorithm, 'ofc-shuffle-v1');
  const example = VECTORS.vectors[0];
  assert.equal(example.server_seed, SEED.toString('hex'));
  assert.equal(example.client_seed, CLIENT.toString('hex'));
  assert.equal(example.deck, DECK);
});

for (const v of VECTORS.vectors) {
  test(`vector: ${v.name}`, () => {
    const seed = Buffer.from(v.server_seed, 'hex');
    const client = Buffer.from(v.client_seed, 'hex');
    assert.equal(commitment(seed), v.commitment);
    assert.equal(block(seed, client, BigInt(v.nonce), 0).toString('hex'), v.words.join(''));
    const words = wordStream(seed, client, BigInt(v.nonce));
    const first = Array.from({ length: 8 }, () => words.next().value.toString(16).padStart(8, '0'));
    assert.deepEqual(first, v.words);
    assert.equal(shuffleDeck(seed, client, BigInt(v.nonce)).map(cardCode).join(' '), v.deck);
  });
}

for (const r of VECTORS.rejection) {
  test(`rejection: m = ${r.m} discards words at or above ${r.limit}`, () => {
    assert.equal(2 ** 32 - (2 ** 32 % r.m), r.limit);
    const words = r.words[Symbol.iterator]();
    assert.equal(choice(r.m, words), r.result);
    assert.equal(words.next().done, true); // every injected word was taken
  });
}
