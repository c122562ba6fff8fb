// verify.js on the golden histories (tests/golden: written by earlier releases of the
// service, never edited), tampered copies of them, whole matches with their settlement feed,
// and the command line: its lines, summary and exit statuses are those of `ofc verify`.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { checkDocument, verifyMatch } = require('../verify.js');
const { readFeed } = require('../lib/match');
const { parseStrict } = require('../lib/json');

const GOLDEN = path.join(__dirname, '..', '..', '..', 'tests', 'golden');
const VERIFY = path.join(__dirname, '..', 'verify.js');

function walk(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    return e.isDirectory() ? walk(full) : e.name.endsWith('.json') ? [full] : [];
  });
}
const FILES = walk(GOLDEN).sort();
const RELEASES = fs.readdirSync(GOLDEN).filter((d) => fs.statSync(path.join(GOLDEN, d)).isDirectory()).sort();
// <release>/<kind>...: a live table's hands with its feed (match/, match-jokers/), or a chain
// of hands across Fantasyland tiers (tiers/)
const chains = (kind) =>
  RELEASES.flatMap((d) => fs.readdirSync(path.join(GOLDEN, d)).filter((m) => m.startsWith(kind)).map((m) => path.join(GOLDEN, d, m)))
    .filter((d) => fs.statSync(d).isDirectory());
const MATCHES = chains('match');
const TIER_CHAINS = chains('tiers');
const SEAT_CHAINS = chains('seats');
const FEED_FORMS = chains('feed-forms');

// JSON as the verifier reads it (an integer past 2^53, a time of c1bb9f1/, is a BigInt) and
// written back exactly
const readJson = (text) => parseStrict(text);
const writeJson = (value) =>
  JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? `bigint:${v}` : v)).replace(/"bigint:(-?\d+)"/g, '$1');
// a time plus `ms`, whatever its size
const plus = (value, ms) => (typeof value === 'bigint' ? value + BigInt(ms) : value + ms);

function load(file) {
  const data = readJson(fs.readFileSync(file));
  if ('historyJson' in data) return [readJson(data.historyJson), (h) => writeJson({ ...data, historyJson: writeJson(h) })];
  return [data, (h) => writeJson(h)];
}
const verdict = (text) => {
  const { discrepancy } = checkDocument(text);
  return discrepancy === null ? 'OK' : `${discrepancy.code} at ${discrepancy.location}`;
};

test('the golden histories are there, formats 1 to 4', () => {
  assert.ok(FILES.length >= 50, `${FILES.length} files`);
  const versions = new Set(FILES.map((f) => load(f)[0].format_version));
  assert.deepEqual([...versions].sort(), [1, 2, 3, 4]);
});

test('every golden history verifies', () => {
  for (const file of FILES) assert.equal(verdict(fs.readFileSync(file)), 'OK', file);
});

const TAMPERS = {
  card(h) {
    h.deals[0].cards[0] = h.deals[0].cards[0] === '2c' ? '3c' : '2c';
    return 'DEAL_MISMATCH at deals[0].cards[0]';
  },
  seed(h) {
    h.server_seed = 'ab'.repeat(32);
    return 'COMMITMENT_MISMATCH at commitment';
  },
  placement(h) {
    const action = h.actions[1];
    const [move, where] = 'resolved' in action ? [action.resolved, 'actions[1].resolved'] : [action, 'actions[1]'];
    const other = [...h.deals].reverse().find((d) => d.seat !== move.seat).cards[0];
    if (move.type === 'place') {
      move.placements[0][0] = other;
      return `ILLEGAL_ACTION at ${where}.placements[0][0]`;
    }
    move.top[0] = other;
    return `ILLEGAL_ACTION at ${where}.top[0]`;
  },
  score(h) {
    h.settlement.players[0].points += 1;
    return 'SETTLEMENT_MISMATCH at settlement.players[0].points';
  },
  'last action dropped'(h) {
    h.actions.pop();
    return `INCOMPLETE_HAND at actions[${h.actions.length}]`;
  },
  'a stake changed'(h) {
    h.settlement.pairs[0].unit_value += 1;
    return 'SETTLEMENT_MISMATCH at settlement.pairs[0].unit_value';
  },
  'a Fantasyland owed'(h) {
    h.fantasyland_next = [...h.fantasyland_next, { seat: 99, cards: 13 }];
    return `SETTLEMENT_MISMATCH at fantasyland_next[${h.fantasyland_next.length - 1}]`;
  },
  'the button'(h) {
    // another seat taken when the hand began (an empty one the button passes may be a seat
    // taken during the hand, which the button may stop at)
    h.button_next = h.initial_state.seats.findIndex((s, k) => s.player_id && k !== h.button_next);
    return 'SETTLEMENT_MISMATCH at button_next';
  },
  'a newer format'(h) {
    h.format_version = 5;
    return 'NEWER_FORMAT_VERSION at format_version';
  },
};

