// What a player does in the browser tests, and the checks after a hand.

import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import type { Page } from "playwright-core";
import { RulesService } from "../../src/gen/ofcpoker/v1/rules_service_pb";
import { TableService } from "../../src/gen/ofcpoker/v1/table_service_pb";
import type { HandHistory } from "../../src/verify";
import { type Player, shot, shownSettlement, snapshot, WEB_URL } from "./harness";
import { domLeaks, handMessages, messagesOf, networkLeaks, type Opponent, strings } from "./leaks";

const transport = createConnectTransport({ baseUrl: WEB_URL });
export const tables = createClient(TableService, transport);
export const rules = createClient(RulesService, transport);

export type Style = "click" | "keyboard" | "drag";
export type RowName = "top" | "middle" | "bottom";
const ROW_PREFERENCE: readonly RowName[] = ["bottom", "middle", "top"];
const KEYS: Record<string, string> = { top: "t", middle: "m", bottom: "b", discard: "x" };

/** A hand history as the live tables write it. */
export type PlayedHistory = Omit<HandHistory, "actions"> & {
  ruleset: string;
  table_id: string;
  settled_at_ms: number;
  actions: {
    type: string;
    seat?: number;
    at_ms: number;
    placements?: [string, string][];
    top?: string[];
    middle?: string[];
    bottom?: string[];
    resolved?: { type: string; placements?: [string, string][]; top?: string[]; middle?: string[]; bottom?: string[] };
  }[];
};

export interface Plan {
  rows: Record<string, RowName>;
  discard: string | null;
}

/** Create a table from the lobby; returns its id and the join link of seat 2. */
export async function createTable(p: Player, options: { preset: string; turnSeconds: number; playersSeeds: boolean; clientSeed: string }): Promise<{ tableId: string; joinLink: URL }> {
  const page = p.page;
  await page.goto(`${p.origin}/`);
  await page.selectOption("#preset", options.preset);
  await page.fill("#seats", "2");
  await page.fill("#turn-seconds", String(options.turnSeconds));
  if (options.playersSeeds) await page.selectOption("#seed-policy", { label: "the table's seed and each player's own" });
  await page.fill("#client-seed", options.clientSeed);
  await typeOperatorKey(page);
  await shot(p, "01-lobby");
  await page.click("#create-table");
  await page.waitForSelector("[data-testid=table-id]");
  const tableId = (await page.textContent("[data-testid=table-id]"))!;
  const joinLink = new URL((await page.getAttribute("[data-testid=join-link-1]", "href"))!);
  assert.equal(joinLink.searchParams.get("table"), tableId);
  assert.equal(joinLink.searchParams.get("seat"), "1");
  return { tableId, joinLink };
}

/** A service with operator keys (OFC_API_KEYS) creates tables for a key holder only: the
 * key in OFC_API_KEY, typed into the lobby's field (which the page empties after each use). */
export async function typeOperatorKey(page: Page): Promise<void> {
  if (process.env.OFC_API_KEY) await page.fill("#api-key", process.env.OFC_API_KEY);
}

/** Sit down: at seat 1 from the table page, at seat 2 by following the join link. */
export async function sitDown(p: Player, name: string, seat: number, joinLink?: URL): Promise<void> {
  const page = p.page;
  if (joinLink) {
    await page.goto(`${p.origin}${joinLink.pathname}${joinLink.search}`);
    await page.waitForSelector("[data-testid=join-form]");
  } else {
    await page.click(`#sit-${seat}`);
  }
  await page.fill("#player-name", name);
  await page.click("#join-button");
  await page.waitForSelector("[data-testid=start-hand]");
}

/** A Classic table made through the API (with the operator key when the service asks one),
 *  the two players seated from their pages, the first hand dealt: the table's id. */
export async function playingTable(ann: Player, bob: Player, overrides: Record<string, unknown> = {}): Promise<string> {
  const key = process.env.OFC_API_KEY;
  const created = await tables.createTable(
    { seats: 2, ruleset: { preset: "classic", overrides }, turnTimeLimitMs: 120_000, requestId: crypto.randomUUID() },
    key ? { headers: { "x-ofc-api-key": key } } : {},
  );
  const tableId = created.tableId;
  for (const [p, name, seat] of [[ann, "ann", 0], [bob, "bob", 1]] as const) {
    await p.page.goto(`${p.origin}/?table=${encodeURIComponent(tableId)}`);
    await p.page.waitForSelector(`#sit-${seat}`);
    await sitDown(p, name, seat);
  }
  await ann.page.waitForFunction(() => !(document.querySelector("#start-hand") as HTMLButtonElement | null)?.disabled);
  await ann.page.click("#start-hand");
  return tableId;
}

export async function myTurn(p: Player): Promise<boolean> {
  return (await p.page.locator("[data-testid=pending]").count()) > 0;
}

async function choose(page: Page, card: string): Promise<void> {
  if ((await page.locator(`#card-${card}`).getAttribute("aria-pressed")) !== "true") await page.click(`#card-${card}`);
}

