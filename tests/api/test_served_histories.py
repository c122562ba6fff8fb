"""A finished hand written by any earlier release is served by GetHandHistory and ListHands.

A table keeps its hands' histories for its lifetime, in the form the release that played
each hand wrote it; a table started before an upgrade holds them still. Every golden history
(tests/golden: written by each release) is stored as a table's hand here, as the table
stores it, and served: its JSON as stored, its seeds and commitment, and the settlement
recomputed from its actions, equal to the one it records.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from ofc import engine
from ofc_service.api.tables import SERVICE, ProtobufPresenter, TableHandlers
from ofc_service.application.manager import TableManager
from ofc_service.application.records import HAND_PREFIX, TableRecord, pack_history
from ofc_service.auth import Authenticator
from ofc_service.store import Commit, MemoryTableStore
from ofcpoker.v1 import table_service_pb2 as pb

from tests.api.test_create_table import Context
from tests.in_process import InProcess
from tests.ofc.test_golden import FILES, GOLDEN, load

HISTORIES = [p for p in FILES if "hand_number" in load(p)[0]]


@pytest.mark.parametrize("path", HISTORIES, ids=[str(p.relative_to(GOLDEN)) for p in HISTORIES])
def test_a_stored_history_of_any_release_is_served(path: Path) -> None:
    history, _ = load(path)
    number = history["hand_number"]
    store = MemoryTableStore()
    servicer = InProcess(
        TableHandlers(TableManager(store, Authenticator(), ProtobufPresenter())), SERVICE
    )
    table = TableRecord("t", engine.new_match("classic", seats=2), 30_000, 120_000, b"", 0)

    async def serve() -> tuple[Any, Any]:
        state = table.to_bytes()
        version = (await store.create_table("t", state)).version
        stored = {f"{HAND_PREFIX}:{number}": pack_history(history)}
        await store.commit(Commit("t", version, state, "keep", None, extra=stored))
        request = pb.GetHandHistoryRequest(table_id="t", hand_number=number)
        served = await servicer.GetHandHistory(request, Context())
        listed = await servicer.ListHands(pb.ListHandsRequest(table_id="t"), Context())
        return served, listed

    served, listed = asyncio.run(serve())
    assert json.loads(served.history_json) == history
    assert (served.server_seed.hex(), served.client_seed.hex(), served.commitment) == (
        history["server_seed"],
        history["client_seed"],
        history["commitment"],
    )
    recorded = {p["seat"]: (p["points"], p["units"]) for p in history["settlement"]["players"]}
    seats = [p["seat"] for p in history["players"]]
    assert {seats[p.index]: (p.points, p.units) for p in served.settlement.players} == recorded
    (entry,) = listed.hands
    assert (entry.hand_number, entry.commitment) == (number, history["commitment"])
