"""Cards, ranks and suits, with parsers and formatters that round-trip.

A card is a small int, ``id = 4 * rank + suit`` (``2c`` = 0, ``As`` = 51): the same ids as
the ofc-shuffle-v1 canonical deck, so hot paths index tables with them directly. A deck with
jokers (ofc-shuffle-v2) adds them after the 52: ``X1`` = 52, ``X2`` = 53. A joker has no rank
or suit; in a row it stands for the best card it can be there (``ofc.evaluator``).

>>> Card.parse("As"), Card.parse("10d"), Card.parse("q♥")
(Card.parse('As'), Card.parse('Td'), Card.parse('Qh'))
>>> str(Card.parse("ad")), int(Card.parse("2c")), int(Card.parse("As"))
('Ad', 0, 51)
>>> format_cards(parse_cards("Ah kh 10h"))
'Ah Kh Th'
>>> joker = Card.parse("x1")
>>> joker.code, int(joker), joker.is_joker, format_cards(deck_cards(2)[-3:])
('X1', 52, True, 'As X1 X2')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from enum import IntEnum

from ofc.errors import InvalidCardError

RANK_CHARS = "23456789TJQKA"
SUIT_CHARS = "cdhs"
NATURAL_CARDS = 52
MAX_JOKERS = 2
JOKER_CODES = ("X1", "X2")

_SUIT_ALIASES = {
    "c": 0, "♣": 0, "♧": 0,
    "d": 1, "♦": 1, "♢": 1,
    "h": 2, "♥": 2, "♡": 2,
    "s": 3, "♠": 3, "♤": 3,
}  # fmt: skip


class Rank(IntEnum):
    TWO = 0
    THREE = 1
    FOUR = 2
    FIVE = 3
    SIX = 4
    SEVEN = 5
    EIGHT = 6
    NINE = 7
    TEN = 8
    JACK = 9
    QUEEN = 10
    KING = 11
    ACE = 12

    @property
    def char(self) -> str:
        return RANK_CHARS[self]

    @classmethod
    def parse(cls, text: str) -> Rank:
        """``Rank.parse("q")`` → ``Rank.QUEEN``; also ``10``.

        >>> Rank.parse("10"), Rank.parse("a").char
        (<Rank.TEN: 8>, 'A')
        """
        key = "T" if text == "10" else text.upper()
        index = RANK_CHARS.find(key) if len(key) == 1 else -1
        if index < 0:
            raise InvalidCardError(f"invalid rank: {text!r}")
        return cls(index)


class Suit(IntEnum):
    CLUBS = 0
    DIAMONDS = 1
    HEARTS = 2
    SPADES = 3

    @property
    def char(self) -> str:
        return SUIT_CHARS[self]


class Card(int):
    """One of the 52 cards or one of the two jokers; an ``int`` (its id) with a canonical code.

    Only 54 instances exist; ``Card(n)`` and ``Card.parse`` return them.

    >>> c = Card.parse("Td")
    >>> c.rank, c.suit, c.code
    (<Rank.TEN: 8>, <Suit.DIAMONDS: 1>, 'Td')
    >>> Card.parse(c.code) is c
    True
    """

    __slots__ = ()

    def __new__(cls, card_id: int) -> Card:
        try:
            return _CARDS[card_id] if card_id >= 0 else _bad_id(card_id)
        except (IndexError, TypeError):
            return _bad_id(card_id)

    @classmethod
    def _make(cls, card_id: int) -> Card:
        return int.__new__(cls, card_id)

    @classmethod
    def parse(cls, token: str) -> Card:
        """Parse ``As``, ``td``, ``10d``, ``A♠`` (any case, surrounding spaces ignored)."""
        try:
            return _BY_TOKEN[token]  # every accepted spelling: one dict lookup
        except (KeyError, TypeError):
            return _parse_slow(token)

    @classmethod
    def of(cls, rank: Rank, suit: Suit) -> Card:
        return _CARDS[4 * rank + suit]

    @property
    def is_joker(self) -> bool:
        return self >= NATURAL_CARDS

    @property
    def rank(self) -> Rank:
        """The card's rank; a joker has none (``InvalidCardError``)."""
        if self >= NATURAL_CARDS:
            raise InvalidCardError(f"{CODES[self]} is a joker: it has no rank")
        return Rank(self >> 2)

    @property
    def suit(self) -> Suit:
        """The card's suit; a joker has none (``InvalidCardError``)."""
        if self >= NATURAL_CARDS:
            raise InvalidCardError(f"{CODES[self]} is a joker: it has no suit")
        return Suit(self & 3)

    @property
    def code(self) -> str:
        return CODES[self]

    def __str__(self) -> str:
        return CODES[self]

    def __repr__(self) -> str:
        return f"Card.parse({CODES[self]!r})"

    def __reduce__(self) -> tuple[type[Card], tuple[int]]:
        return (Card, (int(self),))


