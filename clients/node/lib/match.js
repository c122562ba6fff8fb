// Verifying a table's hands as one chain (docs/hand-history.md "Verifying a match"): each
// hand alone, then hand numbers consecutive, each hand's initial state and money the previous
// hand's end with the recorded seat changes applied, the commitment chain, and every
// settlement-feed record against its hand and the running totals. Every discrepancy is
// reported, each naming its input (source) and a JSON path in it.
'use strict';

const { Discrepancy, at, checkHand, loads, show, unwrap } = require('./history');
const { apply, applyUnheld, matchOver, nextOccupied, stateAsWritten } = require('./engine');
const { OfcError } = require('./errors');
const { difference, isObject, parseStrict, same, utf8Text } = require('./json');

const emptySeat = (playerId = '') => ({ player_id: playerId, points: 0, fantasyland: 0, fantasyland_streak: 0 });
const sameSeat = (a, b) => a.player_id === b.player_id && a.points === b.points && a.fantasyland === b.fantasyland && a.fantasyland_streak === b.fantasyland_streak;

function matchDiscrepancy(code, source, handNumber, location, message) {
  return { code, source, hand_number: handNumber, location, message };
}

/** "SOURCE: CODE at LOCATION: message", as ofc verify --match prints it. */
function formatMatchDiscrepancy(d) {
  return `${d.source}: ${d.code}${d.location ? ` at ${d.location}` : ''}: ${d.message}`;
}

function tableId(hand) {
  if (hand.checked === null) return null;
  const id = hand.checked.history.raw.table_id;
  return typeof id === 'string' ? id : null;
}

/**
 * `data`'s hand_number if a hand can have it (1 to 2^53 - 1), else null: a discrepancy names
 * no hand by a number no hand has, and such a hand takes no place in the chain (ofc.verify's
 * _hand_number).
 */
function handNumber(data) {
  const number = isObject(data) ? data.hand_number : undefined;
  return Number.isSafeInteger(number) && number >= 1 ? number : null;
}

function checkOne(source, data, options) {
  let number = null;
  try {
    let doc = data;
    if (typeof doc === 'string' || Buffer.isBuffer(doc) || doc instanceof Uint8Array) doc = unwrap(loads(doc));
    number = handNumber(doc);
    return [{ source, number, checked: checkHand(doc, options) }, null];
  } catch (error) {
    if (!(error instanceof Discrepancy)) throw error;
    return [{ source, number, checked: null }, matchDiscrepancy(error.code, source, number, error.location, error.message)];
  }
}

/**
 * The table after a hand's recorded seat changes, each taken as the engine takes it now or,
 * where that refuses a stand-up for a Fantasyland owed, as tables of the releases before took
 * it (applyUnheld: another seat's Fantasyland held nobody, and the seat owed one left only at
 * the end of the match). A history does not say which release made each change, and during a
 * rolling upgrade both releases serve one table: seat 1 leaving on a replica of the release
 * before, then seat 0, owed a Fantasyland and alone, on one of this release (which lets it go
 * then, else the table is stuck) is what such a table records. `refused`: the index and error
 * (this release's rules') of the first change refused, or null.
 */
function seatChanges(state, changes) {
  let current = state;
  const unheld = []; // [index, seat] of each change taken by the rules of the releases before
  for (let index = 0; index < changes.length; index += 1) {
    try {
      [current] = apply(current, changes[index]);
    } catch (error) {
      if (!(error instanceof OfcError)) throw error;
      if (error.reason !== 'FANTASYLAND_OWED' || changes[index].type !== 'stand_up') return { state: current, refused: { index, error }, unheld };
      try {
        [current] = applyUnheld(current, changes[index]);
      } catch (refused) {
        if (!(refused instanceof OfcError)) throw refused;
        return { state: current, refused: { index, error }, unheld };
      }
      unheld.push([index, changes[index].seat]);
    }
  }
  return { state: current, refused: null, unheld };
}

/**
 * What an auditor is told of a seat change only the releases before 2026-12-06 allowed: such a
 * history verifies (it cannot say which release made the change), but a table of this release
 * alone never writes it, and with it a Fantasyland hand owed may go unplayed.
 */
function unheldNote(index, seat) {
  return (
    `seat_changes[${index}]: seat ${seat} left while a Fantasyland hand was owed at the table, ` +
    'as only releases before 2026-12-06 allowed (a table of those releases, or one that ' +
    'crossed the upgrade, records this; a table of later releases does not)'
  );
}

