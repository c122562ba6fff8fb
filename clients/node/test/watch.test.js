// lib/watch.js: the resuming Watch. Unit tests with a fake client (no install needed), then
// one end-to-end test against a real `ofc serve` (the repository's .venv, in-memory tables)
// whose Watch goes through a TCP proxy that the test cuts mid-hand: the watch resumes after
// its last event, and sees exactly the events of a watch that was never cut.
'use strict';

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { EventEmitter } = require('node:events');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');

const { watchTable, reconnectable, resumePoint, STATUS } = require('../lib/watch');

// --- a fake TableService client -----------------------------------------------------------

/** One fake Watch call: the test pushes messages and ends it; cancel() ends it the way
 *  grpc-js does (an 'error' of code CANCELLED, a moment later). */
class FakeCall extends EventEmitter {
  constructor(request, metadata) {
    super();
    this.request = request;
    this.metadata = metadata;
    this.cancels = 0;
    this.over = false;
  }
  send(...messages) {
    for (const m of messages) this.emit('data', m);
  }
  fail(code, details = 'failed', reason = '') {
    this.over = true;
    const error = Object.assign(new Error(`${code} ${details}`), { code, details, metadata: trailers(code, details, reason) });
    this.emit('error', error);
  }
  end() {
    this.over = true;
    this.emit('end');
  }
  cancel() {
    this.cancels += 1;
    if (this.over) return;
    this.over = true;
    setImmediate(() => this.emit('error', Object.assign(new Error('1 CANCELLED: Cancelled on client'), { code: 1, details: 'Cancelled on client' })));
  }
}

/** A client whose n-th Watch runs script[n](call) (at the next turn of the event loop). */
function fakeClient(...script) {
  const calls = [];
  return {
    calls,
    Watch(request, metadata) {
      const call = new FakeCall(request, metadata);
      const step = script[calls.length];
      calls.push(call);
      if (step) setImmediate(() => step(call));
      return call;
    },
  };
}

/** grpc-js's Metadata, as far as lib/watch.js and lib/status.js use it. */
class FakeMetadata {
  constructor(entries = {}) {
    this.entries = { ...entries };
  }
  get(key) {
    return key in this.entries ? [this.entries[key]] : [];
  }
  set(key, value) {
    this.entries[key] = value;
  }
  clone() {
    return new FakeMetadata(this.entries);
  }
}

// A google.rpc.Status with an ErrorInfo, in protobuf's wire format, as the service sends it.
const varint = (n) => {
  const out = [];
  for (; n >= 0x80; n = Math.floor(n / 128)) out.push((n % 128) | 0x80);
  out.push(n);
  return Buffer.from(out);
};
const field = (number, bytes) => Buffer.concat([varint(number * 8 + 2), varint(bytes.length), bytes]);
function trailers(code, details, reason) {
  if (!reason) return new FakeMetadata();
  const info = Buffer.concat([field(1, Buffer.from(reason)), field(2, Buffer.from('ofc'))]);
  const any = Buffer.concat([field(1, Buffer.from('type.googleapis.com/google.rpc.ErrorInfo')), field(2, info)]);
  const status = Buffer.concat([varint(8), varint(code), field(2, Buffer.from(details)), field(3, any)]);
  return new FakeMetadata({ 'grpc-status-details-bin': status });
}

const snapshot = (lastEventId) => ({ kind: 'snapshot', snapshot: { version: '3', last_event_id: lastEventId } });
const event = (id) => ({ kind: 'event', event: { event_id: id, version: id.slice(1), kind: 'cards_placed' } });
const batch = (...ids) => ({ kind: 'events', events: { events: ids.map((id) => event(id).event) } });
const idsOf = (messages) =>
  messages.flatMap((m) => (m.kind === 'snapshot' ? ['snapshot'] : m.kind === 'event' ? [m.event.event_id] : m.events.events.map((e) => e.event_id)));

/** Iterate `watch` until `count` messages, then break (the consumer stops). */
async function take(watch, count) {
  const got = [];
  for await (const message of watch) {
    got.push(message);
    if (got.length === count) break;
  }
  return got;
}

