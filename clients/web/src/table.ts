// The table page: one table as this tab may see it (a seat with its token, else a spectator).
//
// The Watch stream says when the table changed and what happened (the log, a timeout's
// default move, the batches dealt to this seat); each change is then read with GetTable, so
// the page always draws the service's own view, never a guess. Moves send the view's version
// as expected_version and a fresh request id, retried with the same id on UNAVAILABLE.

import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { cardName, face, suitClass } from "./cards";
import { type Api, describeError, reasonOf, rulesetSpec, sendOnce, unreachable } from "./api";
import { type Child, h } from "./dom";
import { clock, pairLabel, playerRows, rowWinner, signed } from "./format";
import { RowPosition } from "./gen/ofcpoker/v1/cards_pb";
import {
  ClientSeedPolicy,
  type HandSeatView,
  type JoinSeatResponse,
  LeaveMode,
  type TableEvent,
  type TableView,
} from "./gen/ofcpoker/v1/table_service_pb";
import { Assignment, fantasylandBatch, ROWS, type Row, ROW_SIZE, streetBatch, type Target } from "./placement";
import { forgetSeat, loadSeat, saveSeat, type SeatSession } from "./session";
import { bytesToHex } from "./shuffle";
import { type DealVerified, DealDiscrepancy, type Expectations, type HandHistory, verifyDeal } from "./verify";

interface JoinFields {
  tableId: string;
  seat: number;
  playerId: string;
  expectedVersion: bigint;
}

const ROW_ENUM: Record<Row, RowPosition> = { top: RowPosition.TOP, middle: RowPosition.MIDDLE, bottom: RowPosition.BOTTOM };
const ROW_TITLE: Record<Target, string> = { top: "Top", middle: "Middle", bottom: "Bottom", discard: "Discard" };
const KEYS: Record<string, Target> = { t: "top", m: "middle", b: "bottom", x: "discard" };
const LOG_LINES = 12;
/** Reasons of a Watch the service ended on purpose, itself well (its connection retired for
 *  its age, or the replica stopping): reopened at once after the last event, the first time
 *  in a run of failures, with no "connection lost" notice. */
const REOPENED_AT_ONCE = new Set(["SERVER_SHUTTING_DOWN", "CONNECTION_RETIRED"]);
/** A Watch that stood this long before it failed starts a new run of failures (a quiet
 *  table's stream receives nothing for minutes, and its connection is retired meanwhile).
 *  Whatever ended it, unlike the Python and Node clients: the page never gives up, so the
 *  run only sets its backoff and whether it reopens at once. */
const STEADY_STREAM_MS = 1_000;
/** A Watch silent this long is checked against GetTable: a connection a proxy or a network
 *  dropped without closing it says nothing, and the page would show an old table. */
const SILENT_STREAM_MS = 20_000;

type Verification =
  | { state: "checking" }
  | { state: "verified"; result: DealVerified; historyJson: string }
  | { state: "failed"; message: string; historyJson?: string };

interface TimeoutNotice {
  seat: number;
  version: bigint;
  placed: string[];
  discarded: string[];
  discardCount: number;
}

interface PerHand {
  /** The commitment published before this hand (next_commitment seen while it was next). */
  commitmentBefore?: string;
  /** The commitment seen once the hand was running (a page that opened mid-hand). */
  commitmentSeen?: string;
  /** Batches dealt to this tab's seat, as received. */
  ownDeals: { position: number; cards: string[] }[];
  /** The version the hand started at (HandStarted event). */
  startVersion?: bigint;
}

export class TablePage {
  private view: TableView | undefined;
  private seat: SeatSession | undefined;
  private refusedSeat = false; // see seatRefused
  private assignment: Assignment | undefined;
  private batchKey = "";
  private turnAnnounced = ""; // the batch whose turn was last announced
  private selected: string | undefined;
  private busy = false;
  private error = "";
  /** What happened to this page's seat or join link that no click of its own caused (the
   *  seat left from another tab, the link's seat taken): shown until the page sits again. */
  private notice = "";
  /** The table's version when a refused call's error was shown: a newer view clears it. */
  private errorAt: bigint | undefined;
  /** Why the table's event stream is down while it is being reopened ("" while it is up). */
  private connection = "";
  private log: string[] = [];
  private timeouts: TimeoutNotice[] = [];
  private hands = new Map<bigint, PerHand>();
  private verifications = new Map<bigint, Verification>();
  /** This seat's client seed as it changed: (version it was set at, seed). */
  private ownSeeds: { version: bigint; seed: Uint8Array }[] = [];
  private lastEventId = "";
  private streamHeardAt = Date.now(); // the Watch's last message (or its opening)
  private watchFailures = 0; // failed Watch openings in a row (the backoff before the next)
  // A JoinSeat that got no answer (it may have taken the seat: sent again as it was, it
  // gets the seat token).
  private joinUnanswered: JoinFields | undefined;
  private checkingStream = false;
  private watching: AbortController | undefined;
  private refreshing: Promise<void> | undefined;
  private refreshAgain = false;
  private ticker: number | undefined;
  private joinSeat: number | undefined;
  private stopped = false;

  constructor(
    private readonly root: HTMLElement,
    private readonly announcer: HTMLElement,
    private readonly api: Api,
    private readonly tableId: string,
    private readonly storage: Storage,
    private readonly setToken: (token: string | undefined) => void,
    invitedSeat: number | undefined,
  ) {
    this.seat = loadSeat(storage, tableId);
    this.setToken(this.seat?.token);
    this.joinSeat = this.seat === undefined ? invitedSeat : undefined;
  }

  async start(): Promise<void> {
    document.addEventListener("keydown", this.onKey);
    document.addEventListener("dragend", this.onDragEnd, true);
    document.addEventListener("pointerdown", this.onPointerDown, true);
    document.addEventListener("pointerup", this.onPointerUp, true);
    document.addEventListener("pointercancel", this.onPointerUp, true);
    window.addEventListener("blur", this.onPointerUp);
    window.addEventListener("online", this.onOnline);
    this.ticker = window.setInterval(() => this.tick(), 250);
    await this.refresh();
    void this.watch();
  }

  stop(): void {
    this.stopped = true;
    this.watching?.abort();
    window.clearInterval(this.ticker);
    document.removeEventListener("keydown", this.onKey);
    document.removeEventListener("dragend", this.onDragEnd, true);
    document.removeEventListener("pointerdown", this.onPointerDown, true);
    document.removeEventListener("pointerup", this.onPointerUp, true);
    document.removeEventListener("pointercancel", this.onPointerUp, true);
    window.removeEventListener("blur", this.onPointerUp);
    window.removeEventListener("online", this.onOnline);
  }

  private onDragEnd = (): void => {
    dragging = undefined;
    this.renderDeferred();
  };

  // A card pressed may be about to be dragged: a redraw now would replace it under the
  // pointer and the drag would never start, so redraws wait for the press to end too.
  private onPointerDown = (e: PointerEvent): void => {
    pressed = e.target instanceof Element && e.target.closest("[draggable=true]") !== null;
  };

  private onPointerUp = (): void => {
    if (!pressed) return;
    pressed = false;
    this.renderDeferred();
  };

  private renderDeferred(): void {
    if (this.renderAfterDrag && dragging === undefined && !pressed) {
      this.renderAfterDrag = false;
      this.render();
    }
  }