/** The money before the hand: the history's own (version 3), else what the chain gave. */
function recordedUnits(checked, expected) {
  const context = checked.history.context;
  if (context !== null && context.seat_units !== null) return context.seat_units.slice();
  return expected !== null ? expected.slice() : new Array(checked.history.initial.seats.length).fill(null);
}

/**
 * Whether the button, moved as the hand of `checked` ended, could stop at `taken`: whether some
 * first part of the next hand's `changes` (in the order the table accepted them, those made
 * during the hand come first; they end before any stand-up of a seat that played it, which only
 * its end allows), applied to the seats the hand began with, leaves `taken` the next seat taken
 * after the hand's button.
 */
function buttonStopsAt(checked, changes, taken) {
  const start = checked.history.initial;
  const played = new Set(checked.history.raw.settlement.players.map((p) => p.seat));
  const seats = start.seats.slice();
  for (const change of changes) {
    if (change.type === 'stand_up' && played.has(change.seat)) break;
    if (change.seat < seats.length) seats[change.seat] = { player_id: change.type === 'sit_down' ? change.player_id : '' };
    if (nextOccupied(seats, start.button) === taken) return true;
  }
  return false;
}

function unitsAfter(checked, before) {
  const after = before.slice();
  for (const player of checked.history.raw.settlement.players) {
    if (after[player.seat] !== null && after[player.seat] !== undefined) after[player.seat] += player.units;
  }
  return after;
}

class Chain {
  constructor(found) {
    this.found = found;
    this.notes = [];
    this.confirmed = new Set(); // hands whose button at a seat taken was checked
  }

  report(code, hand, location, message) {
    this.found.push(matchDiscrepancy(code, hand.source, hand.number, location, message));
  }

  table(hands) {
    const first = hands.find((h) => tableId(h) !== null);
    if (!first) return;
    for (const hand of hands) {
      const id = tableId(hand);
      if (id !== null && id !== tableId(first)) {
        this.report('TABLE_MISMATCH', hand, 'table_id', `recorded ${show(id)}; the match is table ${show(tableId(first))} (${first.source})`);
      }
    }
  }

  /** The hands with a hand number, each number once; gaps reported. */
  numbers(hands) {
    const kept = [];
    for (const hand of hands) {
      if (hand.number === null) continue;
      const last = kept[kept.length - 1];
      if (last && last.number === hand.number) {
        this.report('HAND_REPEATED', hand, 'hand_number', `hand ${hand.number} is also ${last.source}`);
        continue;
      }
      if (last && last.number + 1 < hand.number) {
        const missing = last.number + 2 === hand.number ? `hand ${last.number + 1} is` : `hands ${last.number + 1}..${hand.number - 1} are`;
        this.report('HAND_MISSING', hand, 'hand_number', `${missing} missing between hand ${last.number} (${last.source}) and this one`);
      }
      kept.push(hand);
    }
    return kept;
  }

  /** Hand 1 starts from an empty table. */
  first(hand) {
    const initial = hand.checked.history.initial;
    const empty = { ...initial, seats: initial.seats.map(() => emptySeat()), hands_played: 0, hand: null };
    return this.arrive(hand, empty, new Array(initial.seats.length).fill(0), 'an empty table');
  }

  link(previous, hand, units) {
    const context = previous.checked.history.context;
    const published = context === null ? '' : context.next_commitment;
    const committed = hand.checked.history.raw.commitment;
    if (published && published !== committed) {
      this.report(
        'CHAIN_COMMITMENT_MISMATCH',
        hand,
        'commitment',
        `recorded ${show(committed)}; hand ${previous.number} (${previous.source}) published next_commitment ${show(published)}`,
      );
    }
    const end = previous.checked.final;
    const taken = previous.checked.buttonTakenSeat;
    const { context: arrived } = hand.checked.history;
    const changes = arrived === null ? null : arrived.seat_changes;
    if (taken !== null && changes !== null) {
      this.confirmed.add(previous.number || 0);
      if (!buttonStopsAt(previous.checked, changes, taken)) {
        this.report(
          'CHAIN_STATE_MISMATCH',
          previous,
          'button_next',
          `recorded ${taken}, a seat empty when the hand began; no first part of hand ${hand.number}'s seat_changes (${hand.source}), ` +
            'the changes made during this hand, leaves it the next seat taken after the button',
        );
      }
    }
    return this.arrive(hand, end, units || new Array(end.seats.length).fill(null), `the end of hand ${previous.number} (${previous.source})`);
  }

