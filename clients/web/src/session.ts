// This tab's seat at a table: kept in sessionStorage (this tab only, gone when it closes),
// never in localStorage or a cookie, so another tab or player of the same browser is not
// this seat. Nothing else is stored: cards live in memory only.

export interface SeatSession {
  seat: number;
  token: string;
  playerId: string;
}

const key = (tableId: string): string => `ofc.seat.${tableId}`;

export function loadSeat(storage: Storage, tableId: string): SeatSession | undefined {
  const raw = storage.getItem(key(tableId));
  if (raw === null) return undefined;
  try {
    const s = JSON.parse(raw) as SeatSession;
    if (Number.isInteger(s.seat) && typeof s.token === "string" && typeof s.playerId === "string") return s;
  } catch {
    // fall through: a damaged entry is dropped
  }
  storage.removeItem(key(tableId));
  return undefined;
}

export function saveSeat(storage: Storage, tableId: string, seat: SeatSession): void {
  storage.setItem(key(tableId), JSON.stringify(seat));
}

export function forgetSeat(storage: Storage, tableId: string): void {
  storage.removeItem(key(tableId));
}
