// Rulesets as data: read from a history's initial_state.ruleset (every parameter: the
// royalty tables, the scoring scheme, the Fantasyland rules), validated as the service
// validates them, and written back in canonical form. The presets are here only for
// --expect-ruleset; a history is always scored from its own recorded parameters.
'use strict';

const { CATEGORIES, RANKS } = require('./cards');
const { ofcError } = require('./errors');

const ROWS = ['top', 'middle', 'bottom'];
const ROW_SIZE = { top: 3, middle: 5, bottom: 5 };
const BOARD_SIZE = 13;

const byCategory = (points) => CATEGORIES.map((c) => points[c] || 0);
const STANDARD_TOP_PAIR = [0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
const STANDARD_TOP_TRIPS = Array.from({ length: 13 }, (_, i) => 10 + i);
const ROYALTY_TABLES = {
  standard: {
    name: 'standard',
    bottom: byCategory({ straight: 2, flush: 4, full_house: 6, quads: 10, straight_flush: 15, royal_flush: 25 }),
    middle: byCategory({ trips: 2, straight: 4, flush: 8, full_house: 12, quads: 20, straight_flush: 30, royal_flush: 50 }),
    top_pair: STANDARD_TOP_PAIR,
    top_trips: STANDARD_TOP_TRIPS,
    top_high_card: new Array(13).fill(0),
  },
  ukrainian: {
    name: 'ukrainian',
    bottom: byCategory({ straight: 2, flush: 4, full_house: 6, quads: 8, straight_flush: 10, royal_flush: 15 }),
    middle: byCategory({ trips: 2, straight: 4, flush: 8, full_house: 12, quads: 16, straight_flush: 20, royal_flush: 30 }),
    top_pair: STANDARD_TOP_PAIR,
    top_trips: STANDARD_TOP_TRIPS,
    top_high_card: new Array(13).fill(0),
  },
};
// Format 4: the standard table plus 1 point for any unpaired top on a legal board.
ROYALTY_TABLES['standard+top-high-card'] = { ...ROYALTY_TABLES.standard, name: 'standard+top-high-card', top_high_card: new Array(13).fill(1) };
const SCORING_SCHEMES = {
  '1-6': { name: '1-6', row_value: 1, scoop_bonus: 3, majority_value: 0 },
  '1-4': { name: '1-4', row_value: 1, scoop_bonus: 1, majority_value: 0 },
  '2-4': { name: '2-4', row_value: 0, scoop_bonus: 2, majority_value: 2 },
  'row-2': { name: 'row-2', row_value: 2, scoop_bonus: 0, majority_value: 0 },
};

const street = (deal, place) => ({ deal, place });
const entry = (category, rank, cards) => ({ category: CATEGORIES.indexOf(category), min_rank: RANKS.indexOf(rank), cards });
// A stay condition: a row at least `category` with at least `min_rank` (format 4; 0: two) in it.
const stay = (row, category, rank = '2') => ({ row, category: CATEGORIES.indexOf(category), min_rank: RANKS.indexOf(rank) });
const CLASSIC = {
  name: 'classic',
  streets: [street(5, 5), ...Array.from({ length: 8 }, () => street(1, 1))],
  min_players: 2,
  max_players: 4,
  royalties: ROYALTY_TABLES.standard,
  scoring: SCORING_SCHEMES['1-6'],
  royalties_to_row_winner_only: false,
  unit_value: 1,
  loss_cap: null,
  fantasyland_entry: [entry('pair', 'Q', 13)],
  stay_conditions: [stay('top', 'trips'), stay('middle', 'full_house'), stay('bottom', 'quads')],
  stay_min_row_royalty: null,
  stay_cards: 13,
  max_consecutive_fantasylands: null,
  button_moves_in_fantasyland: true,
  fantasyland_tiers: [],
  jokers: 0,
};
const PINEAPPLE_STREETS = [street(5, 5), ...Array.from({ length: 4 }, () => street(3, 2))];
const PROGRESSIVE_ENTRY = [entry('pair', 'Q', 14), entry('pair', 'K', 15), entry('pair', 'A', 16), entry('trips', '2', 17)];
// A tier kept at its own size by its own entry top again, or by quads or better on the bottom.
const keepsTier = (cards, category, rank) => ({ cards, stay_conditions: [stay('top', category, rank), stay('bottom', 'quads')], stay_cards: cards });
const PINEAPPLE = { ...CLASSIC, name: 'pineapple', streets: PINEAPPLE_STREETS, max_players: 3, fantasyland_entry: [entry('pair', 'Q', 14)], stay_cards: 14 };
const MAX_JOKERS = 2;
const PRESETS = {
  classic: CLASSIC,
  pineapple: PINEAPPLE,
  'progressive-pineapple': {
    ...CLASSIC,
    name: 'progressive-pineapple',
    streets: PINEAPPLE_STREETS,
    max_players: 3,
    fantasyland_entry: PROGRESSIVE_ENTRY,
    stay_cards: 14,
  },
  turbo: { ...CLASSIC, name: 'turbo', streets: [street(5, 5), street(4, 4), street(4, 4)] },
  'progressive-pineapple-keep': {
    ...CLASSIC,
    name: 'progressive-pineapple-keep',
    streets: PINEAPPLE_STREETS,
    max_players: 3,
    fantasyland_entry: PROGRESSIVE_ENTRY,
    stay_conditions: [stay('top', 'trips'), stay('bottom', 'quads')],
    stay_cards: 14,
    fantasyland_tiers: [keepsTier(14, 'pair', 'Q'), keepsTier(15, 'pair', 'K'), keepsTier(16, 'pair', 'A'), keepsTier(17, 'trips', '2')],
  },
  'pineapple-top-high-card': {
    ...CLASSIC,
    name: 'pineapple-top-high-card',
    streets: PINEAPPLE_STREETS,
    max_players: 3,
    royalties: ROYALTY_TABLES['standard+top-high-card'],
    fantasyland_entry: [entry('pair', 'Q', 14)],
    stay_cards: 14,
  },
  // docs/jokers.md: classic with one joker (53 cards), Pineapple with two (54).
  'classic-joker': { ...CLASSIC, name: 'classic-joker', jokers: 1 },
  'pineapple-jokers': { ...PINEAPPLE, name: 'pineapple-jokers', jokers: 2 },
};

function bad(message) {
  const error = new TypeError(message);
  error.badValue = true;
  return error;
}

const isInt = (v) => typeof v === 'number' && Number.isInteger(v);
function int(raw) {
  if (!isInt(raw)) throw bad('expected an integer');
  return raw;
}
const optionalInt = (raw) => (raw === null ? null : int(raw));
function bool(raw) {
  if (typeof raw !== 'boolean') throw bad('expected true or false');
  return raw;
}
function str(raw) {
  if (typeof raw !== 'string' || !raw) throw bad('expected a non-empty string');
  return raw;
}
function category(raw) {
  const index = CATEGORIES.indexOf(str(raw).toLowerCase()); // looked up by name, any case
  if (index < 0) throw bad(`unknown category ${raw}`);
  return index;
}
function rank(raw) {
  if (typeof raw !== 'string') throw bad('expected a rank');
  const key = raw === '10' ? 'T' : raw.toUpperCase();
  const index = key.length === 1 ? RANKS.indexOf(key) : -1;
  if (index < 0) throw bad(`invalid rank: ${raw}`);
  return index;
}
function mapping(raw) {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw bad('expected an object');
  return raw;
}
function pointsBy(size, raw, parse) {
  const values = new Array(size).fill(0);
  for (const [key, points] of Object.entries(mapping(raw))) values[parse(key)] = int(points);
  return values;
}
/** A named table or scheme (`raw` a string), or null for an object to read field by field. */
function named(known, raw, what) {
  if (typeof raw !== 'string') return null;
  if (!(raw in known)) throw bad(`known ${what}: ${Object.keys(known).join(', ')}`);
  return known[raw];
}
const orElse = (obj, key, fallback) => (key in obj ? obj[key] : fallback);

function royalties(raw) {
  const known = named(ROYALTY_TABLES, raw, 'tables');
  if (known) return known;
  const obj = mapping(raw);
  const table = {
    name: str(orElse(obj, 'name', 'custom')),
    bottom: pointsBy(10, orElse(obj, 'bottom', {}), category),
    middle: pointsBy(10, orElse(obj, 'middle', {}), category),
    top_pair: pointsBy(13, orElse(obj, 'top_pair', {}), rank),
    top_trips: pointsBy(13, orElse(obj, 'top_trips', {}), rank),
    top_high_card: pointsBy(13, orElse(obj, 'top_high_card', {}), rank),
  };
  for (const [attr, size] of [['bottom', 10], ['middle', 10], ['top_pair', 13], ['top_trips', 13], ['top_high_card', 13]]) {
    if (table[attr].some((v) => v < 0)) {
      throw ofcError('INVALID_RULESET', `royalty table ${attr} needs ${size} non-negative integers`, `royalties.${attr}`);
    }
  }
  return table;
}
function scoring(raw) {
  const known = named(SCORING_SCHEMES, raw, 'schemes');
  if (known) return known;
  const obj = mapping(raw);
  const scheme = {
    name: str(orElse(obj, 'name', 'custom')),
    row_value: int(orElse(obj, 'row_value', 0)),
    scoop_bonus: int(orElse(obj, 'scoop_bonus', 0)),
    majority_value: int(orElse(obj, 'majority_value', 0)),
  };
  for (const attr of ['row_value', 'scoop_bonus', 'majority_value']) {
    if (scheme[attr] < 0) throw ofcError('INVALID_RULESET', `scoring ${attr} must be a non-negative integer, not ${scheme[attr]}`, `scoring.${attr}`);
  }
  return scheme;
}
function list(raw) {
  if (!Array.isArray(raw)) throw bad('expected a list');
  return raw;
}
function key(obj, name) {
  if (!(name in mapping(obj))) throw bad(`missing ${name}`);
  return obj[name];
}
function stayConditions(raw) {
  return list(raw).map((c) => {
    const row = key(c, 'row');
    if (!ROWS.includes(row)) throw bad(`not a row: ${row}`);
    return { row, category: category(key(c, 'category')), min_rank: rank(str(orElse(c, 'min_rank', '2'))) };
  });
}

const READERS = {
  name: str,
  streets: (raw) =>
    list(raw).map((s) => {
      if (!Array.isArray(s) || s.length !== 2) throw bad('a street is [deal, place]');
      return street(int(s[0]), int(s[1]));
    }),
  min_players: int,
  max_players: int,
  royalties,
  scoring,
  royalties_to_row_winner_only: bool,
  unit_value: int,
  loss_cap: optionalInt,
  fantasyland_entry: (raw) =>
    list(raw).map((e) => ({ category: category(key(e, 'category')), min_rank: rank(str(key(e, 'min_rank'))), cards: int(key(e, 'cards')) })),
  stay_conditions: stayConditions,
  fantasyland_tiers: (raw) =>
    list(raw).map((t) => ({ cards: int(key(t, 'cards')), stay_conditions: stayConditions(key(t, 'stay_conditions')), stay_cards: int(key(t, 'stay_cards')) })),
  stay_min_row_royalty: optionalInt,
  stay_cards: int,
  max_consecutive_fantasylands: optionalInt,
  button_moves_in_fantasyland: bool,
  jokers: int,
};

function validate(r) {
  const fail = (message, field) => {
    throw ofcError('INVALID_RULESET', `ruleset '${r.name}': ${message}`, field);
  };
  if (!r.streets.length || r.streets.some((s) => s.deal < 1 || !(s.place > 0 && s.place <= s.deal))) {
    fail('each street deals at least 1 card and places 1..deal of them', 'streets');
  }
  if (r.streets.reduce((n, s) => n + s.place, 0) !== BOARD_SIZE) fail(`streets must place exactly ${BOARD_SIZE} cards`, 'streets');
  if (!(r.min_players >= 2 && r.min_players <= r.max_players && r.max_players <= 4)) {
    // The field named is the one out of 2..4 (min_players first); both in range: max.
    const named = r.min_players >= 2 && r.min_players <= 4 ? 'max_players' : 'min_players';
    fail('players must satisfy 2 <= min_players <= max_players <= 4', named);
  }
  if (r.unit_value < 1) fail('unit_value must be at least 1', 'unit_value');
  if (r.loss_cap !== null && r.loss_cap < 1) fail('loss_cap must be at least 1 when set', 'loss_cap');
  if (r.stay_min_row_royalty !== null && r.stay_min_row_royalty < 1) {
    fail('stay_min_row_royalty must be at least 1 when set (null: no such rule)', 'stay_min_row_royalty');
  }
  if (r.fantasyland_entry.some((e) => e.cards < BOARD_SIZE || e.cards > 17)) fail('Fantasyland hands have 13..17 cards', 'fantasyland_entry');
  if (r.stay_cards < BOARD_SIZE || r.stay_cards > 17) fail('Fantasyland hands have 13..17 cards', 'stay_cards');
  if (r.max_consecutive_fantasylands !== null && r.max_consecutive_fantasylands < 1) {
    fail('max_consecutive_fantasylands must be at least 1 when set', 'max_consecutive_fantasylands');
  }
  const seen = new Set();
  r.fantasyland_tiers.forEach((t, k) => {
    if (!(t.cards >= BOARD_SIZE && t.cards <= 17 && t.stay_cards >= BOARD_SIZE && t.stay_cards <= 17)) {
      fail('Fantasyland hands have 13..17 cards', `fantasyland_tiers[${k}]`);
    }
    if (seen.has(t.cards)) fail(`the ${t.cards}-card tier is listed twice`, `fantasyland_tiers[${k}]`);
    seen.add(t.cards);
  });
  if (r.jokers < 0 || r.jokers > MAX_JOKERS) fail(`a deck has 0..${MAX_JOKERS} jokers, not ${r.jokers}`, 'jokers');
  const perHand = r.streets.reduce((n, s) => n + s.deal, 0);
  const flCards = Math.max(...r.fantasyland_entry.map((e) => e.cards), r.stay_cards, ...r.fantasyland_tiers.map((t) => t.stay_cards));
  const worst = Math.max(perHand, flCards);
  const deckSize = 52 + r.jokers;
  if (worst * r.max_players > deckSize) fail(`max_players ${r.max_players} x ${worst} cards (the most a seat is dealt) exceed the ${deckSize}-card deck: lower max_players or the cards dealt`, 'max_players');
}

/**
 * The ruleset of `data` (the to_dict form: any of its keys, over `base`); throws an
 * OfcError (INVALID_RULESET, field "ruleset.<option>" or the validated option's name).
 */
function rulesetFromDict(data, base = CLASSIC) {
  const changes = {};
  for (const [name, raw] of Object.entries(data)) {
    const reader = READERS[name];
    if (!reader) throw ofcError('INVALID_RULESET', `unknown ruleset option: '${name}'`, `ruleset.${name}`);
    try {
      changes[name] = reader(raw);
    } catch (error) {
      if (error.reason) throw error;
      throw ofcError('INVALID_RULESET', `bad value for ruleset option '${name}' (${error.message})`, `ruleset.${name}`);
    }
  }
  if (!('name' in changes) && Object.keys(changes).length) changes.name = `${base.name}+custom`;
  const ruleset = { ...base, ...changes };
  validate(ruleset);
  return ruleset;
}

/** A preset name, or an object of overrides on one ("preset": its name, default classic). */
function resolveRuleset(spec) {
  if (typeof spec === 'string') {
    if (!(spec in PRESETS)) throw ofcError('UNKNOWN_RULESET', `unknown ruleset: '${spec}' (known: ${Object.keys(PRESETS).join(', ')})`, 'ruleset');
    return PRESETS[spec];
  }
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) throw ofcError('INVALID_RULESET', 'ruleset must be a name or an object', 'ruleset');
  const { preset = 'classic', ...overrides } = spec;
  return rulesetFromDict(overrides, resolveRuleset(preset));
}