const TICKS = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

// --- unit tests ---------------------------------------------------------------------------

test('a retriable failure (UNAVAILABLE) reopens the stream after the last event received', async () => {
  const client = fakeClient(
    (call) => {
      call.send(snapshot('e3'), event('e4'), batch('e5', 'e6'));
      call.fail(STATUS.UNAVAILABLE, 'Connection dropped');
    },
    (call) => call.send(event('e7'), batch('e8', 'e9')), // and stays open
  );
  const reconnects = [];
  const watch = watchTable(client, { table_id: 'T1', batch_events: true }, new FakeMetadata({ 'x-ofc-seat-token': 's0' }), {
    onReconnect: (r) => reconnects.push(r),
  });
  const got = await take(watch, 5);
  assert.deepEqual(idsOf(got), ['snapshot', 'e4', 'e5', 'e6', 'e7', 'e8', 'e9']);
  assert.deepEqual(client.calls.map((c) => c.request.after_event_id), ['', 'e6']);
  assert.ok(client.calls.every((c) => c.request.table_id === 'T1' && c.request.batch_events === true));
  // the caller's metadata on each call, with the table id to route by
  for (const c of client.calls) assert.deepEqual(c.metadata.entries, { 'x-ofc-seat-token': 's0', 'x-ofc-table-id': 'T1' });
  assert.equal(watch.reconnects, 1);
  assert.equal(watch.lastEventId, 'e9');
  assert.equal(reconnects.length, 1);
  assert.equal(reconnects[0].error.code, STATUS.UNAVAILABLE);
  assert.equal(reconnects[0].afterEventId, 'e6');
  assert.equal(reconnects[0].delayMs, 50);
  assert.equal(client.calls[1].cancels, 1, 'breaking out cancels the open call');
});

test('CANCELLED from the server side and a stream closed without a gRPC status are retried too', async () => {
  const client = fakeClient(
    (call) => {
      call.send(snapshot('e3'));
      call.fail(STATUS.CANCELLED, 'Cancelled');
    },
    (call) => {
      call.send(event('e4'));
      call.fail(STATUS.INTERNAL, 'Received RST_STREAM with code 0 (Call ended without gRPC status)');
    },
    (call) => call.send(event('e5')),
  );
  const got = await take(watchTable(client, { table_id: 'T1' }, new FakeMetadata()), 3);
  assert.deepEqual(idsOf(got), ['snapshot', 'e4', 'e5']);
  assert.deepEqual(client.calls.map((c) => c.request.after_event_id), ['', 'e3', 'e4']);
});

test('a resume position given by the caller is the first after_event_id (no snapshot)', async () => {
  const client = fakeClient(
    (call) => {
      call.send(event('e8'));
      call.fail(STATUS.UNAVAILABLE);
    },
    (call) => call.send(event('e9')),
  );
  const watch = watchTable(client, { table_id: 'T1', after_event_id: 'e7' }, new FakeMetadata());
  assert.equal(watch.lastEventId, 'e7');
  assert.deepEqual(idsOf(await take(watch, 2)), ['e8', 'e9']);
  assert.deepEqual(client.calls.map((c) => c.request.after_event_id), ['e7', 'e8']);
});

for (const [name, code, reason] of [
  ['PERMISSION_DENIED', 7, 'NOT_AUTHORIZED'],
  ['INVALID_ARGUMENT', 3, 'INVALID_ARGUMENT'],
  ['NOT_FOUND', 5, 'TABLE_NOT_FOUND'],
  ['UNAUTHENTICATED', 16, 'UNAUTHENTICATED'],
  ['DEADLINE_EXCEEDED', 4, ''],
  ['INTERNAL (sent by the server)', 13, ''],
]) {
  test(`a non-retriable error (${name}) surfaces at once, with its ErrorInfo reason`, async () => {
    const client = fakeClient((call) => {
      call.send(snapshot('e3'));
      call.fail(code, 'refused', reason);
    });
    const got = [];
    const watch = watchTable(client, { table_id: 'T1' }, new FakeMetadata());
    await assert.rejects(
      (async () => {
        for await (const m of watch) got.push(m);
      })(),
      (err) => err.code === code && err.reason === reason,
    );
    assert.deepEqual(idsOf(got), ['snapshot'], 'the messages before the error were handed out');
    await TICKS();
    assert.equal(client.calls.length, 1, 'not opened again');
    assert.equal(watch.reconnects, 0);
  });
}

