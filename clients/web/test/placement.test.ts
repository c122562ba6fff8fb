// Legal targets and complete batches.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Assignment, fantasylandBatch, streetBatch } from "../src/placement";

const EMPTY = { top: [], middle: [], bottom: [] };

test("a first street: five cards to rows with room, no discard", () => {
  const a = new Assignment(EMPTY, streetBatch(["As", "Ks", "Qs", "Js", "Ts"], 5));
  assert.deepEqual(a.legalTargets("As"), ["top", "middle", "bottom"]);
  for (const c of ["As", "Ks", "Qs"]) assert.ok(a.assign(c, "top"));
  assert.equal(a.room("top"), 0);
  assert.deepEqual(a.legalTargets("Js"), ["middle", "bottom"]);
  assert.equal(a.assign("Js", "top"), false);
  assert.equal(a.assign("Js", "discard"), false);
  assert.equal(a.complete(), false);
  a.assign("Js", "middle");
  a.assign("Ts", "bottom");
  assert.ok(a.complete());
  assert.deepEqual(a.cardsTo("top"), ["As", "Ks", "Qs"]);
});

test("a Pineapple street: two placed, exactly one discarded", () => {
  const board = { top: ["2c", "3c"], middle: ["4c", "5c", "6c", "7c", "8c"], bottom: ["9c", "Tc"] };
  const a = new Assignment(board, streetBatch(["Ah", "Kh", "Qh"], 2));
  assert.deepEqual(a.legalTargets("Ah"), ["top", "bottom", "discard"]);
  assert.ok(a.assign("Ah", "discard"));
  assert.deepEqual(a.legalTargets("Kh"), ["top", "bottom"], "one discard only");
  assert.deepEqual(a.legalTargets("Ah"), ["top", "bottom", "discard"], "its own target stays legal");
  a.assign("Kh", "top");
  assert.equal(a.complete(), false);
  a.assign("Qh", "bottom");
  assert.ok(a.complete());
  a.unassign("Kh");
  assert.deepEqual(a.unassigned(), ["Kh"]);
  assert.equal(a.legalTargets("Zz").length, 0, "a card not dealt has no target");
});

test("a Fantasyland hand fills the board and discards the rest; a suggestion is taken whole", () => {
  const cards = "As Ks Qs Js Ts 9h 9d 9c 8h 8d 2c 3c 4c 5d".split(" ");
  const a = new Assignment(EMPTY, fantasylandBatch(cards));
  assert.equal(a.batch.discards, 1);
  assert.equal(a.assignAll({ top: ["9h", "9d", "9c"], middle: ["8h", "8d", "2c", "3c", "4c"], bottom: ["As", "Ks", "Qs", "Js", "Ts"] }, ["5d"]), true);
  assert.ok(a.complete());
  assert.equal(a.assignAll({ top: ["9h", "9d"], middle: [], bottom: [] }, []), false, "an incomplete suggestion changes nothing");
  assert.deepEqual(a.cardsTo("discard"), ["5d"]);
});
