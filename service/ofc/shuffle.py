"""ofc-shuffle-v1: a byte-exact, auditable deck from (server seed, client seed, nonce).

Words come from ``HMAC-SHA256(server_seed, "ofc-shuffle-v1" 0x00 u32be(len(client)) client
u64be(nonce) u32be(k))``, eight big-endian u32 per block; an unbiased ``choice(m)`` rejects
words at or above ``2^32 - 2^32 mod m``; Fisher-Yates from position 51 down to 1 on the
canonical deck (id order). The commitment published before the deal is ``SHA-256(seed)``.

ofc-shuffle-v2 (docs/shuffle-v2.md) is the same word stream and the same choice on a deck of
N cards: the 52 in id order, then the jokers ``X1``, ``X2``; Fisher-Yates from N-1 down to
1. Decks with jokers are v2; a 52-card deck stays v1 (v2 with N = 52 is the same deck).

>>> seed = bytes(range(32))
>>> commitment(seed)
'630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd'
>>> format_cards(shuffle_deck(seed, b"auditor-test", 1)[:5])
'Qs 6d Ad Td 6s'
>>> format_cards(shuffle_deck_v2(seed, b"auditor-test", 1, deck_size=54)[:5])
'8s 9s 2d 7s 5h'
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import struct
from collections.abc import Iterator, Sequence

from ofc.cards import ALL_CARDS, MAX_JOKERS, NATURAL_CARDS, Card, deck_cards, format_cards
from ofc.errors import InvalidSeedError

ALGORITHM = "ofc-shuffle-v1"
ALGORITHM_V2 = "ofc-shuffle-v2"
ALGORITHMS = (ALGORITHM, ALGORITHM_V2)
DECK_SIZES = tuple(range(NATURAL_CARDS, NATURAL_CARDS + MAX_JOKERS + 1))  # 52, 53, 54
SERVER_SEED_BYTES = 32
_DOMAIN = ALGORITHM.encode() + b"\x00"
_U64_MAX = (1 << 64) - 1
_U32_MAX = (1 << 32) - 1

__all__ = [
    "ALGORITHM",
    "ALGORITHMS",
    "ALGORITHM_V2",
    "DECK_SIZES",
    "algorithm_for",
    "combine_client_seeds",
    "commitment",
    "deal_deck",
    "format_cards",
    "parse_seed_hex",
    "shuffle_deck",
    "shuffle_deck_v2",
    "strict_hex",
    "verify_commitment",
    "word_stream",
]


def _check(server_seed: bytes, client_seed: bytes, nonce: int) -> None:
    if not isinstance(server_seed, bytes) or len(server_seed) != SERVER_SEED_BYTES:
        raise InvalidSeedError(
            f"server seed must be {SERVER_SEED_BYTES} bytes", field="server_seed"
        )
    if not isinstance(client_seed, bytes) or len(client_seed) > _U32_MAX:
        raise InvalidSeedError("client seed must be bytes", field="client_seed")
    if isinstance(nonce, bool) or not isinstance(nonce, int) or not 0 <= nonce <= _U64_MAX:
        raise InvalidSeedError(
            f"nonce must be an integer in 0..2^64-1, got {nonce!r}", field="nonce"
        )


def word_stream(server_seed: bytes, client_seed: bytes, nonce: int) -> Iterator[int]:
    """The endless stream of u32 words the shuffle consumes."""
    _check(server_seed, client_seed, nonce)
    prefix = _DOMAIN + struct.pack(">I", len(client_seed)) + client_seed + struct.pack(">Q", nonce)
    block = 0
    while True:
        digest = hmac.digest(server_seed, prefix + struct.pack(">I", block), "sha256")
        yield from struct.unpack(">8I", digest)
        block += 1


def choice(m: int, words: Iterator[int]) -> int:
    """Unbiased integer in ``0..m-1`` from the word stream (rejection sampling).

    >>> choice(52, iter([0xFFFFFFFF, 0xFFFFFFFC, 7]))
    7
    """
    limit = (1 << 32) - ((1 << 32) % m)
    for word in words:
        if word < limit:
            return word % m
    raise InvalidSeedError("word stream ended")  # only a finite injected stream gets here


def _fisher_yates(deck: list[Card], words: Iterator[int]) -> tuple[Card, ...]:
    for i in range(len(deck) - 1, 0, -1):
        j = choice(i + 1, words)
        deck[i], deck[j] = deck[j], deck[i]
    return tuple(deck)


def shuffle_deck(server_seed: bytes, client_seed: bytes = b"", nonce: int = 0) -> tuple[Card, ...]:
    """ofc-shuffle-v1: the 52-card deck, position 0 (dealt first) first."""
    return _fisher_yates(list(ALL_CARDS), word_stream(server_seed, client_seed, nonce))


def shuffle_deck_v2(
    server_seed: bytes, client_seed: bytes = b"", nonce: int = 0, *, deck_size: int
) -> tuple[Card, ...]:
    """ofc-shuffle-v2: a deck of ``deck_size`` (52..54) cards, jokers after the 52.

    >>> shuffle_deck_v2(bytes(32), deck_size=52) == shuffle_deck(bytes(32))
    True
    """
    if isinstance(deck_size, bool) or deck_size not in DECK_SIZES:
        raise InvalidSeedError(
            f"{ALGORITHM_V2} shuffles {DECK_SIZES[0]}..{DECK_SIZES[-1]} cards, not {deck_size!r}",
            field="deck_size",
        )
    words = word_stream(server_seed, client_seed, nonce)
    return _fisher_yates(list(deck_cards(deck_size - NATURAL_CARDS)), words)


def algorithm_for(jokers: int) -> str:
    """The deal algorithm of a deck with ``jokers`` jokers: v1 without, v2 with.

    >>> algorithm_for(0), algorithm_for(2)
    ('ofc-shuffle-v1', 'ofc-shuffle-v2')
    """
    return ALGORITHM if jokers == 0 else ALGORITHM_V2


def deal_deck(
    server_seed: bytes, client_seed: bytes = b"", nonce: int = 0, *, jokers: int = 0
) -> tuple[Card, ...]:
    """The deck of a hand: ofc-shuffle-v1 for 52 cards, v2 for a deck with jokers.

    >>> len(deal_deck(bytes(32), jokers=1)), deal_deck(bytes(32)) == shuffle_deck(bytes(32))
    (53, True)
    """
    if jokers == 0:
        return shuffle_deck(server_seed, client_seed, nonce)
    return shuffle_deck_v2(server_seed, client_seed, nonce, deck_size=NATURAL_CARDS + jokers)


@functools.lru_cache(maxsize=4096)
def commitment(server_seed: bytes) -> str:
    """``SHA-256(server_seed)`` in lower-case hex, published before the deal. Remembered for
    the last few thousand seeds: every view of a hand and of the next one's seed shows it."""
    return hashlib.sha256(server_seed).hexdigest()


