// Browser test plumbing: Debian's chromium through playwright-core, one recording proxy per
// player (the player's page talks only to it), screenshots, DOM snapshots, and reading the
// page's settlement table back.

import { mkdirSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import type { DomSnapshot, Recorded } from "./leaks";

export const WEB_URL = required("OFC_WEB_URL").replace(/\/$/, "");
export const ARTIFACTS = process.env.OFC_WEB_ARTIFACTS ?? join(process.cwd(), "artifacts");
const CHROMIUM = process.env.OFC_CHROMIUM ?? "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
];

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: the service's web URL (e.g. http://127.0.0.1:8080)`);
  return value;
}

/** Chromium with a fresh profile (playwright-core makes a new user-data-dir per launch). */
export async function launch(): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  return await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true, timeout: 60_000 });
}

/** A local origin that forwards to the service and records every response it passes on. */
export async function recordingProxy(): Promise<{ origin: string; log: Recorded[]; cut: (down: boolean) => void; lose: (path: string, answers: number) => void; close: () => Promise<void> }> {
  const upstream = new URL(WEB_URL);
  const log: Recorded[] = [];
  let down = false; // the service "gone": every connection dropped, none answered
  const losing = new Map<string, number>(); // path suffix -> answers still to lose
  const server = http.createServer((req, res) => {
    if (down) {
      req.socket.destroy();
      return;
    }
    const up = http.request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } },
      (upRes) => {
        const suffix = [...losing.keys()].find((p) => req.url?.endsWith(p));
        if (suffix !== undefined && losing.get(suffix)! > 0) {
          // The service answered; the answer is lost on the way (the page's fetch fails).
          losing.set(suffix, losing.get(suffix)! - 1);
          upRes.resume();
          req.socket.destroy();
          return;
        }
        const h = upRes.headers;
        const encoding = String(h["content-encoding"] ?? h["connect-content-encoding"] ?? "").replace("identity", "");
        const record: Recorded = { path: req.url ?? "", tableIdHeader: String(req.headers["x-ofc-table-id"] ?? ""), seatTokenHeader: String(req.headers["x-ofc-seat-token"] ?? ""), contentType: String(h["content-type"] ?? ""), encoding, chunks: [] };
        log.push(record);
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.on("data", (data: Buffer) => {
          record.chunks.push({ at: Date.now(), data: new Uint8Array(data) });
          res.write(data);
        });
        upRes.on("end", () => res.end());
        upRes.on("error", () => res.destroy());
      },
    );
    up.on("error", () => res.destroy());
    res.on("close", () => up.destroy()); // the page cancelled (a Watch it no longer needs)
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    log,
    cut: (value: boolean) => {
      down = value;
      if (value) server.closeAllConnections();
    },
    lose: (path: string, answers: number) => {
      losing.set(path, answers);
    },
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

export interface Player {
  name: string;
  context: BrowserContext;
  page: Page;
  origin: string;
  log: Recorded[];
  snapshots: DomSnapshot[];
  /** URLs of every response the page got: all must be of its own origin. */
  responses: string[];
  /** Drop every connection to the service and answer none (true) until told otherwise. */
  cut: (down: boolean) => void;
  /** Lose the next `answers` answers of calls whose path ends with `path`, after the
   *  service gave them. */
  lose: (path: string, answers: number) => void;
  close: () => Promise<void>;
}