  /**
   * The table at `end` with `units`, taken to `hand`'s start by its recorded seat changes (or,
   * without them, by what a seat change may do); reports where the hand's initial state or
   * money differ. Returns the money before the hand.
   */
  arrive(hand, end, startUnits, what) {
    const checked = hand.checked;
    const history = checked.history;
    const units = startUnits.slice();
    while (units.length < end.seats.length) units.push(null);
    const changes = history.context === null ? null : history.context.seat_changes;
    let state;
    if (changes !== null) {
      const taken = seatChanges(end, changes);
      for (const [index, seat] of taken.unheld) this.notes.push(`${hand.source}: ${unheldNote(index, seat)}`);
      if (taken.refused !== null) {
        const { index, error } = taken.refused;
        this.report('ILLEGAL_ACTION', hand, at(`seat_changes[${index}]`, error.field), `${error.reason}: ${error.message} (applied to ${what})`);
        return recordedUnits(checked, units);
      }
      state = taken.state;
      for (const change of changes) if (change.seat < units.length) units[change.seat] = 0;
    } else {
      state = this.explained(hand, end, units);
    }
    const written = history.raw.initial_state;
    const d = difference(stateAsWritten(state, written), written, 'initial_state');
    if (d !== null) {
      const how = changes !== null ? ' with the recorded seat changes' : '';
      this.report('CHAIN_STATE_MISMATCH', hand, d.path, `recorded ${show(d.actual)}; ${what}${how} gives ${show(d.expected)}`);
    }
    const recorded = history.context === null ? null : history.context.seat_units;
    if (recorded !== null) {
      const n = Math.min(units.length, recorded.length);
      for (let seat = 0; seat < n; seat += 1) {
        if (units[seat] !== null && units[seat] !== recorded[seat]) {
          this.report('CHAIN_STATE_MISMATCH', hand, `seat_units[${seat}]`, `recorded ${recorded[seat]}; ${what} leaves seat ${seat} with ${units[seat]} units`);
          break;
        }
      }
    }
    return recordedUnits(checked, units);
  }

  /**
   * Without recorded seat changes (format versions 1 and 2): a seat may differ from `end`
   * only as a seat change leaves it (empty, or a new player with nothing), and only if it
   * owed no Fantasyland; such a seat's money restarts at 0.
   */
  explained(hand, end, units) {
    const recorded = hand.checked.history.initial.seats;
    const seats = end.seats.slice();
    const n = Math.min(end.seats.length, recorded.length);
    for (let i = 0; i < n; i += 1) {
      const was = end.seats[i];
      const now = recorded[i];
      if (sameSeat(now, was) || !sameSeat(now, emptySeat(now.player_id))) continue; // unchanged, or unexplained (reported)
      if (was.fantasyland && !matchOver(end)) continue; // leaving while owed a Fantasyland: reported
      seats[i] = now;
      units[i] = 0;
    }
    return { ...end, seats };
  }
}

class Records {
  constructor(feed, chain, hands) {
    this.chain = chain;
    this.hands = hands;
    const table = hands.map(tableId).find((id) => id !== null);
    this.byNumber = new Map();
    for (const [source, rec] of feed) {
      if (handNumber(rec) === null) {
        this.bad(source, null, '', `not a settlement record: ${show(rec)}`);
        continue;
      }
      if (table !== undefined && rec.table_id !== table) continue; // another table's
      const number = rec.hand_number;
      const kept = this.byNumber.get(number);
      if (kept === undefined) this.byNumber.set(number, [source, rec]);
      else if (!same(kept[1], rec)) {
        const d = difference(kept[1], rec, '');
        this.bad(source, number, d === null ? '' : d.path, `hand ${number}'s record is also ${kept[0]}, with other contents`);
      }
    }
    // The feed covers a table from its first record on: hands settled before the release that
    // began the feed (e2afa95), or dropped by its retention, were never in it or are gone.
    // Only a prefix can be so; with no record of the table at all, none is.
    this.first = this.byNumber.size ? Math.min(...this.byNumber.keys()) : null;
    this.uncovered = [];
  }

  bad(source, number, location, message) {
    this.chain.found.push(matchDiscrepancy('FEED_RECORD_MISMATCH', source, number, location, message));
  }

