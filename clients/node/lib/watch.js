// A resuming Watch: TableService.Watch as an async iterable of WatchResponse messages that,
// after a dropped connection, opens the stream again after the last event it received, so
// the consumer sees no gap and no duplicate. The same rules as the Python client's
// TableWatch (clients/python/ofc_client/tables.py):
//
// - the stream is opened again, with `after_event_id` the id of the last event received (or
//   the last snapshot's `last_event_id`), when it fails with UNAVAILABLE or CANCELLED (a
//   replica or the store went away, a replica stopped before it served the call), or with
//   the INTERNAL that grpc-js makes up when an HTTP/2 stream closes without any gRPC status
//   ("Received RST_STREAM with code ..."): the service never answered that stream;
// - backoff: 50 ms before the first attempt, doubling up to 1 s; failures stop being retried
//   (the last one is thrown) once they have gone on for more than `reconnectTimeoutMs`
//   (30 s) since the last message received or the last stream that stood: open `steadyMs`
//   (1 s) before the server ended it on purpose (the reasons below), any other open
//   `reconnectTimeoutMs` itself (a quiet table's Watch receives nothing for minutes: its
//   connection retired twice is no outage of minutes);
// - UNAVAILABLE with reason SERVER_SHUTTING_DOWN (a replica that stops ends its streams so) or
//   CONNECTION_RETIRED (the HTTP port ends them so on a connection retired for its age):
//   reopened at once, without waiting, the first time in a run of failures;
// - OUT_OF_RANGE with reason EVENTS_TRIMMED (the table no longer holds the events after the
//   resume position, or never had that id): opened again without `after_event_id`, so a fresh
//   snapshot comes next: a snapshot in the middle of the stream means "resynchronise from
//   here";
// - any other error (PERMISSION_DENIED, INVALID_ARGUMENT, NOT_FOUND, UNAUTHENTICATED, ...)
//   is the service's answer: thrown at once, with `reason` and `field` from its ErrorInfo;
// - a stream the server ends with status OK ends the iteration (the service does not end a
//   Watch so; the Python client stops there too);
// - `break` out of `for await`, `return()`, `cancel()` or the `signal` option's abort cancel
//   the call and end the iteration quietly (no error), even while a `next()` is waiting.
//
// No dependency: the client passed in (a TableService client of @grpc/grpc-js, built with
// @grpc/proto-loader's `keepCase: true` and `oneofs: true`, as play.js builds it) does the
// calls; status codes are gRPC's numbers.
'use strict';

const { errorInfo } = require('./status');

/** gRPC status codes used here (grpc.status of @grpc/grpc-js has the same numbers). */
const STATUS = Object.freeze({ OK: 0, CANCELLED: 1, OUT_OF_RANGE: 11, INTERNAL: 13, UNAVAILABLE: 14 });
/** What a Watch reconnects on, as the Python client's _RETRIED. */
const RECONNECTED = new Set([STATUS.UNAVAILABLE, STATUS.CANCELLED]);
// Reasons of a stream the server ended on purpose, itself well: reopened at once.
const REOPENED_AT_ONCE = new Set(['SERVER_SHUTTING_DOWN', 'CONNECTION_RETIRED']);
const TABLE_ID_HEADER = 'x-ofc-table-id';
const DEFAULTS = Object.freeze({ reconnectTimeoutMs: 30000, firstDelayMs: 50, maxDelayMs: 1000, steadyMs: 1000 });

/** Whether a failed Watch is worth opening again: the service did not refuse it. */
function reconnectable(error) {
  if (RECONNECTED.has(error.code)) return true;
  // grpc-js's own status for a stream that closed with no gRPC status at all (no trailers
  // came: a connection or a proxy dropped it); a status the server sent is never this.
  return error.code === STATUS.INTERNAL && /^Received RST_STREAM with code \d+/.test(String(error.details || ''));
}

