// Inputs at the edges of what verify.js reads, each judged as `ofc verify` judges it
// (tests/ofc/test_verifier_edges.py holds the same cases with the same expected answers): a
// differential fuzz of the two found each of these answered differently.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { checkDocument, verifyMatch } = require('../verify.js');
const { readFeed } = require('../lib/match');

const GOLDEN = path.join(__dirname, '..', '..', '..', 'tests', 'golden');
const PLAY = path.join(GOLDEN, '971f768', 'play-classic-2.json');
const FANTASYLAND_SET = path.join(GOLDEN, 'd3fcbf2', 'explicit-fantasyland-pineapple-3.json'); // actions[11]
const MATCH = path.join(GOLDEN, '971f768', 'match');

const read = (file) => fs.readFileSync(file, 'utf8');
const verdict = (text) => {
  const { discrepancy } = checkDocument(text);
  return discrepancy === null ? ['OK', ''] : [discrepancy.code, discrepancy.location];
};

test('a format version past 2^53 is newer', () => {
  for (const version of ['9007199254740991', '9007199254740992', '18446744073709551616']) {
    const text = read(PLAY).replace(/"format_version": 1\b/, `"format_version": ${version}`);
    assert.deepEqual(verdict(text), ['NEWER_FORMAT_VERSION', 'format_version']);
  }
});

for (const [depth, refused] of [[500, false], [501, true], [990, true]]) {
  test(`JSON ${depth} deep is ${refused ? 'not JSON' : 'read'}`, () => {
    // the history's object and, under a key it does not know (and ignores), arrays
    const nested = '['.repeat(depth - 1) + ']'.repeat(depth - 1);
    const { discrepancy } = checkDocument(read(PLAY).replace('{', `{"x": ${nested}, `));
    if (!refused) return assert.equal(discrepancy, null);
    assert.match(discrepancy.message, /^not JSON: nested too deeply/);
    assert.equal(discrepancy.location, '');
  });
}

for (const [digits, refused] of [[4300, false], [4301, true]]) {
  test(`an integer of ${digits} digits is ${refused ? 'not JSON' : 'read'}`, () => {
    const { discrepancy } = checkDocument(read(PLAY).replace('{', `{"x": ${'1'.repeat(digits)}, `));
    const message = discrepancy === null ? '' : discrepancy.message;
    assert.equal(message.startsWith('not JSON: a number of more than 4300 digits'), refused);
  });
}

for (const [end, location] of [
  ['\x1c', 'actions[11].top[0]'], // Python's str.strip takes it off (JavaScript's trim not)
  ['\x85', 'actions[11].top[0]'],
  ['\u3000', 'actions[11].top[0]'],
  ['\ufeff', 'actions[11].top'], // JavaScript's trim takes it off (Python's strip not)
]) {
  test(`a card ending in U+${end.charCodeAt(0).toString(16).padStart(4, '0')} is judged at ${location}`, () => {
    const h = JSON.parse(read(FANTASYLAND_SET));
    assert.equal(h.actions[11].type, 'set_fantasyland');
    h.actions[11].top[0] += end;
    assert.deepEqual(verdict(JSON.stringify(h)), ['MALFORMED_HISTORY', location]);
  });
}

const matchHands = () =>
  fs.readdirSync(MATCH).filter((f) => /^hand-\d{4}\.json$/.test(f)).sort().map((f) => [f, JSON.parse(read(path.join(MATCH, f)))]);
const feedLines = () => read(path.join(MATCH, 'feed.jsonl')).split('\n').filter(Boolean);
const feedFound = (text) => verifyMatch(matchHands(), readFeed(text, 'feed.jsonl')).discrepancies.map((d) => [d.code, d.source, d.location]);

test('the golden feed verifies', () => {
  assert.deepEqual(feedFound(`${feedLines().join('\n')}\n`), []);
});

