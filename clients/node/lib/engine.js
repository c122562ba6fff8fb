// The rules of a hand as a reducer, written from docs/hand-history.md and rules.md: a match
// state and an action give the next state and its events, or an OfcError with the service's
// reason and the offending field. Replaying a history applies its recorded actions, a
// timeout's recorded move included: nothing here chooses a move.
'use strict';

const { BOARD_SIZE, ROWS, ROW_SIZE, rulesetToDict } = require('./rules');
const { cardCode } = require('./cards');
const { ofcError } = require('./errors');
const { settle } = require('./score');
const { dealDeck } = require('./shuffle_v2');

const isInt = (v) => typeof v === 'number' && Number.isInteger(v);
const placed = (board) => board.top.length + board.middle.length + board.bottom.length;
const seatDone = (s) => placed(s.board) === BOARD_SIZE;
const inFantasyland = (s) => s.fantasyland > 0;
const handOver = (hand) => hand.seats.every(seatDone);

function matchOver(state) {
  return state.max_hands !== null && state.hands_played >= state.max_hands && (state.hand === null || handOver(state.hand));
}

/** A time in ms: an integer >= 0 of any size (a BigInt past 2^53, as lib/json.js reads it). */
function checkMs(value, name) {
  if (typeof value === 'bigint' && value >= 0n) return value;
  return checkInt(value, name);
}

function checkInt(value, name) {
  if (!isInt(value) || value < 0) throw ofcError('INVALID_INPUT', `${name} must be an integer >= 0, got ${value}`, name);
  return value;
}

function checkTableSeat(state, seat) {
  checkInt(seat, 'seat');
  if (seat >= state.seats.length) throw ofcError('UNKNOWN_SEAT', `no seat ${seat} at this table (seats 0..${state.seats.length - 1})`, 'seat');
  return seat;
}

function handSeat(state, seat) {
  const hand = state.hand;
  if (hand === null || handOver(hand)) throw ofcError('HAND_NOT_IN_PROGRESS', 'no hand is in progress', '');
  checkTableSeat(state, seat);
  const index = hand.seats.findIndex((s) => s.seat === seat);
  if (index < 0) throw ofcError('UNKNOWN_SEAT', `seat ${seat} is not playing hand ${hand.number}`, 'seat');
  return { hand, index, hs: hand.seats[index] };
}

function checkTurn(hand, hs) {
  if (inFantasyland(hs)) throw ofcError('IN_FANTASYLAND', `seat ${hs.seat} plays Fantasyland: it sets all its cards with SetFantasyland`, 'seat');
  if (seatDone(hs)) throw ofcError('NOT_YOUR_TURN', `seat ${hs.seat} has completed its board`, 'seat');
  if (hand.turn !== hs.seat) throw ofcError('NOT_YOUR_TURN', `it is seat ${hand.turn}'s turn, not seat ${hs.seat}'s`, 'seat');
}

function checkUnique(named) {
  const seen = new Map();
  for (const [card, name] of named) {
    if (seen.has(card)) throw ofcError('DUPLICATE_CARD', `card ${cardCode(card)} appears twice: ${seen.get(card)} and ${name}`, name);
    seen.set(card, name);
  }
}

/** A card not dealt to the seat that no deck of the table has (a joker, the ruleset having
 *  fewer) is an invalid card, not one dealt to someone else (ofc.engine._check_in_deck). */
function checkInDeck(state, card, name) {
  const jokers = state.ruleset.jokers ?? 0;
  if (card >= 52 + jokers) {
    throw ofcError('INVALID_CARD', `${name} is the joker ${cardCode(card)}, but the table's deck has ${jokers} joker${jokers === 1 ? '' : 's'}`, name);
  }
}