async function firstLegalRow(page: Page, card: string): Promise<RowName> {
  await choose(page, card);
  for (const row of ROW_PREFERENCE) if (await page.locator(`#target-${row}:not([disabled])`).count()) return row;
  throw new Error(`no legal row for ${card}`);
}

/** Place the page's pending street batch, by the plan, or else the last card discarded on a
 *  street that discards and the others to the lowest row with room; with clicks, keys or
 *  drag and drop. */
export async function playBatch(p: Player, style: Style, screenshot?: string, plan?: Plan): Promise<void> {
  const page = p.page;
  const cards = await page.$$eval("[data-testid=pending] .hand-cards [data-card]", (els) => els.map((e) => (e as HTMLElement).dataset.card!));
  const discards = (await page.locator("#target-discard").count()) > 0 ? 1 : 0;
  for (const [i, card] of cards.entries()) {
    const discard = plan ? plan.discard === card : i >= cards.length - discards;
    const rowFor = async (): Promise<RowName | "discard"> => (discard ? "discard" : plan ? plan.rows[card]! : await firstLegalRow(page, card));
    const button = page.locator(`#card-${card}`);
    if (style === "drag") {
      const row = await rowFor();
      const zone = row === "discard" ? "[data-testid=pending] [data-row=discard]" : `.board.mine [data-row=${row}]`;
      await button.dragTo(page.locator(zone));
      assert.equal(await page.locator(`#placed-${card}`).count(), 1, `${card} was dragged to ${row}`);
      continue;
    }
    if (style === "keyboard") {
      await button.focus();
      if ((await button.getAttribute("aria-pressed")) !== "true") await page.keyboard.press("Enter");
    } else {
      await choose(page, card);
    }
    const row = await rowFor();
    if (screenshot && i === 0) await shot(p, screenshot); // the legal rows lit for the chosen card
    if (style === "keyboard") await page.keyboard.press(KEYS[row]!);
    else await page.click(`#target-${row}`);
  }
  await snapshot(p);
  if (style === "keyboard") {
    assert.equal(await page.evaluate(() => document.activeElement?.id), "confirm", "the keyboard ends on the confirm button");
    await page.keyboard.press("Enter");
  } else {
    await page.click("#confirm");
  }
  // Sent: the chosen cards are placed (no longer tentative). The next batch may follow at once.
  await page.waitForSelector(`#placed-${cards[0]}`, { state: "detached" });
}

export async function history(tableId: string, hand: bigint): Promise<PlayedHistory> {
  const got = await tables.getHandHistory({ tableId, handNumber: hand });
  return JSON.parse(got.historyJson) as PlayedHistory;
}

/** The settlement each page shows is SettleHand's for the history's final boards. */
export async function checkSettlement(players: readonly Player[], h: PlayedHistory): Promise<void> {
  const settled = await rules.settleHand({
    hand: {
      ruleset: { preset: h.ruleset },
      players: h.boards.map((b) => {
        const p = h.players.find((x) => x.seat === b.seat)!;
        return { playerId: p.player_id, board: { top: b.top, middle: b.middle, bottom: b.bottom }, inFantasyland: p.fantasyland > 0, fantasylandStreak: p.fantasyland > 0 ? 1 : 0 };
      }),
    },
  });
  const s = settled.settlement!;
  const names = s.players.map((p) => p.playerId);
  for (const p of players) {
    const shown = await shownSettlement(p.page);
    assert.deepEqual(Object.keys(shown.players).sort(), [...names].sort());
    for (const result of s.players) {
      const r = result.board!.royalties!;
      assert.deepEqual(shown.players[result.playerId], {
        fouled: result.board!.fouled, royalties: [r.top, r.middle, r.bottom, r.total], points: result.points, units: Number(result.units),
      }, `${p.name}'s page: ${result.playerId}`);
    }
    assert.equal(Object.keys(shown.pairs).length, s.pairs.length);
    for (const pair of s.pairs) {
      assert.deepEqual(shown.pairs[`${names[pair.a]}-${names[pair.b]}`], {
        top: pair.top, middle: pair.middle, bottom: pair.bottom, scoop: pair.scoop, "row-points": pair.rowPoints, royalties: pair.royalties,
        points: pair.points, capped: pair.cappedPoints, unit: pair.unitValue, units: Number(pair.units),
      }, `${p.name}'s page: pair ${names[pair.a]} v ${names[pair.b]}`);
    }
  }
}

/** A seat's cards in one hand, each with the time it turned face up: a placement when it
 *  was placed; a Fantasyland hand when the hand ended (its boards turn up together); a
 *  discard never. */
