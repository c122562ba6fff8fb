// Hand values, fouls, royalties, Fantasyland and settlements, with the expected numbers
// written out (the same cases as the rules book's; the service's own code gives the same).
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { cardId, rowValue, valueName, valuesDigest } = require('../lib/cards');
const { PRESETS, resolveRuleset } = require('../lib/rules');
const { assess, settle } = require('../lib/score');

const cards = (text) => text.split(' ').map(cardId);
function board(text) {
  const [top, middle, bottom] = text.split(' / ').map(cards);
  return { top, middle, bottom };
}
const value = (text) => rowValue(cards(text));

test('hand values: one scale for 3 and 5 cards, with names', () => {
  for (const [row, expected, name] of [
    ['Kh Kd Ac', 1888256, 'pair of kings, ace kicker'],
    ['Ks Kc Qd 7h 3c', 1881632, 'pair of kings, Q-7-3 kickers'],
    ['5d 4c 3h 2s Ac', 4456448, 'straight, five high'],
    ['Ah Ad Ac', 3997696, 'three aces'],
    ['Ah Kh Qh Jh Th', 10289152, 'royal flush'],
    ['Qc Qd 2c', 1773568, 'pair of queens, two kicker'],
    ['9h 8h 7h 6h 5h', 8912896, 'straight flush, nine high'],
    ['Ah Kh 9h 6h 2h', 6146129, 'flush, A-K-9-6-2'],
    ['7c 7d 7h 2s 2c', 6688768, 'full house, sevens full of twos'],
    ['6c 6d 6h 6s Ac', 7720960, 'four sixes, ace kicker'],
    ['Jc Jd 4h 4s 9c', 2766848, 'two pair, jacks and fours, nine kicker'],
    ['Ac 9d 7h 6s 3c', 886354, 'high card, A-9-7-6-3'],
  ]) {
    assert.equal(value(row), expected, row);
    assert.equal(valueName(expected), name, row);
  }
  assert.ok(value('Kh Kd Ac') > value('Ks Kc Qd 7h 3c')); // the top's ace kicker beats the middle's queen
  assert.ok(value('Kh Kd Qc') < value('Ks Kc Qd 7h 3c')); // the top runs out of kickers first
  assert.ok(value('Ac 2d 3h 4s 5c') < value('2c 3d 4h 5s 6c')); // the wheel is five-high
});

test('every 3-card and 5-card row of the deck: one digest of all their values', () => {
  // The service's evaluator gives the same digests (tests/e2e/test_node_agrees.py).
  assert.equal(valuesDigest(3), '84ea175a22a410f7caec0e88ded27f616552f96e776130938a5ee858aa7ea10c');
  assert.equal(valuesDigest(5), 'd7b0a0c9eead87145ad1e6f187642baecb0bfc63268ef1a68ed674f4cafb0bcb');
});

const A = board('Ac 3d 2h / 6c 6d 9h 8s 4c / 9c 8c 7d 6h 5s');
const B = board('Kd 3c 2d / 5c 5d 9d 8h 4d / 7c 7h Qd Js 4s');
const BIG = board('Qh Qs 2s / Tc Jc Qc Kc 2c / As Ad Ah Ks Kh');
const C = board('Kh Ks Qs / 2c 2s 3h 3s 5h / Tc Td Th Jc Jd');
const no = (n) => ({ tiers: new Array(n).fill(0), streaks: new Array(n).fill(0) });

function summary(s) {
  return {
    points: s.players.map((p) => p.points),
    units: s.players.map((p) => p.units),
    pairs: s.pairs.map((p) => [p.a, p.b, p.rows, p.scoop, p.row_points, p.royalties, p.points, p.capped_points, p.unit_value]),
  };
}

test('pairwise settlement: rows, scoop bonus, royalties (1-6)', () => {
  assert.deepEqual(summary(settle([A, B], PRESETS.classic, no(2))), { points: [8, -8], units: [8, -8], pairs: [[0, 1, [1, 1, 1], 1, 6, 2, 8, 8, 1]] });
});

test('a fouled board loses every row and the scoop to a legal one', () => {
  const fouled = board('Ac Ad 2c / Kc Kd 9h 8s 4c / 9c 8c 7d 6h 5s');
  const legal = board('Ks 3c 2d / 5c 5d 9d 8h 4d / 7c 7h Qd Js 4s');
  assert.deepEqual(summary(settle([fouled, legal], PRESETS.classic, no(2))), { points: [-6, 6], units: [-6, 6], pairs: [[0, 1, [-1, -1, -1], -1, -6, 0, -6, -6, 1]] });
  const result = assess(fouled, PRESETS.classic, 0, 0);
  assert.deepEqual([result.fouled, result.royalties, result.fantasyland], [true, [0, 0, 0], { qualifies: false, cards: 0 }]);
});

test('three players with a loss cap of 10: largest remainders, zero-sum', () => {
  const capped = { ...PRESETS.classic, loss_cap: 10 };
  assert.deepEqual(summary(settle([BIG, A, B], capped, no(3))), {
    points: [20, -10, -10],
    units: [20, -10, -10],
    pairs: [[0, 1, [1, 1, 1], 1, 6, 19, 25, 12, 1], [0, 2, [1, 1, 1], 1, 6, 21, 27, 8, 1], [1, 2, [1, 1, 1], 1, 6, 2, 8, 2, 1]],
  });
});