test('breaking out of for await cancels the call and opens no other', async () => {
  const client = fakeClient((call) => call.send(snapshot('e3'), event('e4'), event('e5')));
  const got = await take(watchTable(client, { table_id: 'T1' }, new FakeMetadata()), 2);
  assert.deepEqual(idsOf(got), ['snapshot', 'e4']);
  await TICKS();
  assert.equal(client.calls.length, 1);
  assert.equal(client.calls[0].cancels, 1);
});

test('return() while a next() waits ends both, and cancels the call', async () => {
  const client = fakeClient((call) => call.send(snapshot('e3')));
  const watch = watchTable(client, { table_id: 'T1' }, new FakeMetadata());
  const iterator = watch[Symbol.asyncIterator]();
  assert.equal((await iterator.next()).value.kind, 'snapshot');
  const waiting = iterator.next(); // the stream is silent: this waits
  await TICKS();
  assert.deepEqual(await iterator.return(), { value: undefined, done: true });
  assert.deepEqual(await waiting, { value: undefined, done: true });
  assert.equal(client.calls[0].cancels, 1);
  assert.deepEqual(await iterator.next(), { value: undefined, done: true });
});

test('an AbortSignal stops the watch: the call is cancelled, the iteration ends quietly', async () => {
  const client = fakeClient((call) => call.send(snapshot('e3')));
  const controller = new AbortController();
  const got = [];
  for await (const m of watchTable(client, { table_id: 'T1' }, new FakeMetadata(), { signal: controller.signal })) {
    got.push(m);
    controller.abort();
  }
  assert.deepEqual(idsOf(got), ['snapshot']);
  assert.equal(client.calls[0].cancels, 1);
  // aborted already: no call at all
  const none = fakeClient();
  for await (const m of watchTable(none, { table_id: 'T1' }, new FakeMetadata(), { signal: AbortSignal.abort() })) assert.fail(m);
  assert.equal(none.calls.length, 0);
});

test('cancel() during a backoff wait ends the iteration at once', async () => {
  const client = fakeClient((call) => {
    call.send(snapshot('e3'));
    call.fail(STATUS.UNAVAILABLE);
  });
  const watch = watchTable(client, { table_id: 'T1' }, new FakeMetadata(), { firstDelayMs: 60000 });
  const iterator = watch[Symbol.asyncIterator]();
  await iterator.next();
  const waiting = iterator.next();
  await TICKS();
  watch.cancel();
  assert.deepEqual(await waiting, { value: undefined, done: true });
  assert.equal(client.calls.length, 1);
});

test('EVENTS_TRIMMED: opened again without after_event_id, a fresh snapshot follows', async () => {
  const client = fakeClient(
    (call) => {
      call.send(snapshot('e3'), event('e4'));
      call.fail(STATUS.UNAVAILABLE);
    },
    (call) => call.fail(STATUS.OUT_OF_RANGE, 'events trimmed', 'EVENTS_TRIMMED'),
    (call) => call.send(snapshot('e90'), event('e91')),
  );
  const reconnects = [];
  const watch = watchTable(client, { table_id: 'T1' }, new FakeMetadata(), { onReconnect: (r) => reconnects.push(r) });
  assert.deepEqual(idsOf(await take(watch, 4)), ['snapshot', 'e4', 'snapshot', 'e91']);
  assert.deepEqual(client.calls.map((c) => c.request.after_event_id), ['', 'e4', '']);
  assert.deepEqual(reconnects.map((r) => [r.afterEventId, r.delayMs]), [['e4', 50], ['', 0]]);
  assert.equal(watch.lastEventId, 'e91');
});

