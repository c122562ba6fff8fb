"""ofc-shuffle-v1: the committed vectors, our own, and a chi-square uniformity check.

``tests/vectors/shuffle-v1.json`` holds the vectors docs/shuffle-v1.md publishes (the Node
verifier's and the web table's tests read the same file). Every vector is checked twice:
against ``ofc.shuffle`` and against ``reference_deck`` below, a straightforward
reimplementation written from docs/shuffle-v1.md alone.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import operator
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from statistics import NormalDist
from typing import Any

import ofc.shuffle
import pytest
from hypothesis import given
from hypothesis import strategies as st
from ofc.cards import ALL_CARDS, format_cards
from ofc.errors import InvalidSeedError
from ofc.shuffle import (
    ALGORITHM,
    choice,
    combine_client_seeds,
    commitment,
    parse_seed_hex,
    shuffle_deck,
    verify_commitment,
    word_stream,
)


# --- an independent reference, from the spec's words ------------------------------------------
def reference_words(server_seed: bytes, client_seed: bytes, nonce: int) -> Iterator[int]:
    for k in itertools.count():
        message = (
            b"ofc-shuffle-v1"
            + b"\x00"
            + len(client_seed).to_bytes(4, "big")
            + client_seed
            + nonce.to_bytes(8, "big")
            + k.to_bytes(4, "big")
        )
        block = hmac.new(server_seed, message, hashlib.sha256).digest()
        for i in range(0, 32, 4):
            yield int.from_bytes(block[i : i + 4], "big")


def reference_deck(words: Iterator[int]) -> list[str]:
    deck = [rank + suit for rank in "23456789TJQKA" for suit in "cdhs"]
    for i in range(51, 0, -1):
        m = i + 1
        limit = 2**32 - (2**32 % m)
        u = next(words)
        while u >= limit:
            u = next(words)
        j = u % m
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def block0(server_seed: bytes, client_seed: bytes, nonce: int) -> str:
    words = itertools.islice(word_stream(server_seed, client_seed, nonce), 8)
    return b"".join(w.to_bytes(4, "big") for w in words).hex()


# --- the spec's vectors ------------------------------------------------------------------------
SPEC_SEED = bytes(range(32))
SPEC_DECK = (
    "Qs 6d Ad Td 6s 4s 8s Kc Kh 7d 8d Ts Jc 4d Js 5c 5s 7h Ac 9s Kd 9d Ah 3s 9c 2s 3h As 2d Jd "
    "3d 7s 3c 2c Tc Qc 4c 8h Th 4h 5h Qd 6h 8c 5d 7c Jh Ks Qh 6c 9h 2h"
)


def test_spec_commitment() -> None:
    expected = "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd"
    assert commitment(SPEC_SEED) == expected
    assert commitment(SPEC_SEED) == hashlib.sha256(SPEC_SEED).hexdigest()


def test_spec_block_0() -> None:
    expected = "acbcbada65c670e7e5fbcd883f37913b3dbad66fdb57892d906a7028660462e5"
    assert block0(SPEC_SEED, b"auditor-test", 1) == expected
    reference = itertools.islice(reference_words(SPEC_SEED, b"auditor-test", 1), 8)
    assert b"".join(w.to_bytes(4, "big") for w in reference).hex() == expected


def test_spec_deck() -> None:
    assert format_cards(shuffle_deck(SPEC_SEED, b"auditor-test", 1)) == SPEC_DECK
    assert " ".join(reference_deck(reference_words(SPEC_SEED, b"auditor-test", 1))) == SPEC_DECK


def test_spec_rejection_example() -> None:
    # m = 52: limit = 2^32 - (2^32 mod 52) = 4294967248; the first two words are discarded.
    assert 2**32 - (2**32 % 52) == 4_294_967_248
    assert choice(52, iter([0xFFFFFFFF, 0xFFFFFFFC, 7])) == 7


CHOICE = [
    # m, words, result
    (52, [4_294_967_247], 4_294_967_247 % 52),  # limit - 1 is kept
    (52, [4_294_967_248, 100], 100 % 52),  # the limit itself is discarded
    (3, [0xFFFFFFFF, 0xFFFFFFFE], 0xFFFFFFFE % 3),  # 2^32 mod 3 = 1: only 2^32 - 1 is discarded
    (2, [0xFFFFFFFF], 1),  # a power of two discards nothing
    (1, [0xFFFFFFFF], 0),
    (51, [0xFFFFFFFF, 0xFFFFFFFE], 50),  # 2^32 mod 51 = 1: limit 2^32 - 1; 0xFFFFFFFE = 51k + 50
]


@pytest.mark.parametrize(("m", "words", "result"), CHOICE)
def test_choice(m: int, words: list[int], result: int) -> None:
    stream = iter([*words, 999])
    assert choice(m, stream) == result
    assert next(stream) == 999  # exactly the words up to the accepted one were consumed


def test_choice_on_an_exhausted_stream() -> None:
    with pytest.raises(InvalidSeedError, match="ended"):
        choice(52, iter([0xFFFFFFFF]))


def test_the_shuffle_skips_rejected_words(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rejection branch almost never fires on real seeds, so inject words that hit it
    at the first draw (m = 52) and in the middle (m = 27)."""
    real = ofc.shuffle.word_stream

    def injected(server_seed: bytes, client_seed: bytes, nonce: int) -> Iterator[int]:
        words = real(server_seed, client_seed, nonce)
        yield 0xFFFFFFFF  # discarded for m = 52
        yield from itertools.islice(words, 25)
        yield 0xFFFFFFFF  # discarded for m = 27 (limit 4294967274)
        yield from words

    monkeypatch.setattr(ofc.shuffle, "word_stream", injected)
    deck = format_cards(shuffle_deck(SPEC_SEED, b"auditor-test", 1))
    assert deck == SPEC_DECK  # both injected words were thrown away
    reference = reference_deck(injected(SPEC_SEED, b"auditor-test", 1))
    assert deck == " ".join(reference)


