#!/usr/bin/env node
// A Node.js client of ofcpoker.v1.TableService, built at run time from the repository's
// .proto files (../../protos) with @grpc/grpc-js and @grpc/proto-loader.
//
//   node play.js ADDR API_KEY [--history FILE]
//
// Creates a 2-seat classic table (operator key), joins two seats (one seat token each),
// watches as seat 0, plays one complete hand (each seat places its own dealt batch with its
// own token: highest cards first into the bottom row, then the middle, then the top), and
// prints one JSON document on standard output: the settlement, the seats' points, and the
// number of Watch events received. --history FILE also writes the hand's history_json
// (GetHandHistory) to FILE, for `node verify.js FILE`. Every call about the table carries
// its id as x-ofc-table-id metadata (routing for a proxy). Progress goes to standard error.
// A call that got UNAVAILABLE, DEADLINE_EXCEEDED or CANCELLED is sent again unchanged (its
// request_id too: the service applies it once and answers with the first result), up to 3
// more times. The Watch (lib/watch.js) resumes after the last event it received when its
// connection drops. require('./play.js') exports loadTableService and chooseMove.
// Exit status: 0 on success, 1 on any error (a gRPC error is printed with its code and its
// ErrorInfo reason and field).
'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const { errorInfo } = require('./lib/status');
const { watchTable } = require('./lib/watch');

const PROTOS = path.resolve(__dirname, '..', '..', 'protos');
const CALL_TIMEOUT_MS = 10000;
const WATCH_TIMEOUT_MS = 15000;
const RANKS = '23456789TJQKA';
const ROW_ENUM = { bottom: 'ROW_POSITION_BOTTOM', middle: 'ROW_POSITION_MIDDLE', top: 'ROW_POSITION_TOP' };
const ROW_SIZES = { bottom: 5, middle: 5, top: 3 };

function loadTableService() {
  const definition = protoLoader.loadSync('ofcpoker/v1/table_service.proto', {
    includeDirs: [PROTOS],
    keepCase: true, // field names exactly as in the .proto files (table_id, expected_version)
    longs: String, // uint64 versions and sint64 totals as decimal strings: no precision loss
    enums: String, // RowPosition etc. by name
    defaults: true,
    oneofs: true, // a oneof's (or proto3 optional's) set member is named, e.g. event.kind
  });
  return grpc.loadPackageDefinition(definition).ofcpoker.v1.TableService;
}

function log(message) {
  process.stderr.write(`play.js: ${message}\n`);
}

// The routing key a proxy hashes on so that one table's calls reach one replica
// (deploy/compose/envoy/envoy.yaml); the server never reads it.
const TABLE_ID_HEADER = 'x-ofc-table-id';

function metadata(header, value) {
  const md = new grpc.Metadata();
  if (value) md.set(header, value);
  return md;
}

/** `md` with the table id of `request`, if it is about a table, as x-ofc-table-id. */
function routed(md, request) {
  if (request.table_id) md.set(TABLE_ID_HEADER, request.table_id);
  return md;
}

function requestId() {
  return crypto.randomUUID();
}

/** One unary call as a promise, with a deadline. */
function callOnce(client, method, request, md) {
  return new Promise((resolve, reject) => {
    client[method](request, md, { deadline: Date.now() + CALL_TIMEOUT_MS }, (err, response) => (err ? reject(err) : resolve(response)));
  });
}

// A call that may have reached the service without its answer reaching us: sent again, the
// very same request (its request_id too), which the service answers with the first result,
// applied once. Any other error is the service's answer.
// CANCELLED too: a blocking call gets it only from the server's side (a replica that
// stopped before it ran the call).
const RETRIED = new Set([grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED, grpc.status.CANCELLED]);
const ATTEMPTS = 4; // the first send and 3 more

/** A unary call as a promise: retried unchanged while the service cannot be reached (wait
 *  0.2, 0.4, 0.8 s); errors name the method and carry `reason` and `field`, the ErrorInfo
 *  of the grpc-status-details-bin trailer. */
async function call(client, method, request, md = new grpc.Metadata()) {
  routed(md, request);
  for (let attempt = 1; ; attempt++) {
    try {
      return await callOnce(client, method, request, md);
    } catch (err) {
      if (attempt < ATTEMPTS && RETRIED.has(err.code)) {
        const same = request.request_id ? ', same request_id' : '';
        log(`${method}: ${err.details || err.message}; sent again (attempt ${attempt + 1}${same})`);
        await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** attempt));
        continue;
      }
      Object.assign(err, errorInfo(err.metadata));
      err.message = `${method}: ${err.message}`;
      throw err;
    }
  }
}

function waitForReady(client) {
  return new Promise((resolve, reject) => {
    client.waitForReady(Date.now() + CALL_TIMEOUT_MS, (err) => (err ? reject(new Error(`cannot connect: ${err.message}`)) : resolve()));
  });
}

