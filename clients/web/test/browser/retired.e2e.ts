// A page watching a quiet table while the service retires its connections for their age.
//
//   OFC_WEB_URL=http://127.0.0.1:8080 node --test .test-build/browser/retired.e2e.mjs
//
// (tests/web/test_browser_table.py runs it against a server whose HTTP port retires a
// connection after 1.5 s and a grace of 0.5 s: OFC_MAX_CONNECTION_AGE_SECONDS.) The service
// ends the page's Watch with UNAVAILABLE, CONNECTION_RETIRED each time, on purpose and
// itself well: the page reopens it at once after its last event, says nothing of a lost
// connection, and shows the next change as it happens.

import assert from "node:assert/strict";
import { test } from "node:test";
import { announced, launch, player, shot } from "./harness";
import { createTable, tables } from "./play";

const RETIREMENTS_MS = 7_000; // three retirements or more of the page's stream
const SHOWN_MS = 3_000; // a change reaches the page over its stream, not its 20 s check

test("a page whose connections are retired says nothing of it and misses nothing", async () => {
  const browser = await launch();
  const spectator = await player(browser, "spectator", { width: 1280, height: 900 });
  const page = spectator.page;
  try {
    const { tableId } = await createTable(spectator, { preset: "pineapple", turnSeconds: 60, playersSeeds: false, clientSeed: "retired e2e" });
    await page.waitForSelector("[data-testid=seat-0]");
    await page.waitForTimeout(RETIREMENTS_MS); // nothing happens at the table meanwhile
    const before = (await tables.getTable({ tableId })).table!;
    await tables.joinSeat({ tableId, seat: 0, playerId: "carol", expectedVersion: before.version, requestId: crypto.randomUUID() });
    const joined = Date.now();
    await page.waitForFunction(() => document.querySelector("[data-testid=seat-0]")?.textContent?.includes("carol"), undefined, { timeout: SHOWN_MS });
    const said = await announced(spectator);
    assert.equal(said.filter((line) => line.startsWith("Connection lost")).length, 0, said.join("\n"));
    assert.equal(await page.locator("[data-testid=connection]").count(), 0, "no connection notice");
    assert.equal(await page.locator("[data-testid=error]").count(), 0, "no error banner");
    const watches = spectator.log.filter((r) => r.path.endsWith(".TableService/Watch")).length;
    assert.ok(watches >= 4, `the stream was opened ${watches} times: retired ${watches - 1} (${spectator.log.map((r) => r.path).join(" ")})`);
    console.log(`shown ${Date.now() - joined} ms after the join; the Watch opened ${watches} times`);
  } catch (error) {
    await shot(spectator, "failure-retired").catch(() => undefined);
    throw error;
  } finally {
    await spectator.close();
    await browser.close();
  }
});