function checkedPlace(state, action) {
  const { hand, index, hs } = handSeat(state, action.seat);
  checkMs(action.at_ms, 'at_ms');
  checkTurn(hand, hs);
  const named = action.placements.map(([card], k) => [card, `placements[${k}].card`]);
  if (action.discard !== null) named.push([action.discard, 'discard']);
  checkUnique(named);
  const street = state.ruleset.streets[hand.street];
  const discard = street.deal - street.place;
  if (action.placements.length !== street.place) {
    throw ofcError('WRONG_CARD_COUNT', `street ${hand.street + 1} places ${street.place} card(s), got ${action.placements.length}`, 'placements');
  }
  if (discard === 0 && action.discard !== null) throw ofcError('DISCARD_NOT_ALLOWED', `street ${hand.street + 1} has no discard`, 'discard');
  if (discard === 1 && action.discard === null) throw ofcError('WRONG_CARD_COUNT', `street ${hand.street + 1} discards one card`, 'discard');
  for (const [card, name] of named) {
    if (!hs.pending.includes(card)) {
      checkInDeck(state, card, name);
      throw ofcError('CARD_NOT_DEALT', `${name}: ${cardCode(card)} is not in seat ${hs.seat}'s dealt batch`, name);
    }
  }
  const room = Object.fromEntries(ROWS.map((row) => [row, ROW_SIZE[row] - hs.board[row].length]));
  action.placements.forEach(([, row], k) => {
    room[row] -= 1;
    if (room[row] < 0) throw ofcError('ROW_FULL', `placements[${k}]: the ${row} row of seat ${hs.seat} is full`, `placements[${k}].row`);
  });
  return { hand, index };
}

function checkedSet(state, action) {
  const { hand, index, hs } = handSeat(state, action.seat);
  checkMs(action.at_ms, 'at_ms');
  if (!inFantasyland(hs)) throw ofcError('NOT_IN_FANTASYLAND', `seat ${hs.seat} does not play Fantasyland this hand`, 'seat');
  if (seatDone(hs)) throw ofcError('NOT_YOUR_TURN', `seat ${hs.seat} has already set its cards`, 'seat');
  for (const row of ROWS) {
    if (action[row].length !== ROW_SIZE[row]) throw ofcError('WRONG_ROW_SIZE', `the ${row} row holds ${ROW_SIZE[row]} cards, got ${action[row].length}`, row);
  }
  const named = [];
  for (const row of ROWS) action[row].forEach((card, k) => named.push([card, `${row}[${k}]`]));
  action.discards.forEach((card, k) => named.push([card, `discards[${k}]`]));
  checkUnique(named);
  if (action.discards.length !== hs.fantasyland - BOARD_SIZE) {
    throw ofcError(
      'WRONG_CARD_COUNT',
      `seat ${hs.seat} was dealt ${hs.fantasyland} cards: it discards ${hs.fantasyland - BOARD_SIZE}, got ${action.discards.length}`,
      'discards',
    );
  }
  for (const [card, name] of named) {
    if (!hs.pending.includes(card)) {
      checkInDeck(state, card, name);
      throw ofcError('CARD_NOT_DEALT', `${name}: ${cardCode(card)} was not dealt to seat ${hs.seat}`, name);
    }
  }
  return { hand, index };
}

function checkedTimeout(state, action) {
  const { hand, hs } = handSeat(state, action.seat);
  checkMs(action.at_ms, 'at_ms');
  if (action.deadline_ms !== null) checkMs(action.deadline_ms, 'deadline_ms');
  if (!inFantasyland(hs)) checkTurn(hand, hs);
  else if (seatDone(hs)) throw ofcError('NOT_YOUR_TURN', `seat ${hs.seat} has already set its cards`, 'seat');
  const move = action.move;
  if (move.seat !== action.seat) throw ofcError('INVALID_INPUT', `the move of seat ${action.seat}'s timeout is seat ${move.seat}'s`, 'move.seat');
  if (move.at_ms !== action.at_ms) throw ofcError('INVALID_INPUT', `the move of a timeout at ${action.at_ms} ms is timed ${move.at_ms} ms`, 'move.at_ms');
  return move;
}

function checkSitDown(state, action) {
  const seat = checkTableSeat(state, action.seat);
  checkMs(action.at_ms, 'at_ms');
  if (typeof action.player_id !== 'string' || !action.player_id) throw ofcError('INVALID_INPUT', 'player_id must be a non-empty string', 'player_id');
  const taken = state.seats[seat].player_id;
  if (taken) throw ofcError('SEAT_TAKEN', `seat ${seat} is taken by '${taken}'`, 'seat');
  state.seats.forEach((s, other) => {
    if (s.player_id === action.player_id) throw ofcError('PLAYER_ALREADY_SEATED', `player '${action.player_id}' already sits at seat ${other}`, 'player_id');
  });
  return seat;
}

