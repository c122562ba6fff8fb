// Verifying one hand history (docs/hand-history.md "The checks, in order"): its shape for
// its version (step 1), the commitment, the deck's inputs, the agreed ruleset, the start,
// the deals, every action replayed with the timeouts' recorded moves and deadlines, then the
// whole history recomputed and compared key by key. The first discrepancy is the answer,
// with the same code and JSON-path location as `ofc verify`.
'use strict';

const { ALGORITHM: V1, commitment } = require('./shuffle');
const { ALGORITHM: V2, DECK_SIZES, algorithmFor, dealDeck } = require('./shuffle_v2');
const { cardCode, parseCard } = require('./cards');
const { OfcError } = require('./errors');
const { ROWS, rulesetFromDict, rulesetToDict, usesLaterOptions } = require('./rules');
const { apply, dealPositions, inFantasyland, seatsToAct, stateAsWritten } = require('./engine');
const { settlementToDict } = require('./score');
const { JsonFloat, JsonSyntaxError, MISSING, difference, isObject, join, parseStrict, repr, show } = require('./json');

const FORMAT_VERSIONS = [1, 2, 3, 4];
const FORMAT_VERSION = 4;
const STATE_FORMAT_VERSIONS = [1, 2];

/** The first discrepancy: a stable code, a JSON path ("" for the whole document) and a message. */
class Discrepancy extends Error {
  constructor(code, location, message) {
    super(message);
    this.name = 'Discrepancy';
    this.code = code;
    this.location = location;
  }

  toString() {
    return `${this.code}${this.location ? ` at ${this.location}` : ''}: ${this.message}`;
  }
}

const UNREADABLE = new Set(['MALFORMED_HISTORY', 'NEWER_FORMAT_VERSION']);

function found(code, location, message) {
  return new Discrepancy(code, location, message);
}
const malformed = (location, message) => found('MALFORMED_HISTORY', location, message);

// --- step 1: the shape --------------------------------------------------------------------

const isInt = (v) => typeof v === 'number' && Number.isInteger(v);
// Times (ms) may be past 2^53: `ofc play --turn-time-ms` of some releases took any limit,
// and their deadlines followed. They are read as BigInt then (lib/json.js).
const isMs = (v) => isInt(v) || typeof v === 'bigint';
const has = (obj, key) => Object.prototype.hasOwnProperty.call(obj, key);

// Counts, scores and money past 2^53 are read exactly (as BigInt), and refused: a JSON
// reader that rounds would read another number (I-JSON, RFC 7493). Times may pass it.
const integer = (minimum = 0) => (value, path) => {
  if (typeof value === 'bigint') throw malformed(path, `must be an integer of at most 2^53 - 1 in size, got ${value}`);
  if (!isInt(value)) throw malformed(path, `must be an integer, got ${show(value)}`);
  if (minimum !== null && value < minimum) throw malformed(path, `must be at least ${minimum}, got ${value}`);
};
const milliseconds = (minimum) => (value, path) => {
  if (!isMs(value)) throw malformed(path, `must be an integer, got ${show(value)}`);
  if (value < minimum) throw malformed(path, `must be at least ${minimum}, got ${value}`);
};
const text = (pattern = null, what = 'a string') => (value, path) => {
  if (typeof value !== 'string' || (pattern !== null && !pattern.test(value))) throw malformed(path, `must be ${what}, got ${show(value)}`);
};
const boolean = (value, path) => {
  if (typeof value !== 'boolean') throw malformed(path, `must be true or false, got ${show(value)}`);
};
const constant = (expected, why) => (value, path) => {
  if (value !== expected) throw malformed(path, `is ${show(value)}: ${why}`);
};
const nullable = (inner) => (value, path) => {
  if (value !== null) inner(value, path);
};
function object(value, path) {
  if (!isObject(value)) {
    const kind = Array.isArray(value) ? 'a list' : show(value);
    throw malformed(path, `${path ? 'must be' : 'a hand history is'} a JSON object, not ${kind}`);
  }
  return value;
}
const listOf = (item, minItems = 0) => (value, path) => {
  if (!Array.isArray(value)) throw malformed(path, `must be a list, got ${show(value)}`);
  if (value.length < minItems) throw malformed(path, `must have at least ${minItems} item(s)`);
  value.forEach((element, i) => item(element, `${path}[${i}]`));
};
const record = (fields, open = false) => (value, path) => {
  const obj = object(value, path);
  for (const [key, inner] of Object.entries(fields)) {
    if (!has(obj, key)) throw malformed(join(path, key), 'is missing');
    inner(obj[key], join(path, key));
  }
  if (!open) {
    for (const key of Object.keys(obj)) if (!has(fields, key)) throw malformed(join(path, key), 'is not a key of this object');
  }
};

const SEED = /^[0-9a-f]{64}$/;
const SEED_OR_NONE = /^(?:[0-9a-f]{64})?$/;
const HEX = /^(?:[0-9a-f]{2})*$/;
const CARD = /^(?:[2-9TJQKA][cdhs]|X[12])$/;
const ALGORITHMS = [V1, V2];
const UINT = integer();
const INT = integer(null);
const STR = text();
const CARDS = listOf(text(CARD, "a card code such as 'As', 'Td' or the joker 'X1'"));
const anyObject = (value, path) => object(value, path);
const byRow = (inner) => record({ top: inner, middle: inner, bottom: inner });

