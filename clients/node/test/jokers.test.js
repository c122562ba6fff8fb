// Jokers as docs/jokers.md defines them: a joker is the card not already in its row that
// makes the row strongest, on the one scale, with the numbers written out; the category
// counts of every row with one and two jokers are the page's own table.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { CATEGORIES, categoryOf, cardCode, cardId, parseCard, rowValue, valueName, valuesDigest } = require('../lib/cards');
const { resolveRuleset, rulesetToDict } = require('../lib/rules');
const { assess } = require('../lib/score');

const cards = (text) => text.split(' ').map(cardId);
const value = (text) => rowValue(cards(text));
function board(text) {
  const [top, middle, bottom] = text.split(' / ').map(cards);
  return { top, middle, bottom };
}

test('the jokers are X1 = 52 and X2 = 53, read in any case', () => {
  assert.deepEqual([cardId('X1'), cardId('X2'), parseCard('x1'), parseCard(' X2 ')], [52, 53, 52, 53]);
  assert.deepEqual([cardCode(52), cardCode(53)], ['X1', 'X2']);
  assert.equal(cardId('X3'), -1);
  assert.throws(() => cardCode(54), /not a card id/);
});

test('a joker row is the natural row it makes: the examples of docs/jokers.md', () => {
  for (const [row, name] of [
    ['Ac Ad Ah As X1', 'four aces, king kicker'], // no five of a kind
    ['Ah X1 9h 8h 2h', 'flush, A-K-9-8-2'], // no double-ace flush
    ['X1 9h 8h 2h 3h', 'flush, A-9-8-3-2'], // the joker is the highest kicker left
    ['X1 X2 9h 8h 2h', 'flush, A-K-9-8-2'],
    ['X1 Kd 7c', 'pair of kings, seven kicker'],
    ['X1 Qd 5c', 'pair of queens, five kicker'],
    ['X1 X2 2c', 'three twos'],
    ['X1 Kh Qh Jh Th', 'royal flush'],
    ['X1 X2 Ac', 'three aces'],
    ['X1 5d 4c 3h 2s', 'straight, six high'],
    ['X1 X2 Ac Ad Ah', 'four aces, king kicker'],
    ['X1 7c 7d 2h 2s', 'full house, sevens full of twos'],
  ]) {
    assert.equal(valueName(value(row)), name, row);
  }
  // A tie between a natural and a joker row is a tie.
  assert.equal(value('Ks X2 7h'), value('Ks Kd 7c'));
  // The top-vs-middle rule stays exact: kings with an ace kicker on top beat kings, Q-7-3.
  assert.ok(value('X1 Kd Ac') > value('Ks Kc Qd 7h 3c'));
  assert.ok(value('X1 Kd Qc') < value('Ks Kh Qd 7h 3c'));
});

test('royalties and Fantasyland count the hand a joker makes', () => {
  const classic = resolveRuleset('classic-joker');
  const qq = assess(board('X1 Qd 5c / 6c 6d 6h 8s 4c / 9c 8c 7d 6s 5s'), classic, 0, 0);
  assert.deepEqual([qq.fouled, qq.royalties, qq.fantasyland], [false, [7, 2, 2], { qualifies: true, cards: 13 }]);
  const trips = assess(board('X1 X2 2c / 6c 6d 6h 8s 4c / Ah Kh Qh Jh Th'), resolveRuleset('pineapple-jokers'), 14, 1);
  assert.deepEqual([trips.fouled, trips.royalties, trips.fantasyland], [false, [10, 2, 25], { qualifies: true, cards: 14 }]);
  const fouled = assess(board('X1 Kd Ac / Ks Kc Qd 7h 3c / Ah Kh Qh Jh Th'), classic, 0, 0);
  assert.equal(fouled.fouled, true);
});

test('the joker presets: classic with one joker, Pineapple with two', () => {
  assert.deepEqual(rulesetToDict(resolveRuleset('classic-joker')), { ...rulesetToDict(resolveRuleset('classic')), name: 'classic-joker', jokers: 1 });
  assert.deepEqual(rulesetToDict(resolveRuleset('pineapple-jokers')), { ...rulesetToDict(resolveRuleset('pineapple')), name: 'pineapple-jokers', jokers: 2 });
  assert.throws(() => resolveRuleset({ preset: 'classic', jokers: 3 }), /0\.\.2 jokers/);
});

function categoryCounts(size, jokers) {
  const counts = new Array(CATEGORIES.length).fill(0);
  const row = new Array(size);
  for (let k = 0; k < jokers; k += 1) row[size - jokers + k] = 52 + k;
  const walk = (from, depth) => {
    if (depth === size - jokers) {
      counts[categoryOf(rowValue(row))] += 1;
      return;
    }
    for (let id = from; id < 52; id += 1) {
      row[depth] = id;
      walk(id + 1, depth + 1);
    }
  };
  walk(0, 0);
  return counts;
}

test('every row with one and two jokers: the category counts of docs/jokers.md', () => {
  // high card, pair, two pair, trips, straight, flush, full house, quads, straight flush, royal flush
  assert.deepEqual(categoryCounts(5, 1), [0, 169848, 0, 82368, 10332, 2696, 2808, 2509, 144, 20]);
  assert.deepEqual(categoryCounts(5, 2), [0, 0, 0, 13320, 3840, 888, 0, 3796, 216, 40]);
  assert.deepEqual(categoryCounts(3, 1), [0, 1248, 0, 78, 0, 0, 0, 0, 0, 0]);
  assert.deepEqual(categoryCounts(3, 2), [0, 0, 0, 52, 0, 0, 0, 0, 0, 0]);
});

test('every row with one and two jokers: one digest of their values each', () => {
  // The service's evaluator gives the same digests (tests/e2e/test_node_agrees.py).
  assert.equal(valuesDigest(3, 1), '3e813d3f5b42e49a8b1ed1ac373423a69e6da92b22e870b115d0cbee4076e2a4');
  assert.equal(valuesDigest(3, 2), 'ac179fcf7b42edba8fcabade47a6bb4c9bc00fb84e2b1276c758d53684ba3824');
  assert.equal(valuesDigest(5, 1), '37f58ad7981aec9d22d8fca20f69a0db58da7a6008323541a45cee924371de56');
  assert.equal(valuesDigest(5, 2), '085e99598ade4192b3a6c20bd88dfb3b4fcb83d0de97bc62c72ff5d679d0e265');
});
