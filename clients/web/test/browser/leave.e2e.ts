// A player leaves after the hand from the browser.
//
//   OFC_WEB_URL=http://127.0.0.1:8080 [OFC_API_KEY=...] node --test .test-build/browser/leave.e2e.mjs
//
// (tests/web/test_browser_table.py builds and runs it against a fresh server.) Ann and Bob
// play a Classic hand (no Fantasyland, so no hand can be owed). During it Ann asks to leave
// after the hand, changes her mind, and asks again; Bob's page says so. The hand's last move
// vacates her seat in the same commit: her page drops its seat token and watches on as a
// spectator, with no error, and Bob, alone, cannot deal another hand to keep her there.

import assert from "node:assert/strict";
import { test } from "node:test";
import { launch, player, shot } from "./harness";
import { myTurn, playBatch, playingTable, tables } from "./play";

test("a player who leaves after the hand is gone when it ends", async () => {
  const browser = await launch();
  const ann = await player(browser, "ann", { width: 1280, height: 900 });
  const bob = await player(browser, "bob", { width: 1280, height: 900 });
  try {
    const tableId = await playingTable(ann, bob, { fantasylandEntry: { entries: [] } });

    // Mid-hand: "Leave after this hand", then "Stay" (each double-clicked: one change of
    // the table each, as a seat has 4 a hand), then leave after the hand again.
    const version = async (): Promise<bigint> => (await tables.getTable({ tableId })).table!.version;
    let before = await version();
    await ann.page.dblclick("text=Leave after this hand");
    await ann.page.waitForSelector("[data-testid=leaving]");
    await bob.page.waitForFunction(() => document.body.innerText.includes("ann leaves after this hand"));
    assert.equal(await version(), before + 1n, "a double click is one change");
    await shot(ann, "leave-1-leaving");
    before = await version();
    await ann.page.dblclick("#stay");
    await ann.page.waitForSelector("[data-testid=leaving]", { state: "detached" });
    await bob.page.waitForFunction(() => document.body.innerText.includes("ann stays at the table"));
    assert.equal(await version(), before + 1n, "a double click is one change");
    await ann.page.click("text=Leave after this hand");
    await ann.page.waitForSelector("[data-testid=leaving]");
    const token = await ann.page.evaluate((id) => sessionStorage.getItem(`ofc.seat.${id}`), tableId);
    assert.ok(token, "the seat token is kept while the hand is played out");

    const started = Date.now();
    while ((await bob.page.locator("[data-testid=settlement]").count()) === 0) {
      assert.ok(Date.now() - started < 120_000, "the hand ends");
      if (await myTurn(ann)) await playBatch(ann, "click");
      else if (await myTurn(bob)) await playBatch(bob, "click");
      else await ann.page.waitForTimeout(100);
    }

    // Her seat went with the hand's last move: her page is a spectator's, without an error.
    await ann.page.waitForSelector("#sit-0", { timeout: 20_000 });
    await ann.page.waitForFunction(() => document.body.innerText.includes("ann left seat 1"));
    assert.equal(await ann.page.locator("[data-testid=error]").count(), 0, "no error on her page");
    assert.equal(await ann.page.locator("[data-testid=leaving]").count(), 0);
    const kept = await ann.page.evaluate((id) => sessionStorage.getItem(`ofc.seat.${id}`), tableId);
    assert.equal(kept, null, "the seat token is gone with the seat");
    await shot(ann, "leave-2-left");
    // Bob, alone, cannot start the next hand: the seat was empty before he could try.
    await bob.page.waitForFunction(() => (document.querySelector("#start-hand") as HTMLButtonElement | null)?.disabled === true);
    const table = (await tables.getTable({ tableId })).table!;
    assert.deepEqual(table.seats.map((s) => s.playerId), ["", "bob"]);
    assert.equal(table.hand?.over, true);
  } catch (error) {
    await shot(ann, "failure-leave").catch(() => undefined);
    throw error;
  } finally {
    await ann.close();
    await bob.close();
    await browser.close();
  }
});
