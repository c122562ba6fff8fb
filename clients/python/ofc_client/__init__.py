"""A typed Python client for the ofc gRPC service (ofcpoker.v1).

>>> from ofc_client import OfcClient, InvalidRequestError
"""

from ofc_client.client import OfcClient
from ofc_client.errors import (
    FailedPreconditionError,
    InvalidRequestError,
    OfcClientError,
    RetryableError,
    ServerError,
)
from ofc_client.models import (
    BoardAssessment,
    Deck,
    HandError,
    HandInput,
    HandValue,
    PairResult,
    PlayerInput,
    PlayerResult,
    RowEvaluation,
    Settlement,
)

__all__ = [
    "BoardAssessment",
    "Deck",
    "FailedPreconditionError",
    "HandError",
    "HandInput",
    "HandValue",
    "InvalidRequestError",
    "OfcClient",
    "OfcClientError",
    "PairResult",
    "PlayerInput",
    "PlayerResult",
    "RetryableError",
    "RowEvaluation",
    "ServerError",
    "Settlement",
]
