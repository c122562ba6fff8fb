"""ofc-shuffle-v2: the committed vectors, an independent reference, and what v2 keeps of v1.

``tests/vectors/shuffle-v2.json`` holds the vectors (the Node verifier's tests read the same
file). Each is checked against ``ofc.shuffle`` and against ``reference_deck`` below, written
from docs/shuffle-v2.md alone, on the word stream of ``test_shuffle``'s reference (v1's).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ofc.cards import deck_cards, format_cards
from ofc.errors import InvalidSeedError
from ofc.shuffle import (
    ALGORITHM,
    ALGORITHM_V2,
    algorithm_for,
    choice,
    commitment,
    deal_deck,
    shuffle_deck,
    shuffle_deck_v2,
    word_stream,
)

from tests.ofc.test_shuffle import reference_words  # v2's word stream is v1's

VECTORS: dict[str, Any] = json.loads(
    (Path(__file__).parents[1] / "vectors" / "shuffle-v2.json").read_text(encoding="utf-8")
)


def reference_deck(words: Iterator[int], size: int) -> list[str]:
    deck = [rank + suit for rank in "23456789TJQKA" for suit in "cdhs"]
    deck += ["X1", "X2"][: size - 52]
    for i in range(size - 1, 0, -1):
        m = i + 1
        limit = 2**32 - (2**32 % m)
        u = next(words)
        while u >= limit:
            u = next(words)
        deck[i], deck[u % m] = deck[u % m], deck[i]
    return deck


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=lambda v: v["name"])
def test_vectors(vector: dict[str, Any]) -> None:
    seed, client = bytes.fromhex(vector["server_seed"]), bytes.fromhex(vector["client_seed"])
    nonce, size = int(vector["nonce"]), vector["deck_size"]
    assert commitment(seed) == vector["commitment"]
    words = list(itertools.islice(word_stream(seed, client, nonce), 8))
    assert [f"{w:08x}" for w in words] == vector["words"]
    deck = shuffle_deck_v2(seed, client, nonce, deck_size=size)
    assert format_cards(deck) == vector["deck"]
    assert " ".join(reference_deck(reference_words(seed, client, nonce), size)) == vector["deck"]
    assert sorted(deck) == list(deck_cards(size - 52))


def test_the_vectors_cover_both_joker_counts_and_the_v1_deck() -> None:
    assert VECTORS["algorithm"] == ALGORITHM_V2 == "ofc-shuffle-v2"
    assert {v["deck_size"] for v in VECTORS["vectors"]} == {52, 53, 54}
    spec_52 = next(v for v in VECTORS["vectors"] if v["deck_size"] == 52)
    # docs/shuffle-v1.md's vector deck: v2 on 52 cards is v1.
    assert spec_52["deck"].startswith("Qs 6d Ad Td 6s 4s 8s Kc Kh 7d")
    assert spec_52["deck"].endswith("Ks Qh 6c 9h 2h")


@pytest.mark.parametrize("case", VECTORS["rejection"], ids=lambda c: f"m={c['m']}")
def test_rejection_vectors(case: dict[str, Any]) -> None:
    m = case["m"]
    assert 2**32 - (2**32 % m) == case["limit"]
    assert choice(m, iter(case["words"])) == case["result"]


def test_algorithm_by_jokers() -> None:
    assert [algorithm_for(j) for j in (0, 1, 2)] == [ALGORITHM, ALGORITHM_V2, ALGORITHM_V2]
    seed = bytes(range(32))
    assert deal_deck(seed, b"x", 3) == shuffle_deck(seed, b"x", 3)
    assert deal_deck(seed, b"x", 3, jokers=2) == shuffle_deck_v2(seed, b"x", 3, deck_size=54)


@pytest.mark.parametrize("size", [51, 55, 0, True, "53"])
def test_bad_deck_sizes(size: object) -> None:
    with pytest.raises(InvalidSeedError, match=r"52\.\.54 cards") as info:
        shuffle_deck_v2(bytes(32), deck_size=size)  # type: ignore[arg-type]
    assert info.value.field == "deck_size"


@given(
    st.binary(min_size=32, max_size=32),
    st.binary(max_size=40),
    st.integers(0, 2**64 - 1),
    st.sampled_from([52, 53, 54]),
)
def test_any_seed_gives_a_permutation_and_v2_on_52_is_v1(
    server_seed: bytes, client_seed: bytes, nonce: int, size: int
) -> None:
    deck = shuffle_deck_v2(server_seed, client_seed, nonce, deck_size=size)
    assert sorted(deck) == list(deck_cards(size - 52))
    if size == 52:
        assert deck == shuffle_deck(server_seed, client_seed, nonce)
    reference = reference_deck(reference_words(server_seed, client_seed, nonce), size)
    assert format_cards(deck) == " ".join(reference)