/** Which member of a WatchResponse is set: 'snapshot', 'event', 'events' (or ''). */
function kindOf(message) {
  if (message.kind === 'snapshot' || message.kind === 'event' || message.kind === 'events') return message.kind;
  if (message.snapshot) return 'snapshot';
  if (message.events) return 'events';
  return message.event ? 'event' : '';
}

/**
 * Where a stream reopened after `message` resumes: the id of its last event, a snapshot's
 * `last_event_id` (may be '': a reopened stream then starts with a snapshot), or null when
 * the message changes nothing (an empty batch).
 */
function resumePoint(message) {
  switch (kindOf(message)) {
    case 'snapshot':
      return message.snapshot.last_event_id || '';
    case 'event':
      return message.event.event_id;
    case 'events': {
      const events = message.events.events || [];
      return events.length ? events[events.length - 1].event_id : null;
    }
    default:
      return null;
  }
}

/** The messages and the end of one call, taken one at a time. `interrupt()` makes the
 *  next (or the waiting) take resolve { cancelled: true }. */
function reader(call) {
  const items = [];
  let waiting = null;
  let over = false;
  const put = (item) => {
    if (waiting) {
      const resolve = waiting;
      waiting = null;
      resolve(item);
    } else items.push(item);
  };
  const finish = (item) => {
    if (over) return; // grpc-js emits 'error' (at once) before 'end' (later): the first says it
    over = true;
    put(item);
  };
  call.on('data', (message) => { if (!over) put({ message }); });
  call.on('error', (error) => finish({ error }));
  call.on('end', () => finish({ end: true }));
  return {
    take: () => (items.length ? Promise.resolve(items.shift()) : new Promise((resolve) => { waiting = resolve; })),
    interrupt: () => {
      over = true;
      items.length = 0;
      put({ cancelled: true });
    },
  };
}

/**
 * An open, resuming Watch: iterate it (once) with `for await`. `lastEventId` is the id of the
 * last event handed out (or of the last snapshot's `last_event_id`): save it, and a new
 * watch with `after_event_id` set to it resumes there; `reconnects` counts the streams opened
 * again.
 */
