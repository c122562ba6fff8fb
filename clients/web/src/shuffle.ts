// ofc-shuffle-v1 with WebCrypto (SHA-256, HMAC-SHA256), written from the spec
// (docs/hand-history.md "The deck"), not from the service's code:
//
//   block k = HMAC-SHA256(key = server_seed,
//             msg = "ofc-shuffle-v1" 0x00 u32be(len(client_seed)) client_seed u64be(nonce) u32be(k))
//
// read as eight big-endian u32 words; a fair choice in 0..m-1 drops words >= 2^32 - (2^32 mod m)
// and returns u mod m; the deck is the 52 cards in id order, with positions i = 51..1 swapped
// with choice(i + 1). Position 0 is dealt first.
//
// ofc-shuffle-v2 (docs/shuffle-v2.md), the deal of a deck with jokers, is the same word stream
// and choice on N = 53 or 54 cards: the 52, then X1 (and X2), positions N-1..1 swapped.

import { cardOf } from "./cards";

export const ALGORITHM = "ofc-shuffle-v1";
export const ALGORITHM_V2 = "ofc-shuffle-v2";
const DOMAIN = new TextEncoder().encode(ALGORITHM);
const TWO_32 = 0x1_0000_0000;

type Bytes = Uint8Array<ArrayBuffer>;

export function hexToBytes(hex: string): Bytes {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) {
    throw new Error(`not hex: ${JSON.stringify(hex.slice(0, 80))}`);
  }
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function bytesToHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function copy(bytes: Uint8Array): Bytes {
  return new Uint8Array(bytes);
}

/** SHA-256 of the bytes, lower-case hex: a server seed's commitment. */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  return bytesToHex(new Uint8Array(await crypto.subtle.digest("SHA-256", copy(bytes))));
}

/** The HMAC message of block k, without the 4 bytes of k. */
function messagePrefix(clientSeed: Uint8Array, nonce: bigint): Bytes {
  const out = new Uint8Array(DOMAIN.length + 1 + 4 + clientSeed.length + 8 + 4);
  const view = new DataView(out.buffer);
  out.set(DOMAIN, 0);
  let at = DOMAIN.length + 1; // the 0x00 separator is already 0
  view.setUint32(at, clientSeed.length);
  at += 4;
  out.set(clientSeed, at);
  at += clientSeed.length;
  view.setBigUint64(at, BigInt.asUintN(64, nonce));
  return out;
}

/** The stream of u32 words for (server seed, client seed, nonce), one HMAC block at a time. */
export class WordStream {
  private readonly key: Promise<CryptoKey>;
  private readonly message: Bytes;
  private block = 0;
  private words: number[] = [];

  constructor(serverSeed: Uint8Array, clientSeed: Uint8Array, nonce: bigint) {
    if (serverSeed.length !== 32) throw new Error(`a server seed is 32 bytes, got ${serverSeed.length}`);
    this.key = crypto.subtle.importKey("raw", copy(serverSeed), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    this.message = messagePrefix(clientSeed, nonce);
  }

  /** Block k of the stream (32 bytes). */
  async blockBytes(k: number): Promise<Bytes> {
    const message = this.message;
    new DataView(message.buffer).setUint32(message.length - 4, k);
    return new Uint8Array(await crypto.subtle.sign("HMAC", await this.key, message));
  }

  async next(): Promise<number> {
    if (this.words.length === 0) {
      const block = await this.blockBytes(this.block++);
      const view = new DataView(block.buffer);
      this.words = Array.from({ length: 8 }, (_, i) => view.getUint32(4 * i));
    }
    return this.words.shift()!;
  }
}

/** A fair choice in 0..m-1 from the next words (rejection sampling, as the spec says). */
export async function choice(m: number, next: () => Promise<number> | number): Promise<number> {
  if (!Number.isInteger(m) || m < 1 || m > TWO_32) throw new Error(`choice needs 1 <= m <= 2^32, got ${m}`);
  const limit = TWO_32 - (TWO_32 % m);
  for (;;) {
    const u = await next();
    if (u < limit) return u % m;
  }
}

/** The deck of (server seed, client seed, nonce): `size` card codes (52 for ofc-shuffle-v1; 53
 *  or 54 for ofc-shuffle-v2, the jokers after the 52), position 0 first. */
export async function shuffleDeck(serverSeed: Uint8Array, clientSeed: Uint8Array, nonce: bigint, size = 52): Promise<string[]> {
  if (size < 52 || size > 54) throw new RangeError(`a deck has 52..54 cards, not ${size}`);
  const words = new WordStream(serverSeed, clientSeed, nonce);
  const deck = Array.from({ length: size }, (_, id) => id);
  for (let i = size - 1; i >= 1; i--) {
    const j = await choice(i + 1, () => words.next());
    [deck[i], deck[j]] = [deck[j]!, deck[i]!];
  }
  return deck.map(cardOf);
}

/** Several parties' client seeds as one (CLIENT_SEED_POLICY_PLAYERS): each as u32be byte
 *  length and bytes, in order; a single seed is used as it is. */
export function combineClientSeeds(seeds: readonly Uint8Array[]): Bytes {
  if (seeds.length === 1) return copy(seeds[0]!);
  const out = new Uint8Array(seeds.reduce((n, s) => n + 4 + s.length, 0));
  const view = new DataView(out.buffer);
  let at = 0;
  for (const seed of seeds) {
    view.setUint32(at, seed.length);
    out.set(seed, at + 4);
    at += 4 + seed.length;
  }
  return out;
}

/** The parts of a combined client seed, or null when the bytes are not such a sequence. */
export function splitClientSeed(combined: Uint8Array): Bytes[] | null {
  const parts: Bytes[] = [];
  const view = new DataView(combined.buffer, combined.byteOffset, combined.byteLength);
  let at = 0;
  while (at < combined.length) {
    if (at + 4 > combined.length) return null;
    const n = view.getUint32(at);
    if (at + 4 + n > combined.length) return null;
    parts.push(copy(combined.subarray(at + 4, at + 4 + n)));
    at += 4 + n;
  }
  return parts;
}
