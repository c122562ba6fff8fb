// A Fantasyland hand in Chromium: hand 1 is dealt from a server seed the test chose (the
// server's seed source is set by tests/web/test_browser_table.py), with which one seat earns
// Fantasyland by following the plan in OFC_WEB_PLAN; in hand 2 that seat's page asks the
// solver ("Suggest", RulesService.SolveFantasyland) and sets the suggested hand, face down on
// the other page until the hand ends, while the other seat plays street by street.

import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { ARTIFACTS, launch, type Player, player, shot, snapshot } from "./harness";
import {
  checkNoLeaks, checkSettlement, createTable, history, myTurn, type Plan, playBatch, rules,
  sitDown, waitVerified,
} from "./play";

interface FantasylandPlan {
  seat: number;
  fantasyland_cards: number;
  moves: Record<string, Plan>;
  client_seed: string;
}

const plan = JSON.parse(readFileSync(process.env.OFC_WEB_PLAN ?? "", "utf8")) as FantasylandPlan;

async function playHand(hand: number, players: Player[], planFor: (seat: number, street: number) => Plan | undefined, fantasyland?: (p: Player) => Promise<void>): Promise<void> {
  for (const p of players) await p.page.waitForSelector(`[data-hand="${hand}"]`);
  const streets: Record<number, number> = { 0: 0, 1: 0 };
  const started = Date.now();
  while (Date.now() - started < 180_000) {
    for (const p of players) await snapshot(p);
    if ((await Promise.all(players.map((p) => p.page.locator("[data-testid=settlement]").count()))).every((n) => n > 0)) return;
    let moved = false;
    for (const [seat, p] of players.entries()) {
      if (!(await myTurn(p))) continue;
      if (fantasyland && (await p.page.locator("#suggest").count())) {
        await fantasyland(p);
      } else {
        const street = streets[seat]!;
        streets[seat] = street + 1;
        await playBatch(p, "click", undefined, planFor(seat, street));
      }
      moved = true;
    }
    if (!moved) await players[0]!.page.waitForTimeout(100);
  }
  throw new Error("the hand did not finish in 3 minutes");
}

test("a Fantasyland hand is set with the solver's suggestion and stays face down until the end", async () => {
  const browser = await launch();
  const players = [await player(browser, "ann", { width: 1280, height: 900 }), await player(browser, "ben", { width: 1024, height: 800 })];
  const [host, guest] = players as [Player, Player];
  const flSeat = plan.seat;
  const other = 1 - flSeat;
  try {
    const { tableId, joinLink } = await createTable(host, { preset: "pineapple", turnSeconds: 60, playersSeeds: false, clientSeed: plan.client_seed });
    await sitDown(host, "ann", 0);
    await sitDown(guest, "ben", 1, joinLink);

    // ---- Hand 1: the plan's seat earns Fantasyland.
    await host.page.click("#start-hand");
    await playHand(1, players, (seat, street) => (seat === flSeat ? plan.moves[String(street)] : undefined));
    await waitVerified(players);
    const h1 = await history(tableId, 1n);
    assert.deepEqual(h1.boards.find((b) => b.seat === flSeat)?.discards.length, 4);
    await players[flSeat]!.page.waitForFunction((s) => document.querySelector(`[data-testid=seat-${s}]`)?.textContent?.includes(`Fantasyland next`), flSeat);

    // ---- Hand 2: the Fantasyland seat asks for a suggestion and sets it.
    await host.page.click("#start-hand");
    let suggested: { top: string[]; middle: string[]; bottom: string[]; discards: string[] } | undefined;
    await playHand(2, players, () => undefined, async (p) => {
      const cards = await p.page.$$eval("[data-testid=pending] .hand-cards [data-card]", (els) => els.map((e) => (e as HTMLElement).dataset.card!));
      assert.equal(cards.length, plan.fantasyland_cards);
      await p.page.click("#suggest");
      await p.page.waitForSelector("[data-testid=suggestion]");
      await shot(p, "09-fantasyland-suggested");
      const solved = await rules.solveFantasyland({ cards, ruleset: { preset: "pineapple" }, inFantasyland: true, fantasylandStreak: 1 });
      const tentative = async (zone: string): Promise<string[]> => (await p.page.$$eval(`${zone} [data-tentative]`, (els) => els.map((e) => (e as HTMLElement).dataset.card!))).sort();
      suggested = {
        top: await tentative(".board.mine [data-row=top]"), middle: await tentative(".board.mine [data-row=middle]"),
        bottom: await tentative(".board.mine [data-row=bottom]"), discards: await tentative("[data-testid=pending] [data-row=discard]"),
      };
      assert.deepEqual(suggested, {
        top: [...solved.board!.top].sort(), middle: [...solved.board!.middle].sort(), bottom: [...solved.board!.bottom].sort(), discards: [...solved.discards].sort(),
      }, "the page shows the solver's board");
      await p.page.click("#confirm");
      await p.page.waitForSelector("[data-testid=pending]", { state: "detached" });
      const watcher = players[other]!;
      await watcher.page.waitForSelector(`[data-testid=hidden-${flSeat}]`);
      assert.equal(await watcher.page.locator(`[data-testid=board-${flSeat}] [data-card]`).count(), 0, "the Fantasyland board is face down to the other seat");
      await snapshot(watcher);
      await shot(watcher, "10-fantasyland-face-down");
    });
    assert.ok(suggested, "the Fantasyland seat set its hand from the page");
    await waitVerified(players);
    await shot(players[other]!, "11-fantasyland-revealed");
    const h2 = await history(tableId, 2n);
    writeFileSync(join(ARTIFACTS, "fantasyland-hand-2.json"), JSON.stringify(h2, null, 1));
    assert.equal(h2.players.find((x) => x.seat === flSeat)?.fantasyland, plan.fantasyland_cards);
    const set = h2.boards.find((b) => b.seat === flSeat)!;
    assert.deepEqual({ top: [...set.top].sort(), middle: [...set.middle].sort(), bottom: [...set.bottom].sort(), discards: [...set.discards].sort() }, suggested);
    await checkSettlement(players, h2);

    // ---- Nothing hidden leaked, in either hand.
    for (const [seat, viewer] of players.entries()) {
      checkNoLeaks(viewer, 1 - seat, h1);
      checkNoLeaks(viewer, 1 - seat, h2);
    }
  } catch (error) {
    for (const p of players) await shot(p, `failure-fl-${p.name}`).catch(() => undefined);
    throw error;
  } finally {
    for (const p of players) await p.close();
    await browser.close();
  }
});