/**
 * Open a Watch stream (lib/watch.js: after a dropped connection it resumes after the last
 * event received, no gap and no duplicate). `snapshot` resolves with the first message, the
 * caller's view (every later change is then sure to arrive as an event). `done(untilVersion)`
 * resolves once the hand's last event (button_moved, after hand_settled and seed_revealed)
 * of that table version or later has arrived, then cancels the stream and resolves every
 * message received.
 */
function watch(client, tableId, seatToken) {
  const messages = [];
  const request = { table_id: tableId };
  const stream = watchTable(client, request, routed(metadata('x-ofc-seat-token', seatToken), request), {
    onReconnect: ({ error, afterEventId }) =>
      log(`Watch: ${error.details || error.message}; opened again ${afterEventId ? `after event ${afterEventId}` : 'for a snapshot'}`),
  });
  let target = null;
  let settle = null;
  let failure = null;
  let finished = false;
  let gotSnapshot;
  const snapshot = new Promise((resolve, reject) => {
    gotSnapshot = { resolve, reject };
  });
  snapshot.catch(() => {}); // awaited by the caller; a late failure is reported by done()
  const reached = () =>
    target !== null &&
    messages.some((m) => m.kind === 'event' && m.event.kind === 'button_moved' && BigInt(m.event.version) >= target);
  const finish = () => {
    if (finished || settle === null) return;
    if (failure) {
      finished = true;
      settle.reject(failure);
    } else if (reached()) {
      finished = true;
      stream.cancel();
      settle.resolve(messages);
    }
  };
  (async () => {
    try {
      for await (const message of stream) {
        messages.push(message);
        if (messages.length === 1) {
          if (message.kind === 'snapshot') gotSnapshot.resolve(message.snapshot);
          else gotSnapshot.reject(new Error(`Watch: the first message is a ${message.kind}, not a snapshot`));
        }
        finish();
      }
      if (!finished) failure = failure || new Error('Watch: the stream ended early');
    } catch (err) {
      err.message = `Watch: ${err.message}`;
      failure = err;
    }
    if (failure) {
      gotSnapshot.reject(failure);
      finish();
    }
  })();
  return {
    snapshot,
    done(untilVersion) {
      target = BigInt(untilVersion);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          if (!finished) {
            finished = true;
            stream.cancel();
            reject(new Error(`Watch: no button_moved event of version ${untilVersion} within ${WATCH_TIMEOUT_MS} ms (${messages.length} messages)`));
          }
        }, WATCH_TIMEOUT_MS);
        settle = {
          resolve: (v) => { clearTimeout(timer); resolve(v); },
          reject: (e) => { clearTimeout(timer); reject(e); },
        };
        finish();
      });
    },
  };
}

function rankOf(card) {
  return RANKS.indexOf(card[0]);
}

/**
 * The move for a dealt batch: keep the `place` highest cards (discard the rest) and put each,
 * highest first, into the first row with room of bottom, middle, top.
 */
function chooseMove(pending, board, place) {
  const cards = [...pending].sort((a, b) => rankOf(b) - rankOf(a));
  const room = Object.fromEntries(Object.entries(ROW_SIZES).map(([row, size]) => [row, size - board[row].length]));
  const placements = cards.slice(0, place).map((card) => {
    const row = Object.keys(ROW_SIZES).find((r) => room[r] > 0);
    if (row === undefined) throw new Error(`no row has room for ${card}`);
    room[row] -= 1;
    return { card, row: ROW_ENUM[row] };
  });
  const discards = cards.slice(place);
  if (discards.length > 1) throw new Error(`this client discards at most one card per batch, the street leaves ${discards.length}`);
  return { placements, discard: discards[0] || '' };
}