# --- the published vectors: tests/vectors/shuffle-v1.json and docs/shuffle-v1.md -----------------
ROOT = Path(__file__).parents[2]
VECTORS: dict[str, Any] = json.loads(
    (ROOT / "tests" / "vectors" / "shuffle-v1.json").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=lambda v: v["name"])
def test_published_vectors(vector: dict[str, Any]) -> None:
    seed, client = bytes.fromhex(vector["server_seed"]), bytes.fromhex(vector["client_seed"])
    nonce = int(vector["nonce"])
    assert commitment(seed) == vector["commitment"]
    words = itertools.islice(word_stream(seed, client, nonce), 8)
    assert [f"{w:08x}" for w in words] == vector["words"]
    reference = itertools.islice(reference_words(seed, client, nonce), 8)
    assert [f"{w:08x}" for w in reference] == vector["words"]
    assert format_cards(shuffle_deck(seed, client, nonce)) == vector["deck"]
    assert " ".join(reference_deck(reference_words(seed, client, nonce))) == vector["deck"]


@pytest.mark.parametrize("case", VECTORS["rejection"], ids=lambda c: f"m={c['m']}")
def test_published_rejections(case: dict[str, Any]) -> None:
    assert 2**32 - (2**32 % case["m"]) == case["limit"]
    words = iter(case["words"])
    assert choice(case["m"], words) == case["result"]
    assert next(words, None) is None  # every injected word was taken: the others were discarded


def test_the_document_shows_the_vectors_file() -> None:
    """docs/shuffle-v1.md's worked example is the file's first vector, its message bytes the
    reference's, and the vectors are those of the tests above (the spec's and our own)."""
    doc = (ROOT / "docs" / "shuffle-v1.md").read_text(encoding="utf-8")
    example = VECTORS["vectors"][0]
    for value in (example["commitment"], "".join(example["words"]), example["deck"]):
        assert f"`{value}`" in doc
    shown = re.search(r"block 0's message = ((?:`[0-9a-f]+`\s*)+)", doc)
    assert shown is not None
    message = "".join(re.findall(r"`([0-9a-f]+)`", shown.group(1)))
    expected = b"ofc-shuffle-v1\x00" + (12).to_bytes(4, "big") + b"auditor-test"
    assert message == (expected + (1).to_bytes(8, "big") + (0).to_bytes(4, "big")).hex()
    assert example["server_seed"] == SPEC_SEED.hex() and example["deck"] == SPEC_DECK
    own = {(v[0], v[1].hex(), str(v[2]), v[3], v[4], v[5]) for v in OWN_VECTORS}
    published = {
        (v["server_seed"], v["client_seed"], v["nonce"], v["commitment"], "".join(v["words"]),
         v["deck"])
        for v in VECTORS["vectors"][1:]
    }  # fmt: skip
    assert published == own


