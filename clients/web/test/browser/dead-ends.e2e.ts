// Pages that could leave a player stuck with nothing to do: each says what happened and
// offers the way on.
//
//   OFC_WEB_URL=http://127.0.0.1:8080 [OFC_API_KEY=...] node --test .test-build/browser/dead-ends.e2e.mjs
//
// (tests/web/test_browser_table.py builds and runs it against a fresh server.) Ann sits at
// a table in one tab and leaves the seat from a second tab of hers: the first tab says, on
// the page, that she no longer holds a seat. A join link to a seat Bob took, and one to a
// seat the table lacks, say so instead of showing no form. A table that is not there says
// so in words and links back to the lobby.

import assert from "node:assert/strict";
import { test } from "node:test";
import { launch, player, shot } from "./harness";
import { sitDown, tables } from "./play";

test("a seat left from another tab, a taken seat's join link, a missing table: each said, with a way on", async () => {
  const browser = await launch();
  const ann = await player(browser, "ann", { width: 1280, height: 900 });
  const carol = await player(browser, "carol", { width: 1280, height: 900 });
  const second = await ann.context.newPage();
  try {
    const key = process.env.OFC_API_KEY;
    const { tableId } = await tables.createTable(
      { seats: 2, ruleset: { preset: "classic" }, turnTimeLimitMs: 120_000, requestId: crypto.randomUUID() },
      key ? { headers: { "x-ofc-api-key": key } } : {},
    );
    const table = `${ann.origin}/?table=${encodeURIComponent(tableId)}`;
    await ann.page.goto(table);
    await ann.page.waitForSelector("#sit-0");
    await sitDown(ann, "ann", 0);
    await tables.joinSeat({ tableId, seat: 1, playerId: "bob", expectedVersion: (await tables.getTable({ tableId })).table!.version, requestId: crypto.randomUUID() });

    // Her second tab (her session copied, as a duplicated tab has it) leaves the seat.
    const session = await ann.page.evaluate(() => ({ ...sessionStorage }));
    await second.addInitScript((entries) => {
      for (const [k, v] of Object.entries(entries)) sessionStorage.setItem(k, v);
    }, session);
    await second.goto(table);
    await second.waitForSelector("#leave");
    await second.click("#leave");
    await second.waitForSelector("#sit-0");
    await ann.page.waitForSelector("[data-testid=notice]", { timeout: 20_000 });
    assert.match((await ann.page.textContent("[data-testid=notice]"))!, /(left the table|no longer hold a seat here): you watch as a spectator/);
    assert.equal(await ann.page.locator("[data-testid=error]").count(), 0, "a notice, not an error");
    await ann.page.waitForSelector("#sit-0");
    await shot(ann, "dead-ends-1-left-elsewhere");
    // Sitting again ends the notice.
    await sitDown(ann, "ann", 0);
    assert.equal(await ann.page.locator("[data-testid=notice]").count(), 0, "seated again: no notice");

    // A join link to Bob's seat, and one to a seat the table lacks.
    await carol.page.goto(`${table}&seat=1`);
    await carol.page.waitForSelector("[data-testid=notice]", { timeout: 20_000 });
    assert.match((await carol.page.textContent("[data-testid=notice]"))!, /^Seat 2 is taken \(by bob\): choose an empty seat/);
    assert.equal(await carol.page.locator("[data-testid=join-form]").count(), 0);
    await shot(carol, "dead-ends-2-seat-taken");
    await carol.page.goto(`${table}&seat=7`);
    await carol.page.waitForSelector("[data-testid=notice]", { timeout: 20_000 });
    assert.match((await carol.page.textContent("[data-testid=notice]"))!, /^This table has no seat 8: choose one of its 2 seats/);

    // A table that is not there: said in words, with the way back to the lobby.
    await carol.page.goto(`${carol.origin}/?table=no-such-table`);
    await carol.page.waitForSelector("[data-testid=error]", { timeout: 20_000 });
    assert.match((await carol.page.textContent("[data-testid=error]"))!, /^There is no table no-such-table here/);
    await shot(carol, "dead-ends-3-no-table");
    await carol.page.click("[data-testid=lobby-link]");
    await carol.page.waitForSelector("#create-table", { timeout: 20_000 });
    assert.equal(new URL(carol.page.url()).search, "", "the lobby's address");
  } catch (error) {
    await shot(ann, "failure-dead-ends-ann").catch(() => undefined);
    await shot(carol, "failure-dead-ends-carol").catch(() => undefined);
    throw error;
  } finally {
    await ann.close();
    await carol.close();
    await browser.close();
  }
});
