// ofc-shuffle-v1 (docs/hand-history.md "The deck", shared/spec/shuffle-v1.md), from the spec:
// an HMAC-SHA256 word stream keyed with the server seed, rejection sampling, Fisher-Yates.
'use strict';

const crypto = require('node:crypto');

const ALGORITHM = 'ofc-shuffle-v1';
const TWO_32 = 2 ** 32;

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

module.exports = { ALGORITHM, block, blockMessage, choice, commitment, shuffleDeck, wordStream };
