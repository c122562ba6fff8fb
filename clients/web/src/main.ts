// Entry point: `/` is the lobby, `/?table=ID` a table, `/?table=ID&seat=N` a seat's join link.

import { baseUrlOf, connect, type Credentials } from "./api";
import { renderLobby } from "./lobby";
import { TablePage } from "./table";

const root = document.getElementById("app")!;
const announcer = document.getElementById("announcer")!;
// Credentials live in memory; the seat token is also in this tab's sessionStorage (session.ts).
const credentials: Credentials = {};
const api = connect(baseUrlOf(location), () => credentials);

function open(tableId: string, seat?: number): void {
  const url = new URL(location.href);
  url.search = "";
  url.searchParams.set("table", tableId);
  if (seat !== undefined) url.searchParams.set("seat", String(seat));
  history.pushState(null, "", url);
  void route();
}

let page: TablePage | undefined;

async function route(): Promise<void> {
  page?.stop();
  page = undefined;
  const params = new URLSearchParams(location.search);
  const tableId = params.get("table");
  if (!tableId) {
    credentials.seatToken = undefined; // the lobby's calls are about no table: no seat token goes
    document.title = "OFC · new table";
    await renderLobby(root, api, (key) => { credentials.apiKey = key || undefined; }, (id) => open(id));
    return;
  }
  document.title = `OFC · table ${tableId}`;
  const seat = params.get("seat");
  page = new TablePage(root, announcer, api, tableId, sessionStorage, (token) => { credentials.seatToken = token; },
    seat !== null && /^\d+$/.test(seat) ? Number(seat) : undefined);
  await page.start();
}

window.addEventListener("popstate", () => void route());
void route();
