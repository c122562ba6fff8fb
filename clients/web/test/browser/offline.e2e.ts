// A page whose browser goes offline for a moment while the table changes.
//
//   OFC_WEB_URL=http://127.0.0.1:8080 [OFC_API_KEY=...] node --test .test-build/browser/offline.e2e.mjs
//
// (tests/web/test_browser_table.py builds and runs it against a fresh server.) A spectator's
// page watches a table; its browser goes offline (Chromium's own network emulation, not a
// proxy dropping connections) and a player sits down meanwhile. An event can still reach the
// page over the stream it already had open, while the table read that follows it cannot: the
// page must say its connection is lost, not show that failed read as an error of its own,
// and once the browser is back online it must catch up and stop saying so at once, not when
// its reconnect backoff or its silent-stream check (20 s) would have read the table.

import assert from "node:assert/strict";
import { test } from "node:test";
import { launch, player, shot } from "./harness";
import { createTable, tables } from "./play";

const CAUGHT_UP_MS = 10_000; // half the page's silent-stream check
// Down long enough for the page's reconnect backoff to reach its longest wait (5 s): a page
// that waited it out would catch up seconds late; one that reopens its stream when the
// browser says it is back online (and reads the table first) takes a round trip or two.
const DOWN_MS = 8_000;
const BACK_ONLINE_MS = 1_200; // seen: 25-40 ms; waiting out the backoff: 2 s and more

test("a page offline for a moment says its connection is lost, then catches up", async () => {
  const browser = await launch();
  const spectator = await player(browser, "spectator", { width: 1280, height: 900 });
  const page = spectator.page;
  try {
    const { tableId } = await createTable(spectator, { preset: "pineapple", turnSeconds: 60, playersSeeds: false, clientSeed: "offline e2e" });
    await page.waitForSelector("[data-testid=seat-0]");
    const before = (await tables.getTable({ tableId })).table!;

    await spectator.context.setOffline(true);
    await tables.joinSeat({ tableId, seat: 0, playerId: "carol", expectedVersion: before.version, requestId: crypto.randomUUID() });
    // The event may come over the open stream (then the page's read of the table fails) or
    // not at all until the stream is opened again: either way the page must not show a
    // failed read as an error, and must show carol once it is online.
    await page.waitForTimeout(3_000);
    await shot(spectator, "offline-1-while-offline");
    assert.equal(await page.locator("[data-testid=error]").count(), 0,
      `no error banner for a read the browser could not send: ${await page.locator("[data-testid=error]").textContent().catch(() => "")}`);

    await spectator.context.setOffline(false);
    const online = Date.now();
    await page.waitForFunction(() => document.querySelector("[data-testid=seat-0]")?.textContent?.includes("carol"), undefined, { timeout: CAUGHT_UP_MS });
    await page.waitForSelector("[data-testid=connection]", { state: "detached", timeout: CAUGHT_UP_MS });
    assert.equal(await page.locator("[data-testid=error]").count(), 0, "no error banner left once caught up");
    await shot(spectator, "offline-2-caught-up");

    console.log(`caught up ${Date.now() - online} ms after the browser was back online`);

    // Offline again, and this time the open stream is dropped too (the page's proxy cuts
    // every connection): the page retries, backing off, until the browser is back online,
    // which it must not wait out.
    await spectator.context.setOffline(true);
    spectator.cut(true);
    const seated = (await tables.getTable({ tableId })).table!;
    await tables.joinSeat({ tableId, seat: 1, playerId: "dave", expectedVersion: seated.version, requestId: crypto.randomUUID() });
    await page.waitForSelector("[data-testid=connection]", { timeout: DOWN_MS });
    await page.waitForTimeout(DOWN_MS);
    spectator.cut(false);
    await spectator.context.setOffline(false);
    const back = Date.now();
    await page.waitForFunction(() => document.querySelector("[data-testid=seat-1]")?.textContent?.includes("dave"), undefined, { timeout: BACK_ONLINE_MS });
    await page.waitForSelector("[data-testid=connection]", { state: "detached", timeout: BACK_ONLINE_MS });
    console.log(`caught up ${Date.now() - back} ms after the browser was back online, its stream dropped`);
  } catch (error) {
    await shot(spectator, "failure-offline").catch(() => undefined);
    throw error;
  } finally {
    await spectator.close();
    await browser.close();
  }
});