class TableWatch {
  constructor(client, request, metadata, options) {
    this.client = client;
    this.request = { ...request };
    this.metadata = metadata;
    this.options = { ...DEFAULTS, ...options };
    this.lastEventId = request.after_event_id || '';
    this.reconnects = 0;
    this.cancelled = false;
    this.call = null;
    this._cursor = this.lastEventId; // the last event received: where a reopened stream resumes
    this._reader = null;
    this._wake = null; // ends a backoff wait early
    this._signal = options.signal;
    this._onAbort = () => this.cancel();
    if (this._signal) {
      if (this._signal.aborted) this.cancelled = true;
      else this._signal.addEventListener('abort', this._onAbort, { once: true });
    }
    this._run = this._messages();
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  next() {
    return this._run.next();
  }

  /** Stop (what `break` out of `for await` calls): the call is cancelled. */
  async return(value) {
    this.cancel();
    return this._run.return(value);
  }

  async throw(error) {
    this.cancel();
    return this._run.throw(error);
  }

  /** Stop the watch from anywhere: the call is cancelled and the iteration ends. */
  cancel() {
    this.cancelled = true;
    if (this._signal) this._signal.removeEventListener('abort', this._onAbort);
    const call = this.call;
    this.call = null;
    if (call) call.cancel();
    if (this._reader) this._reader.interrupt();
    if (this._wake) this._wake();
  }

  _open() {
    const request = { ...this.request, after_event_id: this._cursor };
    const md = this.metadata && typeof this.metadata.clone === 'function' ? this.metadata.clone() : this.metadata;
    // Every call about a table carries its id for a proxy to route by (as the other calls).
    if (md && request.table_id && typeof md.get === 'function' && md.get(TABLE_ID_HEADER).length === 0) {
      md.set(TABLE_ID_HEADER, request.table_id);
    }
    const call = md === undefined ? this.client.Watch(request) : this.client.Watch(request, md);
    this.call = call;
    this._reader = reader(call);
    return this._reader;
  }

  _sleep(ms) {
    return new Promise((resolve) => {
      const timer = setTimeout(() => { this._wake = null; resolve(); }, ms);
      this._wake = () => { clearTimeout(timer); this._wake = null; resolve(); };
    });
  }

  async *_messages() {
    const { reconnectTimeoutMs, firstDelayMs, maxDelayMs, steadyMs, onReconnect } = this.options;
    let failingSince = null;
    let delay = firstDelayMs;
    try {
      while (!this.cancelled) {
        const stream = this._open();
        const openedAt = Date.now();
        let outcome;
        for (;;) {
          outcome = await stream.take();
          if (!outcome.message) break;
          failingSince = null; // a message: the service is there again
          delay = firstDelayMs;
          const message = outcome.message;
          const at = resumePoint(message);
          if (at === null) continue; // an empty batch: nothing to hand out
          this._cursor = at;
          this.lastEventId = at;
          yield message;
          if (this.cancelled) return;
        }
        this.call = null;
        this._reader = null;
        if (this.cancelled || outcome.cancelled || outcome.end) return;
        const error = outcome.error;
        Object.assign(error, errorInfo(error.metadata));
        // A stream that stood (a quiet table sends nothing) ended: a new run of failures, not
        // the old one going on (a connection retired every few minutes is no outage). Ended
        // on purpose by the server, it stood if open steadyMs; any other if open as long as
        // the failures may go on: a proxy failing every stream after its connect timeout (a
        // second or three) is an outage.
        const open = Date.now() - openedAt;
        if (open >= (REOPENED_AT_ONCE.has(error.reason) ? steadyMs : reconnectTimeoutMs)) {
          failingSince = null;
          delay = firstDelayMs;
        }
        let wait = 0;
        if (error.reason === 'EVENTS_TRIMMED' && this._cursor !== '') {
          this.lastEventId = this._cursor = ''; // start again with a snapshot
        } else if (REOPENED_AT_ONCE.has(error.reason) && failingSince === null) {
          failingSince = Date.now(); // once at once; again: with backoff
          this.reconnects += 1;
        } else {
          const now = Date.now();
          if (failingSince === null) failingSince = now;
          if (!reconnectable(error) || now - failingSince > reconnectTimeoutMs) throw error;
          wait = delay;
          delay = Math.min(delay * 2, maxDelayMs);
          this.reconnects += 1;
        }
        if (onReconnect) onReconnect({ error, afterEventId: this._cursor, delayMs: wait });
        if (wait > 0) await this._sleep(wait);
      }
    } finally {
      if (this._signal) this._signal.removeEventListener('abort', this._onAbort);
      if (this.call) this.cancel();
    }
  }
}

/**
 * Watch a table, resuming after dropped connections (see the top of this file).
 *
 *   const watch = watchTable(client, { table_id: tableId, batch_events: true }, md);
 *   for await (const message of watch) { ... }   // break: the call is cancelled
 *
 * `request`: a WatchRequest (table_id; as_seat, batch_events, after_event_id as the service
 * reads them; after_event_id is replaced by the resume position on a reconnect).
 * `metadata`: a grpc.Metadata (the seat token or API key), copied for each call; the table
 * id is added as x-ofc-table-id. `options`: `signal` (an AbortSignal: abort stops the watch),
 * `reconnectTimeoutMs` (30000), `firstDelayMs` (50), `maxDelayMs` (1000), `steadyMs` (1000: a
 * stream open this long before the server ended it on purpose starts a new run of
 * failures), `onReconnect`
 * (called with { error, afterEventId, delayMs } before each stream opened again).
 */
function watchTable(client, request, metadata, options = {}) {
  return new TableWatch(client, request, metadata, options);
}

module.exports = { watchTable, TableWatch, reconnectable, resumePoint, kindOf, STATUS, RECONNECTED, DEFAULTS };
