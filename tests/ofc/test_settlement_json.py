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
from ofc.rulesets import Ruleset
from ofc.scoring import Board, settle

from tests.ofc.test_scoring import hands

ids = st.one_of(st.text(max_size=6), st.sampled_from(["ann", 'quo"te', "back\\slash", "ĉu 🂡"]))


@settings(max_examples=300)
@given(hands(), st.data())
def test_the_fast_text_is_the_dict_dumped(
    hand: tuple[Ruleset, list[Board]], data: st.DataObject
) -> None:
    ruleset, boards = hand
    n = len(boards)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    units = data.draw(st.dictionaries(st.sampled_from(pairs), st.integers(1, 10**6)))
    flags = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    streaks = [data.draw(st.integers(1, 3)) if f else 0 for f in flags]
    player_ids = data.draw(st.lists(ids, min_size=n, max_size=n, unique=True))
    settlement = settle(
        boards, ruleset, in_fantasyland=flags, fantasyland_streaks=streaks, pair_units=units
    )
    text = settlement_json(settlement, player_ids)
    assert text == json.dumps(settlement_to_dict(settlement, player_ids))
