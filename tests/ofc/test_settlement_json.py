"""``ofc.codec.settlement_json`` writes exactly ``json.dumps(settlement_to_dict(...))``.

``ofc score`` prints the fast one; the dict form is the reference (and what the history and
verify code build on). Random hands of every shape: legal and fouled boards, 2-4 players,
loss caps, other scoring schemes, pair unit values, Fantasyland, ids that JSON escapes.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from ofc.codec import settlement_json, settlement_to_dict
from ofc.scoring import Settlement, settle

from tests.ofc.test_scoring import hands

ids = st.one_of(st.text(max_size=6), st.sampled_from(["", 'quo"te', "back\\slash", "ĉu 🂡"]))


@st.composite
def settlements(draw: st.DrawFn) -> tuple[Settlement, list[str]]:
    """A settled hand of any shape (pair unit values, Fantasyland) and its player ids."""
    ruleset, boards = draw(hands())
    n = len(boards)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    units = draw(st.dictionaries(st.sampled_from(pairs), st.integers(1, 10**6)))
    flags = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    streaks = [draw(st.integers(1, 3)) if f else 0 for f in flags]
    player_ids = draw(st.lists(ids, min_size=n, max_size=n, unique=True))
    settlement = settle(
        boards, ruleset, in_fantasyland=flags, fantasyland_streaks=streaks, pair_units=units
    )
    return settlement, player_ids


@settings(max_examples=300)
@given(settlements())
def test_the_fast_text_is_the_dict_dumped(settled: tuple[Settlement, list[str]]) -> None:
    settlement, player_ids = settled
    text = settlement_json(settlement, player_ids)
    assert text == json.dumps(settlement_to_dict(settlement, player_ids))