  /** Compare hand's record; returns the money before the hand, unknown seats' read from the record. */
  check(hand, before) {
    const kept = this.byNumber.get(hand.number);
    if (kept === undefined && this.first !== null && hand.number < this.first) {
      this.uncovered.push(hand.number);
      return before;
    }
    if (kept === undefined) {
      this.chain.report('FEED_RECORD_MISSING', hand, '', `the feed has no settlement record of hand ${hand.number}`);
      return before;
    }
    const [source, rec] = kept;
    const [expected, known] = expectedRecord(hand.checked, before, rec);
    const d = difference(expected, rec, '');
    if (d !== null) {
      const total = d.path.endsWith('.total_points') || d.path.endsWith('.total_units');
      this.chain.found.push(
        matchDiscrepancy(
          total ? 'RUNNING_TOTAL_MISMATCH' : 'FEED_RECORD_MISMATCH',
          source,
          hand.number,
          d.path,
          `recorded ${show(d.actual)}; hand ${hand.number} (${hand.source}) gives ${show(d.expected)}`,
        ),
      );
    }
    return known;
  }

  notes() {
    if (!this.uncovered.length) return [];
    const low = this.uncovered[0];
    const high = this.uncovered[this.uncovered.length - 1];
    const hands = low === high ? `hand ${low}` : `hands ${low}-${high}`;
    return [`the feed's first record of this table is hand ${this.first}: ${hands} not checked against the feed (settled before the feed began, or dropped by its retention)`];
  }

  extra() {
    const numbers = new Set(this.hands.map((h) => h.number));
    const given = [...numbers].filter((n) => n !== null);
    const first = given.length ? Math.min(...given) : 1;
    for (const [number, [source]] of [...this.byNumber].sort((x, y) => x[0] - y[0])) {
      if (!numbers.has(number) && number >= first) {
        this.chain.found.push(matchDiscrepancy('FEED_RECORD_EXTRA', source, number, 'hand_number', `the feed settles hand ${number}, which is not in the match`));
      }
    }
  }
}

/**
 * The feed record a hand gives (what the history cannot say, its table when it names none
 * and money before the hand the chain does not know, taken from `rec`), and the money
 * before the hand.
 */
function expectedRecord(checked, beforeIn, rec) {
  const raw = checked.history.raw;
  const ruleset = checked.history.initial.ruleset;
  const settlement = raw.settlement;
  const table = 'table_id' in raw ? raw.table_id : rec.table_id === undefined ? null : rec.table_id;
  const number = raw.hand_number;
  const recorded = new Map();
  for (const s of Array.isArray(rec.seats) ? rec.seats : []) if (isObject(s)) recorded.set(s.seat, s);
  const before = beforeIn.slice();
  const recordFormat = rec.format === 2 ? 2 : 1; // 2: with the seats' Fantasyland
  const played = new Map(raw.players.map((p) => [p.seat, p.fantasyland]));
  const owed = new Map(raw.fantasyland_next.map((f) => [f.seat, f.cards]));
  const seats = [...settlement.players]
    .sort((x, y) => x.seat - y.seat)
    .map((player) => {
      const seat = player.seat;
      if (before[seat] === null || before[seat] === undefined) {
        const mine = recorded.get(seat) || {};
        if (Number.isInteger(mine.total_units) && Number.isInteger(mine.units)) before[seat] = mine.total_units - mine.units;
      }
      return {
        seat,
        player_id: checked.history.initial.seats[seat].player_id,
        points: player.points,
        units: player.units,
        total_points: checked.final.seats[seat].points,
        total_units: (before[seat] || 0) + player.units,
        fouled: player.fouled,
        ...(recordFormat === 2 ? { fantasyland_cards: played.get(seat) || 0, fantasyland_next_cards: owed.get(seat) || 0 } : {}),
      };
    });
  const expected = {
    format: recordFormat,
    settlement_id: `${table === null ? 'None' : table}:${number}`,
    table_id: table,
    hand_number: number,
    ruleset: settlement.ruleset,
    unit_value: ruleset.unit_value,
    loss_cap: ruleset.loss_cap,
    settled_at_ms: 'settled_at_ms' in raw ? raw.settled_at_ms : rec.settled_at_ms === undefined ? null : rec.settled_at_ms,
    seats,
    pairs: settlement.pairs.map((p) => ({ seat_a: p.a, seat_b: p.b, points: p.points, capped_points: p.capped_points, unit_value: p.unit_value, units: p.units })),
  };
  return [expected, before];
}

/**
 * Check `histories` ([source, document]: parsed, or its JSON text/bytes) as one table's hands,
 * in any order; with `feed` ([source, record]: the settlement feed's records), every record
 * against its hand. Returns {hands, verified, discrepancies, notes}; never throws for bad input.
 */
