// ofc-shuffle-v2 (docs/shuffle-v2.md): ofc-shuffle-v1's word stream and unbiased choice on a
// deck of N = 52, 53 or 54 cards, the 52 in id order (id = 4 * rank_index + suit_index) and
// then the jokers X1 (id 52) and X2 (id 53). N = 52 gives exactly the v1 deck. No
// dependencies beyond node:crypto, so an auditor can read it alone.
'use strict';

const crypto = require('node:crypto');

const ALGORITHM = 'ofc-shuffle-v2';
// The word stream is v1's, its domain string included: only the deck differs.
const STREAM_DOMAIN = 'ofc-shuffle-v1';
const DECK_SIZES = [52, 53, 54];
const RANKS = '23456789TJQKA';
const SUITS = 'cdhs';
const JOKER_CODES = ['X1', 'X2'];
const TWO_32 = 2 ** 32;

/** The canonical code of card id 0..53: 0 -> "2c", 51 -> "As", 52 -> "X1", 53 -> "X2". */
function cardCode(id) {
  if (!Number.isInteger(id) || id < 0 || id > 53) throw new RangeError(`not a card id: ${id}`);
  return id >= 52 ? JOKER_CODES[id - 52] : RANKS[id >> 2] + SUITS[id & 3];
}

/** SHA-256 of the server seed, lower-case hex: the commitment published before the deal. */
function commitment(serverSeed) {
  return crypto.createHash('sha256').update(serverSeed).digest('hex');
}

/** Block k's HMAC message: domain || 0x00 || u32be(len(client)) || client || u64be(nonce) || u32be(k). */
function blockMessage(clientSeed, nonce, k) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(clientSeed.length);
  const n = Buffer.alloc(8);
  n.writeBigUInt64BE(BigInt(nonce));
  const kk = Buffer.alloc(4);
  kk.writeUInt32BE(k);
  return Buffer.concat([Buffer.from(STREAM_DOMAIN + '\0', 'latin1'), len, clientSeed, n, kk]);
}

/** The endless stream of u32 words: block 0's eight big-endian words, then block 1's, ... */
function* wordStream(serverSeed, clientSeed, nonce) {
  if (!Buffer.isBuffer(serverSeed) || serverSeed.length !== 32) {
    throw new RangeError('server seed must be 32 bytes');
  }
  if (!Buffer.isBuffer(clientSeed)) throw new TypeError('client seed must be a Buffer');
  const big = BigInt(nonce);
  if (big < 0n || big >= 2n ** 64n) throw new RangeError(`nonce out of range: ${nonce}`);
  for (let k = 0; ; k += 1) {
    const digest = crypto.createHmac('sha256', serverSeed).update(blockMessage(clientSeed, big, k)).digest();
    for (let i = 0; i < 32; i += 4) yield digest.readUInt32BE(i);
  }
}

/** An unbiased integer in 0..m-1: words at or above 2^32 - (2^32 mod m) are discarded. */
function choice(m, words) {
  const limit = TWO_32 - (TWO_32 % m);
  for (;;) {
    const next = words.next();
    if (next.done) throw new RangeError('word stream ended');
    if (next.value < limit) return next.value % m;
  }
}

/** The deck's card ids, position 0 (dealt first) first: Fisher-Yates from N-1 down to 1. */
function shuffleDeckV2(serverSeed, clientSeed, nonce, deckSize) {
  if (!DECK_SIZES.includes(deckSize)) {
    throw new RangeError(`${ALGORITHM} shuffles 52..54 cards, not ${deckSize}`);
  }
  const words = wordStream(serverSeed, clientSeed, nonce);
  const deck = Array.from({ length: deckSize }, (_, id) => id);
  for (let i = deckSize - 1; i >= 1; i -= 1) {
    const j = choice(i + 1, words);
    [deck[i], deck[j]] = [deck[j], deck[i]];
  }
  return deck;
}

module.exports = { ALGORITHM, DECK_SIZES, blockMessage, cardCode, choice, commitment, shuffleDeckV2, wordStream };