const categoryMap = (values) => Object.fromEntries(values.map((v, i) => [CATEGORIES[i], v]).filter(([, v]) => v));
const rankMap = (values) => Object.fromEntries(values.map((v, i) => [RANKS[i], v]).filter(([, v]) => v));

/** Every parameter as JSON data, in the service's canonical form and key order. */
function rulesetToDict(r) {
  return {
    name: r.name,
    streets: r.streets.map((s) => [s.deal, s.place]),
    min_players: r.min_players,
    max_players: r.max_players,
    royalties: {
      name: r.royalties.name,
      bottom: categoryMap(r.royalties.bottom),
      middle: categoryMap(r.royalties.middle),
      top_pair: rankMap(r.royalties.top_pair),
      top_trips: rankMap(r.royalties.top_trips),
      ...(r.royalties.top_high_card.some((v) => v) ? { top_high_card: rankMap(r.royalties.top_high_card) } : {}),
    },
    scoring: { name: r.scoring.name, row_value: r.scoring.row_value, scoop_bonus: r.scoring.scoop_bonus, majority_value: r.scoring.majority_value },
    royalties_to_row_winner_only: r.royalties_to_row_winner_only,
    unit_value: r.unit_value,
    loss_cap: r.loss_cap,
    fantasyland_entry: r.fantasyland_entry.map((e) => ({ category: CATEGORIES[e.category], min_rank: RANKS[e.min_rank], cards: e.cards })),
    stay_conditions: stayList(r.stay_conditions),
    stay_min_row_royalty: r.stay_min_row_royalty,
    stay_cards: r.stay_cards,
    max_consecutive_fantasylands: r.max_consecutive_fantasylands,
    button_moves_in_fantasyland: r.button_moves_in_fantasyland,
    // Options added with history format 4 are written only when used, so a ruleset that
    // uses none of them writes what earlier releases wrote.
    ...(r.jokers ? { jokers: r.jokers } : {}),
    ...(r.fantasyland_tiers.length
      ? { fantasyland_tiers: r.fantasyland_tiers.map((t) => ({ cards: t.cards, stay_conditions: stayList(t.stay_conditions), stay_cards: t.stay_cards })) }
      : {}),
  };
}

function stayList(conditions) {
  return conditions.map((c) => ({ row: c.row, category: CATEGORIES[c.category], ...(c.min_rank ? { min_rank: RANKS[c.min_rank] } : {}) }));
}

/** Whether the ruleset uses an option hand-history format 4 added (tiers, a stay condition's rank, a top high-card royalty, jokers). */
function usesLaterOptions(r) {
  return r.jokers > 0 || r.fantasyland_tiers.length > 0 || r.royalties.top_high_card.some((v) => v) || r.stay_conditions.some((c) => c.min_rank);
}

/** What keeps a player in a Fantasyland hand of `cards` cards, and with how many: the tier's rule, else the ruleset's. */
function stayRule(r, cards) {
  const tier = r.fantasyland_tiers.find((t) => t.cards === cards);
  return tier ? [tier.stay_conditions, tier.stay_cards] : [r.stay_conditions, r.stay_cards];
}

module.exports = { BOARD_SIZE, PRESETS, ROWS, ROW_SIZE, resolveRuleset, rulesetFromDict, rulesetToDict, stayRule, usesLaterOptions };