for (const [old, replacement, location] of [
  ['"settled_at_ms":1796158703826', '"settled_at_ms":1796158703826.0', 'settled_at_ms'],
  ['"hand_number":1,', '"hand_number":1.0,', ''], // not a settlement record
  ['"player_id":"ann"', '"player_id":"ann\\u2028"', 'seats[0].player_id'],
  ['"player_id":"ann"', '"player_id":"ann\\u001c\\u0085"', 'seats[0].player_id'],
  // as they are, not escaped: a line ends at "\n" only
  ['"player_id":"ann"', '"player_id":"ann\u2028\x85"', 'seats[0].player_id'],
]) {
  test(`a feed record with ${JSON.stringify(replacement)} is judged as written`, () => {
    const lines = feedLines();
    assert.ok(lines[0].includes(old));
    lines[0] = lines[0].replace(old, replacement);
    assert.deepEqual(feedFound(`${lines.join('\n')}\n`), [['FEED_RECORD_MISMATCH', 'feed.jsonl:1', location]]);
  });
}

for (const [name, bad] of [
  ['NaN', (line) => Buffer.from(line.replace('"capped_points":', '"capped_points":NaN,"x":'))],
  ['a key twice', (line) => Buffer.from(line.replace('"format":1', '"format":1,"format":1'))],
  ['not UTF-8', (line) => Buffer.concat([Buffer.from(line.slice(0, 40)), Buffer.from([0xff]), Buffer.from(line.slice(40))])],
]) {
  test(`a feed that is not strict JSON is refused: ${name}`, () => {
    const lines = feedLines().map((l) => Buffer.from(l));
    lines[0] = bad(feedLines()[0]);
    const bytes = Buffer.concat(lines.flatMap((l) => [l, Buffer.from('\n')]));
    assert.throws(() => readFeed(bytes, 'feed.jsonl'));
  });
}

/** A stored record as Subscribe answers it in protobuf JSON (camelCase, 64-bit integers as strings). */
function subscribeLine(record) {
  const wide = new Set(['hand_number', 'settled_at_ms', 'points', 'units', 'total_points', 'total_units', 'capped_points']);
  const camel = (key) => key.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
  const convert = (value, key = '') => {
    if (Array.isArray(value)) return value.map((v) => convert(v));
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null && v !== 0 && v !== false).map(([k, v]) => [camel(k), convert(v, k)]));
    }
    return wide.has(key) ? String(value) : value;
  };
  return { record: convert(record) };
}

for (const [name, edit, accepted] of [
  ['as written', () => {}, true],
  ['a bool', (r) => { r.pairs[0].seatA = true; }, false],
  ['a newline', (r) => { r.pairs[0].points += '\n'; }, false],
  ['1.0', null, false], // written into the text below: JSON.stringify writes 1.0 as 1
  ['1e0', (r) => { r.handNumber = '1e0'; }, false],
  ['out of range', (r) => { r.unitValue = -1; }, false],
  ['a number', (r) => { r.tableId = 5; }, false],
  ['a str', (r) => { r.seats[0].fouled = 'true'; }, false],
]) {
  test(`a protobuf JSON record takes integers as printers write them: ${name}`, () => {
    const lines = feedLines().map((l) => subscribeLine(JSON.parse(l)));
    if (edit !== null) edit(lines[0].record);
    let text = lines.map((l) => `${JSON.stringify(l)}\n`).join('');
    if (edit === null) text = text.replace('"handNumber":"1"', '"handNumber":1.0');
    if (accepted) return assert.deepEqual(feedFound(text), []);
    assert.throws(() => feedFound(text), /not a settlement record/);
  });
}

test('a hand numbered 0 takes no place in the chain', () => {
  const hands = matchHands();
  hands[0][1].hand_number = 0;
  const found = verifyMatch(hands).discrepancies.map((d) => [d.code, d.source, d.location]);
  assert.deepEqual(found, [['MALFORMED_HISTORY', 'hand-0001.json', 'hand_number']]);
});
