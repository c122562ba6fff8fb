"""The core's one error tree.

Every error carries a stable, machine-readable ``reason`` (UPPER_SNAKE) that the gRPC
layer copies into ``google.rpc.ErrorInfo`` and the command line prints, and an optional
``field`` naming the offending input (``players[1].middle``) for ``BadRequest``.
Bad syntax, impossible input and illegal moves are separate branches so a caller can
tell "fix your request" from "not now".
"""

from __future__ import annotations


class OfcError(ValueError):
    """Base of every error the core raises on purpose."""

    reason = "OFC_ERROR"

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.field = field


# --- malformed or impossible input ------------------------------------------------------
class InvalidInputError(OfcError):
    """The input can never be valid, whatever the state: fix the request."""

    reason = "INVALID_INPUT"


class InvalidCardError(InvalidInputError):
    reason = "INVALID_CARD"


class DuplicateCardError(InvalidInputError):
    reason = "DUPLICATE_CARD"


class WrongRowSizeError(InvalidInputError):
    reason = "WRONG_ROW_SIZE"


class WrongPlayerCountError(InvalidInputError):
    reason = "WRONG_PLAYER_COUNT"


class UnknownRulesetError(InvalidInputError):
    reason = "UNKNOWN_RULESET"


class InvalidRulesetError(InvalidInputError):
    reason = "INVALID_RULESET"


class InvalidSeedError(InvalidInputError):
    reason = "INVALID_SEED"


class InvalidRowError(InvalidInputError):
    reason = "INVALID_ROW"


# --- well-formed actions that the current state does not allow ----------------------------
class IllegalActionError(OfcError):
    """The action is well formed but not allowed now (turn, dealt cards, hand over)."""

    reason = "ILLEGAL_ACTION"


class NotYourTurnError(IllegalActionError):
    reason = "NOT_YOUR_TURN"


class CardNotDealtError(IllegalActionError):
    reason = "CARD_NOT_DEALT"


class RowFullError(IllegalActionError):
    reason = "ROW_FULL"


class WrongCardCountError(IllegalActionError):
    reason = "WRONG_CARD_COUNT"


class DiscardNotAllowedError(IllegalActionError):
    reason = "DISCARD_NOT_ALLOWED"


class HandNotInProgressError(IllegalActionError):
    reason = "HAND_NOT_IN_PROGRESS"


class HandInProgressError(IllegalActionError):
    reason = "HAND_IN_PROGRESS"


class UnknownSeatError(IllegalActionError):
    reason = "UNKNOWN_SEAT"


class SeatTakenError(IllegalActionError):
    reason = "SEAT_TAKEN"


class FantasylandOwedError(IllegalActionError):
    reason = "FANTASYLAND_OWED"


class NotEnoughPlayersError(IllegalActionError):
    reason = "NOT_ENOUGH_PLAYERS"


class MatchOverError(IllegalActionError):
    reason = "MATCH_OVER"


class PlayerAlreadySeatedError(IllegalActionError):
    """The player already sits at another seat of this table."""

    reason = "PLAYER_ALREADY_SEATED"


class NotInFantasylandError(IllegalActionError):
    """A Fantasyland set from a seat that plays this hand street by street."""

    reason = "NOT_IN_FANTASYLAND"


class InFantasylandError(IllegalActionError):
    """A street placement from a seat that plays this hand in Fantasyland (one set)."""

    reason = "IN_FANTASYLAND"