# --- more vectors of our own (all checked against the reference too) ---------------------------
OWN_VECTORS = [
    # server seed (hex), client seed, nonce, commitment, block 0, deck
    (
        "00" * 32,
        b"",
        0,
        "66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925",
        "9260bd85450426624d2b0c78c0eed54ca8bd5ef1eda0517115317ecffe8d696c",
        "Jd 5c 5s Th 6h 5d 3h 3c Jh Qs Jc 8c 2d 8d 2s Ts 7c 5h Tc Kh Ah 9s Ad 2h Ks 9c Qc 6s 8s "
        "Js 4h 3s 6c 4s 9h Kc Qd 4c 8h Td 2c Qh Ac 4d 7s 9d As 6d 7d 7h 3d Kd",
    ),
    (
        "ff" * 32,
        b"",
        2**64 - 1,
        "af9613760f72635fbdb44a5a0a63c39f12af30f950a6ee5c971be188e89c4051",
        "0183421071fd0176acd1f9f8c668ed5e5a1e7d95ac47b94067e07814c1cacaa5",
        "Ts Qd 4h 2s 6s Th Jh Qs Kc Kd 4d Ks 8c Kh Ah Ad 3s Ac 4s 9c 4c 5s 7d 2d Js 9s 2c 3h 9d "
        "Jc 7h As 3d 6d 9h 7s Qc Td 3c 5h 8s 7c 5c Tc Qh 2h 8d Jd 5d 6h 8h 6c",
    ),
    (  # the spec's seeds, the next hand
        SPEC_SEED.hex(),
        b"auditor-test",
        2,
        "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd",
        "3733685bbe83924f7fc6528b706bbebc3b0c9a6c425f3b4400dd04f68b91262f",
        "8h 9c Qs 4h 3c 5s 8s Ad 4s 2d 8d Ts 2h 4d Qh 6h 7h 3h Tc 3d 8c 7c Kh Ks Th 9s 4c Ah 6d "
        "Jd Td 5d Qc 3s 6s 7d Jh 7s Kc Kd 5h 9d 2s 9h As 6c Ac 5c 2c Qd Jc Js",
    ),
    (  # the spec's seed, no client seed
        SPEC_SEED.hex(),
        b"",
        1,
        "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd",
        "5a81f8ca59489cbebdc6767c2f15529bd508847feb9a89a1c7a768a26a7c644a",
        "Jd Qs 2c Tc 7d 9c 3c 8s 8c 6c 7c Js Ad 7s Ks Ah Kd 4c 9h As 2s 8h 5h Qd 5c 8d 4s 6d 2h "
        "Td 2d Kh Qc 7h Qh 4d 3s 3h 4h 6h 9s 5d 6s Ts Kc Jc 9d 5s 3d Th Ac Jh",
    ),
    (  # a UTF-8 client seed
        hashlib.sha256(b"ofc").hexdigest(),
        "seat 1: ünïcødé ♠".encode(),
        42,
        "087c47a8dda225c74071eb0f14b9d1f984cf46996cc705218ca6ce8d7ef4b16b",
        "b9d341ece9eb1e6bf5df471477e0843803b9189dcde6fa0cccf0cc33ed8afa77",
        "Js 4c 4s Ts Qs 6h 2c 9s 6s 5c Qd 8s 3c 2d 9d 9h Qh 4h Tc 2s 8c Ac As Td 9c 2h Kh 3s 7h "
        "5h 6c 5d Ad Ks 8d 7d 8h 3h Th 7s 5s 7c Jd Jh 4d 3d Jc Kd 6d Ah Kc Qc",
    ),
    (  # three seats' seeds combined
        bytes(range(31, -1, -1)).hex(),
        bytes.fromhex("00000005616c69636500000003626f6200000000"),  # alice, bob, (empty)
        7,
        "69c55c9002eb8c7a4e75d0b49629c4cf83d12cfb56670a8cd6e2db1491a996c4",
        "39f144fdbd2b4277b6481458005fc9a2933abcaa6f3179bd4cfac7597efd0164",
        "9c 4c 4s 2h 9d 6s 9s Ad 6c Tc Jh 7s 8d 7h Kh 8c Ac Kc Qc 5h Jd Js Kd 6d Ah Jc 7d Qh 2c "
        "3h 5d 4h As 6h Ts 3c 5s Qd 3d 7c Ks Th 2s 3s 9h Qs 8s 8h 2d 5c 4d Td",
    ),
]