  // ---- reading the table -------------------------------------------------------------

  private async watch(): Promise<void> {
    this.watchFailures = 0;
    while (!this.stopped) {
      const controller = new AbortController();
      this.watching = controller;
      let openedAt: number | undefined;
      try {
        // After a lost connection, the table is read first: the service answering is what
        // ends the notice (a resumed stream may stay silent), and the view is fresh again.
        if (this.connection) await this.reconnect();
        openedAt = Date.now();
        const stream = this.api.tables.watch(
          { tableId: this.tableId, afterEventId: this.lastEventId, batchEvents: true },
          { signal: controller.signal },
        );
        this.streamHeardAt = Date.now();
        for await (const message of stream) {
          this.watchFailures = 0;
          this.streamHeardAt = Date.now();
          if (message.kind.case === "snapshot") {
            this.lastEventId = message.kind.value.lastEventId || this.lastEventId;
            this.accept(message.kind.value);
          } else if (message.kind.case === "event") {
            this.onEvents([message.kind.value]);
          } else if (message.kind.case === "events") {
            this.onEvents(message.kind.value.events);
          }
        }
      } catch (error) {
        if (this.stopped) return;
        if (controller.signal.aborted) continue; // the page reopens it (a seat taken or left)
        if (openedAt !== undefined && Date.now() - openedAt >= STEADY_STREAM_MS) this.watchFailures = 0;
        if (REOPENED_AT_ONCE.has(reasonOf(error)) && this.watchFailures === 0) {
          this.watchFailures++; // at once the first time; again in a row: as any failure
          continue;
        }
        if (reasonOf(error) === "EVENTS_TRIMMED") this.lastEventId = "";
        const code = ConnectError.from(error).code;
        if (code === Code.Unauthenticated || code === Code.PermissionDenied) this.seatRefused();
        else if (code === Code.NotFound || code === Code.InvalidArgument) {
          // the table is gone (expired, or the service kept it in memory and restarted), or
          // its id can be no table's: said once, not retried
          this.connection = "";
          this.showError(error);
          return;
        } else if (reasonOf(error) !== "EVENTS_TRIMMED") {
          this.connectionLost(error);
        }
        this.watchFailures++;
      }
      if (this.stopped) return;
      // The wait ends early when the stream's controller is aborted (the browser is back
      // online, or the page reopens the stream).
      await new Promise<void>((resolve) => {
        if (controller.signal.aborted) return resolve();
        const timer = setTimeout(resolve, Math.min(5000, 250 * 2 ** this.watchFailures));
        controller.signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
      });
    }
  }

  /** The browser is back online: a stream open while it was offline may have lost events
   *  without ending, so it is opened again now (from the last event seen; after a lost
   *  connection, once the table is read again) rather than at the silent-stream check. */
  private onOnline = (): void => {
    this.watchFailures = 0;
    this.watching?.abort();
  };

  /** What the page shows may be stale until the service answers again: it says so. */
  private connectionLost(error: unknown): void {
    this.connection = `Connection lost (${describeError(error)}); reconnecting…`;
    this.announce(this.connection);
    this.render();
  }

  /** The table read again after a lost connection; throws while the service does not answer. */
  private async reconnect(): Promise<void> {
    const { table } = await this.api.tables.getTable({ tableId: this.tableId });
    if (table) this.accept(table);
    this.connection = "";
    this.announce("Connected again");
    this.render();
  }