const SETTLEMENT = record({
  ruleset: STR,
  players: listOf(
    record({
      seat: UINT,
      points: INT,
      units: INT,
      fouled: boolean,
      royalties: record({ top: UINT, middle: UINT, bottom: UINT, total: UINT }),
      hands: byRow(record({ category: STR, name: STR, value: UINT })),
      fantasyland_next: record({ qualifies: boolean, cards: UINT }),
    }),
  ),
  pairs: listOf(
    record({
      a: UINT,
      b: UINT,
      rows: byRow(INT),
      scoop: INT,
      a_fouled: boolean,
      b_fouled: boolean,
      row_points: INT,
      royalties: INT,
      points: INT,
      capped_points: INT,
      unit_value: UINT,
      units: INT,
    }),
  ),
});

const HISTORY_FIELDS = {
  format_version: integer(1),
  algorithm: text(new RegExp(`^(?:${ALGORITHMS.join('|')})$`), `a deal algorithm this verifier knows (${ALGORITHMS.map((a) => `'${a}'`).join(', ')})`),
  ruleset: STR,
  hand_number: integer(1),
  server_seed: text(SEED, '32 bytes as 64 lower-case hex digits'),
  client_seed: text(HEX, 'bytes as lower-case hex digits'),
  commitment: text(SEED, '64 lower-case hex digits'),
  button: UINT,
  order: listOf(UINT),
  players: listOf(record({ seat: UINT, player_id: STR, fantasyland: UINT })),
  initial_state: anyObject,
  deals: listOf(
    record({
      type: constant('cards_dealt', 'every deal is a cards_dealt record'),
      seat: UINT,
      street: nullable(UINT),
      position: UINT,
      count: UINT,
      cards: CARDS,
    }),
  ),
  actions: listOf(anyObject, 1),
  boards: listOf(record({ seat: UINT, top: CARDS, middle: CARDS, bottom: CARDS, discards: CARDS })),
  settlement: SETTLEMENT,
  fantasyland_next: listOf(record({ seat: UINT, cards: UINT })),
  button_next: UINT,
};
const HISTORY = record(HISTORY_FIELDS, true);
const CONTEXT_FIELDS = {
  next_commitment: text(SEED_OR_NONE, '64 lower-case hex digits, or empty'),
  clock: nullable(record({ turn_time_limit_ms: milliseconds(1), fantasyland_time_limit_ms: milliseconds(1) })),
  seat_units: nullable(listOf(INT)),
  seat_changes: nullable(listOf(anyObject)),
};
const CONTEXT_KEYS = Object.keys(CONTEXT_FIELDS);
const STORED_FIELDS = { table_id: STR, settled_at_ms: milliseconds(0) };

/** A core reading error (an OfcError with a field relative to what was read). */
function invalid(message, field) {
  return new OfcError('INVALID_INPUT', message, field);
}

// The codec's readers: a wrong type or a missing key is an OfcError naming its field.
const codec = {
  obj(raw, path) {
    if (!isObject(raw)) throw invalid(`${path || 'the input'} must be a JSON object`, path);
    return raw;
  },
  key(obj, key, path) {
    if (!has(obj, key)) throw invalid(`${join(path, key)} is missing`, join(path, key));
    return obj[key];
  },
  int(raw, path, minimum = 0) {
    if (!isInt(raw) || (minimum !== null && raw < minimum)) {
      throw invalid(`${path} must be ${minimum === null ? 'an integer' : `an integer >= ${minimum}`}, got ${show(raw)}`, path);
    }
    return raw;
  },
  optInt(raw, path, minimum = 0) {
    return raw === null ? null : codec.int(raw, path, minimum);
  },
  /** A time or a time limit in ms: an integer of any size (a BigInt past 2^53). */
  ms(raw, path, minimum = 0) {
    if (!isMs(raw) || raw < minimum) throw invalid(`${path} must be an integer >= ${minimum}, got ${show(raw)}`, path);
    return raw;
  },
  str(raw, path) {
    if (typeof raw !== 'string') throw invalid(`${path} must be a string, got ${show(raw)}`, path);
    return raw;
  },
  hex(raw, path) {
    // bytes.fromhex: hex digit pairs in either case, ASCII whitespace between them ignored
    // (not canonical: the canonical-form check then names the same place)
    const digits = codec.str(raw, path).replace(/[ \t\n\r\f\v]+/g, '');
    if (!/^(?:[0-9a-fA-F]{2})*$/.test(digits)) throw invalid(`${path} must be hex, got ${show(raw)}`, path);
    return Buffer.from(digits, 'hex');
  },
  list(raw, path) {
    if (!Array.isArray(raw)) throw invalid(`${path} must be a list`, path);
    return raw;
  },
  cards(raw, path) {
    return codec.list(raw, path).map((token) => {
      const id = parseCard(token);
      if (id < 0) throw new OfcError('INVALID_CARD', `${path}: invalid card: ${show(token)}`, path);
      return id;
    });
  },
  card(raw, path) {
    return codec.cards([codec.str(raw, path)], path)[0];
  },
  row(raw, path) {
    const value = codec.str(raw, path);
    if (!ROWS.includes(value)) throw invalid(`${path} must be top, middle or bottom, got ${show(raw)}`, path);
    return value;
  },
};

function prefixed(error, prefix) {
  if (error instanceof OfcError) error.field = join(prefix, error.field);
  return error;
}

