// Scoring a finished hand (rules.md): fouls, royalties from the ruleset's own tables,
// Fantasyland entry and stay, every pair of seats settled separately (rows, scoop bonus,
// royalties, the pair's unit value), the loss cap, and the settlement as the history writes it.
'use strict';

const { CATEGORY, categoryOf, primaryRank, rowValue, valueName, CATEGORIES } = require('./cards');
const { ROWS, stayRule } = require('./rules');

const NO_FANTASYLAND = { qualifies: false, cards: 0 };

/**
 * What a complete board is worth on its own: values, foul, royalties, Fantasyland next.
 * `tier`: the cards of the Fantasyland hand it was set in (0: a normal hand).
 */
function assess(board, ruleset, tier, streak) {
  const values = ROWS.map((row) => rowValue(board[row]));
  const [top, middle, bottom] = values;
  if (top > middle || middle > bottom) return { values, fouled: true, royalties: [0, 0, 0], fantasyland: NO_FANTASYLAND };
  const table = ruleset.royalties;
  const topCategory = categoryOf(top);
  // The first rank slot is the pair's, the trips' or (unpaired) the highest card's.
  const byRank = topCategory === CATEGORY.pair ? table.top_pair : topCategory === CATEGORY.trips ? table.top_trips : table.top_high_card;
  const topRoyalty = byRank[primaryRank(top)];
  const royalties = [topRoyalty, table.middle[categoryOf(middle)], table.bottom[categoryOf(bottom)]];
  return { values, fouled: false, royalties, fantasyland: fantasylandNext(values, royalties, ruleset, tier, streak) };
}

/** The weakest row value of `category` whose defining rank is `minRank` or more. */
const atLeast = (category, minRank) => category * 2 ** 20 + (minRank + 1) * 2 ** 16;

function fantasylandNext(values, royalties, ruleset, tier, streak) {
  if (tier) {
    const cap = ruleset.max_consecutive_fantasylands;
    if (cap !== null && streak >= cap) return NO_FANTASYLAND;
    const [conditions, stayCards] = stayRule(ruleset, tier);
    const stays = conditions.some((c) => values[ROWS.indexOf(c.row)] >= atLeast(c.category, c.min_rank));
    const threshold = ruleset.stay_min_row_royalty;
    if (stays || (threshold !== null && Math.max(...royalties) >= threshold)) return { qualifies: true, cards: stayCards };
    return NO_FANTASYLAND;
  }
  let cards = 0;
  for (const e of ruleset.fantasyland_entry) {
    if (e.cards > cards && values[0] >= atLeast(e.category, e.min_rank)) cards = e.cards;
  }
  return cards ? { qualifies: true, cards } : NO_FANTASYLAND;
}

const sign = (x) => (x > 0) - (x < 0);

function schemePoints(scheme, won, lost) {
  const diff = won - lost;
  return scheme.row_value * diff + scheme.majority_value * sign(diff) + scheme.scoop_bonus * ((won === 3) - (lost === 3));
}

function settlePair(i, j, a, b, ruleset, unit) {
  let rows;
  if (a.fouled && b.fouled) {
    return { a: i, b: j, rows: [0, 0, 0], scoop: 0, row_points: 0, royalties: 0, points: 0, capped_points: 0, unit_value: unit };
  }
  if (a.fouled) rows = [-1, -1, -1]; // a fouled board loses every row to a legal one, scoop included
  else if (b.fouled) rows = [1, 1, 1];
  else rows = [0, 1, 2].map((k) => sign(a.values[k] - b.values[k]));
  const won = rows.filter((r) => r === 1).length;
  const lost = rows.filter((r) => r === -1).length;
  let royalties;
  if (ruleset.royalties_to_row_winner_only) {
    royalties = [0, 1, 2].reduce((sum, k) => sum + (rows[k] > 0 ? a.royalties[k] : rows[k] < 0 ? -b.royalties[k] : 0), 0);
  } else {
    royalties = a.royalties.reduce((x, y) => x + y, 0) - b.royalties.reduce((x, y) => x + y, 0);
  }
  const rowPoints = schemePoints(ruleset.scoring, won, lost);
  const total = rowPoints + royalties;
  return { a: i, b: j, rows, scoop: (won === 3) - (lost === 3), row_points: rowPoints, royalties, points: total, capped_points: total, unit_value: unit };
}

const floorDiv = (x, y) => Math.floor(x / y);
const mod = (x, y) => ((x % y) + y) % y;