test('EVENTS_TRIMMED for a stream that asked for no position is an error like any other', async () => {
  const client = fakeClient((call) => call.fail(STATUS.OUT_OF_RANGE, 'events trimmed', 'EVENTS_TRIMMED'));
  await assert.rejects(take(watchTable(client, { table_id: 'T1' }, new FakeMetadata()), 1), (err) => err.reason === 'EVENTS_TRIMMED');
  assert.equal(client.calls.length, 1);
});

test('backoff: SERVER_SHUTTING_DOWN at once the first time, then 50 ms doubling; a message resets it', async () => {
  const down = (call) => call.fail(STATUS.UNAVAILABLE, 'the server is shutting down', 'SERVER_SHUTTING_DOWN');
  const unavailable = (call) => call.fail(STATUS.UNAVAILABLE);
  const client = fakeClient(
    (call) => {
      call.send(snapshot('e3'));
      down(call);
    },
    down, // a second SERVER_SHUTTING_DOWN in the same run of failures: backoff
    unavailable,
    (call) => {
      call.send(event('e4'));
      down(call); // a new run of failures: at once again
    },
    unavailable,
    (call) => call.send(event('e5')),
  );
  const reconnects = [];
  const watch = watchTable(client, { table_id: 'T1' }, new FakeMetadata(), { onReconnect: (r) => reconnects.push(r) });
  assert.deepEqual(idsOf(await take(watch, 3)), ['snapshot', 'e4', 'e5']);
  assert.deepEqual(reconnects.map((r) => r.delayMs), [0, 50, 100, 0, 50]);
  assert.deepEqual(client.calls.map((c) => c.request.after_event_id), ['', 'e3', 'e3', 'e3', 'e4', 'e4']);
  assert.equal(watch.reconnects, 5);
});

test('CONNECTION_RETIRED (the HTTP port retiring a connection) is reopened at once too', async () => {
  const retired = (call) => call.fail(STATUS.UNAVAILABLE, 'connection retired', 'CONNECTION_RETIRED');
  const client = fakeClient(
    (call) => {
      call.send(snapshot('e3'));
      retired(call);
    },
    retired, // a second one in the same run of failures: backoff
    (call) => call.send(event('e4')),
  );
  const reconnects = [];
  const watch = watchTable(client, { table_id: 'T1' }, new FakeMetadata(), { onReconnect: (r) => reconnects.push(r) });
  assert.deepEqual(idsOf(await take(watch, 2)), ['snapshot', 'e4']);
  assert.deepEqual(reconnects.map((r) => r.delayMs), [0, 50]);
  assert.deepEqual(client.calls.map((c) => c.request.after_event_id), ['', 'e3', 'e3']);
});

test('a stream that stood steadyMs before it failed starts a new run: a quiet watch outlives reconnectTimeoutMs', async () => {
  // A quiet table: every stream receives nothing, and is ended (its connection retired)
  // after it stood a while; none of this is an outage, however long it goes on.
  const retiredLater = (call) => setTimeout(() => call.fail(STATUS.UNAVAILABLE, 'connection retired', 'CONNECTION_RETIRED'), 40);
  const client = fakeClient(retiredLater, retiredLater, retiredLater, retiredLater, (call) => call.send(event('e4')));
  const reconnects = [];
  const watch = watchTable(client, { table_id: 'T1', after_event_id: 'e3' }, new FakeMetadata(), {
    reconnectTimeoutMs: 50,
    steadyMs: 30,
    onReconnect: (r) => reconnects.push(r),
  });
  assert.deepEqual(idsOf(await take(watch, 1)), ['e4']); // 160 ms of failures, each a new run
  assert.deepEqual(reconnects.map((r) => r.delayMs), [0, 0, 0, 0]); // each at once, too
});

test('a stream that fails before steadyMs goes on with the run: its failures still end in time', async () => {
  const retiredSoon = (call) => setTimeout(() => call.fail(STATUS.UNAVAILABLE, 'connection retired', 'CONNECTION_RETIRED'), 10);
  const client = fakeClient(...Array(100).fill(retiredSoon));
  const watch = watchTable(client, { table_id: 'T1', after_event_id: 'e3' }, new FakeMetadata(), {
    reconnectTimeoutMs: 50,
    steadyMs: 1000,
    firstDelayMs: 1,
  });
  await assert.rejects(take(watch, 1), (err) => err.reason === 'CONNECTION_RETIRED');
  assert.ok(client.calls.length < 20, `${client.calls.length} calls`);
});

