// ofc-shuffle-v1 in WebCrypto against docs/shuffle-v1.md's worked example and every vector of
// tests/vectors/shuffle-v1.json (which the Python and Node tests read too).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { bytesToHex, choice, combineClientSeeds, hexToBytes, sha256Hex, shuffleDeck, splitClientSeed, WordStream } from "../src/shuffle";

const SERVER_SEED = Uint8Array.from({ length: 32 }, (_, i) => i);
const CLIENT_SEED = new TextEncoder().encode("auditor-test");
const DECK = "Qs 6d Ad Td 6s 4s 8s Kc Kh 7d 8d Ts Jc 4d Js 5c 5s 7h Ac 9s Kd 9d Ah 3s 9c 2s 3h As 2d Jd 3d 7s 3c 2c Tc Qc 4c 8h Th 4h 5h Qd 6h 8c 5d 7c Jh Ks Qh 6c 9h 2h";

test("the commitment is SHA-256 of the server seed", async () => {
  assert.equal(await sha256Hex(SERVER_SEED), "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd");
});

test("block 0 of the word stream", async () => {
  const block = await new WordStream(SERVER_SEED, CLIENT_SEED, 1n).blockBytes(0);
  assert.equal(bytesToHex(block), "acbcbada65c670e7e5fbcd883f37913b3dbad66fdb57892d906a7028660462e5");
});

test("the deck of the spec's vector", async () => {
  assert.equal((await shuffleDeck(SERVER_SEED, CLIENT_SEED, 1n)).join(" "), DECK);
});

test("another nonce or client seed is another deck", async () => {
  const deck = (await shuffleDeck(SERVER_SEED, CLIENT_SEED, 1n)).join(" ");
  assert.notEqual((await shuffleDeck(SERVER_SEED, CLIENT_SEED, 2n)).join(" "), deck);
  assert.notEqual((await shuffleDeck(SERVER_SEED, new Uint8Array(), 1n)).join(" "), deck);
});

test("rejection sampling: 0xFFFFFFFF and 0xFFFFFFFC are dropped for m = 52, then 7 gives 7", async () => {
  const words = [0xffffffff, 0xfffffffc, 7];
  let taken = 0;
  assert.equal(await choice(52, () => words[taken++]!), 7);
  assert.equal(taken, 3);
  // 4294967247 = limit - 1 is the largest word kept: 4294967247 mod 52 = 51
  assert.equal(await choice(52, () => 4294967247), 51);
});

test("players' seeds combine length-prefixed in seat order; one seed stays as it is", () => {
  const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
  assert.equal(bytesToHex(combineClientSeeds([enc("ab"), enc("c")])), "0000000261620000000163");
  assert.equal(bytesToHex(combineClientSeeds([enc("only")])), bytesToHex(enc("only")));
  const parts = splitClientSeed(hexToBytes("000000026162000000000000000163"))!;
  assert.deepEqual(parts.map((p) => new TextDecoder().decode(p)), ["ab", "", "c"]);
  assert.equal(splitClientSeed(hexToBytes("00000005ab")), null);
});

test("a server seed of another length is refused", () => {
  assert.throws(() => new WordStream(new Uint8Array(31), CLIENT_SEED, 1n), /32 bytes/);
  assert.throws(() => hexToBytes("abc"), /not hex/);
});

interface Vector { name: string; server_seed: string; client_seed: string; nonce: string; commitment: string; words: string[]; deck: string }
interface Rejection { m: number; limit: number; words: number[]; result: number }
// relative to clients/web, where the tests run
const VECTORS = JSON.parse(readFileSync("../../tests/vectors/shuffle-v1.json", "utf8")) as { vectors: Vector[]; rejection: Rejection[] };

for (const v of VECTORS.vectors) {
  test(`vector: ${v.name}`, async () => {
    const seed = hexToBytes(v.server_seed);
    const client = hexToBytes(v.client_seed);
    assert.equal(await sha256Hex(seed), v.commitment);
    assert.equal(bytesToHex(await new WordStream(seed, client, BigInt(v.nonce)).blockBytes(0)), v.words.join(""));
    assert.equal((await shuffleDeck(seed, client, BigInt(v.nonce))).join(" "), v.deck);
  });
}

for (const r of VECTORS.rejection) {
  test(`rejection: m = ${r.m} discards words at or above ${r.limit}`, async () => {
    let taken = 0;
    assert.equal(await choice(r.m, () => r.words[taken++]!), r.result);
    assert.equal(taken, r.words.length);
  });
}