/** An action of the history as the rules read it (cards as ids, seeds as bytes). */
function actionFromDict(data) {
  const obj = codec.obj(data, '');
  const kind = codec.str(codec.key(obj, 'type', ''), 'type');
  const atMs = codec.ms(has(obj, 'at_ms') ? obj.at_ms : 0, 'at_ms');
  if (kind === 'start_hand') {
    return {
      type: kind,
      server_seed: codec.hex(codec.key(obj, 'server_seed', ''), 'server_seed'),
      client_seed: codec.hex(has(obj, 'client_seed') ? obj.client_seed : '', 'client_seed'),
      at_ms: atMs,
    };
  }
  const seat = codec.int(codec.key(obj, 'seat', ''), 'seat');
  if (kind === 'sit_down') return { type: kind, seat, player_id: codec.str(codec.key(obj, 'player_id', ''), 'player_id'), at_ms: atMs };
  if (kind === 'stand_up') return { type: kind, seat, at_ms: atMs };
  if (kind === 'timeout') {
    const resolved = codec.obj(codec.key(obj, 'resolved', ''), 'resolved');
    if (resolved.type !== 'place' && resolved.type !== 'set_fantasyland') throw invalid('a timeout resolves to a place or a set_fantasyland', 'resolved.type');
    let move;
    try {
      move = actionFromDict(resolved);
    } catch (error) {
      throw prefixed(error, 'resolved');
    }
    const deadline = has(obj, 'deadline_ms') && obj.deadline_ms !== null ? codec.ms(obj.deadline_ms, 'deadline_ms') : null;
    const policy = has(obj, 'policy') ? obj.policy : null;
    if (policy !== null && (typeof policy !== 'string' || !policy)) throw invalid('policy must be a non-empty string or null', 'policy');
    return { type: kind, seat, move, policy, at_ms: atMs, deadline_ms: deadline };
  }
  if (kind === 'place') {
    const placements = codec.list(codec.key(obj, 'placements', ''), 'placements').map((raw, k) => {
      const path = `placements[${k}]`;
      let cardRaw;
      let rowRaw;
      if (isObject(raw)) [cardRaw, rowRaw] = [codec.key(raw, 'card', path), codec.key(raw, 'row', path)];
      else if (Array.isArray(raw) && raw.length === 2) [cardRaw, rowRaw] = raw;
      else throw invalid(`${path} must be [card, row]`, path);
      return [codec.card(cardRaw, `${path}.card`), codec.row(rowRaw, `${path}.row`)];
    });
    const discardRaw = has(obj, 'discard') ? obj.discard : null;
    return { type: kind, seat, placements, discard: discardRaw === null ? null : codec.card(discardRaw, 'discard'), at_ms: atMs };
  }
  if (kind === 'set_fantasyland') {
    const [top, middle, bottom] = ROWS.map((row) => codec.cards(codec.key(obj, row, ''), row));
    return { type: kind, seat, top, middle, bottom, discards: codec.cards(has(obj, 'discards') ? obj.discards : [], 'discards'), at_ms: atMs };
  }
  throw invalid(`unknown action type ${show(kind)}`, 'type');
}

const codes = (ids) => ids.map(cardCode);

/** An action as the service writes it (a history of version < 3 writes a timeout without deadline and policy). */
function actionToDict(action, version = FORMAT_VERSION) {
  switch (action.type) {
    case 'sit_down':
      return { type: 'sit_down', seat: action.seat, player_id: action.player_id, at_ms: action.at_ms };
    case 'stand_up':
      return { type: 'stand_up', seat: action.seat, at_ms: action.at_ms };
    case 'start_hand':
      return { type: 'start_hand', server_seed: action.server_seed.toString('hex'), client_seed: action.client_seed.toString('hex'), at_ms: action.at_ms };
    case 'place':
      return {
        type: 'place',
        seat: action.seat,
        placements: action.placements.map(([card, row]) => [cardCode(card), row]),
        discard: action.discard === null ? null : cardCode(action.discard),
        at_ms: action.at_ms,
      };
    case 'set_fantasyland':
      return {
        type: 'set_fantasyland',
        seat: action.seat,
        top: codes(action.top),
        middle: codes(action.middle),
        bottom: codes(action.bottom),
        discards: codes(action.discards),
        at_ms: action.at_ms,
      };
    default: {
      const entry = { type: 'timeout', seat: action.seat, at_ms: action.at_ms, deadline_ms: action.deadline_ms, policy: action.policy };
      if (version < 3) {
        delete entry.deadline_ms;
        delete entry.policy;
      }
      entry.resolved = actionToDict(action.move, version);
      return entry;
    }
  }
}

