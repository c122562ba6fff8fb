"""A typed Python client for the ofc gRPC service (ofcpoker.v1).

>>> from ofc_client import OfcClient, InvalidRequestError
"""

from ofc_client.client import OfcClient
from ofc_client.errors import (
    FailedPreconditionError,
    InvalidRequestError,
    NotFoundError,
    OfcClientError,
    PermissionDeniedError,
    RequestIdReusedError,
    RetryableError,
    ServerError,
    StaleVersionError,
    UnauthenticatedError,
)
from ofc_client.models import (
    BoardAssessment,
    Deck,
    FantasylandSet,
    HandError,
    HandInput,
    HandValue,
    PairResult,
    PlayerInput,
    PlayerResult,
    RowEvaluation,
    Settlement,
)
from ofc_client.table_models import Board, TableEvent, TableView
from ofc_client.tables import TableClient, TableWatch

__all__ = [
    "Board",
    "BoardAssessment",
    "Deck",
    "FailedPreconditionError",
    "FantasylandSet",
    "HandError",
    "HandInput",
    "HandValue",
    "InvalidRequestError",
    "NotFoundError",
    "OfcClient",
    "OfcClientError",
    "PairResult",
    "PermissionDeniedError",
    "PlayerInput",
    "PlayerResult",
    "RequestIdReusedError",
    "RetryableError",
    "RowEvaluation",
    "ServerError",
    "Settlement",
    "StaleVersionError",
    "TableClient",
    "TableEvent",
    "TableView",
    "TableWatch",
    "UnauthenticatedError",
]