function verifyMatch(histories, feed = null, options = {}) {
  const found = [];
  const hands = [];
  const notes = [];
  for (const [source, data] of histories) {
    const [hand, discrepancy] = checkOne(source, data, options);
    hands.push(hand);
    if (discrepancy !== null) found.push(discrepancy);
    else for (const note of hand.checked.notes) notes.push(`${source}: ${note}`);
  }
  const verified = hands.filter((h) => h.checked !== null).length;
  // stable: hands without a number last
  const order = hands.map((h, i) => [h, i]);
  order.sort(([a, i], [b, j]) => (a.number === null) - (b.number === null) || (a.number || 0) - (b.number || 0) || i - j);
  const sorted = order.map(([h]) => h);
  const chain = new Chain(found);
  chain.table(sorted);
  const numbered = chain.numbers(sorted);
  const records = feed !== null ? new Records(feed, chain, numbered) : null;
  let previous = null;
  let units = null; // money after the previous hand
  for (const hand of numbered) {
    const adjacent = previous !== null && previous.number === hand.number - 1;
    if (hand.checked === null) {
      previous = hand;
      units = null;
      continue;
    }
    let before;
    if (adjacent && previous.checked !== null) before = chain.link(previous, hand, units);
    else if (hand.number === 1) before = chain.first(hand);
    else before = recordedUnits(hand.checked, null);
    if (records !== null) before = records.check(hand, before);
    units = unitsAfter(hand.checked, before);
    previous = hand;
  }
  notes.push(...chain.notes);
  for (const h of numbered) {
    if (h.checked !== null && h.checked.buttonTakenSeat !== null && !chain.confirmed.has(h.number || 0)) {
      notes.push(
        `${h.source}: button_next ${h.checked.buttonTakenSeat}, a seat taken during the hand, not confirmed: ` +
          'the match has no next hand that records its seat changes',
      );
    }
  }
  if (records !== null) {
    records.extra();
    notes.push(...records.notes());
  }
  return { hands: hands.length, verified, discrepancies: found, notes: [...new Set(notes)] };
}

// --- the settlement feed's records ---------------------------------------------------------

/**
 * A number of a protobuf JSON record: 64-bit integers come as strings, and one past 2^53 (a
 * time) is read as a BigInt, exactly, as lib/json.js reads such a number; a zero left out is 0.
 */
