// Card codes as the page reads and shows them, jokers included (docs/jokers.md).
import assert from "node:assert/strict";
import { test } from "node:test";
import { byStrength, cardId, cardName, cardOf, face, isCard, isJoker, suitClass } from "../src/cards";

test("natural cards: ids, faces and names", () => {
  assert.deepEqual([cardId("2c"), cardId("As"), cardOf(0), cardOf(51)], [0, 51, "2c", "As"]);
  assert.deepEqual(face("Th"), { rank: "10", suit: "♥" });
  assert.equal(cardName("Kh"), "king of hearts");
  assert.equal(suitClass("Kh"), "suit-h");
});

test("the jokers X1 and X2: ids after the 52, a joker face, read as 'joker'", () => {
  assert.deepEqual([isCard("X1"), isCard("X2"), isCard("X3"), isCard("x1")], [true, true, false, false]);
  assert.deepEqual([isJoker("X1"), isJoker("As")], [true, false]);
  assert.deepEqual([cardId("X1"), cardId("X2"), cardOf(52), cardOf(53)], [52, 53, "X1", "X2"]);
  assert.deepEqual(face("X2"), { rank: "JKR", suit: "★" });
  assert.deepEqual([cardName("X1"), cardName("X2")], ["joker", "joker"]);
  assert.equal(suitClass("X1"), "joker");
  assert.deepEqual(["2c", "X1", "As", "X2"].sort(byStrength), ["X2", "X1", "As", "2c"]);
});