/** The match state between hands of a history's initial_state (the service's state_from_dict). */
function stateFromDict(data) {
  const obj = codec.obj(data, '');
  const version = codec.key(obj, 'format_version', '');
  if (!STATE_FORMAT_VERSIONS.includes(version)) {
    throw invalid(`unsupported state format_version ${show(version)} (this engine reads 1, 2)`, 'format_version');
  }
  const rulesetRaw = codec.obj(codec.key(obj, 'ruleset', ''), 'ruleset');
  let ruleset;
  try {
    ruleset = rulesetFromDict(rulesetRaw);
  } catch (error) {
    if (error instanceof OfcError && !error.field.startsWith('ruleset')) error.field = join('ruleset', error.field);
    throw error;
  }
  const seats = codec.list(codec.key(obj, 'seats', ''), 'seats').map((raw, i) => {
    const path = `seats[${i}]`;
    const seat = codec.obj(raw, path);
    return {
      player_id: codec.str(codec.key(seat, 'player_id', path), `${path}.player_id`),
      points: codec.int(codec.key(seat, 'points', path), `${path}.points`, null),
      fantasyland: codec.int(codec.key(seat, 'fantasyland', path), `${path}.fantasyland`),
      fantasyland_streak: codec.int(codec.key(seat, 'fantasyland_streak', path), `${path}.fantasyland_streak`),
    };
  });
  if (seats.length < ruleset.min_players || seats.length > ruleset.max_players) {
    throw invalid(`ruleset '${ruleset.name}' plays ${ruleset.min_players}..${ruleset.max_players} seats, got ${seats.length}`, 'seats');
  }
  const button = codec.int(codec.key(obj, 'button', ''), 'button');
  if (button >= seats.length) throw invalid(`button ${button} is not a seat`, 'button');
  const handsPlayed = codec.int(codec.key(obj, 'hands_played', ''), 'hands_played');
  const maxHands = codec.optInt(codec.key(obj, 'max_hands', ''), 'max_hands', 1);
  const hand = codec.key(obj, 'hand', '');
  if (hand !== null) {
    // A hand in progress is never a history's start; its first fields are read as the
    // service's reader reads them, so that a broken one is reported where it reports it.
    const h = codec.obj(hand, 'hand');
    codec.int(codec.key(h, 'number', 'hand'), 'hand.number', 1);
    codec.hex(codec.key(h, 'server_seed', 'hand'), 'hand.server_seed');
    codec.hex(codec.key(h, 'client_seed', 'hand'), 'hand.client_seed');
    codec.cards(codec.key(h, 'deck', 'hand'), 'hand.deck');
  }
  const pairUnits = [];
  codec.list(has(obj, 'pair_unit_values') ? obj.pair_unit_values : [], 'pair_unit_values').forEach((item, k) => {
    const path = `pair_unit_values[${k}]`;
    const pair = codec.obj(item, path);
    const a = codec.int(codec.key(pair, 'a', path), `${path}.a`);
    const b = codec.int(codec.key(pair, 'b', path), `${path}.b`);
    const unit = codec.int(codec.key(pair, 'unit_value', path), `${path}.unit_value`, 1);
    if (!(a < b && b < seats.length)) throw invalid(`${path}: a pair is two seats a < b < ${seats.length}, got (${a}, ${b})`, `${path}.b`);
    const last = pairUnits[pairUnits.length - 1];
    if (last && (a < last[0] || (a === last[0] && b <= last[1]))) throw invalid(`${path}: pairs are listed once each, in ascending (a, b) order`, path);
    pairUnits.push([a, b, unit]);
  });
  return { ruleset, seats, button, hands_played: handsPlayed, max_hands: maxHands, hand, pair_units: pairUnits };
}

function contextFromDict(data) {
  const clockRaw = codec.key(data, 'clock', '');
  let clock = null;
  if (clockRaw !== null) {
    const obj = codec.obj(clockRaw, 'clock');
    clock = {
      turn_time_limit_ms: codec.ms(codec.key(obj, 'turn_time_limit_ms', 'clock'), 'clock.turn_time_limit_ms', 1),
      fantasyland_time_limit_ms: codec.ms(codec.key(obj, 'fantasyland_time_limit_ms', 'clock'), 'clock.fantasyland_time_limit_ms', 1),
    };
  }
  const unitsRaw = codec.key(data, 'seat_units', '');
  const units = unitsRaw === null ? null : codec.list(unitsRaw, 'seat_units').map((u, i) => codec.int(u, `seat_units[${i}]`, null));
  const changesRaw = codec.key(data, 'seat_changes', '');
  let changes = null;
  if (changesRaw !== null) {
    changes = codec.list(changesRaw, 'seat_changes').map((raw, i) => {
      const path = `seat_changes[${i}]`;
      let change;
      try {
        change = actionFromDict(raw);
      } catch (error) {
        throw prefixed(error, path);
      }
      if (change.type !== 'sit_down' && change.type !== 'stand_up') throw invalid(`${path} must be a sit_down or a stand_up`, `${path}.type`);
      return change;
    });
  }
  const nextCommitment = codec.str(codec.key(data, 'next_commitment', ''), 'next_commitment');
  return { next_commitment: nextCommitment, clock, seat_units: units, seat_changes: changes };
}

function contextToDict(context) {
  return {
    next_commitment: context.next_commitment,
    clock: context.clock === null ? null : { turn_time_limit_ms: context.clock.turn_time_limit_ms, fantasyland_time_limit_ms: context.clock.fantasyland_time_limit_ms },
    seat_units: context.seat_units === null ? null : context.seat_units.slice(),
    seat_changes: context.seat_changes === null ? null : context.seat_changes.map((a) => actionToDict(a)),
  };
}

/** The core names a placement's parts .card/.row; in JSON a placement is the pair [card, row]. */
function actionPath(field) {
  return field.replace(/(placements\[\d+\])\.(card|row)/g, (_, head, part) => `${head}[${part === 'card' ? 0 : 1}]`);
}

/** `path` plus a core error's field (relative to an action) as a JSON path. */
function at(path, field) {
  if (!field) return path;
  const relative = actionPath(field);
  return relative.startsWith('[') ? path + relative : `${path}.${relative}`;
}