// Integer fields of SettlementRecord by their protobuf type, and each type's range.
const RANGES = {
  uint32: [0n, 2n ** 32n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  sint64: [-(2n ** 63n), 2n ** 63n - 1n],
};

const notRecord = (what) => new Error(`not a settlement record: ${what}`);

/** A field of a protobuf JSON object by its camelCase or .proto name; null is unset. */
function field(obj, camel, snake) {
  const v = camel in obj ? obj[camel] : obj[snake];
  return v === null ? undefined : v;
}

/**
 * An integer field as protobuf JSON printers write one: a JSON integer or a string of decimal
 * digits, in its type's range (ofc verify reads the same; the Python library alone would also
 * take 1.0, "1e2" or "6\n"). A Number, or a BigInt past 2^53.
 */
function int(obj, camel, snake, type) {
  const v = field(obj, camel, snake);
  if (v === undefined) return 0;
  let big;
  if (typeof v === 'bigint') big = v;
  else if (typeof v === 'number' && Number.isInteger(v)) big = BigInt(v);
  else if (typeof v === 'string' && /^-?[0-9]+$/.test(v)) big = BigInt(v);
  else throw notRecord(`${camel} is ${show(v)}, not an integer`);
  const [low, high] = RANGES[type];
  if (big < low || big > high) throw notRecord(`${camel} is ${big}, out of range`);
  return Number.isSafeInteger(Number(big)) ? Number(big) : big;
}

function text(obj, camel, snake) {
  const v = field(obj, camel, snake);
  if (v === undefined) return '';
  if (typeof v !== 'string') throw notRecord(`${camel} is ${show(v)}, not a string`);
  return v;
}

function flag(obj, camel) {
  const v = field(obj, camel, camel);
  if (v === undefined) return false;
  if (typeof v !== 'boolean') throw notRecord(`${camel} is ${show(v)}, not true or false`);
  return v;
}

function messages(obj, name) {
  const v = field(obj, name, name);
  if (v === undefined) return [];
  if (!Array.isArray(v) || !v.every(isObject)) throw notRecord(`${name} is ${show(v)}, not a list of objects`);
  return v;
}

/**
 * A record in the feed stream's form (`{"format": 1, "settlement_id": ...}`) from a
 * SettlementFeedService.Subscribe response or record in protobuf JSON (camelCase or the
 * .proto's names; 64-bit integers as strings; zero values left out); other objects as they are.
 * Throws on a protobuf JSON record with a value of the wrong type, as ofc verify does.
 */
function feedRecord(data) {
  // protobuf JSON: a Subscribe response's record, a camelCase name, or (the .proto's names)
  // hand_number written as a string, as protobuf JSON writes a 64-bit number (the stream never does)
  if (!isObject(data) || !('settlementId' in data || 'record' in data || typeof data.hand_number === 'string')) return data;
  const r = isObject(data.record) ? data.record : data;
  const lossCap = int(r, 'lossCap', 'loss_cap', 'uint32');
  const format = int(r, 'format', 'format', 'uint32') || 1; // a record from a server before formats were sent: 1
  return {
    format,
    settlement_id: text(r, 'settlementId', 'settlement_id'),
    table_id: text(r, 'tableId', 'table_id'),
    hand_number: int(r, 'handNumber', 'hand_number', 'uint64'),
    ruleset: text(r, 'ruleset', 'ruleset'),
    unit_value: int(r, 'unitValue', 'unit_value', 'uint32'),
    loss_cap: lossCap || null,
    settled_at_ms: int(r, 'settledAtMs', 'settled_at_ms', 'int64'),
    seats: messages(r, 'seats').map((s) => {
      // Format 1 has no Fantasyland fields: a record of it that sets them keeps them, so the
      // comparison finds them rather than passing values it never looked at.
      const played = int(s, 'fantasylandCards', 'fantasyland_cards', 'uint32');
      const owed = int(s, 'fantasylandNextCards', 'fantasyland_next_cards', 'uint32');
      return {
        seat: int(s, 'seat', 'seat', 'uint32'),
        player_id: text(s, 'playerId', 'player_id'),
        points: int(s, 'points', 'points', 'sint64'),
        units: int(s, 'units', 'units', 'sint64'),
        total_points: int(s, 'totalPoints', 'total_points', 'sint64'),
        total_units: int(s, 'totalUnits', 'total_units', 'sint64'),
        fouled: flag(s, 'fouled'),
        ...(format >= 2 ? { fantasyland_cards: played, fantasyland_next_cards: owed } : {}),
        ...(format < 2 && played ? { fantasyland_cards: played } : {}),
        ...(format < 2 && owed ? { fantasyland_next_cards: owed } : {}),
      };
    }),
    pairs: messages(r, 'pairs').map((p) => ({
      seat_a: int(p, 'seatA', 'seat_a', 'uint32'),
      seat_b: int(p, 'seatB', 'seat_b', 'uint32'),
      points: int(p, 'points', 'points', 'sint64'),
      capped_points: int(p, 'cappedPoints', 'capped_points', 'sint64'),
      unit_value: int(p, 'unitValue', 'unit_value', 'uint32'),
      units: int(p, 'units', 'units', 'sint64'),
    })),
  };
}

/** An object of `error` and `metadata` only: how a Connect stream ends, not a record. */
function isStreamEnd(data) {
  if (!isObject(data)) return false;
  const keys = Object.keys(data);
  return keys.length > 0 && keys.every((k) => k === 'error' || k === 'metadata');
}

/**
 * A feed file's records, [source, record] ("FILE:LINE"): JSON Lines (ending at "\n" or
 * "\r\n" only), each line as strict as a history (UTF-8, no NaN, no key twice; a number with
 * a fraction or exponent is no integer; ofc verify reads it the same). `input`: the text, or
 * its bytes; throws on bytes that are not UTF-8 and on a line that is not JSON.
 */
function readFeed(input, name) {
  let text;
  try {
    text = utf8Text(input);
  } catch {
    throw new Error('the feed is not UTF-8');
  }
  const records = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (!line.trim()) return;
    let data;
    try {
      data = parseStrict(line);
    } catch (error) {
      throw new Error(`line ${i + 1} is not JSON: ${error.message}`);
    }
    if (isStreamEnd(data)) return; // a Connect stream's end message (a curl of Subscribe ends with one)
    records.push([`${name}:${i + 1}`, feedRecord(data)]);
  });
  return records;
}

module.exports = { feedRecord, formatMatchDiscrepancy, readFeed, verifyMatch };
