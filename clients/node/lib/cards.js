// Cards and hand values (rules.md "one scale"): a row's value is one integer, the category
// shifted left by 20, then five 4-bit rank slots (the category's ranks first, then kickers,
// highest first; rank + 1, 0 where a 3-card top has no card left), so a 3-card top and a
// 5-card middle compare on one scale and the top runs out of kickers first.
'use strict';

const RANKS = '23456789TJQKA';
const SUITS = 'cdhs';
const CARD = /^[2-9TJQKA][cdhs]$/;
// The jokers follow the 52 cards (docs/jokers.md): X1 = 52, X2 = 53.
const NATURAL_CARDS = 52;
const JOKER_CODES = ['X1', 'X2'];
const isJoker = (id) => id >= NATURAL_CARDS;

const CATEGORIES = [
  'high_card', 'pair', 'two_pair', 'trips', 'straight', 'flush',
  'full_house', 'quads', 'straight_flush', 'royal_flush',
];
const CATEGORY = Object.fromEntries(CATEGORIES.map((name, i) => [name, i]));
const LABELS = [
  'high card', 'pair', 'two pair', 'three of a kind', 'straight', 'flush',
  'full house', 'four of a kind', 'straight flush', 'royal flush',
];
const RANK_NAMES = ['two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'jack', 'queen', 'king', 'ace'];
const RANK_PLURALS = RANK_NAMES.map((n) => (n === 'six' ? 'sixes' : `${n}s`));
const ACE = 12;
const FIVE = 3;

/** Card id 0..53 (4 x rank index + suit index; the jokers 52, 53) of a code such as "As"; -1 when not a card. */
function cardId(code) {
  if (typeof code !== 'string') return -1;
  const joker = JOKER_CODES.indexOf(code);
  if (joker >= 0) return NATURAL_CARDS + joker;
  if (!CARD.test(code)) return -1;
  return 4 * RANKS.indexOf(code[0]) + SUITS.indexOf(code[1]);
}

const SUIT_ALIASES = { c: 0, '♣': 0, '♧': 0, d: 1, '♦': 1, '♢': 1, h: 2, '♥': 2, '♡': 2, s: 3, '♠': 3, '♤': 3 };

// What Python's str.strip() takes off both ends (str.isspace(): Unicode White_Space and the
// separators \x1c-\x1f), so that a card with such a character reads as the service reads it;
// JavaScript's trim() takes another set (U+FEFF, not \x1c-\x1f or U+0085).
const PY_SPACE = '\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const PY_STRIP = new RegExp(`^[${PY_SPACE}]+|[${PY_SPACE}]+$`, 'g');
const pyStrip = (text) => text.replace(PY_STRIP, '');

/**
 * Card id of any spelling the service reads ("As", "td", "10d", "A♠", spaces around), -1
 * when none; the canonical-form check then says whether it was written canonically.
 */
function parseCard(token) {
  if (typeof token !== 'string') return -1;
  const strict = cardId(token);
  if (strict >= 0) return strict;
  const text = pyStrip(token);
  const joker = JOKER_CODES.indexOf(text.toUpperCase());
  if (joker >= 0) return NATURAL_CARDS + joker;
  const chars = [...text];
  if (chars.length < 2) return -1;
  const suit = SUIT_ALIASES[chars[chars.length - 1].toLowerCase()];
  const rankText = chars.slice(0, -1).join('');
  if (suit === undefined) return -1;
  const key = rankText === '10' ? 'T' : rankText.toUpperCase();
  const rank = key.length === 1 ? RANKS.indexOf(key) : -1;
  return rank < 0 ? -1 : 4 * rank + suit;
}

/** The code of card id 0..53: 0 -> "2c", 51 -> "As", 52 -> "X1", 53 -> "X2". */
function cardCode(id) {
  if (!Number.isInteger(id) || id < 0 || id > 53) throw new RangeError(`not a card id: ${id}`);
  return isJoker(id) ? JOKER_CODES[id - NATURAL_CARDS] : RANKS[id >> 2] + SUITS[id & 3];
}

function pack(category, ranks) {
  let value = category;
  for (let slot = 0; slot < 5; slot += 1) value = value * 16 + (slot < ranks.length ? ranks[slot] + 1 : 0);
  return value;
}

/** The value of a complete 3- or 5-card row of natural card ids (bigger is stronger). */
function naturalValue(cards) {
  const counts = new Map();
  for (const c of cards) counts.set(c >> 2, (counts.get(c >> 2) || 0) + 1);
  // Ranks ordered by how many of them, then by rank: the category's ranks come first.
  const ordered = [...counts.keys()].sort((a, b) => counts.get(b) - counts.get(a) || b - a);
  const shape = ordered.map((r) => counts.get(r));
  if (cards.length === 3) {
    const category = shape[0] === 3 ? CATEGORY.trips : shape[0] === 2 ? CATEGORY.pair : CATEGORY.high_card;
    return pack(category, ordered);
  }
  const flush = cards.every((c) => (c & 3) === (cards[0] & 3));
  let high = null;
  if (ordered.length === 5) {
    if (ordered[0] - ordered[4] === 4) high = ordered[0];
    else if (ordered.join() === [ACE, FIVE, 2, 1, 0].join()) high = FIVE; // the wheel is five-high
  }
  if (high !== null) {
    const category = flush ? (high === ACE ? CATEGORY.royal_flush : CATEGORY.straight_flush) : CATEGORY.straight;
    return pack(category, [high]);
  }
  if (flush) return pack(CATEGORY.flush, ordered);
  const key = shape.join(',');
  const category = { '4,1': CATEGORY.quads, '3,2': CATEGORY.full_house, '3,1,1': CATEGORY.trips, '2,2,1': CATEGORY.two_pair, '2,1,1,1': CATEGORY.pair }[key];
  return pack(category === undefined ? CATEGORY.high_card : category, ordered);
}

// docs/jokers.md: a joker stands for the card not already in the row that makes the row
// strongest (two jokers for two different such cards) and ranks exactly as that card. The
// best substitution is found by trying every such card (pair of cards). It depends only on
// the natural cards' ranks and, in a 5-card row, on whether they share one suit (a flush
// is then open to a joker of that suit; which cards are left to stand for follows from the
// same two things), so it is tried once for each of those and remembered.
const bestByShape = new Map();

function shapeKey(naturals, jokers) {
  const ranks = naturals.map((c) => c >> 2).sort((a, b) => a - b);
  const suited = naturals.length + jokers === 5 && naturals.every((c) => (c & 3) === (naturals[0] & 3));
  return `${jokers}:${ranks.join(',')}:${suited ? 's' : ''}`;
}

function bestSubstitution(naturals, jokers) {
  const free = [];
  for (let id = 0; id < NATURAL_CARDS; id += 1) if (!naturals.includes(id)) free.push(id);
  let best = -1;
  if (jokers === 1) {
    for (const a of free) best = Math.max(best, naturalValue([...naturals, a]));
  } else {
    for (let i = 0; i < free.length; i += 1) {
      for (let j = i + 1; j < free.length; j += 1) best = Math.max(best, naturalValue([...naturals, free[i], free[j]]));
    }
  }
  return best;
}

/** The value of a complete 3- or 5-card row of card ids, jokers (52, 53) included. */
function rowValue(cards) {
  const naturals = cards.filter((c) => !isJoker(c));
  const jokers = cards.length - naturals.length;
  if (!jokers) return naturalValue(cards);
  const key = shapeKey(naturals, jokers);
  let value = bestByShape.get(key);
  if (value === undefined) {
    value = bestSubstitution(naturals, jokers);
    bestByShape.set(key, value);
  }
  return value;
}

/**
 * SHA-256 over the values of every `size`-card row (3 or 5) holding exactly `jokers` jokers
 * (0..2): its natural cards in lexicographic order of card ids, then X1 (and X2), each
 * value as a big-endian u32: one digest for the whole scale.
 */
function valuesDigest(size, jokers = 0) {
  const hash = require('node:crypto').createHash('sha256');
  const word = Buffer.alloc(4);
  const naturals = size - jokers;
  const row = new Array(size);
  for (let k = 0; k < jokers; k += 1) row[naturals + k] = NATURAL_CARDS + k;
  const walk = (from, depth) => {
    if (depth === naturals) {
      word.writeUInt32BE(rowValue(row));
      hash.update(word);
      return;
    }
    for (let id = from; id < NATURAL_CARDS; id += 1) {
      row[depth] = id;
      walk(id + 1, depth + 1);
    }
  };
  walk(0, 0);
  return hash.digest('hex');
}

function categoryOf(value) {
  return Math.floor(value / 2 ** 20);
}

/** The rank (0..12) that defines the category: the pair's, the trips', a straight's high card. */
function primaryRank(value) {
  return (Math.floor(value / 2 ** 16) % 16) - 1;
}

function ranksOf(value) {
  const ranks = [];
  for (const shift of [16, 12, 8, 4, 0]) {
    const nibble = Math.floor(value / 2 ** shift) % 16;
    if (nibble) ranks.push(nibble - 1);
  }
  return ranks;
}

/** A value's name, as the settlement writes it: "pair of kings, ace kicker". */
function valueName(value) {
  const cat = categoryOf(value);
  const ranks = ranksOf(value);
  const names = ranks.map((r) => RANK_NAMES[r]);
  const chars = (rs) => rs.map((r) => RANKS[r]).join('-');
  const label = LABELS[cat];
  if (cat === CATEGORY.straight || cat === CATEGORY.straight_flush) return `${label}, ${names[0]} high`;
  if (cat === CATEGORY.royal_flush) return label;
  if (cat === CATEGORY.high_card || cat === CATEGORY.flush) return `${label}, ${chars(ranks)}`;
  const plural = ranks.map((r) => RANK_PLURALS[r]);
  let head;
  if (cat === CATEGORY.pair) head = `pair of ${plural[0]}`;
  else if (cat === CATEGORY.two_pair) return `two pair, ${plural[0]} and ${plural[1]}` + (names.length > 2 ? `, ${names[2]} kicker` : '');
  else if (cat === CATEGORY.trips) head = `three ${plural[0]}`;
  else if (cat === CATEGORY.full_house) return `full house, ${plural[0]} full of ${plural[1]}`;
  else head = `four ${plural[0]}`;
  if (ranks.length === 1) return head;
  if (ranks.length === 2) return `${head}, ${names[1]} kicker`;
  return `${head}, ${chars(ranks.slice(1))} kickers`;
}

module.exports = { CATEGORIES, CATEGORY, JOKER_CODES, NATURAL_CARDS, RANKS, SUITS, cardCode, cardId, isJoker, categoryOf, parseCard, primaryRank, rowValue, valueName, valuesDigest };