test('per-pair stakes: each pair is paid at its own unit value', () => {
  const stakes = new Map([['0,1', 20], ['0,2', 15]]);
  const s = settle([BIG, A, B], PRESETS.classic, { ...no(3), pairUnits: stakes });
  assert.deepEqual(summary(s), {
    points: [52, -17, -35],
    units: [905, -492, -413],
    pairs: [[0, 1, [1, 1, 1], 1, 6, 19, 25, 25, 20], [0, 2, [1, 1, 1], 1, 6, 21, 27, 27, 15], [1, 2, [1, 1, 1], 1, 6, 2, 8, 8, 1]],
  });
});

test('other scoring schemes and royalties to the row winner only', () => {
  assert.deepEqual(summary(settle([A, B], resolveRuleset({ scoring: '2-4' }), no(2))).pairs, [[0, 1, [1, 1, 1], 1, 4, 2, 6, 6, 1]]);
  assert.deepEqual(summary(settle([C, A], resolveRuleset({ royalties_to_row_winner_only: true }), no(2))).pairs, [[0, 1, [1, 1, 1], 1, 6, 14, 20, 20, 1]]);
});

test('Fantasyland entry by the top row (progressive pineapple) and the royalties of each row', () => {
  const rules = PRESETS['progressive-pineapple'];
  for (const [top, cardsNext, royalties] of [
    ['Qh Qs 2s', 14, [7, 8, 6]],
    ['Jh Js 2s', 0, [6, 8, 6]],
    ['3h 3s 3c', 17, [11, 8, 6]],
    ['2h 2s 2d', 17, [10, 8, 6]],
  ]) {
    const result = assess(board(`${top} / Tc Jc Qc Kc 2c / As Ad Ah Ks Kh`), rules, 0, 0);
    assert.deepEqual([result.fantasyland, result.royalties], [{ qualifies: cardsNext > 0, cards: cardsNext }, royalties], top);
  }
});

test('Fantasyland stay: a stay condition, the consecutive cap, a row royalty threshold', () => {
  const trips = board('3h 3s 3c / Tc Jc Qc Kc 2c / As Ad Ah Ks Kh');
  const rules = PRESETS.pineapple;
  assert.deepEqual(assess(trips, rules, 14, 1).fantasyland, { qualifies: true, cards: 14 });
  assert.deepEqual(assess(trips, { ...rules, max_consecutive_fantasylands: 2 }, 14, 2).fantasyland, { qualifies: false, cards: 0 });
  assert.deepEqual(assess(trips, { ...rules, stay_conditions: [], stay_min_row_royalty: 12 }, 14, 1).fantasyland, { qualifies: false, cards: 0 });
  assert.deepEqual(assess(trips, { ...rules, stay_conditions: [], stay_min_row_royalty: 11 }, 14, 1).fantasyland, { qualifies: true, cards: 14 });
  assert.deepEqual(assess(C, rules, 14, 1).fantasyland, { qualifies: false, cards: 0 }); // full house bottom: no stay condition
});

test('format 4: Fantasyland tiers keep their size, a stay condition has a rank, a top high card pays', () => {
  const keep = PRESETS['progressive-pineapple-keep'];
  const aa = board('Ac Ad 2c / 3h 3d 5s 5c 7d / Ts Js Qs Ks 2s');
  assert.deepEqual([0, 14, 16, 17].map((tier) => assess(aa, keep, tier, 1).fantasyland.cards), [16, 14, 16, 0]);
  const highCard = PRESETS['pineapple-top-high-card'];
  assert.deepEqual(assess(board('As Kd Qc / 3h 3d 5s 5c 7d / Ts Js 9s Ks 2s'), highCard, 0, 0).royalties, [1, 0, 4]);
  assert.deepEqual(assess(board('As Kd Qc / 3h 3d 5s 5c 7d / Ts Js 9s Ks 2s'), PRESETS.pineapple, 0, 0).royalties, [0, 0, 4]);
});

test('a ruleset refuses what would pay backwards or keep every board in Fantasyland, as Python does', () => {
  for (const [spec, field] of [
    [{ stay_min_row_royalty: 0 }, 'stay_min_row_royalty'],
    [{ stay_min_row_royalty: -5 }, 'stay_min_row_royalty'],
    [{ scoring: { row_value: -1, scoop_bonus: 3 } }, 'scoring.row_value'],
    [{ scoring: { row_value: 1, scoop_bonus: -3 } }, 'scoring.scoop_bonus'],
    [{ scoring: { majority_value: -2 } }, 'scoring.majority_value'],
  ]) {
    assert.throws(() => resolveRuleset(spec), (error) => error.reason === 'INVALID_RULESET' && error.field === field, JSON.stringify(spec));
  }
  assert.equal(resolveRuleset({ stay_min_row_royalty: 1 }).stay_min_row_royalty, 1);
});
