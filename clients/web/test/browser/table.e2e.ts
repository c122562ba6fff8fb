// Two people play a complete Pineapple hand in Chromium against a live service.
//
//   OFC_WEB_URL=http://127.0.0.1:8080 [OFC_API_KEY=...] node --test .test-build/browser/table.e2e.mjs
//
// (tests/web/test_browser_table.py builds and runs it against a fresh server.) Alice, on a
// desktop-sized page, creates the table (players add seeds), sends Bob the join link of seat
// 2, and plays with the keyboard, the mouse and drag and drop; Bob, on a phone-sized page,
// lets his clock run out once. Then: the settlement both pages show is SettleHand's for the
// hand's final boards, both pages say "Deal verified", and neither page's network responses
// nor DOM ever held the other's pending cards or discards.

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { announced, ARTIFACTS, launch, player, shot, snapshot } from "./harness";
import {
  checkNoLeaks, checkOwnOriginAndStorage, checkRouting, checkSettlement, createTable, history, myTurn, playBatch,
  seatToken, sitDown, type Style, tables, typeOperatorKey, waitVerified,
} from "./play";

const TURN_SECONDS = Number(process.env.OFC_WEB_TURN_SECONDS ?? 20); // every other turn is played within it: room for a loaded CI machine (10 s was a bet)
const TIMEOUT_STREET = 2; // Bob's clock runs out on this street (0-based)