/** `held`: nobody leaves before a Fantasyland hand earned at the table is played (the seat
 * that earned it may go when too few are seated for a hand to start); not `held`: the rule of
 * releases before 2026-12-06, for verifying their histories (see applyUnheld). */
function checkStandUp(state, action, held = true) {
  const seat = checkTableSeat(state, action.seat);
  checkMs(action.at_ms, 'at_ms');
  if (!state.seats[seat].player_id) throw ofcError('UNKNOWN_SEAT', `seat ${seat} is empty`, 'seat');
  const hand = state.hand;
  if (hand !== null && !handOver(hand) && hand.seats.some((s) => s.seat === seat)) {
    throw ofcError('HAND_IN_PROGRESS', `seat ${seat} is playing hand ${hand.number}`, 'seat');
  }
  if (matchOver(state)) return seat;
  const owed = state.seats[seat].fantasyland;
  const seated = state.seats.filter((s) => s.player_id).length;
  if (owed && (!held || seated >= state.ruleset.min_players)) {
    throw ofcError('FANTASYLAND_OWED', `seat ${seat} earned a Fantasyland hand (${owed} cards) here and must play it first`, 'seat');
  }
  const other = held ? state.seats.findIndex((s, i) => s.fantasyland && i !== seat) : -1;
  if (other >= 0) {
    throw ofcError('FANTASYLAND_OWED', `seat ${other} earned a Fantasyland hand here; nobody leaves the table before it is played`, 'seat');
  }
  return seat;
}

function checkStart(state, action) {
  if (state.hand !== null && !handOver(state.hand)) throw ofcError('HAND_IN_PROGRESS', `hand ${state.hands_played} is still in progress`, '');
  if (matchOver(state)) throw ofcError('MATCH_OVER', `the match is over after ${state.max_hands} hands`, '');
  if (action.server_seed.length !== 32) throw ofcError('INVALID_SEED', 'server seed must be 32 bytes', 'server_seed');
  checkMs(action.at_ms, 'at_ms');
  const seated = state.seats.filter((s) => s.player_id).length;
  if (seated < state.ruleset.min_players) {
    throw ofcError('NOT_ENOUGH_PLAYERS', `${seated} player(s) seated; ruleset '${state.ruleset.name}' needs ${state.ruleset.min_players}`, '');
  }
}

// --- reducers ----------------------------------------------------------------------------

function replaceAt(items, index, item) {
  const copy = items.slice();
  copy[index] = item;
  return copy;
}

function dealBatch(hand, index, count) {
  const cards = hand.deck.slice(hand.dealt, hand.dealt + count);
  const seat = hand.seats[index];
  const event = { type: 'cards_dealt', seat: seat.seat, street: hand.street, position: hand.dealt, count, cards };
  return [{ ...hand, seats: replaceAt(hand.seats, index, { ...seat, pending: cards }), dealt: hand.dealt + count, turn: seat.seat }, event];
}

function start(state, action) {
  const number = state.hands_played + 1;
  const deck = dealDeck(action.server_seed, action.client_seed, number, state.ruleset.jokers);
  const n = state.seats.length;
  const order = [];
  for (let k = 1; k <= n; k += 1) if (state.seats[(state.button + k) % n].player_id) order.push((state.button + k) % n);
  const seats = [];
  const events = [];
  let dealt = 0;
  for (const seat of order) {
    const owed = state.seats[seat].fantasyland;
    const empty = { top: [], middle: [], bottom: [] };
    if (owed) {
      const cards = deck.slice(dealt, dealt + owed);
      seats.push({ seat, fantasyland: owed, fantasyland_streak: state.seats[seat].fantasyland_streak + 1, board: empty, pending: cards, discards: [] });
      events.push({ type: 'cards_dealt', seat, street: null, position: dealt, count: owed, cards });
      dealt += owed;
    } else {
      seats.push({ seat, fantasyland: 0, fantasyland_streak: 0, board: empty, pending: [], discards: [] });
    }
  }
  let hand = {
    number,
    button: state.button,
    server_seed: action.server_seed,
    client_seed: action.client_seed,
    deck,
    dealt,
    seats,
    street: 0,
    turn: null,
    started_at_ms: action.at_ms,
  };
  const normal = seats.findIndex((s) => !inFantasyland(s));
  if (normal >= 0) {
    let event;
    [hand, event] = dealBatch(hand, normal, state.ruleset.streets[0].deal);
    events.push(event);
  } else {
    hand = { ...hand, street: state.ruleset.streets.length };
  }
  return [{ ...state, hands_played: number, hand }, events];
}