function canonical(expected, actual, path) {
  const d = difference(expected, actual, path);
  if (d === null) return;
  const location = actionPath(d.path);
  if (d.actual === MISSING) throw malformed(location, 'is missing');
  if (d.expected === MISSING) throw malformed(location, 'is not part of the canonical form');
  throw malformed(location, `is ${show(d.actual)}, not in its canonical form ${show(d.expected)}`);
}

function readVersion(obj) {
  if (!has(obj, 'format_version')) throw malformed('format_version', 'is missing');
  const version = obj.format_version;
  const known = FORMAT_VERSIONS.join(', ');
  if ((isInt(version) && version > FORMAT_VERSION) || (typeof version === 'bigint' && version > 0n)) {
    throw found('NEWER_FORMAT_VERSION', 'format_version', `is ${version}: newer than this verifier reads (versions ${known}); verify it with a later release`);
  }
  if (!isInt(version) || !FORMAT_VERSIONS.includes(version)) throw malformed('format_version', `is ${show(version)}: this verifier reads versions ${known}`);
  return version;
}

function readInitialState(raw) {
  let state;
  try {
    state = stateFromDict(raw);
  } catch (error) {
    if (error instanceof OfcError) throw malformed(join('initial_state', error.field), error.message);
    throw error;
  }
  if (state.hand !== null) throw malformed('initial_state.hand', 'must be null: a history starts between hands');
  canonical(stateAsWritten(state, raw), raw, 'initial_state');
  return state;
}

/** `reader()`, a core reading error as MALFORMED_HISTORY at `locate(field)` (the location says where). */
function readingAt(reader, locate) {
  try {
    return reader();
  } catch (error) {
    if (!(error instanceof OfcError)) throw error;
    const prefix = `${error.field}: `;
    throw malformed(locate(error.field), error.message.startsWith(prefix) ? error.message.slice(prefix.length) : error.message);
  }
}

function readContext(obj, initial) {
  for (const [key, check] of Object.entries(CONTEXT_FIELDS)) {
    if (!has(obj, key)) throw malformed(key, 'is missing');
    check(obj[key], key);
  }
  const context = readingAt(() => contextFromDict(obj), actionPath);
  const expected = contextToDict(context);
  canonical(expected, Object.fromEntries(Object.keys(expected).map((k) => [k, obj[k]])), '');
  if (context.seat_units !== null && context.seat_units.length !== initial.seats.length) {
    throw malformed('seat_units', `has ${context.seat_units.length} entries for the ${initial.seats.length} seats`);
  }
  return context;
}

function readAction(raw, path, version) {
  const obj = object(raw, path);
  const action = readingAt(() => actionFromDict(obj), (field) => at(path, field));
  canonical(actionToDict(action, version), obj, path);
  return action;
}

/**
 * The deal algorithm and the deck size agree with the ruleset's jokers: ofc-shuffle-v1 for
 * 52 cards; with jokers (version 4 only) ofc-shuffle-v2 and `deck_size`, which a 52-card
 * history does not have.
 */
function readDeck(obj, version, initial) {
  const jokers = initial.ruleset.jokers;
  const size = 52 + jokers;
  const expected = algorithmFor(jokers);
  if (obj.algorithm !== expected) throw malformed('algorithm', `is ${show(obj.algorithm)}: a ${size}-card deck is dealt with '${expected}'`);
  if (!jokers) {
    if (version >= 4 && has(obj, 'deck_size')) throw malformed('deck_size', 'is not part of the canonical form (a 52-card deck)');
    return;
  }
  if (!has(obj, 'deck_size')) throw malformed('deck_size', 'is missing');
  const recorded = obj.deck_size;
  if (!isInt(recorded) || !DECK_SIZES.includes(recorded)) throw malformed('deck_size', `must be one of [${DECK_SIZES.join(', ')}], got ${show(recorded)}`);
  if (recorded !== size) {
    throw malformed('deck_size', `is ${recorded}, but the ruleset's deck has ${size} cards (${jokers} joker${jokers === 1 ? '' : 's'})`);
  }
}

/** Step 1: the document is a history of its version, read to what the later steps replay. */
/**
 * Every integer of the document but a time (a key ending in `_ms`) within 2^53 - 1 either way,
 * the first other one (in document order) refused: a JSON reader that rounds past it would
 * read another history.
 */
function checkIntegerSizes(document) {
  const stack = [['', document]];
  while (stack.length) {
    const [path, value] = stack.pop();
    if (Array.isArray(value)) {
      for (let k = value.length - 1; k >= 0; k -= 1) stack.push([`${path}[${k}]`, value[k]]);
    } else if (isObject(value)) {
      const keys = Object.keys(value).filter((key) => !key.endsWith('_ms'));
      for (let k = keys.length - 1; k >= 0; k -= 1) stack.push([join(path, keys[k]), value[keys[k]]]);
    } else if (typeof value === 'bigint' || (Number.isInteger(value) && !Number.isSafeInteger(value))) {
      throw malformed(path, `must be an integer of at most 2^53 - 1 in size, got ${value}`);
    }
  }
}

