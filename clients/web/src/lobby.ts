// The start page: create a table (preset, seats, turn time, seeds) or open one by id.

import { type Api, describeError, sendOnce } from "./api";
import { h } from "./dom";
import { ClientSeedPolicy } from "./gen/ofcpoker/v1/table_service_pb";
import type { RulesetParameters } from "./gen/ofcpoker/v1/ruleset_pb";

export async function renderLobby(root: HTMLElement, api: Api, setApiKey: (key: string) => void, open: (tableId: string) => void): Promise<void> {
  let presets: RulesetParameters[] = [];
  let problem = "";
  try {
    presets = (await api.rules.listPresets({})).presets;
  } catch (error) {
    problem = `The service did not list its presets: ${describeError(error)}`;
  }
  const error = h("p", { class: "error", role: "alert", "data-testid": "error", hidden: !problem }, problem);
  const preset = h("select", { id: "preset", name: "preset" },
    presets.map((p) => h("option", { value: p.name, selected: p.name === "pineapple" }, `${p.name} (${p.streets.map((s) => s.deal).join("-")} dealt)`)));
  const seats = h("input", { id: "seats", name: "seats", type: "number", min: 2, max: 4, value: 2, required: true });
  const turn = h("input", { id: "turn-seconds", name: "turn", type: "number", min: 1, max: 3600, value: 30, required: true });
  const policy = h("select", { id: "seed-policy", name: "policy" },
    h("option", { value: String(ClientSeedPolicy.TABLE) }, "the table's seed"),
    h("option", { value: String(ClientSeedPolicy.PLAYERS) }, "the table's seed and each player's own"));
  const clientSeed = h("input", { id: "client-seed", name: "clientSeed", maxlength: 256, placeholder: "any text, e.g. tonight's date" });
  const apiKey = h("input", { id: "api-key", name: "apiKey", type: "password", autocomplete: "off", placeholder: "only if the service asks for one" });
  const limitSeats = (): void => {
    const p = presets.find((x) => x.name === preset.value);
    if (p) {
      seats.min = String(p.minPlayers);
      seats.max = String(p.maxPlayers);
      if (Number(seats.value) > p.maxPlayers) seats.value = String(p.maxPlayers);
    }
  };
  preset.addEventListener("change", limitSeats);
  limitSeats();
  const submit = h("button", { type: "submit", id: "create-table" }, "Create table");
  const form = h("form", {
    class: "panel create", "aria-labelledby": "create-title", "data-testid": "create-form",
    onsubmit: async (e: Event) => {
      e.preventDefault();
      submit.disabled = true;
      error.hidden = true;
      setApiKey(apiKey.value.trim());
      try {
        const fields = {
          ruleset: { preset: preset.value },
          seats: Number(seats.value),
          turnTimeLimitMs: Math.round(Number(turn.value) * 1000),
          clientSeed: clientSeed.value,
          clientSeedPolicy: Number(policy.value) as ClientSeedPolicy,
        };
        // The same form sent again after a create that got no answer goes under its id: the
        // service answers with the table that create made, if it made one.
        const res = await sendOnce("CreateTable", fields, (request) => api.tables.createTable(request));
        open(res.tableId);
      } catch (err) {
        error.textContent = describeError(err);
        error.hidden = false;
      } finally {
        setApiKey("");
        submit.disabled = false;
      }
    },
  },
    h("h2", { id: "create-title" }, "New table"),
    field("Rules", preset),
    field("Seats", seats),
    field("Seconds a turn", turn),
    field("Deals mix in", policy),
    field("Table seed", clientSeed),
    field("Operator key", apiKey),
    submit,
  );
  const tableId = h("input", { id: "open-id", name: "table", required: true, placeholder: "table id", "aria-label": "Table id" });
  const openForm = h("form", {
    class: "panel open", "aria-labelledby": "open-title",
    onsubmit: (e: Event) => { e.preventDefault(); if (tableId.value.trim()) open(tableId.value.trim()); },
  }, h("h2", { id: "open-title" }, "Open a table"), tableId, " ", h("button", { type: "submit" }, "Open"));
  root.replaceChildren(h("div", { class: "lobby" },
    h("h1", {}, "Open-Face Chinese Poker"),
    h("p", { class: "meta" }, "Create a table, then send each player the join link of a seat. Every deal is checked in this page once the hand is over."),
    error, form, openForm));
}

function field(text: string, control: HTMLInputElement | HTMLSelectElement): HTMLElement {
  return h("p", { class: "field" }, h("label", { for: control.id }, text), control);
}
