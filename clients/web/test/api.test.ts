// Table affinity: every TableService call about a table carries its id as x-ofc-table-id,
// the unary calls and the Watch stream alike; CreateTable (no id yet) and RulesService none.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Code, ConnectError, createClient, createRouterTransport, type HandlerContext } from "@connectrpc/connect";
import { intent, reachingFetch, routeByTable, TABLE_ID_HEADER, unreachable, withRetries } from "../src/api";
import { RulesService } from "../src/gen/ofcpoker/v1/rules_service_pb";
import { TableService } from "../src/gen/ofcpoker/v1/table_service_pb";

type Handler = (request: unknown, context: HandlerContext) => unknown;

test("each call about a table sends its id as x-ofc-table-id, and only those", async () => {
  const seen = new Map<string, string | null>();
  const transport = createRouterTransport(({ service }) => {
    for (const svc of [TableService, RulesService]) {
      const impl: Record<string, Handler> = {};
      for (const method of svc.methods) {
        const note = (context: HandlerContext): void => { seen.set(method.name, context.requestHeader.get(TABLE_ID_HEADER)); };
        impl[method.localName] = method.methodKind === "server_streaming"
          ? async function* (_request, context) { note(context); }
          : (_request, context) => { note(context); return {}; };
      }
      service(svc, impl as never);
    }
  }, { transport: { interceptors: [routeByTable] } });
  const tables = createClient(TableService, transport);
  const call = tables as unknown as Record<string, (request: object) => unknown>;

  await tables.createTable({ requestId: "r" });
  for (const method of TableService.methods) {
    if (method.name === "CreateTable") continue;
    const answer = call[method.localName]!({ tableId: `table-of-${method.name}` });
    if (method.methodKind === "server_streaming") for await (const _ of answer as AsyncIterable<unknown>) { /* none */ }
    else await answer;
  }
  await createClient(RulesService, transport).listPresets({});

  assert.equal(seen.get("CreateTable"), null);
  assert.equal(seen.get("ListPresets"), null);
  for (const method of TableService.methods) {
    if (method.name !== "CreateTable") assert.equal(seen.get(method.name), `table-of-${method.name}`, method.name);
  }
  assert.ok(seen.has("Watch"), "the stream was routed too");
});

test("a table id no header can hold goes unrouted, so the service can say what is wrong with it", async () => {
  let header: string | null = "unset";
  const transport = createRouterTransport(({ service }) => {
    service(TableService, {
      getTable: (_request: unknown, context: HandlerContext) => { header = context.requestHeader.get(TABLE_ID_HEADER); return {}; },
    } as never);
  }, { transport: { interceptors: [routeByTable] } });
  const tables = createClient(TableService, transport);
  for (const id of ["t\u00e9", "t\u0000", "a b", "\u202etable"]) {
    header = "unset";
    await tables.getTable({ tableId: id });
    assert.equal(header, null, JSON.stringify(id));
  }
});

// A lost answer: a fetch that failed (the connection dropped, the browser offline) never got
// one, and the page's transport reports it as UNAVAILABLE (connect-web alone says UNKNOWN, as
// it does for answers it cannot read). The page must send the same request again under the
// same id (the service answers it with the first result), not give up and let the next click
// send a new request, which the service would apply a second time.
test("a call whose fetch failed is sent again under the same request id; an answer is not", async () => {
  const { createConnectTransport } = await import("@connectrpc/connect-web");
  const sent: string[] = [];
  let failures = 2;
  const flaky: typeof fetch = async (_input, init) => {
    const body = init?.body;
    const text = typeof body === "string" ? body : new TextDecoder().decode(body as Uint8Array);
    sent.push((JSON.parse(text) as { requestId: string }).requestId);
    if (failures-- > 0) throw new TypeError("Failed to fetch");
    return new Response(JSON.stringify({ tableId: "t1", version: "1" }), { status: 200, headers: { "content-type": "application/json" } });
  };
  const tables = createClient(TableService, createConnectTransport({ baseUrl: "http://ofc.invalid", fetch: reachingFetch(flaky) }));
  const created = await withRetries((requestId) => tables.createTable({ requestId }));
  assert.equal(created.tableId, "t1");
  assert.equal(sent.length, 3);
  assert.equal(new Set(sent).size, 1, `one request id for the three attempts: ${sent.join(", ")}`);

  // Answers, even unreadable ones, are not sent again: a refusal, and a proxy's error page.
  let calls = 0;
  const refused = (): Promise<never> => { calls++; return Promise.reject(new ConnectError("seat 0 is taken", Code.FailedPrecondition)); };
  await assert.rejects(withRetries(refused), (e: unknown) => ConnectError.from(e).code === Code.FailedPrecondition);
  const proxyError: typeof fetch = async () => { calls++; return new Response("<html>internal server error</html>", { status: 500, headers: { "content-type": "text/html" } }); };
  const behindProxy = createClient(TableService, createConnectTransport({ baseUrl: "http://ofc.invalid", fetch: reachingFetch(proxyError) }));
  await assert.rejects(withRetries((requestId) => behindProxy.createTable({ requestId })), (e: unknown) => !unreachable(e));
  assert.equal(calls, 2, "each answer taken as it is");
});

test("an action still unanswered when the retries give up keeps its id for the next click", async () => {
  const ids: string[] = [];
  const down = (id: string): Promise<never> => { ids.push(id); return Promise.reject(new ConnectError("unreachable", Code.Unavailable)); };
  const same = intent("CreateTable", { seats: 2, expectedVersion: 3n });
  await assert.rejects(withRetries(down, same, 2));
  await assert.rejects(withRetries(down, same, 2)); // clicked again: the same request
  await assert.rejects(withRetries(down, intent("CreateTable", { seats: 3, expectedVersion: 3n }), 1)); // another
  assert.equal(new Set(ids.slice(0, 4)).size, 1, ids.join(", "));
  assert.notEqual(ids[4], ids[0]);
  // Once the service answers (here: refuses), the next click is a new request.
  const refuse = (id: string): Promise<never> => { ids.push(id); return Promise.reject(new ConnectError("no", Code.FailedPrecondition)); };
  await assert.rejects(withRetries(refuse, same));
  assert.equal(ids[5], ids[0], "the answer was to the request sent before");
  await assert.rejects(withRetries(refuse, same));
  assert.notEqual(ids[6], ids[0]);
});