def _bad_id(card_id: object) -> Card:
    raise InvalidCardError(f"invalid card id: {card_id!r} (expected 0..53)")


def _parse_slow(token: object) -> Card:
    if not isinstance(token, str):
        raise InvalidCardError(f"invalid card: {token!r}")
    text = token.strip()
    if text in _BY_TOKEN:
        return _BY_TOKEN[text]
    if len(text) >= 2:
        suit = _SUIT_ALIASES.get(text[-1].lower())
        rank_text = text[:-1]
        if suit is not None and rank_text:
            try:
                rank = Rank.parse(rank_text)
            except InvalidCardError:
                pass
            else:
                return _CARDS[4 * rank + suit]
    raise InvalidCardError(f"invalid card: {token!r}")


CARD_CODES: tuple[str, ...] = tuple(r + s for r in RANK_CHARS for s in SUIT_CHARS)
"""The 52 natural cards' codes in id order; :data:`CODES` adds the jokers'."""
CODES: tuple[str, ...] = CARD_CODES + JOKER_CODES
_CARDS: tuple[Card, ...] = tuple(Card._make(i) for i in range(NATURAL_CARDS + MAX_JOKERS))
ALL_CARDS: tuple[Card, ...] = _CARDS[:NATURAL_CARDS]
"""The canonical 52-card deck, id order: ``2c 2d 2h 2s 3c ... As``."""
JOKERS: tuple[Card, ...] = _CARDS[NATURAL_CARDS:]
"""``X1``, ``X2``: the jokers a deck may add after the 52 cards."""
ANY_CARD: frozenset[Card] = frozenset(_CARDS)
"""Every card a deck of any size may hold (the 52 and both jokers)."""


def deck_cards(jokers: int = 0) -> tuple[Card, ...]:
    """The canonical deck with ``jokers`` (0..2) jokers after the 52 cards.

    >>> len(deck_cards(0)), len(deck_cards(1)), str(deck_cards(1)[52])
    (52, 53, 'X1')
    """
    if isinstance(jokers, bool) or not isinstance(jokers, int) or not 0 <= jokers <= MAX_JOKERS:
        raise InvalidCardError(f"a deck has 0..{MAX_JOKERS} jokers, not {jokers!r}")
    return _CARDS[: NATURAL_CARDS + jokers]


# Every accepted spelling of every card, so the common path is one dict lookup.
_BY_TOKEN: dict[str, Card] = {}
for _card in ALL_CARDS:
    for _r in {RANK_CHARS[_card >> 2], RANK_CHARS[_card >> 2].lower()} | (
        {"10"} if _card >> 2 == Rank.TEN else set()
    ):
        for _s, _suit in _SUIT_ALIASES.items():
            if _suit == _card & 3:
                _BY_TOKEN[_r + _s] = _card
                _BY_TOKEN[_r + _s.upper()] = _card
for _joker, _code in zip(JOKERS, JOKER_CODES, strict=True):
    _BY_TOKEN[_code] = _BY_TOKEN[_code.lower()] = _joker
del _card, _r, _s, _suit, _joker, _code

card_by_code: Callable[[str], Card] = _BY_TOKEN.__getitem__
"""One token in any spelling :func:`parse_cards` reads without help (``"Ac"``, ``"10h"``,
``"x1"``) as its card, or a ``KeyError``: the lookup a loop over many boards maps over
tokens, leaving anything else (and the error that names it) to :func:`parse_cards`.

>>> card_by_code("10h") is Card.parse("Th")
True
"""


def parse_cards(text: str | Iterable[str]) -> tuple[Card, ...]:
    """Parse whitespace- or comma-separated card codes, or an iterable of tokens.

    >>> parse_cards("Ac,3d 2h")
    (Card.parse('Ac'), Card.parse('3d'), Card.parse('2h'))
    """
    tokens = text.replace(",", " ").split() if isinstance(text, str) else list(text)
    try:
        return tuple(map(_BY_TOKEN.__getitem__, tokens))
    except (KeyError, TypeError):
        return tuple(Card.parse(t) for t in tokens)  # spaces, or an error quoting the token


def format_cards(cards: Iterable[int]) -> str:
    """Canonical codes separated by spaces; the inverse of :func:`parse_cards`."""
    return " ".join(CODES[c] for c in cards)


def card_codes(cards: Sequence[int]) -> list[str]:
    """Canonical codes as a list (for JSON)."""
    return [CODES[c] for c in cards]
