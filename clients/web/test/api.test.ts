// Table affinity: every TableService call about a table carries its id as x-ofc-table-id,
// the unary calls and the Watch stream alike; CreateTable (no id yet) and RulesService none.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createClient, createRouterTransport, type HandlerContext } from "@connectrpc/connect";
import { routeByTable, TABLE_ID_HEADER } from "../src/api";
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
