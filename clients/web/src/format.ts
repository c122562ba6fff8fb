// Numbers and results as the page writes them.

import type { PairResult, PlayerResult, Settlement } from "./gen/ofcpoker/v1/settlement_pb";

/** "+3", "-3", "0": every score is signed so a glance tells who won. */
export function signed(n: number | bigint): string {
  const v = typeof n === "bigint" ? n : BigInt(n);
  return v > 0n ? `+${v}` : `${v}`;
}

/** Seconds left as "0:07". */
export function clock(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

/** Who took a row of a pair: +1 a, -1 b, 0 tie. */
export function rowWinner(value: number, a: string, b: string): string {
  return value > 0 ? a : value < 0 ? b : "tie";
}

export interface SettlementRowView {
  player: string;
  fouled: boolean;
  hands: [string, string, string];
  royalties: [number, number, number, number];
  points: number;
  units: bigint;
  fantasyland: number;
}

/** One row of the players' table per settled player, in the settlement's order. */
export function playerRows(settlement: Settlement, names: (p: PlayerResult) => string): SettlementRowView[] {
  return settlement.players.map((p) => {
    const b = p.board;
    const r = b?.royalties;
    return {
      player: names(p),
      fouled: b?.fouled ?? false,
      hands: [b?.top?.name ?? "", b?.middle?.name ?? "", b?.bottom?.name ?? ""],
      royalties: [r?.top ?? 0, r?.middle ?? 0, r?.bottom ?? 0, r?.total ?? 0],
      points: p.points,
      units: p.units,
      fantasyland: b?.fantasyland?.qualifies ? b.fantasyland.cards : 0,
    };
  });
}

export function pairLabel(pair: PairResult, names: readonly string[]): [string, string] {
  return [names[pair.a] ?? `#${pair.a}`, names[pair.b] ?? `#${pair.b}`];
}
