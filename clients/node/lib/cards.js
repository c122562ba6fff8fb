// Cards and hand values (rules.md "one scale"): a row's value is one integer, the category
// shifted left by 20, then five 4-bit rank slots (the category's ranks first, then kickers,
// highest first; rank + 1, 0 where a 3-card top has no card left), so a 3-card top and a
// 5-card middle compare on one scale and the top runs out of kickers first.
'use strict';

const RANKS = '23456789TJQKA';
const SUITS = 'cdhs';
const CARD = /^[2-9TJQKA][cdhs]$/;

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

/** Card id 0..51 (4 x rank index + suit index) of a code such as "As"; -1 when not a card. */
function cardId(code) {
  if (typeof code !== 'string' || !CARD.test(code)) return -1;
  return 4 * RANKS.indexOf(code[0]) + SUITS.indexOf(code[1]);
}

const SUIT_ALIASES = { c: 0, '♣': 0, '♧': 0, d: 1, '♦': 1, '♢': 1, h: 2, '♥': 2, '♡': 2, s: 3, '♠': 3, '♤': 3 };

/**
 * Card id of any spelling the service reads ("As", "td", "10d", "A♠", spaces around), -1
 * when none; the canonical-form check then says whether it was written canonically.
 */
function parseCard(token) {
  if (typeof token !== 'string') return -1;
  const strict = cardId(token);
  if (strict >= 0) return strict;
  const text = token.trim();
  const chars = [...text];
  if (chars.length < 2) return -1;
  const suit = SUIT_ALIASES[chars[chars.length - 1].toLowerCase()];
  const rankText = chars.slice(0, -1).join('');
  if (suit === undefined) return -1;
  const key = rankText === '10' ? 'T' : rankText.toUpperCase();
  const rank = key.length === 1 ? RANKS.indexOf(key) : -1;
  return rank < 0 ? -1 : 4 * rank + suit;
}

/** The code of card id 0..51: 0 -> "2c". */
function cardCode(id) {
  return RANKS[id >> 2] + SUITS[id & 3];
}

function pack(category, ranks) {
  let value = category;
  for (let slot = 0; slot < 5; slot += 1) value = value * 16 + (slot < ranks.length ? ranks[slot] + 1 : 0);
  return value;
}

/** The value of a complete 3- or 5-card row of card ids (bigger is stronger). */
function rowValue(cards) {
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

/**
 * SHA-256 over the values of every `size`-card row (3 or 5) of the 52 cards, in
 * lexicographic order of card ids, each as a big-endian u32: one digest for the whole scale.
 */
function valuesDigest(size) {
  const hash = require('node:crypto').createHash('sha256');
  const word = Buffer.alloc(4);
  const row = new Array(size);
  const walk = (from, depth) => {
    if (depth === size) {
      word.writeUInt32BE(rowValue(row));
      hash.update(word);
      return;
    }
    for (let id = from; id < 52; id += 1) {
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

module.exports = { CATEGORIES, CATEGORY, RANKS, SUITS, cardCode, cardId, categoryOf, parseCard, primaryRank, rowValue, valueName, valuesDigest };