@pytest.mark.parametrize(
    ("seed_hex", "client_seed", "nonce", "commit", "block", "deck"), OWN_VECTORS
)
def test_own_vectors(
    seed_hex: str, client_seed: bytes, nonce: int, commit: str, block: str, deck: str
) -> None:
    seed = parse_seed_hex(seed_hex)
    assert commitment(seed) == commit
    assert verify_commitment(seed, commit)
    assert block0(seed, client_seed, nonce) == block
    assert format_cards(shuffle_deck(seed, client_seed, nonce)) == deck
    assert " ".join(reference_deck(reference_words(seed, client_seed, nonce))) == deck


def test_combined_client_seeds() -> None:
    combined = combine_client_seeds([b"alice", b"bob", b""])
    assert combined.hex() == "00000005616c69636500000003626f6200000000"
    assert combine_client_seeds([b"auditor-test"]) == b"auditor-test"  # one party: as it is
    assert combine_client_seeds([b"ab", b"c"]) != combine_client_seeds([b"a", b"bc"])
    assert ALGORITHM == "ofc-shuffle-v1"


def test_word_stream_runs_past_block_0() -> None:
    words = list(itertools.islice(word_stream(SPEC_SEED, b"auditor-test", 1), 24))
    reference = list(itertools.islice(reference_words(SPEC_SEED, b"auditor-test", 1), 24))
    assert words == reference
    assert len(set(words)) == 24


def test_commitment_checks() -> None:
    commit = commitment(SPEC_SEED)
    assert verify_commitment(SPEC_SEED, commit.upper())
    assert verify_commitment(SPEC_SEED, f"  {commit}\n")
    assert not verify_commitment(bytes(32), commit)
    assert not verify_commitment(SPEC_SEED, commit[:-1] + "0")


# --- bad input ------------------------------------------------------------------------------------
SEED_HEX_ERRORS = [
    # text, message fragment
    ("00" * 31, "got 31"),
    ("00" * 33, "got 33"),
    ("", "got 0"),
    ("0" * 63, "not hex"),
    ("zz" * 32, "not hex"),
    ("0x" + "00" * 31, "not hex"),
    # exactly the digits: not the whitespace bytes.fromhex skips, between bytes or around
    (" ".join(["00"] * 32), "not hex"),
    ("00" * 32 + "\n", "not hex"),
    ("\t" + "00" * 32 + "  ", "not hex"),
]


@pytest.mark.parametrize(("text", "fragment"), SEED_HEX_ERRORS)
def test_parse_seed_hex_errors(text: str, fragment: str) -> None:
    with pytest.raises(InvalidSeedError) as info:
        parse_seed_hex(text)
    assert info.value.field == "server_seed"
    assert info.value.reason == "INVALID_SEED"
    assert fragment in info.value.message


def test_parse_seed_hex_accepts_either_case() -> None:
    assert parse_seed_hex(SPEC_SEED.hex().upper()) == SPEC_SEED == parse_seed_hex(SPEC_SEED.hex())
    with pytest.raises(InvalidSeedError, match="not hex"):
        parse_seed_hex(None)  # type: ignore[arg-type]


NONCES = [(0, True), (1, True), (2**64 - 1, True), (-1, False), (2**64, False), (True, False)]


@pytest.mark.parametrize(("nonce", "ok"), NONCES)
def test_nonce_range(nonce: int, ok: bool) -> None:
    if ok:
        assert sorted(shuffle_deck(SPEC_SEED, b"", nonce)) == list(ALL_CARDS)
        return
    with pytest.raises(InvalidSeedError) as info:
        shuffle_deck(SPEC_SEED, b"", nonce)
    assert info.value.field == "nonce"
    assert "0..2^64-1" in info.value.message


