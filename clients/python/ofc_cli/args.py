"""Reading command-line input strictly: every bad value is an ``OfcError`` naming it, so the
command says one line (reason, place, message) and exits 2, never a traceback."""

from __future__ import annotations

import argparse
import io
import re
import sys
from collections.abc import Sequence
from typing import TextIO

from ofc.cards import Card, parse_cards
from ofc.errors import DuplicateCardError, InvalidInputError, InvalidSeedError
from ofc.shuffle import strict_hex


def utf8(text: str, field: str) -> bytes:
    """An argument as UTF-8 (arguments that are not decode with surrogates: refuse them)."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        raise InvalidInputError(f"{field} is not valid UTF-8 text", field=field) from None


def client_seed_bytes(args: argparse.Namespace) -> bytes:
    """``ofc deal``'s client seed: ``--client-seed-hex``'s bytes, else ``--client-seed``'s
    text as UTF-8."""
    if args.client_seed_hex is None:
        return utf8(args.client_seed, "client_seed")
    seed = strict_hex(args.client_seed_hex)
    if seed is None:
        raise InvalidSeedError(
            f"client seed is not hex: {args.client_seed_hex!r}", field="client_seed_hex"
        )
    return seed


def integer(text: str) -> int:
    """An argparse ``type`` for whole numbers as people write them in ASCII: an optional
    minus and digits (``int`` would also take ``" 5"``, ``"1_000"`` and ``"١"``).

    >>> integer("-12")
    -12
    >>> integer("1_000")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: not a whole number: '1_000'
    """
    if not _INTEGER.fullmatch(text):
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}")
    return int(text)


_INTEGER = re.compile(r"-?[0-9]+", re.ASCII)


def distinct_cards(tokens: Sequence[str], field: str = "cards") -> tuple[Card, ...]:
    """Card codes, each at most once (as the server's EvaluateRow and SolveFantasyland)."""
    cards = parse_cards(list(tokens))
    seen: set[Card] = set()
    for k, card in enumerate(cards):
        if card in seen:
            raise DuplicateCardError(f"duplicate card {card}", field=f"{field}[{k}]")
        seen.add(card)
    return cards


def open_lines(path: str, field: str = "file") -> TextIO:
    """A file (``-``: stdin) to read line by line, as JSON lines are: a byte that is not
    UTF-8 becomes U+FFFD, so its line fails on its own and the others go on."""
    if path == "-":
        raw = getattr(sys.stdin, "buffer", None)  # None: stdin is already text (embedding)
        if raw is None:
            return sys.stdin
        return io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
    try:
        return open(path, encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror}", field=field) from None


def read_text(path: str, field: str = "file") -> str:
    """A UTF-8 text file (``-``: stdin), or INVALID_INPUT saying why it cannot be read."""
    try:
        if path == "-":
            raw = getattr(sys.stdin, "buffer", None)
            return sys.stdin.read() if raw is None else raw.read().decode()
        with open(path, "rb") as stream:
            return stream.read().decode()
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror}", field=field) from None
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"{path} is not UTF-8 text (byte {exc.start})", field=field
        ) from None
