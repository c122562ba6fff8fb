// One player in two tabs of the browser: one tab plays the turn the other still shows.
//
//   OFC_WEB_URL=http://127.0.0.1:8080 [OFC_API_KEY=...] node --test .test-build/browser/two-tabs.e2e.mjs
//
// (tests/web/test_browser_table.py builds and runs it against a fresh server.) Ann's second
// tab (her seat token copied into its session, as a duplicated tab has it) hears nothing of
// the table's events (its Watch held), so it still shows her batch after her first tab
// played it. Its own try is refused: the page reads the table again and says, in a player's
// words, that the turn was played first; once the table moves on, the notice is gone.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { Route } from "playwright-core";
import { launch, player, shot } from "./harness";
import { myTurn, playBatch, playingTable } from "./play";

test("a turn played in another tab: a notice in the player's words, cleared as the table moves on", async () => {
  const browser = await launch();
  const ann = await player(browser, "ann", { width: 1280, height: 900 });
  const bob = await player(browser, "bob", { width: 1280, height: 900 });
  const second = await ann.context.newPage();
  try {
    const tableId = await playingTable(ann, bob);
    const started = Date.now();
    while (!(await myTurn(ann))) {
      assert.ok(Date.now() - started < 60_000, "ann's turn comes");
      if (await myTurn(bob)) await playBatch(bob, "click");
      else await ann.page.waitForTimeout(100);
    }

    // The second tab: her session, its event stream held (it never hears a move).
    const session = await ann.page.evaluate(() => ({ ...sessionStorage }));
    await second.addInitScript((entries) => {
      for (const [k, v] of Object.entries(entries)) sessionStorage.setItem(k, v);
    }, session);
    const held: Route[] = [];
    await second.route("**/ofcpoker.v1.TableService/Watch", (route) => void held.push(route));
    await second.goto(`${ann.origin}/?table=${encodeURIComponent(tableId)}`);
    await second.waitForSelector("[data-testid=pending]", { timeout: 20_000 });

    await playBatch(ann, "click"); // the first tab plays the turn
    const cards = await second.$$eval("[data-testid=pending] .hand-cards [data-card]", (els) => els.map((e) => (e as HTMLElement).dataset.card!));
    for (const card of cards) {
      await second.click(`#card-${card}`);
      for (const row of ["bottom", "middle", "top"]) {
        if (await second.locator(`#target-${row}:not([disabled])`).count()) {
          await second.click(`#target-${row}`);
          break;
        }
      }
    }
    await second.click("#confirm");
    await second.waitForSelector("[data-testid=error]", { timeout: 20_000 });
    const notice = (await second.textContent("[data-testid=error]"))!;
    assert.match(notice, /this turn was played first/);
    assert.doesNotMatch(notice, /STALE_VERSION/, "the player's words, not the service's");
    assert.equal(await second.locator("[data-testid=pending]").count(), 0, "read again: not her turn");
    await second.screenshot({ path: `${process.env.OFC_WEB_ARTIFACTS ?? "artifacts"}/two-tabs-1-played-first.png` });

    // Its stream comes back and the table moves on (bob plays): the notice is gone.
    await second.unroute("**/ofcpoker.v1.TableService/Watch");
    for (const route of held.splice(0)) await route.continue().catch(() => undefined); // (one the page gave up)
    while (!(await myTurn(bob))) await bob.page.waitForTimeout(100);
    await playBatch(bob, "click");
    await second.waitForSelector("[data-testid=error]", { state: "detached", timeout: 20_000 });
    await shot(ann, "two-tabs-2-first-tab");
  } catch (error) {
    await second.screenshot({ path: `${process.env.OFC_WEB_ARTIFACTS ?? "artifacts"}/failure-two-tabs.png` }).catch(() => undefined);
    throw error;
  } finally {
    await ann.close();
    await bob.close();
    await browser.close();
  }
});