function place(state, hand, index, action) {
  const seat = hand.seats[index];
  const board = { top: seat.board.top.slice(), middle: seat.board.middle.slice(), bottom: seat.board.bottom.slice() };
  for (const [card, row] of action.placements) board[row].push(card);
  const discards = action.discard === null ? seat.discards : [...seat.discards, action.discard];
  let next = { ...hand, seats: replaceAt(hand.seats, index, { ...seat, board, pending: [], discards }), turn: null };
  const events = [{ type: 'cards_placed', seat: seat.seat }];
  // The turn passes to the next seat playing street by street; after the last of them, to
  // the first of them on the next street.
  const streets = state.ruleset.streets;
  const normal = next.seats.map((s, i) => i).filter((i) => !inFantasyland(next.seats[i]));
  const after = normal.filter((i) => i > index);
  let event = null;
  if (after.length) {
    [next, event] = dealBatch(next, after[0], streets[next.street].deal);
  } else {
    next = { ...next, street: next.street + 1 };
    if (next.street < streets.length) [next, event] = dealBatch(next, normal[0], streets[next.street].deal);
  }
  if (event) events.push(event);
  return finishMaybe(state, next, events);
}

function setFantasyland(state, hand, index, action) {
  const board = { top: action.top.slice(), middle: action.middle.slice(), bottom: action.bottom.slice() };
  const seat = { ...hand.seats[index], board, pending: [], discards: action.discards.slice() };
  return finishMaybe(state, { ...hand, seats: replaceAt(hand.seats, index, seat) }, [{ type: 'fantasyland_set', seat: seat.seat }]);
}

/** Settle a finished hand's boards: player k of the result is hand.seats[k]. */
function handSettlement(hand, ruleset, pairUnits) {
  const index = new Map(hand.seats.map((s, k) => [s.seat, k]));
  const stakes = new Map();
  for (const [a, b, unit] of pairUnits) {
    if (index.has(a) && index.has(b)) {
      const [i, j] = [index.get(a), index.get(b)].sort((x, y) => x - y);
      stakes.set(`${i},${j}`, unit);
    }
  }
  return settle(
    hand.seats.map((s) => s.board),
    ruleset,
    { tiers: hand.seats.map((s) => s.fantasyland), streaks: hand.seats.map((s) => s.fantasyland_streak), pairUnits: stakes },
  );
}

function finishMaybe(state, hand, events) {
  if (!handOver(hand)) return [{ ...state, hand }, events];
  const result = handSettlement(hand, state.ruleset, state.pair_units);
  const seats = state.seats.slice();
  hand.seats.forEach((hs, k) => {
    const before = seats[hs.seat];
    const next = result.players[k].board.fantasyland;
    seats[hs.seat] = {
      ...before,
      points: before.points + result.players[k].points,
      fantasyland: next.qualifies ? next.cards : 0,
      fantasyland_streak: inFantasyland(hs) ? hs.fantasyland_streak : 0,
    };
  });
  const fantasylandNext = hand.seats.filter((s) => seats[s.seat].fantasyland).map((s) => ({ seat: s.seat, cards: seats[s.seat].fantasyland }));
  events.push({ type: 'hand_settled', seats: hand.seats.map((s) => s.seat), settlement: result, fantasyland_next: fantasylandNext });
  let button = state.button;
  if (state.ruleset.button_moves_in_fantasyland || !hand.seats.some(inFantasyland)) button = nextOccupied(seats, button);
  return [{ ...state, seats, button, hand }, events];
}

/** The seat the button moves to from `button`: the next one taken (the button itself when no other is). */
function nextOccupied(seats, button) {
  const n = seats.length;
  for (let k = 1; k <= n; k += 1) if (seats[(button + k) % n].player_id) return (button + k) % n;
  return button;
}

function prefixMove(error) {
  error.field = error.field ? `move.${error.field}` : 'move';
  return error;
}

