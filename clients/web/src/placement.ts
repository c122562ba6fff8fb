// Which rows a dealt card may go to, and when a batch is ready to send. Pure: the page keeps
// one Assignment for the seat's pending cards and renders it; the server checks again.

export type Row = "top" | "middle" | "bottom";
export type Target = Row | "discard";
export const ROWS: readonly Row[] = ["top", "middle", "bottom"];
export const ROW_SIZE: Readonly<Record<Row, number>> = { top: 3, middle: 5, bottom: 5 };

export interface Rows {
  top: readonly string[];
  middle: readonly string[];
  bottom: readonly string[];
}

/** What the seat must do with its pending cards. */
export interface Batch {
  /** The dealt, unplaced cards. */
  cards: readonly string[];
  /** How many of them are discarded face down (deal - place; a Fantasyland hand: cards - 13). */
  discards: number;
  /** True for a whole Fantasyland hand (SetFantasyland), false for a street (PlaceCards). */
  fantasyland: boolean;
}

/** The batch of a street: `deal` cards dealt, `place` of them placed. */
export function streetBatch(cards: readonly string[], place: number): Batch {
  return { cards, discards: Math.max(0, cards.length - place), fantasyland: false };
}

/** A Fantasyland hand: 13 cards set, the rest discarded. */
export function fantasylandBatch(cards: readonly string[]): Batch {
  return { cards, discards: Math.max(0, cards.length - 13), fantasyland: true };
}

/** The seat's choices for its pending cards, card by card. */
export class Assignment {
  private readonly chosen = new Map<string, Target>();

  constructor(readonly board: Rows, readonly batch: Batch) {}

  targetOf(card: string): Target | undefined {
    return this.chosen.get(card);
  }

  /** Cards of the batch not yet given a target, in dealt order. */
  unassigned(): string[] {
    return this.batch.cards.filter((c) => !this.chosen.has(c));
  }

  /** Cards given `target`, in dealt order. */
  cardsTo(target: Target): string[] {
    return this.batch.cards.filter((c) => this.chosen.get(c) === target);
  }

  /** Free slots of a row counting the cards already sent there. */
  room(row: Row): number {
    return ROW_SIZE[row] - this.board[row].length - this.cardsTo(row).length;
  }

  discardsLeft(): number {
    return this.batch.discards - this.cardsTo("discard").length;
  }

  /** Where `card` may go now (its own target counts as free). */
  legalTargets(card: string): Target[] {
    if (!this.batch.cards.includes(card)) return [];
    const current = this.chosen.get(card);
    const out: Target[] = ROWS.filter((row) => this.room(row) > 0 || current === row);
    if (this.discardsLeft() > 0 || current === "discard") out.push("discard");
    return out;
  }

  /** Send `card` to `target`; false (and no change) when that is not legal. */
  assign(card: string, target: Target): boolean {
    if (!this.legalTargets(card).includes(target)) return false;
    this.chosen.set(card, target);
    return true;
  }

  unassign(card: string): void {
    this.chosen.delete(card);
  }

  clear(): void {
    this.chosen.clear();
  }

  /** Every card has a target, the discards are exactly the batch's (a Fantasyland hand
   *  fills the board). */
  complete(): boolean {
    if (this.unassigned().length > 0 || this.discardsLeft() !== 0) return false;
    return !this.batch.fantasyland || ROWS.every((row) => this.room(row) === 0);
  }

  /** Set every card as given (a solver's suggestion); false and no change if it does not fit. */
  assignAll(rows: Rows, discards: readonly string[]): boolean {
    const next = new Assignment(this.board, this.batch);
    for (const row of ROWS) for (const card of rows[row]) if (!next.assign(card, row)) return false;
    for (const card of discards) if (!next.assign(card, "discard")) return false;
    if (!next.complete()) return false;
    this.chosen.clear();
    for (const [card, target] of next.chosen) this.chosen.set(card, target);
    return true;
  }
}