@pytest.mark.parametrize(
    ("server_seed", "client_seed", "field"),
    [
        (bytes(31), b"", "server_seed"),
        (bytes(33), b"", "server_seed"),
        ("00" * 32, b"", "server_seed"),
        (bytes(32), "text", "client_seed"),
    ],
)
def test_seed_types(server_seed: object, client_seed: object, field: str) -> None:
    with pytest.raises(InvalidSeedError) as info:
        shuffle_deck(server_seed, client_seed)  # type: ignore[arg-type]
    assert info.value.field == field


# --- properties -----------------------------------------------------------------------------------
seeds = st.binary(min_size=32, max_size=32)
client_seeds = st.binary(max_size=40)
nonces = st.integers(0, 2**64 - 1)


@given(seeds, client_seeds, nonces)
def test_same_seed_same_deck(server_seed: bytes, client_seed: bytes, nonce: int) -> None:
    assert shuffle_deck(server_seed, client_seed, nonce) == shuffle_deck(
        bytes(server_seed), bytes(client_seed), nonce
    )


@given(seeds, client_seeds, nonces)
def test_every_deck_is_a_permutation(server_seed: bytes, client_seed: bytes, nonce: int) -> None:
    deck = shuffle_deck(server_seed, client_seed, nonce)
    assert len(deck) == 52
    assert sorted(deck) == list(ALL_CARDS)


@given(seeds, client_seeds, nonces)
def test_matches_the_reference(server_seed: bytes, client_seed: bytes, nonce: int) -> None:
    deck = format_cards(shuffle_deck(server_seed, client_seed, nonce))
    assert deck == " ".join(reference_deck(reference_words(server_seed, client_seed, nonce)))


def test_each_input_changes_the_deck() -> None:
    base = shuffle_deck(SPEC_SEED, b"auditor-test", 1)
    assert shuffle_deck(SPEC_SEED, b"auditor-test", 2) != base
    assert shuffle_deck(SPEC_SEED, b"auditor-tesT", 1) != base
    assert shuffle_deck(bytes(range(1, 33)), b"auditor-test", 1) != base


# --- statistics: every card's position is uniform ------------------------------------------------
DECKS = 100_000


def _chi2_quantile(df: int, p_upper: float) -> float:
    """Upper quantile of chi-square(df) by Wilson-Hilferty (accurate to <1% for df >= 50)."""
    z = NormalDist().inv_cdf(1 - p_upper)
    return float(df * (1 - 2 / (9 * df) + z * (2 / (9 * df)) ** 0.5) ** 3)


@pytest.mark.slow
def test_card_positions_are_uniform_chi_square() -> None:
    """100,000 decks from deterministic seeds (SHA-256 of a counter). For each position the
    52 card counts are multinomial(N, 1/52): chi-square with 51 degrees of freedom; so is
    each card over the 52 positions. The whole 52x52 table (rows and columns fixed by the
    permutations) is 52/51 x chi-square((52-1)^2) with mean 2652. All tests at a combined
    false-alarm rate of about 1e-6."""
    offsets = range(0, 52 * 52, 52)
    tally: Counter[int] = Counter()
    for k in range(DECKS):
        server_seed = hashlib.sha256(b"ofc-chi-square" + k.to_bytes(8, "big")).digest()
        tally.update(map(operator.add, offsets, shuffle_deck(server_seed, b"", k)))
    table = [[tally[52 * position + card] for card in range(52)] for position in range(52)]
    expected = DECKS / 52
    assert all(sum(row) == DECKS for row in table)
    assert all(sum(row[card] for row in table) == DECKS for card in range(52))

    def statistic(counts: list[int]) -> float:
        return sum((o - expected) ** 2 for o in counts) / expected

    per_line = _chi2_quantile(51, 1e-6 / 105)  # Bonferroni over 104 lines and the table
    by_position = [statistic(row) for row in table]
    by_card = [statistic([row[card] for row in table]) for card in range(52)]
    assert max(by_position) < per_line, by_position
    assert max(by_card) < per_line, by_card
    total = sum(by_position) * 51 / 52
    assert _chi2_quantile(2601, 1 - 1e-6 / 105) < total < _chi2_quantile(2601, 1e-6 / 105)
    # And nothing too regular either: the mean of the 52 per-position statistics is near 51.
    assert 45 < sum(by_position) / 52 < 57