/** [state, events] after `action`; throws an OfcError, changing nothing, when it is illegal. */
function apply(state, action) {
  switch (action.type) {
    case 'place': {
      const { hand, index } = checkedPlace(state, action);
      return place(state, hand, index, action);
    }
    case 'set_fantasyland': {
      const { hand, index } = checkedSet(state, action);
      return setFantasyland(state, hand, index, action);
    }
    case 'timeout': {
      const move = checkedTimeout(state, action);
      let result;
      try {
        result = apply(state, move);
      } catch (error) {
        if (error.reason) throw prefixMove(error);
        throw error;
      }
      return [result[0], [{ type: 'timeout_applied', seat: action.seat }, ...result[1]]];
    }
    case 'sit_down': {
      const seat = checkSitDown(state, action);
      return [{ ...state, seats: replaceAt(state.seats, seat, { player_id: action.player_id, points: 0, fantasyland: 0, fantasyland_streak: 0 }) }, []];
    }
    case 'stand_up':
      return standUp(state, action, true);
    case 'start_hand':
      checkStart(state, action);
      return start(state, action);
    default:
      throw ofcError('INVALID_INPUT', `not an action: ${action.type}`, 'action');
  }
}

/** The seats the table waits for: the one holding a batch, then unset Fantasyland seats. */
function seatsToAct(state) {
  const hand = state.hand;
  if (hand === null || handOver(hand)) return [];
  const waiting = hand.turn === null ? [] : [hand.turn];
  for (const s of hand.seats) if (inFantasyland(s) && !seatDone(s)) waiting.push(s.seat);
  return waiting;
}

/** Where each batch starts in the deck, by "seat,street" (street "null": a Fantasyland block). */
function dealPositions(hand, ruleset) {
  const positions = new Map();
  let fantasyland = 0;
  for (const s of hand.seats) {
    if (inFantasyland(s)) {
      positions.set(`${s.seat},null`, fantasyland);
      fantasyland += s.fantasyland;
    }
  }
  const normal = hand.seats.filter((s) => !inFantasyland(s)).map((s) => s.seat);
  let before = 0;
  ruleset.streets.forEach((street, s) => {
    normal.forEach((seat, j) => positions.set(`${seat},${s}`, fantasyland + normal.length * before + j * street.deal));
    before += street.deal;
  });
  return positions;
}

/** The match state between hands as JSON data (what a history's initial_state holds). */
function stateToDict(state) {
  const data = {
    format_version: state.pair_units.length ? 2 : 1,
    ruleset: rulesetToDict(state.ruleset),
    seats: state.seats.map((s) => ({ player_id: s.player_id, points: s.points, fantasyland: s.fantasyland, fantasyland_streak: s.fantasyland_streak })),
    button: state.button,
    hands_played: state.hands_played,
    max_hands: state.max_hands,
    hand: null,
  };
  if (state.pair_units.length) data.pair_unit_values = state.pair_units.map(([a, b, unit]) => ({ a, b, unit_value: unit }));
  return data;
}

/**
 * stateToDict(state) in the form `written` (a document that reads as `state`) has: the releases
 * that first kept a table's pair unit values (75a55fb to c3fb462, before format 2) wrote such a
 * state as format 1, every key as now (the service's codec.state_as_written).
 */
function stateAsWritten(state, written) {
  const data = stateToDict(state);
  if (state.pair_units.length && written !== null && typeof written === 'object' && written.format_version === 1) {
    data.format_version = 1;
  }
  return data;
}

function standUp(state, action, held) {
  const seat = checkStandUp(state, action, held);
  return [{ ...state, seats: replaceAt(state.seats, seat, { player_id: '', points: 0, fantasyland: 0, fantasyland_streak: 0 }) }, []];
}

/** A stand-up as tables took it before a Fantasyland hand held the whole table (releases
 * before 2026-12-06 let a seat leave while another seat owed one): for verifying the seat
 * changes their histories record. */
function applyUnheld(state, action) {
  if (action.type !== 'stand_up') throw ofcError('INVALID_INPUT', `not a stand-up: ${action.type}`, 'action');
  return standUp(state, action, false);
}

module.exports = { apply, applyUnheld, dealPositions, handOver, inFantasyland, matchOver, nextOccupied, seatsToAct, stateAsWritten, stateToDict };
