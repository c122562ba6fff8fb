"""What a verifier reports: stable discrepancy codes, and where they were found."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Code(StrEnum):
    """What kind of discrepancy; the values are stable (clients and scripts match on them).
    Codes are added, never renamed or removed."""

    # one hand (ofc verify, VerifyHandHistory)
    MALFORMED_HISTORY = "MALFORMED_HISTORY"
    NEWER_FORMAT_VERSION = "NEWER_FORMAT_VERSION"
    COMMITMENT_MISMATCH = "COMMITMENT_MISMATCH"
    DECK_MISMATCH = "DECK_MISMATCH"
    RULESET_MISMATCH = "RULESET_MISMATCH"
    DEAL_MISMATCH = "DEAL_MISMATCH"
    ILLEGAL_ACTION = "ILLEGAL_ACTION"
    TIMEOUT_MISMATCH = "TIMEOUT_MISMATCH"
    DEADLINE_MISMATCH = "DEADLINE_MISMATCH"
    TIMEOUT_BEFORE_DEADLINE = "TIMEOUT_BEFORE_DEADLINE"
    POLICY_MISMATCH = "POLICY_MISMATCH"
    POLICY_UNKNOWN = "POLICY_UNKNOWN"
    INCOMPLETE_HAND = "INCOMPLETE_HAND"
    HEADER_MISMATCH = "HEADER_MISMATCH"
    BOARD_MISMATCH = "BOARD_MISMATCH"
    SETTLEMENT_MISMATCH = "SETTLEMENT_MISMATCH"
    # a table's hands as one chain (ofc verify --match, VerifyMatch)
    TABLE_MISMATCH = "TABLE_MISMATCH"
    HAND_REPEATED = "HAND_REPEATED"
    HAND_MISSING = "HAND_MISSING"
    CHAIN_STATE_MISMATCH = "CHAIN_STATE_MISMATCH"
    CHAIN_COMMITMENT_MISMATCH = "CHAIN_COMMITMENT_MISMATCH"
    FEED_RECORD_MISSING = "FEED_RECORD_MISSING"
    FEED_RECORD_EXTRA = "FEED_RECORD_EXTRA"
    FEED_RECORD_MISMATCH = "FEED_RECORD_MISMATCH"
    RUNNING_TOTAL_MISMATCH = "RUNNING_TOTAL_MISMATCH"


UNREADABLE = frozenset({Code.MALFORMED_HISTORY, Code.NEWER_FORMAT_VERSION})
"""Codes of a document that could not be checked at all (``ofc verify`` exits 2)."""


@dataclass(frozen=True, slots=True)
class Discrepancy:
    """The first check a history fails: what, where (a JSON path, ``""`` for the whole
    document) and a message for people (not for parsing).

    >>> print(Discrepancy(Code.DEAL_MISMATCH, "deals[2].cards[0]", "recorded 'As'"))
    DEAL_MISMATCH at deals[2].cards[0]: recorded 'As'
    """

    code: Code
    location: str
    message: str

    def __str__(self) -> str:
        where = f" at {self.location}" if self.location else ""
        return f"{self.code}{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """One history's answer: ``discrepancy`` (``None``: every check passed) and ``notes``,
    things worth saying that are not failures ("not checkable with this release")."""

    discrepancy: Discrepancy | None
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.discrepancy is None


@dataclass(frozen=True, slots=True)
class MatchDiscrepancy:
    """A discrepancy of a match: ``source`` names the input (a history's file or index, a
    feed record's line), ``hand_number`` the hand (``None`` when unknown), ``location`` a
    JSON path in that input.

    >>> print(MatchDiscrepancy(Code.HAND_MISSING, "hand-4.json", 4, "hand_number", "no hand 3"))
    hand-4.json: HAND_MISSING at hand_number: no hand 3
    """

    code: Code
    source: str
    hand_number: int | None
    location: str
    message: str

    def __str__(self) -> str:
        where = f" at {self.location}" if self.location else ""
        return f"{self.source}: {self.code}{where}: {self.message}"


__all__ = ["UNREADABLE", "Code", "Discrepancy", "MatchDiscrepancy", "Verdict"]