export async function player(browser: Browser, name: string, viewport: { width: number; height: number }, mobile = false): Promise<Player> {
  const proxy = await recordingProxy();
  const context = await browser.newContext({ viewport, isMobile: mobile, hasTouch: mobile, deviceScaleFactor: 1 });
  // Anything the page's Content-Security-Policy blocked (the page must need nothing it
  // forbids), and everything its live region announced, in order.
  await context.addInitScript(() => {
    const blocked: string[] = [];
    const announced: string[] = [];
    Object.assign(window, { ofcBlocked: blocked, ofcAnnounced: announced });
    document.addEventListener("securitypolicyviolation", (e) => { blocked.push(`${e.effectiveDirective} ${e.blockedURI}`); });
    new MutationObserver(() => {
      const text = document.getElementById("announcer")?.textContent ?? "";
      if (text && text !== announced[announced.length - 1]) announced.push(text);
    }).observe(document, { subtree: true, childList: true, characterData: true });
  });
  const page = await context.newPage();
  const responses: string[] = [];
  page.on("response", (r) => responses.push(r.url()));
  page.on("pageerror", (e) => { console.error(`[${name}] page error: ${e.message}`); });
  page.on("console", (m) => { if (m.type() === "error") console.error(`[${name}] console: ${m.text()}`); });
  return {
    name, context, page, origin: proxy.origin, log: proxy.log, snapshots: [], responses, cut: proxy.cut, lose: proxy.lose,
    close: async () => { await context.close(); await proxy.close(); },
  };
}

/** What the page's live region (#announcer) said so far, in order. */
export async function announced(p: Player): Promise<string[]> {
  return await p.page.evaluate(() => (window as unknown as { ofcAnnounced: string[] }).ofcAnnounced);
}

export async function snapshot(p: Player): Promise<DomSnapshot> {
  const snap = await p.page.evaluate(() => {
    const at = Date.now();
    const shown = document.querySelector<HTMLElement>("[data-hand]")?.dataset.hand;
    const hand = shown ? Number(shown) : null;
    const cards = Array.from(document.querySelectorAll<HTMLElement>("[data-card]"), (el) => {
      const board = el.closest<HTMLElement>("[data-testid^='board-']")?.dataset.testid;
      return { card: el.dataset.card ?? "", board: board ? Number(board.slice("board-".length)) : null };
    });
    return { at, hand, cards, text: document.body.innerText + " " + document.documentElement.outerHTML };
  });
  p.snapshots.push(snap);
  return snap;
}

export async function shot(p: Player, name: string): Promise<void> {
  await p.page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** The number a cell shows: "+3" → 3, "-12" → -12. */
export function shownNumber(text: string): number {
  const t = text.trim();
  if (!/^[+-]?\d+$/.test(t)) throw new Error(`not a number on the page: ${JSON.stringify(text)}`);
  return Number(t);
}

export interface ShownSettlement {
  players: Record<string, { fouled: boolean; royalties: number[]; points: number; units: number }>;
  pairs: Record<string, Record<string, number>>;
}

/** The settlement as the page shows it, read back from its tables. */
export async function shownSettlement(page: Page): Promise<ShownSettlement> {
  return await page.evaluate(() => {
    const num = (t: string): number => Number(t.trim().replace(/^\+/, ""));
    const out: { players: Record<string, { fouled: boolean; royalties: number[]; points: number; units: number }>; pairs: Record<string, Record<string, number>> } = { players: {}, pairs: {} };
    for (const row of document.querySelectorAll<HTMLElement>("[data-testid^='settlement-player-']")) {
      const f = (name: string): string => row.querySelector(`[data-field='${name}']`)?.textContent ?? "";
      out.players[row.dataset.testid!.slice("settlement-player-".length)] = {
        fouled: row.querySelector("[data-field='fouled']") !== null,
        royalties: [num(f("royalty-top")), num(f("royalty-middle")), num(f("royalty-bottom")), num(f("royalties"))],
        points: num(f("points")),
        units: num(f("units")),
      };
    }
    for (const row of document.querySelectorAll<HTMLElement>("[data-testid^='settlement-pair-']")) {
      const cells: Record<string, number> = {};
      for (const cell of row.querySelectorAll<HTMLElement>("[data-field]")) {
        cells[cell.dataset.field!] = cell.dataset.value !== undefined ? Number(cell.dataset.value) : num(cell.textContent ?? "");
      }
      out.pairs[row.dataset.testid!.slice("settlement-pair-".length)] = cells;
    }
    return out;
  });
}
