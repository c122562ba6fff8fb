// The page's one connection to the service: Connect (JSON) over fetch, at the page's own
// origin, with the seat token of this tab as the `x-ofc-seat-token` header and, on every
// call about a table, its id as `x-ofc-table-id` (routing for a proxy).

import { create } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createAsyncIterable } from "@connectrpc/connect/protocol";
import { createConnectTransport } from "@connectrpc/connect-web";
import { type RulesetParameters, type RulesetSpec, RulesetSpecSchema } from "./gen/ofcpoker/v1/ruleset_pb";
import { RulesService } from "./gen/ofcpoker/v1/rules_service_pb";
import { TableService } from "./gen/ofcpoker/v1/table_service_pb";

export const SEAT_TOKEN_HEADER = "x-ofc-seat-token";
export const API_KEY_HEADER = "x-ofc-api-key";
/** The routing key a proxy hashes on so that one table's calls reach one replica, whose
 *  cache of the table then serves them (deploy/compose/envoy/envoy.yaml). The service never
 *  reads it: the table of a call is its message's `tableId`. */
export const TABLE_ID_HEADER = "x-ofc-table-id";

export interface Credentials {
  seatToken?: string;
  apiKey?: string;
}

export interface Api {
  tables: Client<typeof TableService>;
  rules: Client<typeof RulesService>;
}

/** Clients for the service at `baseUrl`; `credentials()` is read on every call. */
export function connect(baseUrl: string, credentials: () => Credentials): Api {
  const auth: Interceptor = (next) => async (req) => {
    const { seatToken, apiKey } = credentials();
    if (seatToken) req.header.set(SEAT_TOKEN_HEADER, seatToken);
    if (apiKey) req.header.set(API_KEY_HEADER, apiKey);
    return await next(req);
  };
  const transport = createConnectTransport({ baseUrl, fetch: reachingFetch(globalThis.fetch.bind(globalThis)), interceptors: [auth, routeByTable] });
  return { tables: createClient(TableService, transport), rules: createClient(RulesService, transport) };
}

/** The request's `tableId` when it can go in a header (printable ASCII, as every id the
 *  service makes is); "" otherwise: such a call goes unrouted, and the service judges its id
 *  (a header value the browser refuses would fail the call before it is sent). */
function tableIdOf(message: unknown): string {
  const id = (message as { tableId?: unknown } | undefined)?.tableId;
  return typeof id === "string" && /^[\x21-\x7e]{1,256}$/.test(id) ? id : "";
}

/** Sets `x-ofc-table-id` to the request's `tableId` on every call about a table (all of
 *  TableService's but CreateTable, whose id the service picks). */
export const routeByTable: Interceptor = (next) => async (req) => {
  if (!req.stream) {
    const id = tableIdOf(req.message);
    if (id) req.header.set(TABLE_ID_HEADER, id);
    return await next(req);
  }
  if (req.method.methodKind !== "server_streaming") return await next(req);
  // A server stream (Watch) sends one message: read it to route by, then send it on.
  const sent = [];
  for await (const message of req.message) sent.push(message);
  const id = tableIdOf(sent[0]);
  if (id) req.header.set(TABLE_ID_HEADER, id);
  return await next({ ...req, message: createAsyncIterable(sent) });
};

/** The service's base URL: the directory the page was served from. */
export function baseUrlOf(location: Location): string {
  return new URL(".", location.href).href.replace(/\/$/, "");
}

/** The ErrorInfo reason of a service error (`STALE_VERSION`, `NOT_YOUR_TURN`, ...), or "". */
export function reasonOf(error: unknown): string {
  const err = ConnectError.from(error);
  for (const detail of err.details) {
    if ("type" in detail && detail.type === "google.rpc.ErrorInfo") {
      const reader = new BinaryReader(detail.value);
      while (reader.pos < reader.len) {
        const [field, wireType] = reader.tag();
        if (field === 1) return reader.string();
        reader.skip(wireType);
      }
    }
  }
  return "";
}

/** "STALE_VERSION: the table changed …" for people. */
export function describeError(error: unknown): string {
  const err = ConnectError.from(error);
  const reason = reasonOf(err);
  return `${reason || Code[err.code]}: ${err.rawMessage}`;
}