test('a stream failing without a reason after steadyMs goes on with the run (a proxy failing each after its connect timeout)', async () => {
  const failsLater = (call) => setTimeout(() => call.fail(STATUS.UNAVAILABLE, 'upstream connect error'), 40);
  const client = fakeClient(...Array(100).fill(failsLater));
  const watch = watchTable(client, { table_id: 'T1', after_event_id: 'e3' }, new FakeMetadata(), {
    reconnectTimeoutMs: 150,
    steadyMs: 30,
    firstDelayMs: 1,
  });
  await assert.rejects(take(watch, 1), (err) => err.code === STATUS.UNAVAILABLE);
  assert.ok(client.calls.length < 10, `${client.calls.length} calls`);
});

test('a stream that stood reconnectTimeoutMs itself starts a new run, whatever ended it', async () => {
  const failsMuchLater = (call) => setTimeout(() => call.fail(STATUS.UNAVAILABLE, 'socket closed'), 80);
  const client = fakeClient(failsMuchLater, failsMuchLater, failsMuchLater, (call) => call.send(event('e4')));
  const watch = watchTable(client, { table_id: 'T1', after_event_id: 'e3' }, new FakeMetadata(), {
    reconnectTimeoutMs: 60,
    steadyMs: 30,
    firstDelayMs: 1,
  });
  assert.deepEqual(idsOf(await take(watch, 1)), ['e4']); // 240 ms of failures, each a new run
});

test('backoff doubles up to maxDelayMs, and failures stop being retried after reconnectTimeoutMs', async () => {
  const unavailable = (call) => call.fail(STATUS.UNAVAILABLE, 'no connection');
  const client = fakeClient(...Array(1000).fill(unavailable));
  const delays = [];
  const watch = watchTable(client, { table_id: 'T1' }, new FakeMetadata(), {
    firstDelayMs: 1,
    maxDelayMs: 8,
    reconnectTimeoutMs: 200,
    onReconnect: (r) => delays.push(r.delayMs),
  });
  const started = Date.now();
  await assert.rejects(take(watch, 1), (err) => err.code === STATUS.UNAVAILABLE);
  assert.ok(Date.now() - started >= 200);
  assert.deepEqual(delays.slice(0, 6), [1, 2, 4, 8, 8, 8]);
  assert.equal(client.calls.length, delays.length + 1);
});

test('a stream the server ends with status OK ends the iteration (not reopened)', async () => {
  const client = fakeClient((call) => {
    call.send(snapshot('e3'), event('e4'));
    call.end();
  });
  const got = [];
  for await (const m of watchTable(client, { table_id: 'T1' }, new FakeMetadata())) got.push(m);
  assert.deepEqual(idsOf(got), ['snapshot', 'e4']);
  assert.equal(client.calls.length, 1);
});

test('reconnectable and resumePoint', () => {
  assert.equal(reconnectable({ code: 14 }), true);
  assert.equal(reconnectable({ code: 1 }), true);
  assert.equal(reconnectable({ code: 13, details: 'Received RST_STREAM with code 2 triggered by internal client error: read ECONNRESET' }), true);
  assert.equal(reconnectable({ code: 13, details: 'boom' }), false);
  for (const code of [2, 3, 4, 5, 7, 8, 9, 11, 12, 16]) assert.equal(reconnectable({ code }), false, code);
  assert.equal(resumePoint(snapshot('e3')), 'e3');
  assert.equal(resumePoint(snapshot('')), '');
  assert.equal(resumePoint(event('e4')), 'e4');
  assert.equal(resumePoint(batch('e5', 'e6')), 'e6');
  assert.equal(resumePoint(batch()), null);
});

// --- end to end: a real ofc serve, a Watch through a TCP proxy that is cut mid-hand ----------