test("two browsers play a Pineapple hand: settlement, deal verified, nothing hidden leaks", async () => {
  const browser = await launch();
  const alice = await player(browser, "alice", { width: 1280, height: 900 });
  const bob = await player(browser, "bob", { width: 390, height: 844 }, true);
  try {
    // ---- Alice creates the table and sits down; Bob joins by his link.
    const { tableId, joinLink } = await createTable(alice, { preset: "pineapple", turnSeconds: TURN_SECONDS, playersSeeds: true, clientSeed: "browser e2e" });
    await sitDown(alice, "alice", 0);
    // Seated, Alice can still hand out the empty seat's link (and not sit there herself).
    assert.equal(await alice.page.getAttribute("[data-testid=join-link-1]", "href"), joinLink.href);
    assert.equal(await alice.page.locator("#sit-1").count(), 0);
    await alice.page.fill("#own-seed", "alice's own seed");
    await alice.page.click("#set-seed");
    await bob.page.goto(`${bob.origin}${joinLink.pathname}${joinLink.search}`);
    await bob.page.waitForSelector("[data-testid=join-form]");
    await shot(bob, "02-join-link-phone");
    await bob.page.fill("#player-name", "   "); // only spaces: the page says what is missing
    await bob.page.click("#join-button");
    assert.match((await bob.page.textContent("[data-testid=error]", { timeout: 5_000 }))!, /type a name/);
    await sitDown(bob, "bob", 1, joinLink);
    await alice.page.waitForFunction(() => document.querySelector("[data-testid=seat-1]")?.textContent?.includes("bob"));
    await shot(alice, "02-seated");
    const view = await tables.getTable({ tableId });
    assert.equal(new TextDecoder().decode(view.table!.seats[0]!.clientSeed), "alice's own seed");

    // ---- The hand. Alice deals; they take turns; Bob lets one street run out.
    const started = Date.now();
    await alice.page.click("#start-hand");
    const styles: Style[] = ["keyboard", "click", "drag", "click", "click"];
    const street = { alice: 0, bob: 0 };
    let timedOut = false;
    while (Date.now() - started < 180_000) {
      for (const p of [alice, bob]) await snapshot(p);
      if ((await alice.page.locator("[data-testid=settlement]").count()) && (await bob.page.locator("[data-testid=settlement]").count())) break;
      if (await myTurn(alice)) {
        const s = street.alice++;
        await playBatch(alice, styles[s]!, s === 0 ? "03-first-street-targets" : s === 1 ? "04-pineapple-discard" : undefined);
      } else if (await myTurn(bob)) {
        const s = street.bob++;
        if (s !== TIMEOUT_STREET) {
          await playBatch(bob, "click", s === 0 ? "03-first-street-phone" : undefined);
          continue;
        }
        // Bob waits: both pages count his clock down, then show the default move.
        await alice.page.waitForSelector("[data-testid=countdown-1]");
        await shot(alice, "05-countdown");
        await shot(bob, "05-countdown-phone");
        await bob.page.waitForSelector("[data-testid=timeout-1]", { timeout: TURN_SECONDS * 1000 + 15_000 });
        await alice.page.waitForSelector("[data-testid=timeout-1]", { timeout: 15_000 });
        for (const p of [alice, bob]) await snapshot(p);
        const notice = (await bob.page.textContent("[data-testid=timeout-1]"))!;
        assert.match(notice, /time ran out\. The table played the default move: .+ on (top|middle|bottom)/);
        assert.match(notice, /discarded (10|[2-9JQKA])[♣♦♥♠]/, "Bob's own page names the card discarded for him");
        assert.match((await alice.page.textContent("[data-testid=timeout-1]"))!, /discarded a card face down/, "Alice's page does not name it");
        await shot(alice, "06-timeout");
        timedOut = true;
      } else {
        await alice.page.waitForTimeout(100);
      }
    }
    assert.ok(timedOut, "Bob's clock ran out once");
    await waitVerified([alice, bob]);
    await shot(alice, "07-settlement-verified");
    await shot(bob, "07-settlement-verified-phone");
    await alice.page.locator("[data-testid=settlement]").screenshot({ path: join(ARTIFACTS, "08-settlement.png") });

    // ---- What the service says happened, against what the pages showed and received.
    const h = await history(tableId, 1n);
    writeFileSync(join(ARTIFACTS, "hand-1.json"), JSON.stringify(h, null, 1));
    assert.deepEqual(h.actions.filter((a) => a.type === "timeout").map((a) => a.seat), [1], "exactly one timeout, Bob's");
    await checkSettlement([alice, bob], h);
    checkNoLeaks(alice, 1, h);
    checkNoLeaks(bob, 0, h);
    checkRouting(alice, tableId);
    checkRouting(bob, tableId);
    await checkOwnOriginAndStorage(alice, tableId, await seatToken(bob, tableId));
    await checkOwnOriginAndStorage(bob, tableId, await seatToken(alice, tableId));

    // ---- What the live regions said: each player's turns; no lost connection (joining a
    // seat reopens the page's event stream, which is no loss).
    for (const p of [alice, bob]) {
      const said = await announced(p);
      assert.ok(said.some((t) => t.startsWith("Your turn: place")), `${p.name}'s turn announced: ${JSON.stringify(said)}`);
      assert.deepEqual(said.filter((t) => t.startsWith("Connection lost")), [], `${p.name}'s page never lost its connection`);
    }

    // ---- The service drops out under Bob's page: the page says its table may be stale, and
    // stops saying so once its event stream is back.
    bob.cut(true);
    await bob.page.waitForSelector("[data-testid=connection]", { timeout: 20_000 });
    assert.match((await bob.page.textContent("[data-testid=connection]"))!, /^Connection lost \(.+\); reconnecting…$/);
    await shot(bob, "09-connection-lost-phone");
    bob.cut(false);
    await bob.page.waitForSelector("[data-testid=connection]", { state: "detached", timeout: 20_000 });

    // ---- A table that is not there (it expired, or an in-memory service restarted): the page
    // says so and does not go on reopening its stream.
    await bob.page.goto(`${bob.origin}/?table=no-such-table`);
    await bob.page.waitForFunction(() => document.body.innerText.includes("There is no table no-such-table here"), undefined, { timeout: 20_000 });
    await bob.page.waitForTimeout(4_000);
    const watches = bob.log.filter((r) => r.path.endsWith("/Watch") && r.tableIdHeader === "no-such-table");
    assert.equal(watches.length, 1, "one Watch of a table that is not there, not one per backoff");
    // An id that can be no table's is said once too, not retried.
    const seen = bob.log.length;
    await bob.page.goto(`${bob.origin}/?table=a%20b`);
    await bob.page.waitForFunction(() => document.body.innerText.includes("INVALID_INPUT"), undefined, { timeout: 20_000 });
    await bob.page.waitForTimeout(4_000);
    const reads = bob.log.slice(seen).filter((r) => r.path.endsWith("/Watch") || r.path.endsWith("/GetTable"));
    assert.deepEqual(reads.map((r) => r.path.split("/").pop()).sort(), ["GetTable", "Watch"], "an id that is no table's is read once");

    // ---- Back to the lobby (the browser's back button: the page's own routing): a table made
    // there is sent without the seat token of the table left behind.
    await alice.page.goBack();
    await alice.page.waitForSelector("#create-table");
    await typeOperatorKey(alice.page);
    await alice.page.click("#create-table");
    await alice.page.waitForSelector("[data-testid=table-id]");
    const creations = alice.log.filter((r) => r.path.endsWith("/CreateTable"));
    assert.equal(creations.length, 2);
    assert.deepEqual(creations.map((r) => r.seatTokenHeader), ["", ""], "no seat token goes with CreateTable");

    // ---- A phone-width page fits its screen.
    const overflow = await bob.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `Bob's phone page scrolls sideways by ${overflow}px`);
    console.log(`hand played in ${((Date.now() - started) / 1000).toFixed(1)} s; screenshots in ${ARTIFACTS}`);
  } catch (error) {
    for (const p of [alice, bob]) await shot(p, `failure-${p.name}`).catch(() => undefined);
    throw error;
  } finally {
    await alice.close();
    await bob.close();
    await browser.close();
  }
});
