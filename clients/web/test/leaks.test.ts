// The browser test's leak detector finds what it must (a check that cannot fail proves nothing).
import assert from "node:assert/strict";
import { test } from "node:test";
import { gzipSync } from "node:zlib";
import { domLeaks, handMessages, messagesOf, networkLeaks, type Opponent, printed } from "./browser/leaks";

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
function envelope(json: unknown): Uint8Array {
  const body = enc(JSON.stringify(json));
  const out = new Uint8Array(5 + body.length);
  new DataView(out.buffer).setUint32(1, body.length);
  out.set(body, 5);
  return out;
}
const other: Opponent = { seat: 1, publicAt: new Map([["Kh", 1000], ["7c", Infinity], ["2d", Infinity]]), discards: new Set(["2d"]) };

test("stream envelopes are split into messages, each with the time it was complete", () => {
  const a = envelope({ snapshot: { tableId: "t" } });
  const b = envelope({ events: { events: [] } });
  const both = new Uint8Array([...a, ...b]);
  const msgs = messagesOf({ path: "/x/Watch", contentType: "application/connect+json", encoding: "", chunks: [{ at: 5, data: both.subarray(0, a.length + 2) }, { at: 9, data: both.subarray(a.length + 2) }] });
  assert.deepEqual(msgs.map((m) => m.at), [5, 9]);
});

test("gzip-compressed responses and stream messages are read", () => {
  const json = { table: { hand: { seats: [{ pending: ["7c"] }] } } };
  const unary = messagesOf({ path: "/x/GetTable", contentType: "application/json", encoding: "gzip", chunks: [{ at: 1, data: gzipSync(JSON.stringify(json)) }] });
  assert.deepEqual(unary[0]!.json, json);
  const packed = gzipSync(JSON.stringify(json));
  const env = new Uint8Array(5 + packed.length);
  env[0] = 1;
  new DataView(env.buffer).setUint32(1, packed.length);
  env.set(packed, 5);
  const stream = messagesOf({ path: "/x/Watch", contentType: "application/connect+json", encoding: "gzip", chunks: [{ at: 2, data: env }] });
  assert.equal(networkLeaks(stream, other, /GetHandHistory$/).length, 1);
});

test("a card in a pending list, a discard, or a placement seen too early are leaks", () => {
  const at = (json: unknown, t: number) => ({ path: "/ofcpoker.v1.TableService/GetTable", at: t, json });
  const leaks = networkLeaks([
    at({ table: { hand: { seats: [{ seat: 1, pending: ["7c"] }] } } }, 2000),
    at({ events: { events: [{ discardMade: { seat: 1, card: "2d" } }] } }, 2000),
    at({ events: { events: [{ cardsPlaced: { seat: 1, placements: [{ card: "Kh", row: "ROW_POSITION_TOP" }] } }] } }, 999),
    at({ events: { events: [{ cardsPlaced: { seat: 1, placements: [{ card: "Kh", row: "ROW_POSITION_TOP" }] } }] } }, 1000),
    at({ table: { hand: { seats: [{ seat: 1, board: { top: ["Kh"] } }] } } }, 1500),
  ], other, /GetHandHistory$/);
  assert.deepEqual(leaks.map((l) => l.why), ["not in a face-up place", "a discard", "received 1 ms before it was placed"]);
  assert.deepEqual(networkLeaks([{ path: "/x/GetHandHistory", at: 0, json: { historyJson: "", x: ["7c"] } }], other, /GetHandHistory$/), []);
});

test("a DOM showing the other seat's card early, or elsewhere, or in its text", () => {
  assert.equal(printed("Th"), "10♥");
  assert.deepEqual(domLeaks({ at: 1500, hand: 1, cards: [{ card: "Kh", board: 1 }], text: "K♥" }, other, false), []);
  assert.equal(domLeaks({ at: 900, hand: 1, cards: [{ card: "Kh", board: 1 }], text: "" }, other, false)[0]?.why, "shown before it was placed");
  assert.equal(domLeaks({ at: 1500, hand: 1, cards: [{ card: "7c", board: 0 }], text: "" }, other, false)[0]?.why, "shown outside its seat's board");
  assert.equal(domLeaks({ at: 1500, hand: 1, cards: [], text: "bob holds 7♣" }, other, false)[0]?.why, "printed before it was placed");
  assert.deepEqual(domLeaks({ at: 1500, hand: 1, cards: [{ card: "7c", board: 0 }], text: "7♣" }, other, true), []);
});

test("each event of a stream counts for the hand it is about", () => {
  const chunks = [
    envelope({ snapshot: { hand: { number: "1" } } }),
    envelope({ events: { events: [{ buttonMoved: {} }, { handStarted: { number: "2" } }, { cardsDealt: { seat: 1, count: 5 } }] } }),
  ].map((data, i) => ({ at: i, data }));
  const got = handMessages({ path: "/x/Watch", contentType: "application/connect+json", encoding: "", chunks });
  assert.deepEqual(got.map((m) => m.hand), [1, 1, 2, 2]);
  assert.deepEqual(Object.keys((got[3]!.json as { event: object }).event), ["cardsDealt"]);
});
