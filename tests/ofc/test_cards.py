"""Cards: the 52 ids and the two jokers', parse/format pairs, and bad tokens quoted in the error."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ofc.cards import (
    ALL_CARDS,
    ANY_CARD,
    CARD_CODES,
    JOKERS,
    Card,
    Rank,
    Suit,
    card_codes,
    deck_cards,
    format_cards,
    parse_cards,
)
from ofc.errors import InvalidCardError, InvalidInputError

# --- ids: id = 4 * rank + suit, the ofc-shuffle-v1 canonical deck order ----------------------
ID_TABLE = [
    # code, id, rank, suit
    ("2c", 0, Rank.TWO, Suit.CLUBS),
    ("2d", 1, Rank.TWO, Suit.DIAMONDS),
    ("2h", 2, Rank.TWO, Suit.HEARTS),
    ("2s", 3, Rank.TWO, Suit.SPADES),
    ("3c", 4, Rank.THREE, Suit.CLUBS),
    ("9h", 30, Rank.NINE, Suit.HEARTS),
    ("Td", 33, Rank.TEN, Suit.DIAMONDS),
    ("Jc", 36, Rank.JACK, Suit.CLUBS),
    ("Qs", 43, Rank.QUEEN, Suit.SPADES),
    ("Kh", 46, Rank.KING, Suit.HEARTS),
    ("Ac", 48, Rank.ACE, Suit.CLUBS),
    ("As", 51, Rank.ACE, Suit.SPADES),
]


@pytest.mark.parametrize(("code", "card_id", "rank", "suit"), ID_TABLE)
def test_card_ids(code: str, card_id: int, rank: Rank, suit: Suit) -> None:
    card = Card.parse(code)
    assert int(card) == card_id
    assert (card.rank, card.suit, card.code, str(card)) == (rank, suit, code, code)
    assert Card(card_id) is card
    assert Card.of(rank, suit) is card
    assert ALL_CARDS[card_id] is card


def test_the_deck_is_52_distinct_cards_in_id_order() -> None:
    assert len(ALL_CARDS) == 52
    assert [int(c) for c in ALL_CARDS] == list(range(52))
    assert format_cards(ALL_CARDS[:8]) == "2c 2d 2h 2s 3c 3d 3h 3s"
    assert format_cards(ALL_CARDS[-4:]) == "Ac Ad Ah As"
    assert len(set(CARD_CODES)) == 52


# --- parsing: canonical, 10, suit symbols, any case; always printed canonical ----------------
PARSE_TABLE = [
    # token, canonical code
    ("As", "As"),
    ("as", "As"),
    ("AS", "As"),
    ("aS", "As"),
    ("Td", "Td"),
    ("td", "Td"),
    ("TD", "Td"),
    ("10d", "Td"),
    ("10D", "Td"),
    ("2c", "2c"),
    ("9H", "9h"),
    ("jc", "Jc"),
    ("Qh", "Qh"),
    ("kD", "Kd"),
    ("A♠", "As"),
    ("a♠", "As"),
    ("K♥", "Kh"),
    ("q♦", "Qd"),
    ("7♣", "7c"),
    ("10♦", "Td"),
    ("10♥", "Th"),
    ("T♣", "Tc"),
    ("2♤", "2s"),
    ("3♡", "3h"),
    ("4♢", "4d"),
    ("5♧", "5c"),
    ("  As ", "As"),
    ("\tkh\n", "Kh"),
]


@pytest.mark.parametrize(("token", "code"), PARSE_TABLE)
def test_parse_accepts_every_spelling_and_prints_canonical(token: str, code: str) -> None:
    card = Card.parse(token)
    assert card.code == code
    assert str(card) == code
    assert repr(card) == f"Card.parse({code!r})"
    assert parse_cards([token]) == (card,)


BAD_TOKENS = [
    "",
    " ",
    "A",
    "s",
    "1s",
    "11s",
    "Ax",
    "Zs",
    "AsX",
    "10",
    "0s",
    "1♠",
    "♠A",
    "sA",
    "As,",
    "Ace",
    "10 d",
    "Ts♠",
]


@pytest.mark.parametrize("token", BAD_TOKENS)
def test_bad_token_raises_invalid_card_quoting_it(token: str) -> None:
    with pytest.raises(InvalidCardError) as info:
        Card.parse(token)
    assert repr(token) in str(info.value)
    assert info.value.reason == "INVALID_CARD"
    assert isinstance(info.value, InvalidInputError)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("token", [None, 51, 3.5, b"As", ["As"]])
def test_parse_rejects_non_strings(token: object) -> None:
    with pytest.raises(InvalidCardError) as info:
        Card.parse(token)  # type: ignore[arg-type]
    assert repr(token) in str(info.value)


def test_parse_cards_reports_the_bad_token_among_good_ones() -> None:
    with pytest.raises(InvalidCardError, match=r"'Xx'"):
        parse_cards("As Kd Xx 2c")
    with pytest.raises(InvalidCardError, match=r"'1h'"):
        parse_cards(["As", "1h"])


PARSE_CARDS_TABLE = [
    # text, canonical
    ("Ah Kh Th", "Ah Kh Th"),
    ("ah kh 10h", "Ah Kh Th"),
    ("Ac,3d 2h", "Ac 3d 2h"),
    ("Ac, 3d,2h", "Ac 3d 2h"),
    ("  A♠  K♥\tQ♦\n J♣ ", "As Kh Qd Jc"),
    ("", ""),
]


@pytest.mark.parametrize(("text", "canonical"), PARSE_CARDS_TABLE)
def test_parse_cards_and_format_cards(text: str, canonical: str) -> None:
    cards = parse_cards(text)
    assert format_cards(cards) == canonical
    assert parse_cards(canonical) == cards
    assert card_codes(cards) == canonical.split()


def test_parse_cards_takes_any_iterable_of_tokens() -> None:
    expected = parse_cards("As Td 2c")
    assert parse_cards(["as", "10d", "2C"]) == expected
    assert parse_cards(("As", " Td ", "2♣")) == expected
    assert parse_cards(t for t in ["As", "Td", "2c"]) == expected


def test_rank_parse() -> None:
    assert [Rank.parse(t) for t in ("2", "9", "t", "T", "10", "j", "Q", "k", "A")] == [
        Rank.TWO, Rank.NINE, Rank.TEN, Rank.TEN, Rank.TEN, Rank.JACK, Rank.QUEEN, Rank.KING,
        Rank.ACE,
    ]  # fmt: skip
    assert "".join(r.char for r in Rank) == "23456789TJQKA"
    assert "".join(s.char for s in Suit) == "cdhs"
    for bad in ("1", "11", "", "X", "AA"):
        with pytest.raises(InvalidCardError, match=repr(bad)):
            Rank.parse(bad)


# --- jokers: ids 52 and 53, after the 52 cards (the ofc-shuffle-v2 canonical order) ----------
@pytest.mark.parametrize(
    ("token", "card_id"), [("X1", 52), ("x1", 52), (" X1 ", 52), ("X2", 53), ("x2", 53)]
)
def test_joker_codes(token: str, card_id: int) -> None:
    joker = Card.parse(token)
    assert int(joker) == card_id and joker is Card(card_id) and joker.is_joker
    assert str(joker) == joker.code == ("X1", "X2")[card_id - 52]
    assert repr(joker) == f"Card.parse({joker.code!r})"
    assert pickle.loads(pickle.dumps(joker)) is joker


def test_a_joker_has_no_rank_or_suit() -> None:
    joker = Card.parse("X2")
    with pytest.raises(InvalidCardError, match="X2 is a joker"):
        joker.rank  # noqa: B018
    with pytest.raises(InvalidCardError, match="X2 is a joker"):
        joker.suit  # noqa: B018
    assert not any(c.is_joker for c in ALL_CARDS)


@pytest.mark.parametrize(("jokers", "size", "last"), [(0, 52, "As"), (1, 53, "X1"), (2, 54, "X2")])
def test_decks_with_jokers(jokers: int, size: int, last: str) -> None:
    deck = deck_cards(jokers)
    assert len(deck) == size and str(deck[-1]) == last
    assert deck[:52] == ALL_CARDS and deck[52:] == JOKERS[:jokers]
    assert frozenset(deck_cards(2)) == ANY_CARD
    assert parse_cards(format_cards(deck)) == deck


@pytest.mark.parametrize("jokers", [-1, 3, True, "1"])
def test_bad_joker_count(jokers: object) -> None:
    with pytest.raises(InvalidCardError, match=r"0\.\.2 jokers"):
        deck_cards(jokers)  # type: ignore[arg-type]


@pytest.mark.parametrize("token", ["X", "X0", "X3", "XX", "J1", "Xs"])
def test_bad_joker_tokens(token: str) -> None:
    with pytest.raises(InvalidCardError, match=repr(token)):
        Card.parse(token)


@pytest.mark.parametrize("bad_id", [-1, 54, 100])
def test_bad_card_id(bad_id: int) -> None:
    with pytest.raises(InvalidCardError, match=str(bad_id)):
        Card(bad_id)


def test_cards_are_interned_ints_and_pickle_to_themselves() -> None:
    card = Card.parse("Qd")
    assert isinstance(card, int)
    assert card == 41
    assert pickle.loads(pickle.dumps(card)) is card
    assert {41: "x"}[Card(41)] == "x"  # hashes and compares as its id


# --- properties -----------------------------------------------------------------------------
card_ids = st.integers(min_value=0, max_value=51)
_RANK_SPELLINGS = {r: [r.char, r.char.lower()] + (["10"] if r is Rank.TEN else []) for r in Rank}
_SUIT_SPELLINGS = {
    Suit.CLUBS: ["c", "C", "♣", "♧"],
    Suit.DIAMONDS: ["d", "D", "♦", "♢"],
    Suit.HEARTS: ["h", "H", "♥", "♡"],
    Suit.SPADES: ["s", "S", "♠", "♤"],
}


@given(st.lists(st.integers(min_value=0, max_value=53), max_size=20))
def test_format_then_parse_round_trips(ids: list[int]) -> None:
    cards = tuple(Card(i) for i in ids)
    assert parse_cards(format_cards(cards)) == cards
    assert parse_cards(card_codes(cards)) == cards


@given(card_ids, st.data())
def test_any_spelling_parses_to_the_card(card_id: int, data: st.DataObject) -> None:
    card = Card(card_id)
    rank = data.draw(st.sampled_from(_RANK_SPELLINGS[card.rank]))
    suit = data.draw(st.sampled_from(_SUIT_SPELLINGS[card.suit]))
    padding = data.draw(st.sampled_from(["", " ", "\t"]))
    token = padding + rank + suit + padding
    assert Card.parse(token) is card
    assert format_cards(parse_cards([token])) == CARD_CODES[card_id]


@given(st.text(max_size=4))
def test_parse_either_succeeds_canonically_or_quotes_the_token(token: str) -> None:
    try:
        card = Card.parse(token)
    except InvalidCardError as error:
        assert repr(token) in error.message
    else:
        assert Card.parse(card.code) is card
