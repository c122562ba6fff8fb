// verify.js on hand histories built here from the spec's deck vector (not from the service),
// so the deal order is checked against the documented formula independently.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { dealPlan, turnOrder, verifyHistory } = require('../verify.js');

const SEED_HEX = Buffer.from(Array.from({ length: 32 }, (_, i) => i)).toString('hex');
const CLIENT_HEX = Buffer.from('auditor-test').toString('hex');
const COMMITMENT = '630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd';
const DECK = (
  'Qs 6d Ad Td 6s 4s 8s Kc Kh 7d 8d Ts Jc 4d Js 5c 5s 7h Ac 9s Kd 9d Ah 3s 9c 2s 3h As 2d Jd 3d 7s ' +
  '3c 2c Tc Qc 4c 8h Th 4h 5h Qd 6h 8c 5d 7c Jh Ks Qh 6c 9h 2h'
).split(' ');
const CLASSIC = [[5, 5], ...Array(8).fill([1, 1])];
const PINEAPPLE = [[5, 5], ...Array(4).fill([3, 2])];

// A hand 1 history in the service's format, dealt from the spec's deck by the formula
// F + k * (D_0 + ... + D_(s-1)) + j * D_s, written out here independently of dealPlan().
function makeHistory({ seats, button = 0, streets = CLASSIC, fantasyland = {} }) {
  const n = seats.length;
  const order = [];
  for (let k = 1; k <= n; k += 1) if (seats[(button + k) % n]) order.push((button + k) % n);
  const fl = order.filter((s) => fantasyland[s]);
  const normal = order.filter((s) => !fantasyland[s]);
  const deals = [];
  let F = 0;
  for (const s of fl) {
    deals.push({ type: 'cards_dealt', seat: s, street: null, position: F, count: fantasyland[s], cards: DECK.slice(F, F + fantasyland[s]) });
    F += fantasyland[s];
  }
  let before = 0;
  streets.forEach(([deal], s) => {
    normal.forEach((seat, j) => {
      const position = F + normal.length * before + j * deal;
      deals.push({ type: 'cards_dealt', seat, street: s, position, count: deal, cards: DECK.slice(position, position + deal) });
    });
    before += deal;
  });
  const boards = order.map((seat) => {
    const cards = deals.filter((d) => d.seat === seat).flatMap((d) => d.cards);
    return { seat, top: cards.slice(0, 3), middle: cards.slice(3, 8), bottom: cards.slice(8, 13), discards: cards.slice(13) };
  });
  return {
    format_version: 1,
    algorithm: 'ofc-shuffle-v1',
    ruleset: 'test',
    hand_number: 1,
    server_seed: SEED_HEX,
    client_seed: CLIENT_HEX,
    commitment: COMMITMENT,
    button,
    order,
    players: order.map((seat) => ({ seat, player_id: seats[seat], fantasyland: fantasyland[seat] || 0 })),
    initial_state: {
      format_version: 1,
      ruleset: { name: 'test', streets },
      seats: seats.map((id, seat) => ({ player_id: id, points: 0, fantasyland: fantasyland[seat] || 0, fantasyland_streak: 0 })),
      button,
      hands_played: 0,
      max_hands: null,
      hand: null,
    },
    deals,
    actions: [{ type: 'start_hand', server_seed: SEED_HEX, client_seed: CLIENT_HEX, at_ms: 0 }],
    boards,
  };
}

function rejects(history, where, pattern) {
  assert.throws(() => verifyHistory(history), (err) => {
    assert.equal(err.name, 'Discrepancy');
    assert.equal(err.where, where);
    if (pattern) assert.match(err.message, pattern);
    return true;
  });
}

test('turn order starts after the button and skips empty seats', () => {
  const seats = ['a', '', 'c', 'd'].map((player_id) => ({ player_id }));
  assert.deepEqual(turnOrder(seats, 0), [2, 3, 0]);
  assert.deepEqual(turnOrder(seats, 2), [3, 0, 2]);
  assert.deepEqual(turnOrder(seats, 3), [0, 2, 3]);
});

test('deal plan: Fantasyland blocks first, then street by street in turn order', () => {
  const plan = dealPlan(
    [{ seat: 1, fantasyland: 14 }, { seat: 2, fantasyland: 0 }, { seat: 0, fantasyland: 0 }],
    PINEAPPLE.map(([deal]) => ({ deal })),
  );
  assert.deepEqual(plan.slice(0, 5).map((b) => [b.seat, b.street, b.position, b.count]), [
    [1, null, 0, 14],
    [2, 0, 14, 5],
    [0, 0, 19, 5],
    [2, 1, 24, 3],
    [0, 1, 27, 3],
  ]);
  assert.equal(plan.length, 1 + 2 * 5);
  assert.equal(plan.at(-1).position + plan.at(-1).count, 14 + 2 * 17);
});