for (const [name, tamper] of Object.entries(TAMPERS)) {
  test(`a tampered golden history is rejected: ${name}`, () => {
    for (const file of FILES) {
      const [history, rewrap] = load(file);
      const expected = tamper(history);
      assert.equal(verdict(rewrap(history)), expected, file);
    }
  });
}

test('a timeout: its move is the seat own, its deadline the clock rule, at or after it', () => {
  // a clock of 1 s, and one of 2^53 + 1 ms (its times past 2^53, read exactly)
  for (const file of [path.join(GOLDEN, '18a23e9', 'play-pineapple-2-clock.json'), path.join(GOLDEN, 'c1bb9f1', 'play-pineapple-3-huge-clock.json')]) {
    const [original] = load(file);
    const index = original.actions.findIndex((a) => a.type === 'timeout');
    const cases = [
      [(a) => (a.resolved.at_ms = plus(a.resolved.at_ms, 1)), `TIMEOUT_MISMATCH at actions[${index}].resolved.at_ms`],
      [(a) => (a.deadline_ms = plus(a.deadline_ms, 1)), `DEADLINE_MISMATCH at actions[${index}].deadline_ms`],
      [(a) => ((a.at_ms = plus(a.at_ms, -1)), (a.resolved.at_ms = plus(a.resolved.at_ms, -1))), `TIMEOUT_BEFORE_DEADLINE at actions[${index}].at_ms`],
      [(a) => (a.policy = 7), `MALFORMED_HISTORY at actions[${index}].policy`],
    ];
    assert.equal(verdict(writeJson(original)), 'OK', file);
    for (const [change, expected] of cases) {
      const h = structuredClone(original);
      change(h.actions[index]);
      assert.equal(verdict(writeJson(h)), expected, file);
    }
  }
});

test('--check-policy refuses a name of the project policy that no release wrote', () => {
  const file = path.join(GOLDEN, '18a23e9', 'play-pineapple-2-clock.json');
  const original = JSON.parse(fs.readFileSync(file, 'utf8'));
  const index = original.actions.findIndex((a) => a.type === 'timeout');
  const cases = [
    ['ofc-timeout-4', 'OK'],
    ['ofc-timeout-5', 'OK'], // a newer release's: a note
    ['acme-bot-2', 'OK'], // another producer's: a note
    [null, 'OK'],
    ['ofc-timeout-3', `POLICY_UNKNOWN at actions[${index}].policy`],
    ['ofc-timeout-04', `POLICY_UNKNOWN at actions[${index}].policy`],
    ['ofc-timeout-', `POLICY_UNKNOWN at actions[${index}].policy`],
  ];
  for (const [name, expected] of cases) {
    const h = structuredClone(original);
    h.actions[index].policy = name;
    const text = JSON.stringify(h);
    const { discrepancy, notes } = checkDocument(text, { checkPolicy: true });
    const got = discrepancy === null ? 'OK' : `${discrepancy.code} at ${discrepancy.location}`;
    assert.equal(got, expected, String(name));
    if (got === 'OK') assert.ok(notes.some((n) => n.startsWith('timeout policy not checkable')));
    assert.equal(verdict(text), 'OK'); // names are checked only on request
  }
});

