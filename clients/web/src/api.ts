// The page's one connection to the service: Connect (JSON) over fetch, at the page's own
// origin, with the seat token of this tab as the `x-ofc-seat-token` header.

import { BinaryReader } from "@bufbuild/protobuf/wire";
import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { RulesService } from "./gen/ofcpoker/v1/rules_service_pb";
import { TableService } from "./gen/ofcpoker/v1/table_service_pb";

export const SEAT_TOKEN_HEADER = "x-ofc-seat-token";
export const API_KEY_HEADER = "x-ofc-api-key";

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
  const transport = createConnectTransport({ baseUrl, interceptors: [auth] });
  return { tables: createClient(TableService, transport), rules: createClient(RulesService, transport) };
}

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

/** A fresh idempotency key for one intended action. */
export function requestId(): string {
  return crypto.randomUUID();
}

/** Call `send` with one request id, retrying on UNAVAILABLE (the service answers a retry
 *  with the same id with the first result). */
export async function withRetries<T>(send: (id: string) => Promise<T>, attempts = 3): Promise<T> {
  const id = requestId();
  for (let attempt = 1; ; attempt++) {
    try {
      return await send(id);
    } catch (error) {
      if (attempt >= attempts || ConnectError.from(error).code !== Code.Unavailable) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    }
  }
}
