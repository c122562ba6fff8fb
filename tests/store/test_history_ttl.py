"""OFC_HISTORY_TTL_SECONDS at a live table (in memory, on a clock the test moves): a finished
hand's history stays that long after it was written, then the table's next change removes
it (the store's conformance tests check both stores do the same)."""

from __future__ import annotations

from ofc_service.application import commands

from tests.api.test_turn_clocks import START, TURN, Table


def test_a_history_goes_at_the_first_change_after_its_ttl() -> None:
    table = Table("classic", 2, {})
    table.manager.history_ttl_seconds = 600
    table.start()
    at = START
    while table.record.match.hand is not None and not table.record.match.hand.over:
        at += TURN
        table.sweep(at)  # every seat times out: the hand plays itself
    assert table.history()["hand_number"] == 1  # written when the hand ended, at ``at``

    async def history(number: int) -> bytes | None:
        return await table.store.get_extra("clock", f"hand:{number}")

    table.now = at + 599_000  # not yet due: the next hand starts, hand 1 stays
    table.run(lambda: table._change(commands.StartHand()))
    assert table.run(lambda: history(1)) is not None
    table.now = at + 600_000  # due: the next change removes it
    hand = table.record.match.hand
    assert hand is not None
    table.place(next(s.seat for s in hand.seats if s.pending), table.now)
    assert table.run(lambda: history(1)) is None
    page = table.run(lambda: table.store.list_extra("clock", "hand"))
    assert page.total == 0