function read(data) {
  const obj = object(data, '');
  const version = readVersion(obj);
  checkIntegerSizes(obj);
  HISTORY(obj, '');
  for (const [key, check] of Object.entries(STORED_FIELDS)) if (has(obj, key)) check(obj[key], key);
  const initial = readInitialState(obj.initial_state);
  // Version 2 is version 1 with pair unit values, and a history of either says its initial
  // state's version; the releases that kept stakes before version 2 (75a55fb to c3fb462) wrote
  // such a hand as version 1 throughout (stateAsWritten), and only they.
  const stated = obj.initial_state.format_version;
  const stateVersion = initial.pair_units.length ? 2 : 1;
  if (version < 3 && version !== stated) throw malformed('format_version', `is ${version}, the initial state's is ${stated}`);
  if (version >= 3 && stated !== stateVersion) {
    throw malformed('initial_state.format_version', `is ${stated}, not in its canonical form ${stateVersion}`);
  }
  if (version < 4 && usesLaterOptions(initial.ruleset)) {
    throw malformed('format_version', `is ${version}: the ruleset uses options of version 4 (Fantasyland tiers, a stay condition's rank, a top high-card royalty, jokers)`);
  }
  const context = version >= 3 ? readContext(obj, initial) : null;
  readDeck(obj, version, initial);
  const actions = obj.actions.map((raw, index) => {
    const path = `actions[${index}]`;
    const action = readAction(raw, path, version);
    if (index === 0 && action.type !== 'start_hand') throw malformed(`${path}.type`, "a history's first action is its start_hand");
    if (index > 0 && !['place', 'set_fantasyland', 'timeout'].includes(action.type)) {
      throw malformed(`${path}.type`, 'after start_hand come only place, set_fantasyland and timeout');
    }
    if (action.type === 'timeout' && action.deadline_ms !== null && (context === null || context.clock === null)) {
      throw malformed(`${path}.deadline_ms`, 'a deadline, but the history has no clock');
    }
    return action;
  });
  return { raw: obj, version, initial, actions, context };
}

// --- steps 2 to 8 -------------------------------------------------------------------------

const SECTION_CODES = {
  format_version: 'MALFORMED_HISTORY',
  algorithm: 'MALFORMED_HISTORY',
  ruleset: 'HEADER_MISMATCH',
  hand_number: 'DECK_MISMATCH',
  server_seed: 'DECK_MISMATCH',
  client_seed: 'DECK_MISMATCH',
  commitment: 'COMMITMENT_MISMATCH',
  button: 'HEADER_MISMATCH',
  order: 'HEADER_MISMATCH',
  players: 'HEADER_MISMATCH',
  initial_state: 'MALFORMED_HISTORY',
  deals: 'DEAL_MISMATCH',
  actions: 'MALFORMED_HISTORY',
  boards: 'BOARD_MISMATCH',
  settlement: 'SETTLEMENT_MISMATCH',
  fantasyland_next: 'SETTLEMENT_MISMATCH',
  button_next: 'SETTLEMENT_MISMATCH',
  ...Object.fromEntries(CONTEXT_KEYS.map((k) => [k, 'MALFORMED_HISTORY'])),
};

/** Found `code` at the first difference: "recorded X, <source> Y". */
function compare(expected, actual, path, code, source) {
  const d = difference(expected, actual, path);
  if (d !== null) throw found(code, d.path, `recorded ${show(d.actual)}, ${source} ${show(d.expected)}`);
}

function applyAt(state, action, index) {
  try {
    return apply(state, action);
  } catch (error) {
    if (!(error instanceof OfcError)) throw error;
    let field = error.field;
    if (action.type === 'timeout' && (field === 'move' || field.startsWith('move.'))) field = `resolved${field.slice(4)}`; // the move is `resolved` in JSON
    throw found('ILLEGAL_ACTION', at(`actions[${index}]`, field), `${error.reason}: ${error.message}`);
  }
}

function checkDeckInputs(history) {
  const start = history.actions[0];
  for (const name of ['server_seed', 'client_seed']) {
    const used = start[name].toString('hex');
    if (used !== history.raw[name]) {
      throw found(
        'DECK_MISMATCH',
        `actions[0].${name}`,
        `the hand was started with ${name} '${used}', not the history's '${history.raw[name]}': it was not played with the re-derived deck`,
      );
    }
  }
  const number = history.raw.hand_number;
  const next = history.initial.hands_played + 1;
  if (number !== next) {
    throw found(
      'DECK_MISMATCH',
      'hand_number',
      `the deck is re-derived with nonce hand_number ${number}, but the initial state (hands_played ${history.initial.hands_played}) starts hand ${next}`,
    );
  }
}

const streetName = (street) => (street === null ? 'null (Fantasyland)' : String(street));

/** Step 6: the batches the deal order gives, from the re-derived deck, one by one. */
function checkDeals(started, deals, deck) {
  const hand = started.hand;
  const ruleset = started.ruleset;
  const positions = dealPositions(hand, ruleset);
  // The deal order: Fantasyland blocks in turn order, then street by street in turn order.
  const expected = hand.seats.filter(inFantasyland).map((s) => [s.seat, null, s.fantasyland]);
  ruleset.streets.forEach((street, s) => {
    for (const seat of hand.seats) if (!inFantasyland(seat)) expected.push([seat.seat, s, street.deal]);
  });
  expected.forEach(([seat, street, count], k) => {
    const path = `deals[${k}]`;
    const position = positions.get(`${seat},${street}`);
    const what = `${count} card(s) for seat ${seat}, street ${streetName(street)}, from ${position}`;
    if (k >= deals.length) throw found('DEAL_MISMATCH', path, `missing: batch ${k} of the deal is ${what}`);
    const deal = deals[k];
    for (const [key, value] of [['seat', seat], ['street', street], ['position', position], ['count', count]]) {
      if (deal[key] !== value) throw found('DEAL_MISMATCH', `${path}.${key}`, `recorded ${show(deal[key])}; batch ${k} of the deal is ${what}`);
    }
    compare(codes(deck.slice(position, position + count)), deal.cards, `${path}.cards`, 'DEAL_MISMATCH', `the deck from position ${position} has`);
  });
  if (deals.length > expected.length) throw found('DEAL_MISMATCH', `deals[${expected.length}]`, `extra: the deal order has ${expected.length} batches`);
}