/** `fetchImpl`, with a request that never got an answer (fetch rejects: the browser offline,
 *  the connection dropped) reported as UNAVAILABLE. connect-web reports it as UNKNOWN, like
 *  an answer it could not read or a proxy's error page, which are answers: only the first
 *  may be sent again. A call the page cancelled stays cancelled. */
export function reachingFetch(fetchImpl: typeof fetch): typeof fetch {
  return async (input, init) => {
    try {
      return await fetchImpl(input, init);
    } catch (error) {
      if (init?.signal?.aborted || (error instanceof Error && error.name === "AbortError")) throw error;
      throw new ConnectError(`the service could not be reached (${String(error)})`, Code.Unavailable, undefined, undefined, error);
    }
  };
}

/** Whether `error` says the service could not be reached (the browser offline, a dropped
 *  connection, a replica down, no answer in time), not that it answered: worth a retry. */
export function unreachable(error: unknown): boolean {
  const code = ConnectError.from(error).code;
  return code === Code.Unavailable || code === Code.DeadlineExceeded;
}

/** A fresh idempotency key for one intended action. */
export function requestId(): string {
  return crypto.randomUUID();
}

/** What a request asks, for `withRetries`: its method and every field but its id. */
export function intent(method: string, fields: object): string {
  return JSON.stringify([method, fields], (_key, value: unknown) => (typeof value === "bigint" ? value.toString() : value));
}

/** Request ids of actions sent that got no answer, by what they ask (see `withRetries`). */
const unanswered = new Map<string, string>();

/** Call `send` with one request id, retrying with that same id while the service cannot be
 *  reached (UNAVAILABLE: a dropped connection, the browser offline, a replica down; no
 *  answer in time): the request may have been applied, and the service answers a retry
 *  with the first result, so a lost answer is never sent again as a new request. Waits
 *  0.25, 0.5, 1, 2 then 4 s. `intent` (what the request asks, every field but its id): an
 *  action still unanswered when the retries give up keeps its id, and the same action sent
 *  again later (the person clicks again) goes under that id, not a new one. */
export async function withRetries<T>(send: (id: string) => Promise<T>, intent = "", attempts = 6): Promise<T> {
  const id = (intent && unanswered.get(intent)) || requestId();
  for (let attempt = 1; ; attempt++) {
    try {
      const answer = await send(id);
      unanswered.delete(intent);
      return answer;
    } catch (error) {
      if (!unreachable(error)) {
        unanswered.delete(intent); // answered: the next click is a new request
        throw error;
      }
      if (attempt >= attempts) {
        if (intent) unanswered.set(intent, id);
        throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(4000, 250 * 2 ** (attempt - 1))));
    }
  }
}

/** `call` with `fields` and a request id, sent once for all (`withRetries`, under the intent
 *  of `method` with those fields). */
export function sendOnce<F extends object, T>(method: string, fields: F, call: (request: F & { requestId: string }) => Promise<T>): Promise<T> {
  return withRetries((requestId) => call({ ...fields, requestId }), intent(method, fields));
}

/** A table's ruleset as a RulesetSpec: every parameter as an override, so the solver uses
 *  exactly the table's rules whatever its preset (jokers and Fantasyland tiers included;
 *  `cardsPerHand` and `deckSize` follow from the others). */
export function rulesetSpec(p: RulesetParameters): RulesetSpec {
  return create(RulesetSpecSchema, {
    preset: "classic",
    overrides: {
      name: p.name,
      streets: { streets: p.streets },
      minPlayers: p.minPlayers,
      maxPlayers: p.maxPlayers,
      royaltiesOverride: p.royalties ? { case: "royalties", value: p.royalties } : { case: undefined },
      scoringOverride: p.scoring ? { case: "scoring", value: p.scoring } : { case: undefined },
      royaltiesToRowWinnerOnly: p.royaltiesToRowWinnerOnly,
      unitValue: p.unitValue,
      lossCap: p.lossCap,
      fantasylandEntry: { entries: p.fantasylandEntry },
      stayConditions: { conditions: p.stayConditions },
      stayMinRowRoyalty: p.stayMinRowRoyalty,
      stayCards: p.stayCards,
      maxConsecutiveFantasylands: p.maxConsecutiveFantasylands,
      buttonMovesInFantasyland: p.buttonMovesInFantasyland,
      fantasylandTiers: { tiers: p.fantasylandTiers },
      jokers: p.jokers,
    },
  });
}