export function opponent(h: PlayedHistory, seat: number): Opponent {
  const publicAt = new Map<string, number>();
  for (const d of h.deals) if (d.seat === seat) for (const c of d.cards) publicAt.set(c, Infinity);
  const end = Math.max(...h.actions.map((a) => a.at_ms));
  for (const a of h.actions) {
    if (a.seat !== seat) continue;
    const move = a.type === "timeout" ? a.resolved : a;
    for (const [card] of move?.placements ?? []) publicAt.set(card, a.at_ms);
    if (move?.type === "set_fantasyland") for (const card of [...move.top!, ...move.middle!, ...move.bottom!]) publicAt.set(card, end);
  }
  const board = h.boards.find((b) => b.seat === seat)!;
  return { seat, publicAt, discards: new Set(board.discards) };
}

/** Nothing of `otherSeat`'s in hand `h` reached `viewer` before it was public: in the
 *  responses and the DOM snapshots about that hand. */
export function checkNoLeaks(viewer: Player, otherSeat: number, h: PlayedHistory): void {
  const other = opponent(h, otherSeat);
  const all = viewer.log.flatMap(handMessages);
  const messages = all.filter((m) => m.hand === h.hand_number);
  assert.ok(messages.length >= 5, `${viewer.name}'s page received hand ${h.hand_number} over the network (${messages.length} messages)`);
  assert.ok(messages.some((m) => m.path.endsWith("/Watch")), `${viewer.name} watched the table`);
  assert.deepEqual(networkLeaks(messages, other, /\/GetHandHistory$/), [], `${viewer.name}'s network responses`);
  // The check looked at real data: the other seat's face-up cards did arrive.
  const seen = new Set(messages.filter((m) => !m.path.endsWith("/GetHandHistory")).flatMap((m) => [...strings(m.json)].map(([, v]) => v)).filter((v) => other.publicAt.has(v)));
  assert.ok(seen.size >= 13, `${viewer.name} saw ${seen.size} of the other seat's cards face up`);
  for (const m of all.filter((x) => x.path.endsWith("/GetHandHistory"))) {
    assert.ok(m.at >= h.settled_at_ms || m.hand !== h.hand_number, "a hand history is read only after its hand is over");
  }
  const snaps = viewer.snapshots.filter((s) => s.hand === h.hand_number);
  assert.ok(snaps.length >= 5, `${viewer.name}: ${snaps.length} DOM snapshots of hand ${h.hand_number}`);
  for (const snap of snaps) assert.deepEqual(domLeaks(snap, other, snap.at >= h.settled_at_ms), [], `${viewer.name}'s page`);
}

/** The page talked only to its own origin, under its Content-Security-Policy with nothing
 *  blocked, and keeps nothing but its seat in sessionStorage. */
export async function checkOwnOriginAndStorage(viewer: Player, tableId: string, otherToken: string): Promise<void> {
  assert.deepEqual(viewer.responses.filter((url) => !url.startsWith(viewer.origin)), [], `${viewer.name}'s page talked only to its own origin`);
  const page = await viewer.page.request.get(viewer.origin + "/");
  assert.match(page.headers()["content-security-policy"] ?? "", /frame-ancestors 'none'/, "the page is served with its policy");
  const blocked = await viewer.page.evaluate(() => (window as unknown as { ofcBlocked: string[] }).ofcBlocked);
  assert.deepEqual(blocked, [], `${viewer.name}'s page needed nothing its policy blocks`);
  const stored = await viewer.page.evaluate(() => ({ session: { ...sessionStorage }, local: { ...localStorage }, cookie: document.cookie }));
  assert.deepEqual(Object.keys(stored.session), [`ofc.seat.${tableId}`]);
  assert.deepEqual(stored.local, {});
  assert.equal(stored.cookie, "");
  const everything = viewer.log.flatMap(messagesOf).map((m) => JSON.stringify(m.json)).join("\n");
  assert.ok(!everything.includes(otherToken), `${viewer.name} never received the other seat's token`);
}

/** Table affinity: each of the page's TableService calls but CreateTable carried the table's
 *  id as x-ofc-table-id (the header deploy/'s Envoy routes by). */
export function checkRouting(viewer: Player, tableId: string): void {
  const calls = viewer.log.filter((r) => r.path.startsWith("/ofcpoker.v1.TableService/") && !r.path.endsWith("/CreateTable"));
  assert.ok(calls.some((r) => r.path.endsWith("/Watch")) && calls.some((r) => r.path.endsWith("/PlaceCards")), `${viewer.name} watched and moved`);
  const unrouted = calls.filter((r) => r.tableIdHeader !== tableId).map((r) => `${r.path} (${JSON.stringify(r.tableIdHeader)})`);
  assert.deepEqual(unrouted, [], `${viewer.name}'s calls about the table named it in x-ofc-table-id`);
}

export async function seatToken(p: Player, tableId: string): Promise<string> {
  const raw = await p.page.evaluate((k) => sessionStorage.getItem(k), `ofc.seat.${tableId}`);
  return (JSON.parse(raw!) as { token: string }).token;
}

export async function waitVerified(players: readonly Player[]): Promise<void> {
  for (const p of players) {
    await p.page.waitForSelector("[data-testid=deal-verified]", { timeout: 30_000 });
    assert.equal(await p.page.locator("[data-testid=deal-not-verified]").count(), 0);
  }
}