// Histories name a timeout's policy from format 3 on, when ofc-timeout-4 was the only one
// (docs/hand-history.md, "Timeout policies"): a name of the project's policy is that one or
// a later version (a newer release's); any other ofc-timeout-* was never written. Another
// producer's policy may have any other name.
const TIMEOUT_POLICY = 'ofc-timeout-4';

function isUnwrittenPolicy(name) {
  if (!name.startsWith('ofc-timeout-') || name === TIMEOUT_POLICY) return false;
  const match = /^ofc-timeout-([1-9][0-9]*)$/.exec(name);
  return match === null || Number(match[1]) < 4;
}

function unwrittenPolicy(name) {
  return `no release of this service wrote a timeout policy ${repr(name)}: its histories name ${TIMEOUT_POLICY} or a later version`;
}

/** Step 7: every action through the rules, each timeout's recorded move, seat, time and deadline checked. */
function replay(history, started, startEvents, checkPolicy) {
  const clock = history.context === null ? null : history.context.clock;
  const handStartedAt = history.actions[0].at_ms;
  const dealtAt = new Map(); // seat -> when its current batch was dealt
  const events = [...startEvents];
  const notes = [];
  const clockStarts = (produced, atMs) => {
    for (const e of produced) if (e.type === 'cards_dealt' && e.street !== null) dealtAt.set(e.seat, atMs);
  };
  clockStarts(startEvents, handStartedAt);
  let state = started;
  history.actions.forEach((action, index) => {
    if (index === 0) return;
    if (action.type === 'timeout') {
      for (const key of ['seat', 'at_ms']) {
        if (action.move[key] !== action[key]) {
          throw found('TIMEOUT_MISMATCH', `actions[${index}].resolved.${key}`, `recorded ${action.move[key]}, the timeout's own ${key} is ${action[key]}`);
        }
      }
    }
    const before = state;
    let produced;
    [state, produced] = applyAt(state, action, index);
    if (action.type === 'timeout') {
      checkDeadline(clock, before, action, index, handStartedAt, dealtAt);
      if (checkPolicy) {
        const name = action.policy;
        let why;
        if (name === null) why = `the history (format version ${history.version}) names no policy`;
        else if (isUnwrittenPolicy(name)) throw found('POLICY_UNKNOWN', `actions[${index}].policy`, unwrittenPolicy(name));
        else why = `this verifier re-runs no policy (${show(name)})`;
        notes.push(`timeout policy not checkable with this release: ${why}`);
      }
    }
    clockStarts(produced, action.at_ms);
    events.push(...produced);
  });
  const waiting = seatsToAct(state);
  if (waiting.length) {
    throw found(
      'INCOMPLETE_HAND',
      `actions[${history.actions.length}]`,
      `the actions end with the hand in progress: the table waits for seat(s) ${waiting.join(', ')}`,
    );
  }
  return { final: state, events, notes: [...new Set(notes)] };
}

function checkDeadline(clock, before, action, index, handStartedAt, dealtAt) {
  if (clock === null || action.deadline_ms === null) return;
  const seat = before.hand.seats.find((s) => s.seat === action.seat);
  const [started, limit, what] = inFantasyland(seat)
    ? [handStartedAt, clock.fantasyland_time_limit_ms, "a Fantasyland seat's clock runs from the hand's start"]
    : [dealtAt.get(action.seat), clock.turn_time_limit_ms, "a turn's clock runs from the deal of the seat's batch"];
  const path = `actions[${index}]`;
  const due = BigInt(started) + BigInt(limit); // exact, whatever the sizes (times may pass 2^53)
  if (BigInt(action.deadline_ms) !== due) {
    throw found('DEADLINE_MISMATCH', `${path}.deadline_ms`, `recorded ${action.deadline_ms}; ${what} (${started}) for ${limit} ms: ${due}`);
  }
  if (action.at_ms < action.deadline_ms) {
    throw found(
      'TIMEOUT_BEFORE_DEADLINE',
      `${path}.at_ms`,
      `the timeout at ${action.at_ms} comes ${due - BigInt(action.at_ms)} ms before the seat's deadline ${action.deadline_ms}`,
    );
  }
}

const boardToDict = (board) => ({ top: codes(board.top), middle: codes(board.middle), bottom: codes(board.bottom) });