/**
 * The loss cap: whoever would pay more than `cap` in all pays proportionally less to each
 * opponent, cut by largest remainder (ties to the lower seat), seats in order, until nobody
 * is over; amounts stay integers and the hand zero-sum.
 */
function applyLossCap(pairs, n, cap) {
  const owed = Array.from({ length: n }, () => new Array(n).fill(0)); // owed[i][j]: what i receives from j
  for (const p of pairs) {
    owed[p.a][p.b] = p.points;
    owed[p.b][p.a] = -p.points;
  }
  let changed = true;
  while (changed) {
    changed = false;
    for (let i = 0; i < n; i += 1) {
      const net = owed[i].reduce((x, y) => x + y, 0);
      if (net >= -cap) continue;
      const payees = [];
      for (let j = 0; j < n; j += 1) if (owed[i][j] < 0) payees.push(j);
      const paid = -payees.reduce((x, j) => x + owed[i][j], 0);
      const budget = paid - (-net - cap);
      const shares = payees.map((j) => [-owed[i][j] * budget, j]);
      const fresh = new Map(shares.map(([s, j]) => [j, floorDiv(s, paid)]));
      const leftover = budget - [...fresh.values()].reduce((x, y) => x + y, 0);
      const ranked = [...shares].sort((x, y) => mod(y[0], paid) - mod(x[0], paid) || x[1] - y[1]);
      for (const [, j] of ranked.slice(0, Math.max(0, leftover))) fresh.set(j, fresh.get(j) + 1);
      for (const [j, amount] of fresh) {
        owed[i][j] = -amount;
        owed[j][i] = amount;
      }
      changed = true;
    }
  }
  return pairs.map((p) => owed[p.a][p.b]);
}

/**
 * Settle 2-4 complete boards; `players[k]` is board k. `pairUnits` maps "i,j" (board
 * indexes, i < j) to that pair's unit value; other pairs play for the ruleset's.
 */
function settle(boards, ruleset, { tiers, streaks, pairUnits = new Map() }) {
  const n = boards.length;
  const results = boards.map((board, k) => assess(board, ruleset, tiers[k], streaks[k]));
  let pairs = [];
  for (let i = 0; i < n; i += 1) {
    for (let j = i + 1; j < n; j += 1) {
      const unit = pairUnits.has(`${i},${j}`) ? pairUnits.get(`${i},${j}`) : ruleset.unit_value;
      pairs.push(settlePair(i, j, results[i], results[j], ruleset, unit));
    }
  }
  if (ruleset.loss_cap !== null) {
    const capped = applyLossCap(pairs, n, ruleset.loss_cap);
    pairs = pairs.map((p, k) => ({ ...p, capped_points: capped[k] }));
  }
  const points = new Array(n).fill(0);
  const units = new Array(n).fill(0);
  for (const p of pairs) {
    points[p.a] += p.capped_points;
    points[p.b] -= p.capped_points;
    units[p.a] += p.capped_points * p.unit_value;
    units[p.b] -= p.capped_points * p.unit_value;
  }
  const players = results.map((board, k) => ({ index: k, board, points: points[k], units: units[k] }));
  return { ruleset: ruleset.name, players, pairs };
}

function handToDict(value) {
  return { category: CATEGORIES[categoryOf(value)], name: valueName(value), value };
}

const byRow = (values) => ({ top: values[0], middle: values[1], bottom: values[2] });

/** The settlement as a history writes it, `seats[k]` naming player k (keys in the service's order). */
function settlementToDict(settlement, seats) {
  return {
    ruleset: settlement.ruleset,
    players: settlement.players.map((p) => ({
      points: p.points,
      units: p.units,
      fouled: p.board.fouled,
      royalties: { ...byRow(p.board.royalties), total: p.board.royalties.reduce((x, y) => x + y, 0) },
      hands: byRow(p.board.values.map(handToDict)),
      fantasyland_next: { qualifies: p.board.fantasyland.qualifies, cards: p.board.fantasyland.cards },
      seat: seats[p.index],
    })),
    pairs: settlement.pairs.map((pr) => ({
      a: seats[pr.a],
      b: seats[pr.b],
      rows: byRow(pr.rows),
      scoop: pr.scoop,
      a_fouled: settlement.players[pr.a].board.fouled,
      b_fouled: settlement.players[pr.b].board.fouled,
      row_points: pr.row_points,
      royalties: pr.royalties,
      points: pr.points,
      capped_points: pr.capped_points,
      unit_value: pr.unit_value,
      units: pr.capped_points * pr.unit_value,
    })),
  };
}

module.exports = { applyLossCap, assess, settle, settlementToDict };
