"""The deadline sweep goes on past a table whose timeout move fails.

Every replica's sweep takes the due tables oldest deadline first: if one table's timeout
raised out of the sweep, that table would come first again at every sweep, and no other
table's clock would ever run out again, on any replica.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import pytest
from ofc import engine
from ofc.policy import TIMEOUT_POLICY
from ofc_service.application import commands, deadlines
from ofc_service.application.deadlines import DeadlineSweeper
from ofc_service.application.manager import Request, TableManager
from ofc_service.application.records import TableRecord
from ofc_service.auth import Authenticator, Credentials
from ofc_service.store import MemoryTableStore, StoreUnavailableError

from tests.silent import SilentPresenter

TURN = 1_000
KEY = "sweep-key"
OPERATOR = Credentials(api_key=KEY)


@dataclass(frozen=True)
class BrokenFor:
    """The shipped policy, except that it fails at tables where ``player`` sits."""

    player: str
    name: str = TIMEOUT_POLICY.name
    version: int = TIMEOUT_POLICY.version

    def choose(self, state: engine.MatchState, seat: int) -> engine.Place | engine.SetFantasyland:
        if any(s.player_id == self.player for s in state.seats):
            raise RuntimeError("no move for this table")
        return TIMEOUT_POLICY.choose(state, seat)


class Tables:
    def __init__(self) -> None:
        self.now = 1_000_000
        self.store = MemoryTableStore(clock=lambda: self.now / 1000)
        self.manager = TableManager(
            self.store,
            Authenticator((KEY,)),
            SilentPresenter(),
            clock_ms=lambda: self.now,
            policy=BrokenFor("boom"),
        )

    async def open(self, table_id: str, players: tuple[str, str]) -> None:
        match, _ = engine.replay(
            engine.new_match("classic", seats=2),
            [engine.SitDown(s, name) for s, name in enumerate(players)],
        )
        await self.manager.create(TableRecord(table_id, match, TURN, 4 * TURN, b"", 0))
        request = Request(table_id, await self.version(table_id), "start")
        await self.manager.run(request, commands.StartHand(), OPERATOR)

    async def version(self, table_id: str) -> int:
        return (await self.manager.load(table_id))[1]


def test_a_failing_table_does_not_stop_the_others_clocks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> None:
        tables = Tables()
        await tables.open("broken", ("boom", "b"))  # its deadline comes first
        tables.now += 10
        await tables.open("fine", ("c", "d"))
        before = {t: await tables.version(t) for t in ("broken", "fine")}
        sweeper = DeadlineSweeper(tables.manager)
        tables.now += TURN + 10
        with caplog.at_level(logging.ERROR, logger="ofc.deadlines"):
            assert await sweeper.sweep_once() == 1
            tables.now += TURN + 10  # the fine table's next seat's turn runs out too
            assert await sweeper.sweep_once() == 1
        assert await tables.version("broken") == before["broken"]
        assert await tables.version("fine") == before["fine"] + 2
        failures = [r for r in caplog.records if r.name == "ofc.deadlines"]
        assert len(failures) == 1, "said once, not at every sweep"
        assert failures[0].fields == {"table_id": "broken"}  # type: ignore[attr-defined]

    asyncio.run(scenario())


def test_a_store_outage_still_ends_the_sweep() -> None:
    """An unavailable store is the loop's to back off from, not a table's failure."""

    async def scenario() -> None:
        tables = Tables()
        await tables.open("fine", ("c", "d"))
        tables.now += TURN + 10

        async def unavailable(table_id: str) -> int:
            raise StoreUnavailableError("redis is down")

        tables.manager.apply_due_timeouts = unavailable  # type: ignore[method-assign]
        with pytest.raises(StoreUnavailableError):
            await DeadlineSweeper(tables.manager).sweep_once()

    asyncio.run(scenario())


def test_a_table_whose_store_node_is_out_does_not_stop_the_others_clocks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """On a Redis Cluster one master's outage is its own tables': the due tables on other
    masters are timed out all the same (the sweep ends normally, the outage said once per
    table as a warning); only a sweep where every due table is out backs off."""

    async def scenario() -> None:
        tables = Tables()
        await tables.open("away", ("a", "b"))  # its deadline comes first
        tables.now += 10
        await tables.open("fine", ("c", "d"))
        before = await tables.version("fine")
        tables.now += TURN + 10
        timeouts = tables.manager.apply_due_timeouts

        async def its_master_is_out(table_id: str) -> int:
            if table_id == "away":
                raise StoreUnavailableError("the table store is unavailable")
            return await timeouts(table_id)

        tables.manager.apply_due_timeouts = its_master_is_out  # type: ignore[method-assign]
        sweeper = DeadlineSweeper(tables.manager)
        with caplog.at_level(logging.WARNING, logger="ofc.deadlines"):
            assert await sweeper.sweep_once() == 1
            with pytest.raises(StoreUnavailableError):  # now every due table is out
                await sweeper.sweep_once()
        assert await tables.version("fine") == before + 1
        said = [(r.levelname, r.exc_info) for r in caplog.records if r.name == "ofc.deadlines"]
        assert said == [("WARNING", None)]

    asyncio.run(scenario())


def test_a_count_of_the_waiting_tables_refused_stops_no_clock() -> None:
    """While a node of the store is out (a cluster's master away), a count of the waiting
    tables is refused (it would count some shards only): the gauge keeps its last value and
    the due tables are timed out all the same."""

    async def scenario() -> None:
        tables = Tables()
        await tables.open("fine", ("c", "d"))
        before = await tables.version("fine")
        tables.now += TURN + 10

        async def some_shards_out() -> int:
            raise StoreUnavailableError("redis unavailable: a node did not answer")

        tables.store.deadline_count = some_shards_out  # type: ignore[method-assign]
        assert await DeadlineSweeper(tables.manager).sweep_once() == 1
        assert await tables.version("fine") == before + 1

    asyncio.run(scenario())


def test_a_table_whose_store_node_hangs_holds_up_no_sweep_for_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A table whose store node takes no answer (paused, failing over) gets SWEEP_TABLE_S;
    the sweep goes on with the others, ends, and tries it again last next time."""

    async def scenario() -> None:
        tables = Tables()
        await tables.open("hung", ("a", "b"))  # its deadline comes first
        tables.now += 10
        await tables.open("fine", ("c", "d"))
        tables.now += TURN + 10
        timeouts = tables.manager.apply_due_timeouts
        tried: list[str] = []

        async def its_node_hangs(table_id: str) -> int:
            tried.append(table_id)
            if table_id == "hung":
                await asyncio.sleep(3600)
            return await timeouts(table_id)

        tables.manager.apply_due_timeouts = its_node_hangs  # type: ignore[method-assign]
        monkeypatch.setattr(deadlines, "SWEEP_TABLE_S", 1.0)  # the other table: its policy thread
        sweeper = DeadlineSweeper(tables.manager)
        async with asyncio.timeout(20):
            assert await sweeper.sweep_once() == 1
            tables.now += TURN + 10
            tried.clear()
            assert await sweeper.sweep_once() == 1  # fine's next seat; hung still hangs
        assert tried == ["fine", "hung"]  # the table out last time, last

    asyncio.run(scenario())


def test_changes_beside_the_hand_do_not_keep_a_turn_clock_from_running_out() -> None:
    """Someone takes and leaves a free seat between the sweeper's read of the table and
    its commit, again and again: the timeout meets a newer version each time, and is made
    all the same (the hand has not changed), once."""

    async def scenario() -> None:
        tables = Tables()
        manager = tables.manager
        match = engine.new_match("classic", seats=3)
        match, _ = engine.replay(match, [engine.SitDown(0, "a"), engine.SitDown(1, "b")])
        await manager.create(TableRecord("t", match, TURN, 4 * TURN, b"", 0))
        await manager.run(Request("t", 1, "start"), commands.StartHand(), OPERATOR)
        hand = (await manager.load("t"))[0].match.hand
        run = manager.run
        churned: list[commands.Command] = []

        async def churn_then_run(
            request: Request, command: commands.Command, creds: Credentials | None = None
        ) -> bytes:
            if isinstance(command, commands.TimeOut) and len(churned) < 20:
                for change in (commands.JoinSeat(2, "x"), commands.LeaveSeat(2)):
                    now = await tables.version("t")
                    await run(Request("t", now, f"churn-{len(churned)}"), change, OPERATOR)
                    churned.append(change)
            return await run(request, command, creds)

        manager.run = churn_then_run  # type: ignore[method-assign]
        tables.now += TURN + 10
        assert await manager.apply_due_timeouts("t") == 1
        record, _, _ = await manager.load("t")
        assert len(churned) == 20  # a join and a leave before each of its first 10 tries
        assert record.match.hand != hand and record.hand_actions[-1].__class__ is engine.Timeout
        assert len([a for a in record.hand_actions if isinstance(a, engine.Timeout)]) == 1

    asyncio.run(scenario())