/** The history the service writes for this start, these actions and this context, in `version`. */
function historyFromReplay(history, final, events) {
  const { initial, version, context } = history;
  const hand = final.hand;
  const settled = events.find((e) => e.type === 'hand_settled');
  const expected = {
    format_version: version,
    algorithm: algorithmFor(final.ruleset.jokers),
    ruleset: final.ruleset.name,
    hand_number: hand.number,
    server_seed: hand.server_seed.toString('hex'),
    client_seed: hand.client_seed.toString('hex'),
    commitment: commitment(hand.server_seed),
    button: hand.button,
    order: hand.seats.map((s) => s.seat),
    players: hand.seats.map((s) => ({ seat: s.seat, player_id: initial.seats[s.seat].player_id, fantasyland: s.fantasyland })),
    initial_state: stateAsWritten(initial, history.raw.initial_state), // in its writer's form
    deals: events
      .filter((e) => e.type === 'cards_dealt')
      .map((e) => ({ type: 'cards_dealt', seat: e.seat, street: e.street, position: e.position, count: e.count, cards: codes(e.cards) })),
    actions: history.actions.map((a) => actionToDict(a, version)),
    boards: hand.seats.map((s) => ({ seat: s.seat, ...boardToDict(s.board), discards: codes(s.discards) })),
    settlement: settlementToDict(settled.settlement, settled.seats),
    fantasyland_next: settled.fantasyland_next,
    button_next: final.button,
  };
  if (version >= 3) Object.assign(expected, contextToDict(context));
  if (final.ruleset.jokers) expected.deck_size = 52 + final.ruleset.jokers; // version 4: only a deck with jokers says its size
  return expected;
}

/**
 * Every check of a parsed history, in order; throws the first Discrepancy. Returns the
 * history as read, the match right after the hand (its hand dropped) and the notes.
 */
function checkHand(data, { expectedRuleset = null, checkPolicy = false } = {}) {
  const history = read(data);
  const raw = history.raw;
  const serverSeed = Buffer.from(raw.server_seed, 'hex');
  const clientSeed = Buffer.from(raw.client_seed, 'hex');
  const computed = commitment(serverSeed);
  if (computed !== raw.commitment) throw found('COMMITMENT_MISMATCH', 'commitment', `SHA-256 of server_seed is ${computed}, not ${raw.commitment}`);
  checkDeckInputs(history);
  if (expectedRuleset !== null) {
    // The name last: a house ruleset's ("pineapple+custom") says only that the rules differ,
    // the first parameter that differs says how.
    const { name, ...parameters } = rulesetToDict(expectedRuleset);
    compare({ ...parameters, name }, raw.initial_state.ruleset, 'initial_state.ruleset', 'RULESET_MISMATCH', 'expected');
  }
  const [started, startEvents] = applyAt(history.initial, history.actions[0], 0);
  const deck = dealDeck(serverSeed, clientSeed, raw.hand_number, history.initial.ruleset.jokers);
  checkDeals(started, raw.deals, deck);
  const replayed = replay(history, started, startEvents, checkPolicy);
  const { events, notes } = replayed;
  let { final } = replayed;
  const buttonTakenSeat = buttonToASeatTaken(history, final);
  if (buttonTakenSeat !== null) {
    final = { ...final, button: buttonTakenSeat };
    notes.push(
      `button_next: seat ${buttonTakenSeat}, empty when the hand began: taken during the hand, ` +
        "as only the next hand's seat_changes can show (a match with that hand checks it)",
    );
  }
  const expected = historyFromReplay(history, final, events);
  for (const [key, code] of Object.entries(SECTION_CODES)) {
    if (key !== 'actions' && has(expected, key)) compare(expected[key], raw[key], key, code, 'recomputed');
  }
  return { history, final: { ...final, hand: null }, notes, buttonTakenSeat };
}

/**
 * The recorded button_next when it is a seat the button passed on its way to the replay's,
 * empty when the hand began, else null (the replay's stands). A seat may be taken while a
 * hand is played (not in it); the button moves, as the hand ends, to the next seat taken
 * then, so it stops at such a seat. Its sit-down is recorded in the next hand's seat_changes
 * only: one hand cannot show it, a match can.
 */
function buttonToASeatTaken(history, final) {
  const recorded = history.raw.button_next;
  const start = history.initial;
  if (recorded === final.button || final.button === start.button) return null; // matches, or did not move
  const n = start.seats.length;
  for (let k = 1; k < (((final.button - start.button) % n) + n) % n; k += 1) {
    const seat = (start.button + k) % n;
    if (seat === recorded && !start.seats[seat].player_id) return seat;
  }
  return null;
}

const RESPONSE_KEYS = ['historyJson', 'history_json'];

/** Parse a document strictly; a syntax error is MALFORMED_HISTORY. */
function loads(input) {
  try {
    return parseStrict(input);
  } catch (error) {
    if (error instanceof JsonSyntaxError) throw malformed('', `not JSON: ${error.message}`);
    throw error;
  }
}

/** The history inside a GetHandHistory response in protobuf JSON; anything else as it is. */
function unwrap(data) {
  if (isObject(data) && !has(data, 'format_version')) {
    for (const key of RESPONSE_KEYS) if (typeof data[key] === 'string') return loads(data[key]);
  }
  return data;
}

/** {discrepancy: Discrepancy | null, notes} of a document (text or bytes): never throws for bad input. */
function checkDocument(input, options = {}) {
  try {
    const { notes } = checkHand(unwrap(loads(input)), options);
    return { discrepancy: null, notes };
  } catch (error) {
    if (error instanceof Discrepancy) return { discrepancy: error, notes: [] };
    throw error;
  }
}

module.exports = {
  Discrepancy,
  FORMAT_VERSIONS,
  JsonFloat,
  UNREADABLE,
  at,
  checkDocument,
  checkHand,
  found,
  loads,
  show,
  unwrap,
};