async function play(address, apiKey, historyPath) {
  const TableService = loadTableService();
  const client = new TableService(address, grpc.credentials.createInsecure());
  try {
    await waitForReady(client);
    const created = await call(
      client,
      'CreateTable',
      { ruleset: { preset: 'classic' }, seats: 2, max_hands: 1, client_seed: 'node-client', request_id: requestId() },
      metadata('x-ofc-api-key', apiKey),
    );
    const tableId = created.table_id;
    let version = created.table.version;
    log(`created table ${tableId} (${created.table.ruleset.name}, version ${version})`);

    const tokens = [];
    for (const [seat, player] of [[0, 'node-ann'], [1, 'node-bob']]) {
      const joined = await call(client, 'JoinSeat', { table_id: tableId, seat, player_id: player, expected_version: version, request_id: requestId() });
      if (!joined.seat_token) throw new Error(`JoinSeat: no seat token for seat ${seat}`);
      tokens[seat] = joined.seat_token;
      version = joined.table.version;
      log(`${player} took seat ${seat} (version ${version})`);
    }

    const watcher = watch(client, tableId, tokens[0]);
    const snapshot = await Promise.race([
      watcher.snapshot,
      new Promise((_, reject) => setTimeout(() => reject(new Error('Watch: no snapshot')), CALL_TIMEOUT_MS).unref()),
    ]);
    if (snapshot.version !== version) throw new Error(`Watch: snapshot of version ${snapshot.version}, expected ${version}`);
    const started = await call(
      client,
      'StartHand',
      { table_id: tableId, expected_version: version, request_id: requestId() },
      metadata('x-ofc-seat-token', tokens[0]),
    );
    let table = started.table;
    const streets = table.ruleset.streets;
    // The server seed was committed one hand ahead, before any client seed could be chosen.
    if (table.hand.commitment !== snapshot.next_commitment) {
      throw new Error('StartHand: the hand was dealt from another seed than the one committed ahead');
    }
    log(`hand ${table.hand.number} started, commitment ${table.hand.commitment} (published ahead)`);

    let moves = 0;
    while (!table.hand.over) {
      if (table.hand.turn === undefined || table.hand.turn === null || table.hand._turn !== 'turn') {
        throw new Error(`no seat to act on street ${table.hand.street} (to_act ${JSON.stringify(table.hand.to_act)})`);
      }
      const seat = table.hand.turn;
      const token = tokens[seat];
      const own = (await call(client, 'GetTable', { table_id: tableId }, metadata('x-ofc-seat-token', token))).table;
      const mine = own.hand.seats.find((s) => s.seat === seat);
      const street = streets[own.hand.street];
      if (mine.pending.length !== street.deal) throw new Error(`seat ${seat} holds ${mine.pending.length} cards, street ${own.hand.street} deals ${street.deal}`);
      const move = chooseMove(mine.pending, mine.board, street.place);
      const placed = await call(
        client,
        'PlaceCards',
        { table_id: tableId, seat, placements: move.placements, discard: move.discard, expected_version: own.version, request_id: requestId() },
        metadata('x-ofc-seat-token', token),
      );
      table = placed.table;
      moves += 1;
    }
    const hand = table.hand;
    log(`hand ${hand.number} over after ${moves} moves (version ${table.version})`);

    const messages = await watcher.done(table.version);
    const events = messages.filter((m) => m.kind === 'event').map((m) => m.event);
    const eventTypes = {};
    for (const e of events) eventTypes[e.kind] = (eventTypes[e.kind] || 0) + 1;
    const settled = events.find((e) => e.kind === 'hand_settled');
    if (!settled) throw new Error('Watch: no hand_settled event');
    if (JSON.stringify(settled.hand_settled.settlement) !== JSON.stringify(hand.settlement)) {
      throw new Error('Watch: the hand_settled settlement differs from the one PlaceCards returned');
    }
    // Seat 0's watch sees its own dealt cards and not seat 1's.
    for (const e of events.filter((ev) => ev.kind === 'cards_dealt')) {
      const c = e.cards_dealt;
      if ((c.seat === 0) !== (c.cards.length === c.count)) throw new Error(`Watch: seat 0 saw ${c.cards.length} of seat ${c.seat}'s ${c.count} dealt cards`);
    }

    const history = await call(client, 'GetHandHistory', { table_id: tableId, hand_number: hand.number });
    if (history.commitment !== hand.commitment) throw new Error('GetHandHistory: the commitment differs from the one published at the start');
    if (historyPath) fs.writeFileSync(historyPath, history.history_json);

    const result = {
      table_id: tableId,
      hand_number: Number(hand.number),
      commitment: hand.commitment,
      server_seed: Buffer.from(hand.server_seed).toString('hex'),
      moves,
      points: Object.fromEntries(hand.settlement.players.map((p) => [p.player_id, p.points])),
      settlement: hand.settlement,
      watch_events: events.length,
      watch_event_types: eventTypes,
    };
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  } finally {
    client.close();
  }
}

function main(argv) {
  const args = [...argv];
  let historyPath = null;
  const at = args.indexOf('--history');
  if (at >= 0) {
    historyPath = args[at + 1];
    args.splice(at, 2);
  }
  if (args.length !== 2 || (at >= 0 && !historyPath)) {
    process.stderr.write('usage: node play.js ADDR API_KEY [--history FILE]\n');
    process.exitCode = 2;
    return;
  }
  play(args[0], args[1], historyPath).catch((err) => {
    const name = typeof err.code === 'number' ? Object.keys(grpc.status).find((k) => grpc.status[k] === err.code) || err.code : '';
    const code = name ? ` [${[name, err.reason, err.field && `field ${err.field}`].filter(Boolean).join(' ')}]` : '';
    process.stderr.write(`play.js: error${code}: ${err.message}\n`);
    process.exit(1); // now: a stream still open must not keep the process alive
  });
}

if (require.main === module) main(process.argv.slice(2));

module.exports = { loadTableService, chooseMove, errorInfo };