const ROOT = path.resolve(__dirname, '..', '..', '..');
const OFC = process.env.OFC_BIN || path.join(ROOT, '.venv', 'bin', 'ofc');
const API_KEY = 'node-watch-test-key';

function installed() {
  try {
    require.resolve('@grpc/grpc-js');
    require.resolve('@grpc/proto-loader');
    return true;
  } catch {
    return false;
  }
}

const E2E_SKIP = !installed()
  ? '@grpc/grpc-js is not installed (npm ci --ignore-scripts in clients/node)'
  : !fs.existsSync(OFC)
    ? `no ${OFC} (make setup; or OFC_BIN=path/to/ofc)`
    : false;

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Poll `check` until it returns a truthy value (every 20 ms, for at most `ms`). */
async function until(what, check, ms = 30000) {
  const end = Date.now() + ms;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A TCP proxy to `upstream` that the test can cut (every connection closed) and hold
 *  (connections accepted and closed at once) and release. */
async function tcpProxy(upstream) {
  const sockets = new Set();
  const proxy = { connections: 0, holding: false };
  const server = net.createServer((downstream) => {
    if (proxy.holding) {
      downstream.destroy();
      return;
    }
    proxy.connections += 1;
    const up = net.connect(upstream, '127.0.0.1');
    for (const [a, b] of [[downstream, up], [up, downstream]]) {
      sockets.add(a);
      a.on('error', () => b.destroy());
      a.on('close', () => {
        sockets.delete(a);
        b.destroy();
      });
      a.pipe(b);
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.port = server.address().port;
  proxy.cut = () => {
    for (const socket of sockets) socket.destroy();
  };
  proxy.close = () => {
    proxy.cut();
    return new Promise((resolve) => server.close(resolve));
  };
  return proxy;
}

test('end to end: a Watch cut mid-hand resumes with no gap and no duplicate', { skip: E2E_SKIP, timeout: 120000 }, async (t) => {
  const grpc = require('@grpc/grpc-js');
  const { loadTableService, chooseMove } = require('../play');

  const port = await freePort();
  const server = spawn(OFC, ['serve', '--listen', `127.0.0.1:${port}`, '--http-listen', '', '--metrics-listen', '', '--api-keys', API_KEY], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let serverLog = '';
  server.stderr.on('data', (chunk) => { serverLog = (serverLog + chunk).slice(-4000); });
  const exited = new Promise((resolve) => server.on('exit', resolve));
  const watches = [];
  const clients = [];
  let proxy = null;
  t.after(async () => {
    for (const w of watches) w.cancel();
    for (const c of clients) c.close();
    if (proxy) await proxy.close();
    if (server.exitCode === null && server.signalCode === null) {
      server.kill('SIGTERM');
      const timer = setTimeout(() => server.kill('SIGKILL'), 10000);
      await exited;
      clearTimeout(timer);
    }
  });

  const TableService = loadTableService();
  const direct = new TableService(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  clients.push(direct);
  await new Promise((resolve, reject) =>
    direct.waitForReady(Date.now() + 30000, (err) => (err ? reject(new Error(`ofc serve did not start: ${err.message}\n${serverLog}`)) : resolve())),
  );
  proxy = await tcpProxy(port);
  const proxied = new TableService(`127.0.0.1:${proxy.port}`, grpc.credentials.createInsecure());
  clients.push(proxied);

  const md = (key, value) => {
    const m = new grpc.Metadata();
    m.set(key, value);
    return m;
  };
  const call = (method, request, metadata = new grpc.Metadata()) =>
    new Promise((resolve, reject) =>
      direct[method](request, metadata, { deadline: Date.now() + 10000 }, (err, res) => (err ? reject(err) : resolve(res))),
    );

  const created = await call('CreateTable', { ruleset: { preset: 'classic' }, seats: 2, max_hands: 1, request_id: 'watch-test-create' }, md('x-ofc-api-key', API_KEY));
  const tableId = created.table_id;
  let version = created.table.version;
  const tokens = [];
  for (const seat of [0, 1]) {
    const joined = await call('JoinSeat', { table_id: tableId, seat, player_id: `p${seat}`, expected_version: version, request_id: `watch-test-join-${seat}` });
    tokens[seat] = joined.seat_token;
    version = joined.table.version;
  }

  // Two watches as seat 0: one through the proxy (cut below), in batches; one direct, one
  // event per message, never cut: the reference.
  const requests = [];
  const recording = { Watch: (request, metadata) => (requests.push({ ...request }), proxied.Watch(request, metadata)) };
  const collect = (watch) => {
    const got = { messages: [], error: null };
    watches.push(watch);
    (async () => {
      for await (const message of watch) got.messages.push(message);
    })().catch((err) => { got.error = err; });
    return got;
  };
  const cutWatch = watchTable(recording, { table_id: tableId, batch_events: true }, md('x-ofc-seat-token', tokens[0]));
  const cut = collect(cutWatch);
  const reference = collect(watchTable(direct, { table_id: tableId }, md('x-ofc-seat-token', tokens[0])));
  const events = (got) => got.messages.flatMap((m) => (m.kind === 'event' ? [m.event] : m.kind === 'events' ? m.events.events : []));
  const seen = (got, v) => {
    if (got.error) throw got.error;
    return events(got).some((e) => BigInt(e.version) >= BigInt(v));
  };
  await until('both snapshots', () => cut.messages.length > 0 && reference.messages.length > 0);

  let table = (await call('StartHand', { table_id: tableId, expected_version: version, request_id: 'watch-test-start' }, md('x-ofc-seat-token', tokens[0]))).table;
  let moves = 0;
  const move = async () => {
    const seat = table.hand.turn;
    const own = (await call('GetTable', { table_id: tableId }, md('x-ofc-seat-token', tokens[seat]))).table;
    const mine = own.hand.seats.find((s) => s.seat === seat);
    const street = own.ruleset.streets[own.hand.street];
    const { placements, discard } = chooseMove(mine.pending, mine.board, street.place);
    const request = { table_id: tableId, seat, placements, discard, expected_version: own.version, request_id: `watch-test-move-${moves}` };
    table = (await call('PlaceCards', request, md('x-ofc-seat-token', tokens[seat]))).table;
    moves += 1;
  };

  for (let i = 0; i < 4; i++) await move();
  await until('the events of the first moves', () => seen(cut, table.version));
  const lastBeforeCut = cutWatch.lastEventId;
  const opened = requests.length;

  // Cut the connection and refuse new ones while moves are made: the watch fails, retries,
  // and, once the proxy lets it through again, resumes after its last event.
  proxy.holding = true;
  proxy.cut();
  await until('the watch to notice the cut', () => cutWatch.reconnects >= 1 || cut.error);
  assert.equal(cut.error, null);
  for (let i = 0; i < 4; i++) await move();
  await until('a reopening refused while the proxy holds', () => cutWatch.reconnects >= 2 || cut.error);
  proxy.holding = false;
  while (!table.hand.over) await move();
  await until('button_moved on both watches', () => [cut, reference].every((got) => events(got).some((e) => e.kind === 'button_moved' && seen(got, table.version))));

  assert.equal(moves, 18);
  assert.equal(cut.error, null);
  assert.equal(reference.error, null);
  const ids = events(cut).map((e) => e.event_id);
  assert.deepEqual(ids, events(reference).map((e) => e.event_id), 'the same events as a watch never cut: no gap');
  assert.equal(new Set(ids).size, ids.length, 'no duplicate');
  assert.deepEqual(events(cut), events(reference), 'the same events, field by field');
  assert.equal(cut.messages.filter((m) => m.kind === 'snapshot').length, 1, 'resumed, not started again with a snapshot');
  assert.ok(cutWatch.reconnects >= 2 && proxy.connections >= 2);
  assert.ok(requests.length > opened, 'the Watch was opened again');
  assert.equal(requests[0].after_event_id, '');
  assert.ok(lastBeforeCut !== '');
  for (const r of requests.slice(opened)) assert.equal(r.after_event_id, lastBeforeCut, 'each reopening resumes after the last event received');
  assert.ok(ids.indexOf(lastBeforeCut) < ids.length - 1, 'events came after the cut');
});