test('the engine docstring example: with the button on seat 0, seat 1 is dealt Qs 6d Ad Td 6s', () => {
  const h = makeHistory({ seats: ['ann', 'bob'] });
  assert.deepEqual(h.deals[0], { type: 'cards_dealt', seat: 1, street: 0, position: 0, count: 5, cards: 'Qs 6d Ad Td 6s'.split(' ') });
  assert.deepEqual(h.deals[1].cards, '4s 8s Kc Kh 7d'.split(' '));
  assert.deepEqual(verifyHistory(h), { hand: 1, commitment: COMMITMENT, seats: 2, batches: 18, cards: 26 });
});

test('histories with Fantasyland seats, empty seats and Pineapple discards verify', () => {
  assert.equal(verifyHistory(makeHistory({ seats: ['a', 'b', 'c'], button: 1, streets: PINEAPPLE })).cards, 51);
  assert.equal(verifyHistory(makeHistory({ seats: ['a', '', 'c'], button: 2, fantasyland: { 0: 14 } })).batches, 10);
  const both = makeHistory({ seats: ['a', 'b', 'c'], streets: PINEAPPLE, fantasyland: { 2: 15, 0: 16 } });
  assert.deepEqual(both.deals.slice(0, 3).map((d) => [d.seat, d.street, d.position]), [[2, null, 0], [0, null, 15], [1, 0, 31]]);
  assert.equal(verifyHistory(both).cards, 48);
});

test('each kind of tampering is rejected at its location', () => {
  const fresh = () => makeHistory({ seats: ['a', 'b', 'c'], streets: PINEAPPLE, fantasyland: { 1: 14 } });
  let h = fresh();
  h.deals[3].cards[1] = h.deals[3].cards[1] === '2h' ? '2d' : '2h';
  rejects(h, 'deals[3].cards[1]', /deck position 25/);

  h = fresh();
  h.server_seed = 'ff' + h.server_seed.slice(2);
  rejects(h, 'commitment', /SHA-256/);

  h = fresh();
  h.commitment = '0'.repeat(64);
  rejects(h, 'commitment');

  h = fresh();
  h.hand_number = 2; // another nonce: another deck
  rejects(h, 'hand_number');
  h.initial_state.hands_played = 1;
  rejects(h, 'deals[0].cards[0]');

  h = fresh();
  h.client_seed = '00';
  rejects(h, 'actions[0].client_seed');
  h.actions[0].client_seed = '00';
  rejects(h, 'deals[0].cards[0]');

  h = fresh();
  [h.deals[2], h.deals[3]] = [h.deals[3], h.deals[2]];
  rejects(h, 'deals[2].seat');

  h = fresh();
  h.deals.pop();
  rejects(h, 'deals', /missing batch 10/);

  h = fresh();
  h.deals.push({ ...h.deals[1] });
  rejects(h, 'deals[11]', /extra batch/);

  h = fresh();
  h.players[0].fantasyland = 0;
  rejects(h, 'players[0].fantasyland');

  h = fresh();
  h.order = [0, 1, 2];
  rejects(h, 'order');

  h = fresh();
  [h.boards[1].top[0], h.boards[2].top[0]] = [h.boards[2].top[0], h.boards[1].top[0]];
  rejects(h, 'boards[1]', /not the cards dealt/);

  rejects({ ...fresh(), format_version: 3 }, 'format_version');
  rejects({ ...fresh(), algorithm: 'other' }, 'algorithm');
  rejects({ ...fresh(), server_seed: SEED_HEX.toUpperCase() }, 'server_seed', /lower-case hex/);
});

test('command line: OK exits 0; a changed card exits 1 naming it; no arguments exits 2', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ofc-verify-'));
  try {
    const good = path.join(dir, 'good.json');
    const bad = path.join(dir, 'bad.json');
    const h = makeHistory({ seats: ['a', 'b'] });
    fs.writeFileSync(good, JSON.stringify(h));
    h.deals[0].cards[0] = 'As';
    fs.writeFileSync(bad, JSON.stringify(h));
    const script = path.join(__dirname, '..', 'verify.js');
    const run = (...args) => spawnSync(process.execPath, [script, ...args], { encoding: 'utf8' });
    let r = run(good);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^OK /);
    r = run(good, bad);
    assert.equal(r.status, 1);
    assert.match(r.stdout, /FAIL .*bad\.json: deals\[0\]\.cards\[0\]: expected Qs \(deck position 0\), got "As"/);
    assert.equal(run().status, 2);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
