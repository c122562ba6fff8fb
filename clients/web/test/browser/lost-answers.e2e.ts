// Answers lost on the way back to a page: the service applied the call, the page never heard.
//
//   OFC_WEB_URL=http://127.0.0.1:8080 [OFC_API_KEY=...] node --test .test-build/browser/lost-answers.e2e.mjs
//
// (tests/web/test_browser_table.py builds and runs it against a fresh server.) The page's
// proxy loses the answers of its calls after the service gave them. A join whose answer is
// lost once is sent again under its request id and gets its seat token; a join that stays
// unanswered through every retry took the seat all the same: the page reads the table, and
// when it shows the page's player in it, sends that join again, as it was, until it gets
// the token back. A table
// created from the lobby with its answer lost is the one table, not two.

import assert from "node:assert/strict";
import { test } from "node:test";
import { launch, player, shot } from "./harness";
import { createTable, tables } from "./play";

test("lost answers: each request applied once, its seat token recovered", async () => {
  const browser = await launch();
  const erin = await player(browser, "erin", { width: 1280, height: 900 });
  const page = erin.page;
  try {
    erin.lose("/CreateTable", 1);
    const { tableId } = await createTable(erin, { preset: "pineapple", turnSeconds: 60, playersSeeds: false, clientSeed: "lost answers e2e" });
    const creates = erin.log.filter((r) => r.path.endsWith("/CreateTable"));
    assert.equal(creates.length, 1, "the lost answer's call is not in the log; its retry is");

    // One lost answer: the retry, under the same request id, gets the first answer.
    erin.lose("/JoinSeat", 1);
    await page.click("#sit-0");
    await page.fill("#player-name", "erin");
    await page.click("#join-button");
    await page.waitForSelector("[data-testid=start-hand]", { timeout: 20_000 });
    await page.click("text=Leave seat");
    await page.waitForSelector("#sit-0", { timeout: 20_000 });

    // Every answer of the join lost for a while: the page's retries give up (0.25 + 0.5 + 1
    // + 2 + 4 s apart), the seat taken all the same. The page reads the table, sees erin at
    // seat 2 and sends the join again, as it was, until an answer comes: its token.
    erin.lose("/JoinSeat", 1_000);
    await page.click("#sit-1");
    await page.fill("#player-name", "erin");
    await page.click("#join-button");
    await page.waitForTimeout(9_000);
    assert.equal(await page.locator("[data-testid=start-hand]").count(), 0, "no answer yet: not seated");
    assert.equal((await tables.getTable({ tableId })).table!.seats[1]!.playerId, "erin", "the seat was taken");
    erin.lose("/JoinSeat", 0);
    await page.waitForSelector("[data-testid=start-hand]", { timeout: 30_000 });
    assert.equal(await page.locator("[data-testid=error]").count(), 0, "no error left once seated");
    const token = await page.evaluate((id) => sessionStorage.getItem(`ofc.seat.${id}`), tableId);
    assert.ok(token, "the seat's token is kept again");
    await shot(erin, "lost-answers-seat-recovered");
  } catch (error) {
    await shot(erin, "failure-lost-answers").catch(() => undefined);
    throw error;
  } finally {
    await erin.close();
    await browser.close();
  }
});