def verify_commitment(server_seed: bytes, expected: str) -> bool:
    """True when the revealed seed matches the published commitment (case-insensitive).

    >>> verify_commitment(bytes(32), commitment(bytes(32)).upper())
    True
    """
    return hmac.compare_digest(commitment(server_seed), expected.strip().lower())


def parse_seed_hex(text: str) -> bytes:
    """A 32-byte server seed from exactly 64 hex digits (either case; nothing else, not even
    the whitespace ``bytes.fromhex`` would skip: a seed given is the seed as written).

    >>> parse_seed_hex("00" * 31 + "FF")[-1]
    255
    >>> parse_seed_hex(" 00" * 32)
    Traceback (most recent call last):
    ...
    ofc.errors.InvalidSeedError: server seed is not hex: ' 00 00 00'...
    """
    seed = strict_hex(text)
    if seed is None:
        shown = f"{text[:9]!r}..." if isinstance(text, str) and len(text) > 12 else repr(text)
        raise InvalidSeedError(f"server seed is not hex: {shown}", field="server_seed")
    if len(text) != 2 * SERVER_SEED_BYTES:
        raise InvalidSeedError(
            f"server seed must be {SERVER_SEED_BYTES} bytes ({2 * SERVER_SEED_BYTES} hex digits), "
            f"got {len(text) // 2}",
            field="server_seed",
        )
    return seed


def strict_hex(text: object) -> bytes | None:
    """The bytes of ``text`` when it is hex digit pairs (either case) and nothing else; None
    otherwise (``bytes.fromhex`` would also skip whitespace between and around them).

    >>> strict_hex("00ff"), strict_hex("00 ff"), strict_hex("0")
    (b'\\x00\\xff', None, None)
    """
    if not isinstance(text, str) or len(text) % 2 or not all(c in _HEX_DIGITS for c in text):
        return None
    return bytes.fromhex(text)


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def combine_client_seeds(seeds: Sequence[bytes]) -> bytes:
    """One client seed from several parties' seeds: each u32be-length-prefixed, in seat order.

    A single party's seed is used as it is, so a table with one seed source needs no
    combining and the spec's vectors apply directly.

    >>> combine_client_seeds([b"ab", b"c"]).hex()
    '0000000261620000000163'
    """
    if len(seeds) == 1:
        return seeds[0]
    return b"".join(struct.pack(">I", len(s)) + s for s in seeds)