test('a document two JSON readers could read differently is MALFORMED_HISTORY', () => {
  assert.equal(verdict('{"format_version": 1, "format_version": 1}'), 'MALFORMED_HISTORY at ');
  assert.equal(verdict('{"format_version": NaN}'), 'MALFORMED_HISTORY at ');
  assert.equal(verdict(Buffer.from([0x7b, 0xff, 0x7d])), 'MALFORMED_HISTORY at ');
  assert.equal(verdict('{"format_version": 1.0}'), 'MALFORMED_HISTORY at format_version');
  assert.equal(verdict('[]'), 'MALFORMED_HISTORY at ');
  assert.equal(verdict('{"historyJson": "{\\"format_version\\": 9}"}'), 'NEWER_FORMAT_VERSION at format_version');
  assert.deepEqual(parseStrict('{"a": [1, -2, "x\\u00e9"], "b": null}'), { a: [1, -2, 'xé'], b: null });
});

test('a value written otherwise than the service writes it is not canonical', () => {
  const [h] = load(path.join(GOLDEN, '18a23e9', 'play-classic-2.json'));
  h.actions[1].resolved.placements[0][0] = h.actions[1].resolved.placements[0][0].toLowerCase();
  assert.equal(verdict(JSON.stringify(h)), 'MALFORMED_HISTORY at actions[1].resolved.placements[0][0]');
  const [g] = load(path.join(GOLDEN, '18a23e9', 'play-classic-2.json'));
  g.initial_state.ruleset.royalties.bottom.high_card = 0;
  assert.equal(verdict(JSON.stringify(g)), 'MALFORMED_HISTORY at initial_state.ruleset.royalties.bottom.high_card');
});

