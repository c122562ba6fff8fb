// What one player's browser received, and the check that none of it showed another seat's
// cards before they were public: pending (dealt, unplaced) cards and discards.
//
// Every response of the player's page is recorded as bytes with the time each chunk arrived
// (a recording proxy is the page's only origin). Connect responses are JSON (unary) or
// enveloped JSON messages (streams); every string in them that is one of the other seat's
// cards must sit where a face-up card sits (a board row, a placement, a revealed board) and
// must have arrived after that seat placed the card. Discards never appear before the hand
// history is read. The same holds for snapshots of the page's DOM.

import { gunzipSync } from "node:zlib";

export interface Chunk {
  at: number;
  data: Uint8Array;
}

export interface Recorded {
  path: string;
  /** The request's x-ofc-table-id header (table affinity), if it had one. */
  tableIdHeader?: string;
  /** The request's x-ofc-seat-token header, if it had one. */
  seatTokenHeader?: string;
  contentType: string;
  /** content-encoding (unary) or connect-content-encoding (stream messages): "gzip" or "". */
  encoding: string;
  chunks: Chunk[];
}

export interface Message {
  path: string;
  at: number;
  json: unknown;
}

/** The JSON messages of one Connect response, each with the time it was complete. */
export function messagesOf(r: Recorded): Message[] {
  const total = r.chunks.reduce((n, c) => n + c.data.length, 0);
  const body = new Uint8Array(total);
  const endAt: number[] = [];
  let off = 0;
  for (const c of r.chunks) {
    body.set(c.data, off);
    off += c.data.length;
    endAt.push(off);
  }
  const timeAt = (end: number): number => r.chunks[endAt.findIndex((e) => e >= end)]?.at ?? Infinity;
  const text = (a: number, b: number, compressed: boolean): unknown => {
    const bytes = body.subarray(a, b);
    return JSON.parse(new TextDecoder().decode(compressed ? gunzipSync(bytes) : bytes));
  };
  const gzip = r.encoding === "gzip";
  if (r.contentType.startsWith("application/json")) {
    return total ? [{ path: r.path, at: timeAt(total), json: text(0, total, gzip) }] : [];
  }
  if (!r.contentType.startsWith("application/connect+json")) return [];
  const out: Message[] = [];
  let at = 0;
  while (at + 5 <= total) {
    const length = new DataView(body.buffer, at + 1, 4).getUint32(0);
    const end = at + 5 + length;
    if (end > total) throw new Error(`${r.path}: a truncated envelope`);
    const compressed = (body[at]! & 0x01) !== 0;
    if (compressed && !gzip) throw new Error(`${r.path}: a compressed message without an encoding`);
    out.push({ path: r.path, at: timeAt(end), json: text(at + 5, end, compressed) });
    at = end;
  }
  return out;
}

export interface HandMessage extends Message {
  /** The hand the message is about; null before the table's first hand. */
  hand: number | null;
}

/** A response's messages, one per event (a batch is split), each with its hand: a view's
 *  `hand.number`; in a Watch stream, the hand its snapshot shows or the last HandStarted. */
export function handMessages(r: Recorded): HandMessage[] {
  const out: HandMessage[] = [];
  let current: number | null = null;
  for (const m of messagesOf(r)) {
    const json = m.json as Record<string, any>;
    const view = json.table ?? json.snapshot;
    if (view) {
      current = view.hand?.number !== undefined ? Number(view.hand.number) : current;
      out.push({ ...m, hand: current });
    }
    const events: unknown[] = json.events?.events ?? (json.event ? [json.event] : []);
    for (const event of events) {
      const started = (event as Record<string, any>).handStarted;
      if (started) current = Number(started.number ?? 0);
      out.push({ ...m, json: { event }, hand: current });
    }
    if (!view && events.length === 0) out.push({ ...m, hand: current });
  }
  return out;
}

/** Every string in a JSON value with its path (`table.hand.seats[1].pending[0]`). */
export function* strings(value: unknown, path = ""): Generator<[string, string]> {
  if (typeof value === "string") yield [path, value];
  else if (Array.isArray(value)) for (let i = 0; i < value.length; i++) yield* strings(value[i], `${path}[${i}]`);
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) yield* strings(v, path ? `${path}.${k}` : k);
  }
}

/** Paths where a card is face up (Connect JSON names). */
const FACE_UP = [
  /\.board\.(top|middle|bottom)\[\d+\]$/, // HandSeatView.board, FantasylandRevealed.board
  /\.cardsPlaced\.placements\[\d+\]\.card$/,
  /\.handSettled\.boards\[\d+\]\.(top|middle|bottom)\[\d+\]$/,
];

export interface Opponent {
  seat: number;
  /** Every card dealt to the seat, with the time it was placed face up (Infinity: never,
   *  i.e. a discard or a Fantasyland card set face down until the reveal). */
  publicAt: Map<string, number>;
  discards: Set<string>;
}

export interface Leak {
  where: string;
  card: string;
  why: string;
}

/** The other seat's cards in one player's responses, where or when they were not public. */
export function networkLeaks(messages: readonly Message[], other: Opponent, historyPath: RegExp): Leak[] {
  const leaks: Leak[] = [];
  for (const m of messages) {
    if (historyPath.test(m.path)) continue; // the finished hand's history: everything is public
    for (const [path, value] of strings(m.json)) {
      const publicAt = other.publicAt.get(value);
      if (publicAt === undefined) continue;
      const where = `${m.path} ${path}`;
      if (other.discards.has(value)) leaks.push({ where, card: value, why: "a discard" });
      else if (!FACE_UP.some((re) => re.test(path))) leaks.push({ where, card: value, why: "not in a face-up place" });
      else if (m.at < publicAt) leaks.push({ where, card: value, why: `received ${publicAt - m.at} ms before it was placed` });
    }
  }
  return leaks;
}

export interface DomSnapshot {
  at: number;
  /** The hand the page shows (its data-hand), null for none. */
  hand: number | null;
  /** data-card of every card element, with the board (seat) it sits in, if any. */
  cards: { card: string; board: number | null }[];
  text: string;
}

/** The card labels a page prints ("K♥", "10♦"), for the text check. */
export function printed(card: string): string {
  const suit = ({ c: "♣", d: "♦", h: "♥", s: "♠" } as Record<string, string>)[card[1]!]!;
  return `${card[0] === "T" ? "10" : card[0]}${suit}`;
}

/** The other seat's cards in a DOM snapshot, where or when they were not public. */
export function domLeaks(snap: DomSnapshot, other: Opponent, handOver: boolean): Leak[] {
  const leaks: Leak[] = [];
  for (const { card, board } of snap.cards) {
    const publicAt = other.publicAt.get(card);
    if (publicAt === undefined || handOver) continue;
    if (board !== other.seat) leaks.push({ where: `DOM at ${snap.at}`, card, why: "shown outside its seat's board" });
    else if (snap.at < publicAt) leaks.push({ where: `DOM at ${snap.at}`, card, why: "shown before it was placed" });
  }
  if (!handOver) {
    for (const [card, publicAt] of other.publicAt) {
      if (snap.at < publicAt && snap.text.includes(printed(card))) {
        leaks.push({ where: `DOM text at ${snap.at}`, card, why: "printed before it was placed" });
      }
    }
  }
  return leaks;
}