  /** Read the table now; calls while one read is under way make one more read after it. */
  private refresh(): Promise<void> {
    if (this.refreshing) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      do {
        this.refreshAgain = false;
        const sentAs = this.seat;
        try {
          const { table } = await this.api.tables.getTable({ tableId: this.tableId });
          if (table) this.accept(table);
        } catch (error) {
          const code = ConnectError.from(error).code;
          if (sentAs && (code === Code.Unauthenticated || code === Code.PermissionDenied)) {
            // Sent with the seat's token (dropped meanwhile, or refused now): read again
            // without it.
            if (this.seat === sentAs) this.seatRefused();
            this.refreshAgain = true;
          } else if (unreachable(error)) {
            // Not the table's answer: the page says it may be stale, and the watch loop
            // reads the table again (and stops saying so) once the service answers.
            this.connectionLost(error);
            this.watching?.abort();
          } else {
            this.showError(error);
          }
        }
      } while (this.refreshAgain && !this.stopped);
      this.refreshing = undefined;
    })();
    return this.refreshing;
  }

  private accept(view: TableView): void {
    if (this.view && view.version < this.view.version) return;
    const same = this.view !== undefined && view.version === this.view.version && view.viewerSeat === this.view.viewerSeat;
    if (same && view.lastEventId === "") return; // a move's response after its events: nothing new
    const first = this.view === undefined;
    this.view = view;
    if (this.errorAt !== undefined && view.version > this.errorAt) {
      // The table moved on since the refusal: what it said is stale, the view is the news.
      this.error = "";
      this.errorAt = undefined;
    }
    const held = this.seat && view.seats[this.seat.seat];
    if (this.seat && held && held.playerId !== this.seat.playerId) {
      // The seat is no longer this page's: vacated by the service once its hand ended (a
      // leave after the hand), perhaps taken by someone since. Its token went with it.
      this.dropSeat("");
      this.watching?.abort();
      this.tell("You left the table: you watch as a spectator");
    }
    if (this.refusedSeat) {
      // A token is refused once its seat is left (vacated after its hand, by an operator, from
      // another tab), even if the same name has taken the seat again since: no error, a notice.
      this.refusedSeat = false;
      this.tell("You no longer hold a seat here: you watch as a spectator");
    }
    this.checkInvitation(view);
    this.noteCommitments(view);
    if (this.seat && first) {
      const mine = view.seats[this.seat.seat];
      if (mine) this.ownSeeds = [{ version: view.version, seed: mine.clientSeed }];
    }
    this.syncAssignment();
    if (this.myTurn() && this.turnAnnounced !== this.batchKey) {
      this.turnAnnounced = this.batchKey;
      this.announce(this.status());
    }
    this.render();
    const hand = view.hand;
    if (hand?.over && hand.serverSeed.length > 0 && !this.verifications.has(hand.number)) {
      void this.verify(hand.number);
    }
    // A join that got no answer took the seat (the table shows this player there): sent
    // again as it was, it gets the seat token, which this page would otherwise have lost.
    const unanswered = this.joinUnanswered;
    if (unanswered && !this.seat && !this.busy && view.seats[unanswered.seat]?.playerId === unanswered.playerId) {
      void this.join(unanswered.seat, unanswered.playerId);
    }
  }

  /** A join link names a seat: one taken (or one the table lacks) cannot be joined, and the
   *  page says so rather than showing no form. A join of this page that got no answer and
   *  took the seat is not "taken": the page sends it again (above). */
  private checkInvitation(view: TableView): void {
    const seat = this.joinSeat;
    // (a join of this page in flight: the table may show its player seated before its answer)
    if (seat === undefined || this.seat || this.busy || this.joinUnanswered?.seat === seat) return;
    const held = view.seats[seat];
    if (held && !held.playerId) return;
    this.joinSeat = undefined;
    this.tell(held
      ? `Seat ${seat + 1} is taken (by ${held.playerId}): choose an empty seat to sit down`
      : `This table has no seat ${seat + 1}: choose one of its ${view.seats.length} seats`);
  }

  private perHand(number: bigint): PerHand {
    let entry = this.hands.get(number);
    if (!entry) {
      entry = { ownDeals: [] };
      this.hands.set(number, entry);
    }
    return entry;
  }

  /** Hand handsPlayed + 1's server seed is drawn, and its commitment published, before it
   *  starts (at CreateTable, or when the hand before it started): remember the first one seen. */
  private noteCommitments(view: TableView): void {
    if (view.nextCommitment) this.perHand(view.handsPlayed + 1n).commitmentBefore ??= view.nextCommitment;
    if (view.hand) this.perHand(view.hand.number).commitmentSeen ??= view.hand.commitment;
  }

  private onEvents(events: readonly TableEvent[]): void {
    for (const event of events) {
      this.lastEventId = event.eventId;
      this.describe(event);
    }
    this.render();
    void this.refresh();
  }

  private name(seat: number): string {
    const player = this.view?.seats[seat]?.playerId;
    const you = this.seat?.seat === seat ? " (you)" : "";
    return player ? `${player}${you}` : `seat ${seat + 1}`;
  }

  /** The log line of an event, and what the page must remember from it. */
  private describe(event: TableEvent): void {
    const k = event.kind;
    const notice = this.timeouts.find((t) => t.version === event.version);
    let line = "";
    switch (k.case) {
      case "seatTaken":
        line = `${k.value.playerId} sat down at seat ${k.value.seat + 1}`;
        break;
      case "seatVacated":
        line = `${k.value.playerId} left seat ${k.value.seat + 1} with ${signed(k.value.points)} points`;
        break;
      case "seatLeaving":
        line = k.value.leaving ? `${k.value.playerId} leaves after this hand` : `${k.value.playerId} stays at the table`;
        break;
      case "handStarted": {
        // A new hand: the log and notices start again (the last hand is in its history).
        this.log = [];
        this.timeouts = [];
        const entry = this.perHand(k.value.number);
        entry.startVersion = event.version;
        entry.commitmentSeen ??= k.value.commitment;
        line = `Hand ${k.value.number} started; commitment ${k.value.commitment.slice(0, 16)}…`;
        break;
      }
      case "cardsDealt": {
        const mine = this.seat?.seat === k.value.seat;
        if (mine && k.value.cards.length > 0) {
          const hand = this.currentHandNumber();
          if (hand !== undefined) this.perHand(hand).ownDeals.push({ position: k.value.position, cards: [...k.value.cards] });
        }
        line = `${this.name(k.value.seat)} was dealt ${mine ? k.value.cards.map(label).join(" ") : `${k.value.count} cards`}`;
        break;
      }
      case "cardsPlaced": {
        const what = k.value.placements.map((p) => `${label(p.card)} ${rowName(p.row)}`).join(", ");
        if (notice && notice.seat === k.value.seat) notice.placed.push(...k.value.placements.map((p) => `${label(p.card)} on ${rowName(p.row)}`));
        line = `${this.name(k.value.seat)} placed ${what}`;
        break;
      }
      case "discardMade":
        if (notice && notice.seat === k.value.seat) {
          notice.discardCount++;
          if (k.value.card) notice.discarded.push(label(k.value.card));
        }
        line = `${this.name(k.value.seat)} discarded ${k.value.card ? label(k.value.card) : "a card face down"}`;
        break;
      case "timeoutApplied":
        this.timeouts = [{ seat: k.value.seat, version: event.version, placed: [], discarded: [], discardCount: 0 }, ...this.timeouts].slice(0, 4);
        line = `${this.name(k.value.seat)}'s time ran out: the table made the default move`;
        this.announce(line);
        break;
      case "fantasylandSet":
        if (notice && notice.seat === k.value.seat) {
          notice.placed.push("the whole Fantasyland hand");
          // the discards are in the seat's own view only: named there, counted elsewhere
          notice.discardCount += k.value.discards.length;
          notice.discarded.push(...k.value.discards.map(label));
        }
        line = `${this.name(k.value.seat)} set a Fantasyland hand face down`;
        break;
      case "fantasylandRevealed":
        line = `${this.name(k.value.seat)}'s Fantasyland hand is face up`;
        break;
      case "handSettled":
        line = `Hand ${k.value.number} settled`;
        this.announce(line);
        break;
      case "seedRevealed":
        line = `Server seed of hand ${k.value.number} revealed`;
        break;
      case "buttonMoved":
        line = `The button moved to seat ${k.value.toSeat + 1}`;
        break;
      case "clientSeedSet":
        if (this.seat?.seat === k.value.seat) this.ownSeeds.push({ version: event.version, seed: k.value.clientSeed });
        line = `${this.name(k.value.seat)} set a client seed`;
        break;
      default:
        return;
    }
    this.log = [line, ...this.log].slice(0, LOG_LINES);
  }

  private currentHandNumber(): bigint | undefined {
    let latest: bigint | undefined;
    for (const [number, entry] of this.hands) if (entry.startVersion !== undefined && (latest === undefined || number > latest)) latest = number;
    return latest ?? this.view?.hand?.number;
  }

  // ---- the seat's move ---------------------------------------------------------------

  private mySeatInHand(): HandSeatView | undefined {
    const hand = this.view?.hand;
    if (!hand || hand.over || this.seat === undefined) return undefined;
    return hand.seats.find((s) => s.seat === this.seat!.seat);
  }

  /** A fresh Assignment whenever the seat's pending batch changes. */
  private syncAssignment(): void {
    const mine = this.mySeatInHand();
    const view = this.view;
    if (!mine || !view?.hand || mine.pending.length === 0) {
      this.assignment = undefined;
      this.batchKey = "";
      this.selected = undefined;
      return;
    }
    const key = `${view.hand.number}:${mine.pending.join(",")}`;
    if (key === this.batchKey) return;
    this.batchKey = key;
    this.selected = undefined;
    const board = { top: mine.board?.top ?? [], middle: mine.board?.middle ?? [], bottom: mine.board?.bottom ?? [] };
    if (mine.fantasylandCards > 0) {
      this.assignment = new Assignment(board, fantasylandBatch(mine.pending));
    } else {
      const street = view.ruleset?.streets[view.hand.street];
      this.assignment = new Assignment(board, streetBatch(mine.pending, street?.place ?? mine.pending.length));
    }
  }

  private myTurn(): boolean {
    const hand = this.view?.hand;
    return !!hand && !hand.over && this.seat !== undefined && hand.toAct.includes(this.seat.seat) && !!this.assignment;
  }

  private select(card: string): void {
    this.selected = this.selected === card ? undefined : card;
    this.render(`card-${card}`);
  }

  private place(target: Target, card = this.selected): void {
    dragging = undefined;
    this.renderAfterDrag = false;
    const a = this.assignment;
    if (!a || !card) return;
    if (a.assign(card, target)) {
      // Focus moves on to the next card (Enter or Space chooses it), or to the confirm button.
      this.selected = undefined;
      const next = a.unassigned()[0];
      const focus = next ? `card-${next}` : a.complete() ? "confirm" : `target-${target}`;
      this.render(focus);
      if (a.complete()) this.announce("Every card has its place: confirm to send");
    }
  }

  private takeBack(card: string): void {
    this.assignment?.unassign(card);
    this.selected = card;
    this.render(`card-${card}`);
  }

  private onKey = (event: KeyboardEvent): void => {
    const target = event.target as HTMLElement | null;
    if (target && (target.tagName === "INPUT" || target.tagName === "SELECT" || target.tagName === "TEXTAREA")) return;
    const key = event.key.toLowerCase();
    const dest = KEYS[key];
    if (dest && this.selected && this.myTurn()) {
      event.preventDefault();
      this.place(dest);
    } else if (key === "escape" && this.selected) {
      this.selected = undefined;
      this.render();
    }
  };

  private async confirm(): Promise<void> {
    const a = this.assignment;
    const view = this.view;
    const seat = this.seat;
    if (!a || !view || !seat || !a.complete() || this.busy) return;
    this.busy = true;
    this.error = "";
    this.render();
    const send = async (version: bigint): Promise<TableView | undefined> => {
      if (a.batch.fantasyland) {
        const board = { top: a.cardsTo("top"), middle: a.cardsTo("middle"), bottom: a.cardsTo("bottom") };
        const fields = { tableId: this.tableId, seat: seat.seat, board, discards: a.cardsTo("discard"), expectedVersion: version };
        return (await sendOnce("SetFantasyland", fields, (request) => this.api.tables.setFantasyland(request))).table;
      }
      const placements = ROWS.flatMap((row) => a.cardsTo(row).map((card) => ({ card, row: ROW_ENUM[row] })));
      const fields = { tableId: this.tableId, seat: seat.seat, placements, discard: a.cardsTo("discard")[0] ?? "", expectedVersion: version };
      return (await sendOnce("PlaceCards", fields, (request) => this.api.tables.placeCards(request))).table;
    };
    try {
      // another seat may act meanwhile: sent again while this batch is still the one to place
      const table = await this.atCurrentVersion(send, () => this.assignment === a && this.myTurn());
      if (table) this.accept(table);
    } catch (error) {
      if (reasonOf(error) === "STALE_VERSION" && (this.assignment !== a || !this.myTurn())) {
        // Read again, the table no longer waits for this batch: another tab or device of this
        // seat played it (or its clock ran out). Said as such, not as the service's words.
        this.error = "Not sent: this turn was played first (in another tab, or the clock ran out). The table shows it as it is now.";
        this.errorAt = this.view?.version;
        this.announce(this.error);
      } else if (reasonOf(error) === "STALE_VERSION") {
        // Still this batch's turn, but the table kept changing beside the hand (seats, seeds)
        // through every try: the cards stay set out, for another try.
        this.error = "Not sent: the table kept changing meanwhile. Your cards are still set out: send them again with Place cards.";
        this.errorAt = undefined; // said until the next try
        this.announce(this.error);
      } else {
        this.showError(error);
      }
    } finally {
      this.busy = false;
      this.render();
    }
  }

  private async suggest(): Promise<void> {
    const a = this.assignment;
    const view = this.view;
    const mine = this.mySeatInHand();
    if (!a || !view?.ruleset || !mine || !a.batch.fantasyland) return;
    const streak = view.seats[mine.seat]?.fantasylandStreak ?? 0;
    try {
      const solved = await this.api.rules.solveFantasyland({
        cards: [...a.batch.cards], ruleset: rulesetSpec(view.ruleset), inFantasyland: true, fantasylandStreak: streak + 1,
      });
      const board = solved.board;
      if (!board || !a.assignAll({ top: board.top, middle: board.middle, bottom: board.bottom }, solved.discards)) {
        this.error = "the suggestion does not fit these cards";
      } else {
        this.announce(`Suggested: ${solved.royalties} royalty points${solved.fantasylandNext ? ", stays in Fantasyland" : ""}`);
        this.suggestion = `Suggested board: ${solved.royalties} royalty points${solved.fantasylandNext ? ", qualifies for Fantasyland again" : ""}.`;
      }
    } catch (error) {
      this.showError(error);
    }
    this.render("confirm");
  }

  private suggestion = "";
  private renderAfterDrag = false;

  // ---- seats -------------------------------------------------------------------------

  private async join(seatIndex: number, playerId: string): Promise<void> {
    const view = this.view;
    if (!view || this.busy) return;
    this.busy = true;
    this.error = "";
    let sent: JoinFields | undefined; // the last join sent
    try {
      const sendAt = (version: bigint): Promise<JoinSeatResponse> => {
        const fields = { tableId: this.tableId, seat: seatIndex, playerId, expectedVersion: version };
        sent = fields;
        return sendOnce("JoinSeat", fields, (request) => this.api.tables.joinSeat(request));
      };
      // A join that got no answer may have taken the seat: the same join, sent again as it
      // was (its version and id), gets its seat token; else it is judged now.
      const unanswered = this.joinUnanswered;
      let res: JoinSeatResponse | undefined;
      if (unanswered && unanswered.seat === seatIndex && unanswered.playerId === playerId) {
        try {
          res = await sendAt(unanswered.expectedVersion);
        } catch (error) {
          if (unreachable(error)) throw error;
        }
      }
      res ??= await this.atCurrentVersion(sendAt, () => !this.seat && !this.view?.seats[seatIndex]?.playerId);
      this.joinUnanswered = undefined;
      this.refusedSeat = false; // seated again: a refusal before says nothing now
      this.notice = "";
      this.seat = { seat: seatIndex, token: res.seatToken, playerId };
      saveSeat(this.storage, this.tableId, this.seat);
      this.setToken(res.seatToken);
      this.joinSeat = undefined;
      const url = new URL(location.href);
      url.searchParams.delete("seat");
      history.replaceState(null, "", url);
      this.announce(`You sit at seat ${seatIndex + 1}`);
      // The Watch stream was opened as a spectator: open it again as the seat.
      this.watching?.abort();
      this.view = undefined;
      if (res.table) this.accept(res.table);
    } catch (error) {
      this.joinUnanswered = unreachable(error) ? sent : undefined;
      this.showError(error);
      if (this.joinUnanswered) {
        // The page reads the table again once the service answers (its watch loop), and
        // sends the join again if the table shows it took the seat (see accept).
        this.connectionLost(error);
        this.watching?.abort();
      }
    } finally {
      this.busy = false;
      this.render();
    }
  }

  /** Leave the seat: now if the rules allow it, else once they do (LEAVE_MODE_AFTER_HAND:
   *  the seat is marked leaving and the service vacates it with the move that ends its hand,
   *  or the Fantasyland hand owed); or withdraw that (LEAVE_MODE_CANCEL). */
  private async leave(mode: LeaveMode.AFTER_HAND | LeaveMode.CANCEL): Promise<void> {
    const view = this.view;
    const seat = this.seat;
    if (!view || !seat || this.busy) return;
    this.busy = true; // one click, one request: each mark changed counts (4 a hand)
    this.render();
    const leaving = mode === LeaveMode.AFTER_HAND;
    // the table already shows what the click asks (another tab's click, say): nothing to send
    const done = (): boolean => this.view?.seats[seat.seat]?.leaving === leaving;
    try {
      const res = await this.atCurrentVersion(
        (version) => {
          const fields = { tableId: this.tableId, seat: seat.seat, expectedVersion: version, mode };
          return sendOnce("LeaveSeat", fields, (request) => this.api.tables.leaveSeat(request));
        },
        () => this.seat?.seat === seat.seat && !done(),
      );
      if (res.table?.viewerSeat !== undefined) {
        this.accept(res.table); // still seated: marked leaving, or staying
        return;
      }
      this.dropSeat("");
      this.watching?.abort();
      await this.refresh();
    } catch (error) {
      if (!this.seat || (reasonOf(error) === "STALE_VERSION" && done())) {
        // The seat gone meanwhile (vacated as its hand ended, while a "Stay" was on its
        // way), or the table already as asked: the page shows it, with no error.
      } else if (reasonOf(error) === "LEAVE_CHANGES_SPENT") {
        this.error = `You changed your mind about leaving too often this hand: you ${leaving ? "stay" : "leave"} as the table shows until it ends`;
        this.announce(this.error);
      } else {
        this.showError(error);
      }
    } finally {
      this.busy = false;
      this.render();
    }
  }

  /** A change sent at the view's version. When the table moved on first (STALE_VERSION:
   *  another seat acted, joined or set a seed), the table is read again and the change sent
   *  at its new version, as long as `stillWanted()` says the click still means the same. */
  private async atCurrentVersion<T>(send: (version: bigint) => Promise<T>, stillWanted: () => boolean): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await send(this.view!.version);
      } catch (error) {
        if (attempt >= 3 || reasonOf(error) !== "STALE_VERSION") throw error;
        await this.refresh();
        if (!this.view || !stillWanted()) throw error;
      }
    }
  }

  private handInProgress(): boolean {
    const hand = this.view?.hand;
    return !!hand && !hand.over;
  }

  /** The service refused the seat's token (a read, or the watch once the seat changed):
   *  the seat was left (vacated after its hand, or by an operator). The page goes on as a
   *  spectator and says so once its next view is drawn. */
  private seatRefused(): void {
    this.refusedSeat = true;
    this.dropSeat("");
  }

  private dropSeat(why: string): void {
    forgetSeat(this.storage, this.tableId);
    this.seat = undefined;
    this.setToken(undefined);
    this.assignment = undefined;
    this.batchKey = "";
    if (why) this.error = why;
  }

  private async startHand(): Promise<void> {
    const view = this.view;
    if (!view || this.busy) return;
    this.busy = true;
    try {
      // A seat taken or a seed set meanwhile does not undo the click; a hand dealt by someone
      // else does (the page shows it).
      const res = await this.atCurrentVersion(
        (version) => {
          const fields = { tableId: this.tableId, expectedVersion: version };
          return sendOnce("StartHand", fields, (request) => this.api.tables.startHand(request));
        },
        () => !this.handInProgress() && this.view?.hand?.number === view.hand?.number,
      );
      if (res.table) this.accept(res.table);
    } catch (error) {
      if (reasonOf(error) === "STALE_VERSION" || reasonOf(error) === "HAND_IN_PROGRESS") await this.refresh();
      else this.showError(error);
    } finally {
      this.busy = false;
      this.render();
    }
  }

  private async setClientSeed(text: string): Promise<void> {
    const view = this.view;
    const seat = this.seat;
    if (!view || !seat) return;
    try {
      const res = await this.atCurrentVersion(
        (version) => {
          const fields = { tableId: this.tableId, seat: seat.seat, clientSeed: text, expectedVersion: version };
          return sendOnce("SetClientSeed", fields, (request) => this.api.tables.setClientSeed(request));
        },
        () => this.seat?.seat === seat.seat,
      );
      if (res.table) {
        this.ownSeeds.push({ version: res.table.version, seed: new TextEncoder().encode(text) });
        this.accept(res.table);
      }
      this.announce("Your client seed counts from the next hand");
    } catch (error) {
      this.showError(error);
      this.render();
    }
  }

  // ---- the deal check ----------------------------------------------------------------

  private async verify(number: bigint): Promise<void> {
    this.verifications.set(number, { state: "checking" });
    this.render();
    let historyJson: string | undefined;
    try {
      const got = await this.api.tables.getHandHistory({ tableId: this.tableId, handNumber: number });
      historyJson = got.historyJson;
      const history = JSON.parse(historyJson) as HandHistory;
      const result = await verifyDeal(history, this.expectations(number));
      this.verifications.set(number, { state: "verified", result, historyJson });
      this.announce(`Deal verified: hand ${number}`);
    } catch (error) {
      const message = error instanceof DealDiscrepancy ? error.message : error instanceof ConnectError ? describeError(error) : String(error);
      this.verifications.set(number, { state: "failed", message, historyJson });
      this.announce(`The deal of hand ${number} did NOT verify`);
    }
    this.render();
  }

  private expectations(number: bigint): Expectations {
    const view = this.view!;
    const entry = this.hands.get(number);
    const out: Expectations = { tableClientSeed: view.clientSeed };
    const commitment = entry?.commitmentBefore ?? entry?.commitmentSeen;
    if (commitment) out.commitment = commitment;
    if (view.clientSeedPolicy === ClientSeedPolicy.PLAYERS) {
      out.playersPolicy = { seats: view.seats.length };
      if (this.seat && entry?.startVersion !== undefined) {
        const before = this.ownSeeds.filter((s) => s.version < entry.startVersion!);
        const inForce = before[before.length - 1];
        if (inForce) out.playersPolicy = { seats: view.seats.length, ownSeat: this.seat.seat, ownSeed: inForce.seed };
      }
    }
    if (this.seat && entry && entry.ownDeals.length > 0) {
      out.ownSeat = this.seat.seat;
      out.ownDeals = entry.ownDeals;
    }
    return out;
  }

  // ---- drawing -----------------------------------------------------------------------

  private showError(error: unknown): void {
    this.error = reasonOf(error) === "TABLE_NOT_FOUND"
      ? `There is no table ${this.tableId} here: it ended and expired, the service kept it in memory and restarted, or the link is mistyped`
      : describeError(error);
    this.errorAt = this.view?.version;
    this.announce(this.error);
    this.render();
  }

  /** A notice on the page (and to screen readers), until the page sits again. */
  private tell(text: string): void {
    this.notice = text;
    this.announce(text);
  }

  private announce(text: string): void {
    this.announcer.textContent = text;
  }

  /** The Watch has been silent for a while: read the table. Newer than the page's view, the
   *  stream missed events (a dead connection nobody closed): it is opened again. No answer:
   *  the connection is lost, and the watch loop says so and retries. */
  private async checkSilentStream(): Promise<void> {
    this.checkingStream = true;
    const before = this.view?.version;
    try {
      const { table } = await this.api.tables.getTable({ tableId: this.tableId }, { timeoutMs: 10_000 });
      if (table && before !== undefined && table.version > before) {
        this.accept(table);
        this.watching?.abort();
      }
    } catch (error) {
      if (unreachable(error)) {
        this.connectionLost(error);
        this.watching?.abort();
      }
    } finally {
      this.checkingStream = false;
      this.streamHeardAt = Date.now(); // checked again a while later, whatever the answer
    }
  }

  private tick(): void {
    if (!this.stopped && !this.checkingStream && Date.now() - this.streamHeardAt > SILENT_STREAM_MS) void this.checkSilentStream();
    const view = this.view;
    const hand = view?.hand;
    for (const el of this.root.querySelectorAll<HTMLElement>("[data-countdown]")) {
      const left = Number(view?.deadlineMs ?? 0n) - Date.now();
      const limit = view?.turnTimeLimitMs ?? 0;
      const shown = hand && !hand.over && view!.deadlineMs > 0n ? Math.min(Math.max(left, 0), Math.max(limit * 4, limit)) : 0;
      el.textContent = shown > 0 ? clock(shown) : "time's up";
      el.classList.toggle("urgent", shown < 5000);
    }
  }

  render(focusId?: string): void {
    if (dragging !== undefined || pressed) {
      // Redrawing would drop the card being dragged (or pressed): draw once that ends.
      this.renderAfterDrag = true;
      return;
    }
    const focused = focusId ?? (document.activeElement as HTMLElement | null)?.id;
    // What a person is typing survives a redraw (an event may arrive mid-word).
    const typed = new Map<string, string>();
    for (const input of this.root.querySelectorAll<HTMLInputElement>("input[id]")) {
      if (input.value !== input.defaultValue) typed.set(input.id, input.value);
    }
    this.root.replaceChildren(this.page());
    for (const [id, value] of typed) {
      const input = document.getElementById(id);
      if (input instanceof HTMLInputElement) input.value = value;
    }
    if (focused) document.getElementById(focused)?.focus();
    this.tick();
  }

  private page(): HTMLElement {
    const view = this.view;
    if (!view) {
      return h("section", { class: "panel" },
        this.error ? h("p", { class: "error", role: "alert", "data-testid": "error" }, this.error) : h("p", {}, "Loading the table…"),
        this.error ? h("p", {}, h("a", { href: lobbyHref(), "data-testid": "lobby-link" }, "Back to the lobby: open a new table")) : null);
    }
    const hand = view.hand;
    return h("div", { class: "table", "data-hand": hand ? String(hand.number) : undefined },
      h("header", { class: "table-head" },
        h("h1", {}, "Table ", h("code", { "data-testid": "table-id" }, view.tableId)),
        h("p", { class: "meta" },
          // names come from whoever made the table: isolated, so their direction stays theirs
          h("bdi", {}, view.ruleset?.name ?? ""),
          ` · ${view.seats.length} seats · ${view.turnTimeLimitMs / 1000} s a turn`,
          view.clientSeedPolicy === ClientSeedPolicy.PLAYERS ? " · players add seeds" : "",
          hand ? ` · hand ${hand.number}${hand.over ? " (over)" : ""}` : " · no hand yet"),
        h("p", { class: "status", "data-testid": "status", role: "status" }, this.status()),
        h("p", { class: "meta" }, h("a", { href: lobbyHref(), "data-testid": "lobby-link" }, "Lobby")),
      ),
      this.error ? h("p", { class: "error", role: "alert", "data-testid": "error" }, this.error) : null,
      this.notice ? h("p", { class: "seat-notice", role: "status", "data-testid": "notice" }, this.notice) : null,
      this.connection ? h("p", { class: "error", role: "status", "data-testid": "connection" }, this.connection) : null,
      this.seatsPanel(view),
      this.controls(view),
      hand ? this.handPanel(view) : null,
      this.timeoutNotices(),
      hand?.over && hand.settlement ? this.settlementPanel(view) : null,
      hand?.over ? this.verificationPanel(hand.number) : null,
      h("section", { class: "panel log", "aria-label": "Table log" },
        h("h2", {}, "Log"),
        h("ol", { "data-testid": "log" }, this.log.map((line) => h("li", {}, line)))),
    );
  }

  private status(): string {
    const view = this.view!;
    const hand = view.hand;
    const seated = view.seats.filter((s) => s.playerId).length;
    if (!hand || hand.over) {
      if (seated < (view.ruleset?.minPlayers ?? 2)) return `Waiting for players (${seated} seated)`;
      return hand?.over ? `Hand ${hand.number} is over · the next hand can start` : "Ready to start the first hand";
    }
    if (this.myTurn()) {
      const a = this.assignment!;
      return a.batch.fantasyland
        ? `Your Fantasyland hand: set 13 of ${a.batch.cards.length} cards${a.batch.discards ? `, discard ${a.batch.discards}` : ""}`
        : `Your turn: place ${a.batch.cards.length - a.batch.discards}${a.batch.discards ? `, discard ${a.batch.discards}` : ""}`;
    }
    const waiting = hand.toAct.map((s) => this.name(s)).join(", ");
    return waiting ? `Waiting for ${waiting}` : "…";
  }

  private seatsPanel(view: TableView): HTMLElement {
    const base = new URL(location.href);
    base.search = "";
    return h("section", { class: "panel seats", "aria-label": "Seats" },
      h("h2", {}, "Seats"),
      h("ul", {}, view.seats.map((s) => {
        const link = new URL(base);
        link.searchParams.set("table", view.tableId);
        link.searchParams.set("seat", String(s.seat));
        const mine = this.seat?.seat === s.seat;
        const free = !s.playerId;
        return h("li", { "data-testid": `seat-${s.seat}`, class: mine ? "mine" : "" },
          h("span", { class: "seat-name" }, `Seat ${s.seat + 1}: `, free ? h("em", {}, "empty") : this.name(s.seat)),
          free ? null : h("span", { class: "seat-score" }, ` ${signed(s.points)} pts · ${signed(s.units)} units`),
          s.fantasylandCards > 0 && (!view.hand || view.hand.over) ? h("span", { class: "badge fl" }, `Fantasyland next (${s.fantasylandCards})`) : null,
          // a seated player can invite someone to an empty seat too; only the unseated sit
          free ? [
            " ",
            h("a", { href: link.href, "data-testid": `join-link-${s.seat}`, class: "join-link" }, "join link"),
            " ",
            h("button", { type: "button", class: "small", onclick: () => { void navigator.clipboard?.writeText(link.href); this.announce("Join link copied"); } }, "copy"),
            this.seat ? null : [
              " ",
              h("button", { type: "button", class: "small", id: `sit-${s.seat}`, onclick: () => { this.joinSeat = s.seat; this.render(`player-name`); } }, "sit here"),
            ],
          ] : null,
          this.joinSeat === s.seat && free && !this.seat ? this.joinForm(s.seat) : null,
        );
      })));
  }

  private joinForm(seat: number): HTMLElement {
    const input = h("input", { id: "player-name", name: "player", required: true, maxlength: 64, autocomplete: "nickname", "aria-label": "Your name at the table" });
    return h("form", {
      class: "join", "data-testid": "join-form",
      onsubmit: (e: Event) => {
        e.preventDefault();
        const name = input.value.trim();
        if (name) {
          void this.join(seat, name);
        } else {
          this.error = "type a name to sit down with";
          this.announce(this.error);
          this.render("player-name");
        }
      },
    }, h("label", { for: "player-name" }, "Your name "), input, " ", h("button", { type: "submit", id: "join-button" }, `Join seat ${seat + 1}`));
  }

  private controls(view: TableView): HTMLElement | null {
    const hand = view.hand;
    const between = !hand || hand.over;
    const seated = view.seats.filter((s) => s.playerId).length;
    const items: Child[] = [];
    const commitment = between ? view.nextCommitment : hand.commitment;
    if (commitment) {
      items.push(h("p", { class: "commitment" }, between ? "Next hand's commitment: " : "This hand's commitment: ",
        h("code", { "data-testid": "commitment" }, commitment)));
    }
    const leaving = this.seat !== undefined && view.seats[this.seat.seat]?.leaving === true;
    if (this.seat && between) {
      items.push(h("button", {
        type: "button", id: "start-hand", "data-testid": "start-hand",
        disabled: this.busy || seated < (view.ruleset?.minPlayers ?? 2),
        onclick: () => void this.startHand(),
      }, hand ? "Deal the next hand" : "Deal the first hand"));
      items.push(" ");
    }
    if (this.seat && leaving) {
      // Kept here by the rules (its hand in play, a Fantasyland hand owed): the service
      // vacates the seat as soon as they let it go.
      items.push(h("p", { class: "leaving", "data-testid": "leaving" },
        between ? "You leave once the Fantasyland hand owed is played " : "You leave when this hand ends ",
        h("button", { type: "button", class: "secondary", id: "stay", disabled: this.busy, onclick: () => void this.leave(LeaveMode.CANCEL) }, "Stay")));
    } else if (this.seat) {
      items.push(h("button", { type: "button", class: "secondary", id: "leave", disabled: this.busy, onclick: () => void this.leave(LeaveMode.AFTER_HAND) },
        this.mySeatInHand() ? "Leave after this hand" : "Leave seat"));
    }
    if (this.seat && view.clientSeedPolicy === ClientSeedPolicy.PLAYERS) {
      const current = new TextDecoder().decode(view.seats[this.seat.seat]?.clientSeed ?? new Uint8Array());
      const input = h("input", { id: "own-seed", maxlength: 256, value: current, "aria-label": "Your client seed" });
      items.push(h("form", { class: "own-seed", onsubmit: (e: Event) => { e.preventDefault(); void this.setClientSeed(input.value); } },
        h("label", { for: "own-seed" }, "Your client seed (mixed into every deal from the next hand) "), input, " ",
        h("button", { type: "submit", class: "secondary", id: "set-seed" }, "Set")));
    }
    return items.length ? h("section", { class: "panel controls", "aria-label": "Controls" }, items) : null;
  }

  private handPanel(view: TableView): HTMLElement {
    const hand = view.hand!;
    return h("section", { class: "hand", "aria-label": `Hand ${hand.number}` },
      h("div", { class: "boards" }, hand.seats.map((s) => this.boardPanel(view, s))),
      this.myTurn() ? this.pendingPanel() : null,
    );
  }

  private boardPanel(view: TableView, s: HandSeatView): HTMLElement {
    const hand = view.hand!;
    const mine = this.seat?.seat === s.seat;
    const acting = !hand.over && hand.toAct.includes(s.seat);
    const a = mine && this.myTurn() ? this.assignment : undefined;
    const targets = a && this.selected ? a.legalTargets(this.selected) : [];
    return h("article", {
      class: `board${mine ? " mine" : ""}${acting ? " acting" : ""}`, "data-testid": `board-${s.seat}`,
      "aria-label": `${this.name(s.seat)}'s board`,
    },
      h("h3", {}, this.name(s.seat),
        hand.button === s.seat ? h("span", { class: "badge", title: "button" }, "D") : null,
        s.fantasylandCards > 0 ? h("span", { class: "badge fl" }, `Fantasyland ${s.fantasylandCards}`) : null,
        acting ? h("span", { class: "countdown", "data-countdown": "", "data-testid": `countdown-${s.seat}`, "aria-label": "time left" }) : null,
        s.done ? h("span", { class: "badge done" }, "done") : null),
      s.boardHidden ? h("p", { class: "hidden-board", "data-testid": `hidden-${s.seat}` }, "Fantasyland hand set face down") : null,
      ROWS.map((row) => {
        const placed = s.board?.[row] ?? [];
        const tentative = a ? a.cardsTo(row) : [];
        const legal = targets.includes(row);
        const empty = ROW_SIZE[row] - placed.length - tentative.length;
        return h("div", {
          class: `row row-${row}${legal ? " legal" : ""}`, "data-row": row,
          ondragover: a ? (e: DragEvent) => { if (a.legalTargets(dragged(e) ?? "").includes(row)) e.preventDefault(); } : undefined,
          ondrop: a ? (e: DragEvent) => { e.preventDefault(); const c = dragged(e); if (c) this.place(row, c); } : undefined,
        },
          a ? h("button", {
            type: "button", class: "target", id: `target-${row}`, "data-target": row, disabled: !legal,
            "aria-label": `Place on the ${row} row (${a.room(row)} free)`, onclick: () => this.place(row),
          }, ROW_TITLE[row]) : h("span", { class: "row-name" }, ROW_TITLE[row]),
          h("div", { class: "slots" },
            placed.map((c) => cardFace(c)),
            tentative.map((c) => h("button", {
              type: "button", class: `card tentative ${suitClass(c)}`, id: `placed-${c}`, "data-card": c, "data-tentative": "",
              "aria-label": `${cardName(c)}, going to the ${row} row: take back`, onclick: () => this.takeBack(c),
            }, faceBody(c))),
            Array.from({ length: Math.max(0, empty) }, () => h("span", { class: "slot", "aria-hidden": "true" }))),
        );
      }),
      s.discardCount > 0 ? h("p", { class: "discards" }, `${s.discardCount} discarded`,
        mine && s.discards.length ? [": ", s.discards.map((c) => cardFace(c, "small"))] : " face down") : null,
    );
  }

  private pendingPanel(): HTMLElement {
    const a = this.assignment!;
    const free = a.unassigned();
    const discards = a.cardsTo("discard");
    const legal = this.selected ? a.legalTargets(this.selected) : [];
    return h("section", { class: "panel pending", "aria-label": "Your cards", "data-testid": "pending" },
      h("h2", {}, a.batch.fantasyland ? "Your Fantasyland hand" : "Your cards"),
      h("p", { class: "hint" }, "Choose a card, then a row (keys T, M, B", a.batch.discards ? ", X to discard" : "", "); or drag it onto a row."),
      h("div", { class: "hand-cards", role: "group", "aria-label": "Cards to place" },
        free.map((c) => h("button", {
          type: "button", class: `card ${suitClass(c)}${this.selected === c ? " selected" : ""}`, id: `card-${c}`, "data-card": c,
          "aria-pressed": this.selected === c ? "true" : "false", "aria-label": cardName(c), draggable: "true",
          ondragstart: (e: DragEvent) => { e.dataTransfer?.setData("text/plain", c); dragging = c; },
          onclick: () => this.select(c),
        }, faceBody(c)))),
      a.batch.discards > 0 ? h("div", {
        class: `row discard-row${legal.includes("discard") ? " legal" : ""}`, "data-row": "discard",
        ondragover: (e: DragEvent) => { if (a.legalTargets(dragged(e) ?? "").includes("discard")) e.preventDefault(); },
        ondrop: (e: DragEvent) => { e.preventDefault(); const c = dragged(e); if (c) this.place("discard", c); },
      },
        h("button", {
          type: "button", class: "target", id: "target-discard", "data-target": "discard", disabled: !legal.includes("discard"),
          "aria-label": `Discard face down (${a.discardsLeft()} to go)`, onclick: () => this.place("discard"),
        }, "Discard"),
        h("div", { class: "slots" }, discards.map((c) => h("button", {
          type: "button", class: `card tentative ${suitClass(c)}`, id: `placed-${c}`, "data-card": c, "data-tentative": "",
          "aria-label": `${cardName(c)}, to be discarded: take back`, onclick: () => this.takeBack(c),
        }, faceBody(c))))) : null,
      h("div", { class: "actions" },
        h("button", { type: "button", id: "confirm", "data-testid": "confirm", disabled: !a.complete() || this.busy, onclick: () => void this.confirm() },
          a.batch.fantasyland ? "Set hand" : "Place cards"),
        " ",
        h("button", { type: "button", class: "secondary", id: "clear", onclick: () => { a.clear(); this.selected = undefined; this.suggestion = ""; this.render(); } }, "Clear"),
        a.batch.fantasyland ? [" ", h("button", { type: "button", class: "secondary", id: "suggest", "data-testid": "suggest", onclick: () => void this.suggest() }, "Suggest")] : null),
      a.batch.fantasyland && this.suggestion ? h("p", { class: "hint", "data-testid": "suggestion" }, this.suggestion) : null,
    );
  }

  private timeoutNotices(): HTMLElement | null {
    const hand = this.view?.hand;
    if (!hand || this.timeouts.length === 0) return null;
    return h("section", { class: "panel notices", "aria-label": "Timeouts", "data-testid": "timeouts" },
      this.timeouts.map((t) => h("p", { class: "notice", "data-testid": `timeout-${t.seat}` },
        h("strong", {}, `${this.name(t.seat)}: time ran out. `),
        "The table played the default move: ",
        t.placed.length ? t.placed.join(", ") : "nothing yet",
        t.discardCount ? `; discarded ${t.discarded.length ? t.discarded.join(" ") : "a card face down"}` : "", ".")));
  }

  private settlementPanel(view: TableView): HTMLElement {
    const settlement = view.hand!.settlement!;
    const names = settlement.players.map((p) => p.playerId || `#${p.index}`);
    const rows = playerRows(settlement, (p) => p.playerId || `#${p.index}`);
    return h("section", { class: "panel settlement", "aria-label": "Settlement", "data-testid": "settlement" },
      h("h2", {}, "Settlement · ", h("bdi", {}, settlement.ruleset)),
      h("div", { class: "scroll" }, h("table", {},
        h("thead", {}, h("tr", {}, ["Player", "Top", "Middle", "Bottom", "Royalties", "Points", "Money"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, rows.map((r) => h("tr", { "data-testid": `settlement-player-${r.player}` },
          h("th", { scope: "row" }, r.player, r.fouled ? h("span", { class: "badge foul", "data-field": "fouled" }, "fouled") : null,
            r.fantasyland ? h("span", { class: "badge fl" }, `Fantasyland (${r.fantasyland})`) : null),
          r.hands.map((name, i) => h("td", {}, name, h("span", { class: "royalty", "data-field": `royalty-${ROWS[i]}` }, ` +${r.royalties[i]}`))),
          h("td", { "data-field": "royalties" }, String(r.royalties[3])),
          h("td", { "data-field": "points", class: "num" }, signed(r.points)),
          h("td", { "data-field": "units", class: "num" }, signed(r.units)),
        ))))),
      h("h3", {}, "Pairs"),
      h("div", { class: "scroll" }, h("table", {},
        h("thead", {}, h("tr", {}, ["Pair", "Top", "Middle", "Bottom", "Scoop", "Rows", "Royalties", "Points", "Capped", "Unit", "Money"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, settlement.pairs.map((p) => {
          const [an, bn] = pairLabel(p, names);
          return h("tr", { "data-testid": `settlement-pair-${an}-${bn}` },
            h("th", { scope: "row" }, `${an} v ${bn}`, p.aFouled ? ` (${an} fouled)` : "", p.bFouled ? ` (${bn} fouled)` : ""),
            (["top", "middle", "bottom"] as const).map((row) => h("td", { "data-field": row, "data-value": p[row] }, rowWinner(p[row], an, bn))),
            h("td", { "data-field": "scoop", "data-value": p.scoop }, p.scoop ? rowWinner(p.scoop, an, bn) : "—"),
            h("td", { "data-field": "row-points", class: "num" }, signed(p.rowPoints)),
            h("td", { "data-field": "royalties", class: "num" }, signed(p.royalties)),
            h("td", { "data-field": "points", class: "num" }, signed(p.points)),
            h("td", { "data-field": "capped", class: "num" }, signed(p.cappedPoints)),
            h("td", { "data-field": "unit", class: "num" }, String(p.unitValue)),
            h("td", { "data-field": "units", class: "num" }, signed(p.units)));
        })))),
      h("p", { class: "hint" }, `Points and money from ${names[0]}'s side of each pair; every column sums to zero over the players.`),
    );
  }

  private verificationPanel(number: bigint): HTMLElement {
    const v = this.verifications.get(number);
    const hand = this.view!.hand!;
    const body: Child[] = [h("h2", {}, "Deal check")];
    body.push(h("p", {}, "Server seed (revealed): ", h("code", { "data-testid": "server-seed" }, bytesToHex(hand.serverSeed))));
    if (!v || v.state === "checking") {
      body.push(h("p", { "data-testid": "verifying" }, "Re-deriving the deck with WebCrypto…"));
    } else if (v.state === "verified") {
      body.push(
        h("p", { class: "verified", "data-testid": "deal-verified", role: "status" }, "✔ Deal verified"),
        h("ul", { class: "checks" }, v.result.checks.map((c) => h("li", {}, c))),
        h("p", {}, "Client seed, as the deal used it (hex): ", h("code", {}, v.result.clientSeed || "(empty)")),
        download(v.historyJson, `hand-${number}.json`),
      );
    } else {
      body.push(h("p", { class: "error", role: "alert", "data-testid": "deal-not-verified" }, "✘ Deal NOT verified: ", v.message),
        v.historyJson ? download(v.historyJson, `hand-${number}.json`) : null);
    }
    return h("section", { class: "panel verification", "aria-label": "Deal check", "data-testid": "verification" }, body);
  }
}

function label(card: string): string {
  const f = face(card);
  return `${f.rank}${f.suit}`;
}

function rowName(row: RowPosition): string {
  return row === RowPosition.TOP ? "top" : row === RowPosition.MIDDLE ? "middle" : "bottom";
}

/** The card being dragged: set on dragstart (a dragover cannot read the drag's data). */
let dragging: string | undefined;
/** A draggable card is pressed (a drag may start from it). */
let pressed = false;

function dragged(e: DragEvent): string | undefined {
  return dragging ?? (e.dataTransfer?.getData("text/plain") || undefined);
}

function faceBody(card: string): Child[] {
  const f = face(card);
  return [h("span", { class: "rank" }, f.rank), h("span", { class: "suit", "aria-hidden": "true" }, f.suit)];
}

/** A face-up card that is not a control. */
export function cardFace(card: string, size = ""): HTMLElement {
  return h("span", { class: `card ${suitClass(card)} ${size}`, "data-card": card, role: "img", "aria-label": cardName(card) }, faceBody(card));
}

function download(json: string, name: string): HTMLElement {
  const url = URL.createObjectURL(new Blob([json], { type: "application/json" }));
  return h("p", {}, h("a", { href: url, download: name }, "Download the hand history"), " (check it with ", h("code", {}, "ofc verify"), ")");
}

/** The lobby: this page's address without its table and seat. */
function lobbyHref(): string {
  const url = new URL(location.href);
  url.search = "";
  url.hash = "";
  return url.href;
}