function matchInputs(dir) {
  const hands = fs.readdirSync(dir).filter((f) => /^hand-\d{4}\.json$/.test(f)).sort().map((f) => [f, JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'))]);
  return [hands, readFeed(fs.readFileSync(path.join(dir, 'feed.jsonl'), 'utf8'), 'feed.jsonl')];
}
const found = (report) => report.discrepancies.map((d) => [d.code, d.source, d.location]);

for (const dir of MATCHES) {
  test(`the match ${path.relative(GOLDEN, dir)} verifies as one chain, and breaking it is caught`, () => {
    const [hands, feed] = matchInputs(dir);
    const report = verifyMatch(hands, feed);
    assert.deepEqual([report.hands, report.verified, found(report)], [4, 4, []]);
    assert.deepEqual(found(verifyMatch([hands[0], ...hands.slice(2)], feed)), [
      ['HAND_MISSING', hands[2][0], 'hand_number'],
      ['FEED_RECORD_EXTRA', 'feed.jsonl:2', 'hand_number'],
    ]);
    const doctored = structuredClone(feed);
    doctored[2][1].seats[1].total_units += 5;
    assert.deepEqual(found(verifyMatch(hands, doctored)), [['RUNNING_TOTAL_MISMATCH', 'feed.jsonl:3', 'seats[1].total_units']]);
    const moved = structuredClone(hands);
    moved[1][1].initial_state.seats[0].points += 3;
    assert.deepEqual(found(verifyMatch(moved)), [
      ['CHAIN_STATE_MISMATCH', hands[1][0], 'initial_state.seats[0].points'],
      ['CHAIN_STATE_MISMATCH', hands[2][0], 'initial_state.seats[0].points'],
    ]);
    const disagreeing = structuredClone(feed);
    disagreeing[0][1].seats[0].units -= 1;
    assert.deepEqual(found(verifyMatch(hands, disagreeing)), [['FEED_RECORD_MISMATCH', 'feed.jsonl:1', 'seats[0].units']]);
    assert.deepEqual(found(verifyMatch(hands, [feed[0], ...feed.slice(2)])), [['FEED_RECORD_MISSING', hands[1][0], '']]);
    // a feed that begins later (it began with a later release, or its retention trimmed it)
    const later = verifyMatch(hands, feed.slice(1));
    const feedNotes = later.notes.filter((n) => n.startsWith("the feed's")); // (not a seat change's)
    assert.deepEqual([found(later), feedNotes], [[], [
      "the feed's first record of this table is hand 2: hand 1 not checked against the feed (settled before the feed began, or dropped by its retention)",
    ]]);
    if (hands[0][1].format_version >= 3) {
      const broken = structuredClone(hands);
      broken[1][1].next_commitment = 'ab'.repeat(32);
      assert.deepEqual(found(verifyMatch(broken, feed)), [['CHAIN_COMMITMENT_MISMATCH', hands[2][0], 'commitment']]);
    }
    assert.deepEqual(found(verifyMatch([...hands].reverse(), [...feed, ...feed.slice(0, 2)])), []);
  });
}

test('a feed record in protobuf JSON without format is judged on Fantasyland fields it sets', () => {
  // format 1 (or none sent) has no Fantasyland fields: values set anyway are compared, never
  // passed unlooked at (these hands earned no Fantasyland)
  const [hands, feed] = matchInputs(MATCHES[0]);
  const asSubscribe = (record, seats) => ({ record: { settlementId: record.settlement_id, tableId: record.table_id, handNumber: String(record.hand_number), ruleset: record.ruleset, unitValue: String(record.unit_value), ...(record.loss_cap ? { lossCap: String(record.loss_cap) } : {}), settledAtMs: String(record.settled_at_ms), seats, pairs: record.pairs.map((p) => ({ seatA: p.seat_a, seatB: p.seat_b, points: p.points, cappedPoints: p.capped_points, unitValue: String(p.unit_value), units: String(p.units) })) } });
  const seatsOf = (record) => record.seats.map((s) => ({ seat: s.seat, playerId: s.player_id, points: s.points, units: String(s.units), totalPoints: s.total_points, totalUnits: String(s.total_units), fouled: s.fouled }));
  const lines = (edit) => feed.map(([, r], i) => { const seats = seatsOf(r); if (i === 1) edit(seats); return JSON.stringify(asSubscribe(r, seats)); }).join('\n');
  assert.deepEqual(found(verifyMatch(hands, readFeed(lines(() => {}), 'sub.jsonl'))), []);
  const owed = readFeed(lines((seats) => { seats[0].fantasylandNextCards = 17; }), 'sub.jsonl');
  assert.deepEqual(owed[1][1].seats[0].fantasyland_next_cards, 17);
  assert.deepEqual(found(verifyMatch(hands, owed)), [['FEED_RECORD_MISMATCH', 'sub.jsonl:2', 'seats[0].fantasyland_next_cards']]);
  const played = readFeed(lines((seats) => { seats[1].fantasyland_cards = 14; }), 'sub.jsonl');
  assert.deepEqual(found(verifyMatch(hands, played)), [['FEED_RECORD_MISMATCH', 'sub.jsonl:2', 'seats[1].fantasyland_cards']]);
});

test('the feed-forms goldens are the two releases', () => {
  assert.deepEqual(FEED_FORMS.map((d) => path.basename(path.dirname(d))), ['10c2cc1', '7cf969b']);
});

// A live table's feed as its release delivered it, in every form an auditor may save it in
// (tests/ofc/test_golden_feed_forms.py checks the same files with ofc.verify).
for (const dir of FEED_FORMS) {
  for (const form of ['feed.raw.jsonl', 'feed.subscribe.jsonl', 'feed.subscribe-protonames.jsonl']) {
    test(`${path.relative(GOLDEN, dir)}/${form} verifies with its hands, and a changed Fantasyland field is caught`, () => {
      const hands = fs.readdirSync(dir).filter((f) => /^hand-\d{4}\.json$/.test(f)).sort().map((f) => [f, JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'))]);
      const text = fs.readFileSync(path.join(dir, form), 'utf8');
      const feed = readFeed(text, form);
      assert.equal(feed.length, hands.length);
      const report = verifyMatch(hands, feed);
      assert.deepEqual([report.hands, report.verified, found(report)], [hands.length, hands.length, []]);
      const lines = text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
      const record = lines[0].record || lines[0];
      const seat0 = record.seats.find((s) => (s.seat || 0) === 0);
      const key = ['fantasyland_next_cards', 'fantasylandNextCards'].find((k) => k in seat0) || ('settlementId' in record ? 'fantasylandNextCards' : 'fantasyland_next_cards');
      seat0[key] = 17; // no hand of these tables owed 17 cards
      const changed = readFeed(lines.map((l) => JSON.stringify(l)).join('\n'), form);
      assert.deepEqual(found(verifyMatch(hands, changed)), [['FEED_RECORD_MISMATCH', `${form}:1`, 'seats[0].fantasyland_next_cards']]);
    });
  }
}

for (const dir of TIER_CHAINS) {
  test(`the hands of ${path.relative(GOLDEN, dir)} verify as one chain across Fantasyland tiers, and a changed tier is caught`, () => {
    const hands = fs.readdirSync(dir).filter((f) => /^hand-\d{4}\.json$/.test(f)).sort().map((f) => [f, JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'))]);
    assert.ok(hands.length >= 3);
    assert.deepEqual(found(verifyMatch(hands)), []);
    const lowered = structuredClone(hands);
    lowered[0][1].fantasyland_next[1].cards = 14;
    assert.deepEqual(found(verifyMatch(lowered))[0], ['SETTLEMENT_MISMATCH', hands[0][0], 'fantasyland_next[1].cards']);
    const owed = structuredClone(hands);
    owed[1][1].initial_state.seats[0].fantasyland = 14;
    assert.deepEqual(found(verifyMatch(owed)), [['DEAL_MISMATCH', hands[1][0], 'deals[1].count']]);
  });
}

for (const dir of SEAT_CHAINS) {
  test(`the hands of ${path.relative(GOLDEN, dir)} chain across a seat taken and left within a hand, and a changed record is caught`, () => {
    const hands = fs.readdirSync(dir).filter((f) => /^hand-\d{4}\.json$/.test(f)).sort().map((f) => [f, JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'))]);
    assert.equal(hands.length, 2);
    assert.deepEqual(found(verifyMatch(hands)), []);
    const kept = structuredClone(hands);
    kept[1][1].seat_changes.pop(); // eve's stand-up left out
    assert.deepEqual(found(verifyMatch(kept)), [['CHAIN_STATE_MISMATCH', hands[1][0], 'initial_state.seats[2].player_id']]);
    const reversed = structuredClone(hands);
    reversed[1][1].seat_changes.reverse(); // leaving a seat before anyone sat there
    assert.deepEqual(found(verifyMatch(reversed)), [['ILLEGAL_ACTION', hands[1][0], 'seat_changes[0].seat']]);
  });
}

for (const dir of MATCHES.filter((d) => d.endsWith('match-after-hand'))) {
  test(`the hands of ${path.relative(GOLDEN, dir)} chain across a player stood up by the move that ended her hand, and a change is caught`, () => {
    const [hands, feed] = matchInputs(dir);
    assert.deepEqual(found(verifyMatch(hands, feed)), []);
    const changes = hands[2][1].seat_changes;
    assert.deepEqual(changes.map((c) => [c.type, c.seat]), [['stand_up', 2], ['sit_down', 2]]);
    assert.equal(changes[0].at_ms, hands[1][1].actions.at(-1).at_ms);
    const kept = structuredClone(hands);
    kept[2][1].seat_changes.shift(); // cy still seated: dee cannot sit in her seat
    assert.deepEqual(found(verifyMatch(kept)), [['ILLEGAL_ACTION', hands[2][0], 'seat_changes[0].seat']]);
    const carried = structuredClone(hands);
    carried[2][1].initial_state.seats[2].points = 5; // cy's points carried over to dee
    assert.deepEqual(found(verifyMatch(carried)), [
      ['CHAIN_STATE_MISMATCH', hands[2][0], 'initial_state.seats[2].points'],
      ['CHAIN_STATE_MISMATCH', hands[3][0], 'initial_state.seats[2].points'],
    ]);
  });
}

for (const dir of MATCHES.filter((d) => d.endsWith('match-joined-in-hand'))) {
  test(`the hands of ${path.relative(GOLDEN, dir)} chain across a button moved to a seat taken during the hand, and a change is caught`, () => {
    const [hands, feed] = matchInputs(dir);
    assert.deepEqual(found(verifyMatch(hands, feed)), []);
    const first = hands[0][1];
    assert.deepEqual([first.button, first.button_next], [0, 1]);
    assert.deepEqual(checkDocument(JSON.stringify(first)).notes, [
      "button_next: seat 1, empty when the hand began: taken during the hand, as only the next hand's seat_changes can show (a match with that hand checks it)",
    ]);
    const nobody = structuredClone(hands);
    nobody[1][1].seat_changes.length = 0; // the button at seat 1, and nobody sat down there
    assert.deepEqual(found(verifyMatch(nobody))[0], ['CHAIN_STATE_MISMATCH', hands[0][0], 'button_next']);
    const own = structuredClone(first);
    own.button_next = 0; // a seat the button did not pass on its way to cy's
    const { discrepancy } = checkDocument(JSON.stringify(own));
    assert.deepEqual([discrepancy.code, discrepancy.location, discrepancy.message], ['SETTLEMENT_MISMATCH', 'button_next', 'recorded 0, recomputed 2']);
  });
}

test('a feed file saved from a curl of Subscribe: the Connect stream end message is no record', () => {
  const [hands, feed] = matchInputs(MATCHES[0]);
  const text = fs.readFileSync(path.join(MATCHES[0], 'feed.jsonl'), 'utf8');
  const ended = readFeed(`${text}{"error": {"code": "deadline_exceeded", "message": "Request timed out"}}\n`, 'curl.jsonl');
  assert.equal(ended.length, feed.length);
  assert.deepEqual(found(verifyMatch(hands, ended)), []);
  const odd = readFeed(`${text}{"error": {"code": "canceled"}, "hand_number": 9}\n`, 'odd.jsonl');
  assert.equal(odd.length, feed.length + 1); // not an end message: read, and judged
});

test('a feed file of records in protobuf JSON with the .proto names reads as the stream holds them', () => {
  // as protobuf JSON printers that keep field names write a record: 64-bit numbers as
  // strings, zero values left out (the stream never writes hand_number as a string)
  const WIDE = new Set(['hand_number', 'settled_at_ms', 'points', 'units', 'total_points', 'total_units', 'capped_points']);
  const proto = (obj) => {
    const out = {};
    for (const [key, value] of Object.entries(obj)) {
      if (value === 0 || value === false || value === null || value === '') continue;
      if (Array.isArray(value)) out[key] = value.map(proto);
      else out[key] = WIDE.has(key) ? String(value) : value;
    }
    return out;
  };
  for (const dir of MATCHES) {
    const [hands, feed] = matchInputs(dir);
    const text = feed.map(([, record]) => JSON.stringify(proto(record))).join('\n');
    assert.match(text, /"hand_number":"1"/);
    const read = readFeed(text, 'proto.jsonl');
    assert.deepEqual(read.map(([, r]) => r), feed.map(([, r]) => r), dir);
    assert.deepEqual(found(verifyMatch(hands, read)), []);
  }
});

test('every release directory with a live table or a tier chain has its chain checked here', () => {
  assert.ok(MATCHES.length >= 6 && TIER_CHAINS.length >= 2 && SEAT_CHAINS.length >= 1, `${MATCHES.length} matches, ${TIER_CHAINS.length} tier chains, ${SEAT_CHAINS.length} seat chains`);
  assert.ok(MATCHES.some((d) => d.endsWith('match-jokers')));
  assert.ok(MATCHES.some((d) => d.endsWith('match-after-hand')));
  assert.ok(MATCHES.some((d) => d.endsWith('match-joined-in-hand')));
});

function run(...args) {
  return spawnSync(process.execPath, [VERIFY, ...args], { encoding: 'utf8' });
}

test('the command line: one file, several, -q, -j, the summary and the exit statuses', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ofc-verify-'));
  const good = path.join(GOLDEN, '18a23e9', 'play-classic-2.json');
  const [h, rewrap] = load(good);
  h.settlement.players[0].points += 1;
  const bad = path.join(dir, 'bad.json');
  fs.writeFileSync(bad, rewrap(h));
  const newer = path.join(dir, 'newer.json');
  fs.writeFileSync(newer, '{"format_version": 5}');

  let r = run(good);
  assert.deepEqual([r.status, r.stdout, r.stderr], [0, 'OK\n', '']);
  r = run(bad);
  assert.equal(r.status, 1);
  assert.match(r.stdout, /^SETTLEMENT_MISMATCH at settlement\.players\[0\]\.points: recorded -?\d+, recomputed -?\d+\n$/);
  r = run(newer);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /^error: NEWER_FORMAT_VERSION at format_version: is 5: newer than this verifier reads/);
  r = run('-q', good, bad);
  assert.equal(r.status, 1);
  assert.deepEqual(r.stdout.split('\n').slice(1), ['1 verified, 1 failed', '']);
  assert.ok(r.stdout.startsWith(`${bad}: SETTLEMENT_MISMATCH at settlement.players[0].points`));
  r = run(path.join(dir, 'missing.json'));
  assert.deepEqual([r.status, r.stderr], [2, `error: INVALID_INPUT: cannot read ${path.join(dir, 'missing.json')}: No such file or directory\n`]);
  assert.equal(run('--feed', 'x.jsonl', good).status, 2);
  assert.equal(run('-j', '0', good).status, 2);

  const one = run('-j', '1', GOLDEN);
  const two = run('-j', '2', GOLDEN);
  assert.equal(one.status, 0);
  assert.equal(two.stdout, one.stdout); // worker threads print in the order of the files
  assert.ok(one.stdout.endsWith(`${FILES.length} verified, 0 failed\n`));
});

test('the command line: --match with --feed, and --json', () => {
  const dir = MATCHES[MATCHES.length - 1];
  const hands = fs.readdirSync(dir).filter((f) => /^hand-\d{4}\.json$/.test(f)).map((f) => path.join(dir, f));
  let r = run('--match', ...hands, '--feed', path.join(dir, 'feed.jsonl'));
  assert.deepEqual([r.status, r.stdout], [0, '4 verified, 0 failed; the match of 4 hands: 0 chain discrepancies\n']);
  r = run('--match', '--json', hands[0], ...hands.slice(2), '--feed', path.join(dir, 'feed.jsonl'));
  assert.equal(r.status, 1);
  const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(lines.slice(0, 2).map((d) => [d.code, d.hand_number, d.location]), [['HAND_MISSING', 3, 'hand_number'], ['FEED_RECORD_EXTRA', 2, 'hand_number']]);
  assert.equal(lines[2].summary, '3 verified, 0 failed; the match of 3 hands: 2 chain discrepancies');
});
