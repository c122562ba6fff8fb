"""``OfcClient``: a small typed client for ofcpoker.v1.RulesService.

>>> client = OfcClient("127.0.0.1:50051")                        # doctest: +SKIP
>>> client.settle_hand(["Ac 3d 2h / 6c 6d 9h 8s 4c / 9c 8c 7d 6h 5s",
...                     "Kd 3c 2d / 5c 5d 9d 8h 4d / 7c 7h Qd Js 4s"]).points  # doctest: +SKIP
(8, -8)

Every method raises an :class:`~ofc_client.errors.OfcClientError` subclass on failure,
carrying the server's ErrorInfo reason and the offending field path.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import islice
from types import TracebackType
from typing import Any, TypeVar

import grpc
from google.protobuf import json_format
from grpc_health.v1 import health_pb2, health_pb2_grpc
from ofcpoker.v1 import rules_service_pb2 as pb
from ofcpoker.v1 import rules_service_pb2_grpc as pb_grpc
from ofcpoker.v1 import ruleset_pb2

from ofc_client.errors import REQUEST_ID_KEY, from_rpc_error
from ofc_client.models import (
    BoardAssessment,
    BoardLike,
    Deck,
    FantasylandSet,
    HandInput,
    HandResult,
    HandValue,
    PlayerInput,
    RowEvaluation,
    RulesetLike,
    Settlement,
    outcome_from_proto,
)
from ofc_client.requests import (
    board_message,
    card_list,
    hand_message,
    invalid,
    row_position,
    ruleset_spec,
)
from ofc_client.tables import API_KEY_HEADER, check_open

DEFAULT_TIMEOUT = 10.0
STREAM_BATCH_HANDS = 100  # settle_stream's hands a message, by default
MAX_STREAM_BATCH_HANDS = 1000  # the server's limit (SettleHandsStreamRequest.hands)
T = TypeVar("T")


def _stream_requests(
    hands: Iterable[tuple[str, HandInput]], batch_size: int, sent: deque[list[str]]
) -> Iterator[pb.SettleHandsStreamRequest]:
    """The stream's messages: ``batch_size`` hands each (the one-hand form for 1), each
    message's ids kept in ``sent`` (in order) before it goes."""
    if batch_size == 1:
        for hand_id, hand in hands:
            sent.append([hand_id])
            yield pb.SettleHandsStreamRequest(hand_id=hand_id, hand=hand_message(hand))
        return
    source = iter(hands)
    while chunk := list(islice(source, batch_size)):
        sent.append([hand_id for hand_id, _ in chunk])
        yield pb.SettleHandsStreamRequest(
            hands=[pb.IdentifiedHand(hand_id=i, hand=hand_message(h)) for i, h in chunk]
        )


def _ruleset_dict(m: ruleset_pb2.RulesetParameters) -> dict[str, Any]:
    return json_format.MessageToDict(
        m, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


class OfcClient:
    """A connection to an ofc server. ``target`` is ``HOST:PORT``; plaintext unless
    ``credentials`` (e.g. ``grpc.ssl_channel_credentials()``) are given. ``api_key``, if
    any, goes with every call (``x-ofc-api-key``: the rules need none, a gateway may)."""

    def __init__(
        self,
        target: str,
        *,
        api_key: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        credentials: grpc.ChannelCredentials | None = None,
        options: Sequence[tuple[str, Any]] = (),
        channel: grpc.Channel | None = None,
    ) -> None:
        if channel is None:
            channel = (
                grpc.secure_channel(target, credentials, options)
                if credentials is not None
                else grpc.insecure_channel(target, options)
            )
        self.channel = channel
        self.closed = False
        self.timeout = timeout
        self._credentials = ((API_KEY_HEADER, api_key),) if api_key else ()
        self._stub = pb_grpc.RulesServiceStub(channel)
        self._health = health_pb2_grpc.HealthStub(channel)
        self.last_request_id = ""

    # --- plumbing ---------------------------------------------------------------------------
    def _metadata(self) -> tuple[tuple[str, str], ...]:
        """A call's metadata: a fresh log id (kept as ``last_request_id``), the API key."""
        self.last_request_id = uuid.uuid4().hex
        return ((REQUEST_ID_KEY, self.last_request_id), *self._credentials)

    def _call(self, method: Callable[..., T], request: Any) -> T:
        check_open(self)
        try:
            result: T = method(request, timeout=self.timeout, metadata=self._metadata())
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None
        return result

    def close(self) -> None:
        """Close the channel: every later call raises InvalidRequestError."""
        self.closed = True
        self.channel.close()

    def __enter__(self) -> OfcClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- rules ------------------------------------------------------------------------------
    def evaluate_row(
        self, cards: str | Sequence[str], *, row: str | None = None, ruleset: RulesetLike = None
    ) -> RowEvaluation:
        """Category and value of a 3- or 5-card row; its royalty when ``row`` is given."""
        request = pb.EvaluateRowRequest(cards=card_list(cards), row=row_position(row))
        spec = ruleset_spec(ruleset)
        if spec is not None:
            request.ruleset.CopyFrom(spec)
        response = self._call(self._stub.EvaluateRow, request)
        return RowEvaluation(HandValue.from_proto(response.hand), response.royalty)

    def validate_board(
        self,
        board: BoardLike,
        *,
        ruleset: RulesetLike = None,
        in_fantasyland: bool = False,
        fantasyland_streak: int = 0,
    ) -> BoardAssessment:
        """Foul, royalties and Fantasyland for one complete board."""
        request = pb.ValidateBoardRequest(
            board=board_message(board),
            in_fantasyland=in_fantasyland,
            fantasyland_streak=fantasyland_streak,
        )
        spec = ruleset_spec(ruleset)
        if spec is not None:
            request.ruleset.CopyFrom(spec)
        return BoardAssessment.from_proto(self._call(self._stub.ValidateBoard, request).assessment)

    def settle_hand(
        self,
        players: Sequence[PlayerInput | BoardLike],
        *,
        ruleset: RulesetLike = None,
        pair_units: dict[tuple[int, int], int] | None = None,
    ) -> Settlement:
        """Settle one hand of 2-4 boards."""
        hand = hand_message(HandInput(players, ruleset, pair_units or {}))
        response = self._call(self._stub.SettleHand, pb.SettleHandRequest(hand=hand))
        return Settlement.from_proto(response.settlement)

    def settle_hands(self, hands: Iterable[HandInput]) -> list[HandResult]:
        """Settle up to 1000 hands in one call; a bad hand yields a HandError, not an exception."""
        request = pb.SettleHandsRequest(hands=[hand_message(h) for h in hands])
        response = self._call(self._stub.SettleHands, request)
        return [outcome_from_proto(o) for o in response.results]

    def settle_stream(
        self, hands: Iterable[tuple[str, HandInput]], *, batch_size: int = STREAM_BATCH_HANDS
    ) -> Iterator[tuple[str, HandResult]]:
        """Stream ``(hand_id, hand)`` pairs; yield ``(hand_id, result)`` in request order.

        ``batch_size`` hands go in each stream message (``SettleHandsStreamRequest.hands``,
        1..1000): gRPC's cost is per message, so 100 a message settle several times as many
        hands a second as one. A message is sent when it is full or ``hands`` ends, so a
        source that yields hands slowly waits for a full message; ``batch_size=1`` sends each
        hand as soon as it comes (the one-hand form)."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int):
            raise invalid("batch_size must be an integer 1..1000", "batch_size")
        if not 1 <= batch_size <= MAX_STREAM_BATCH_HANDS:
            raise invalid(
                f"batch_size must be 1..{MAX_STREAM_BATCH_HANDS}, got {batch_size}", "batch_size"
            )
        check_open(self)
        return self._settled_stream(hands, batch_size)  # checked at the call, not at next()

    def _settled_stream(
        self, hands: Iterable[tuple[str, HandInput]], batch_size: int
    ) -> Iterator[tuple[str, HandResult]]:
        sent: deque[list[str]] = deque()  # each message's hand ids, for its response
        responses = self._stub.SettleHandsStream(
            _stream_requests(hands, batch_size, sent), timeout=None, metadata=self._metadata()
        )
        try:
            for response in responses:
                hand_ids = sent.popleft()
                if batch_size == 1:
                    yield response.hand_id, outcome_from_proto(response.outcome)
                elif response.results:
                    for result in response.results:
                        yield result.hand_id, outcome_from_proto(result.outcome)
                else:  # the message refused as a whole: its error is each hand's
                    refused = outcome_from_proto(response.outcome)
                    for hand_id in hand_ids:
                        yield hand_id, refused
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None

    def list_presets(self) -> dict[str, dict[str, Any]]:
        """Every preset's full parameters, by name (the RulesetParameters JSON form)."""
        response = self._call(self._stub.ListPresets, pb.ListPresetsRequest())
        return {p.name: _ruleset_dict(p) for p in response.presets}

    def resolve_ruleset(self, ruleset: RulesetLike) -> dict[str, Any]:
        """The full parameters of a preset with overrides, as the server resolves them."""
        return _ruleset_dict(self._resolved(ruleset).ruleset)

    def live_table_error(self, ruleset: RulesetLike) -> str:
        """Why live tables cannot play ``ruleset`` (CreateTable's INVALID_RULESET message), or
        ``""`` when they can; the rules methods take it either way."""
        return self._resolved(ruleset).live_table_error

    def _resolved(self, ruleset: RulesetLike) -> pb.ResolveRulesetResponse:
        request = pb.ResolveRulesetRequest()
        spec = ruleset_spec(ruleset)
        if spec is not None:
            request.ruleset.CopyFrom(spec)
        resolved: pb.ResolveRulesetResponse = self._call(self._stub.ResolveRuleset, request)
        return resolved

    def solve_fantasyland(
        self,
        cards: str | Sequence[str],
        *,
        ruleset: RulesetLike = None,
        in_fantasyland: bool = False,
        fantasyland_value: int | None = None,
        fantasyland_streak: int | None = None,
        fantasyland_values: Mapping[int, int] | None = None,
    ) -> FantasylandSet:
        """The best set of 13..17 cards (the server's exact solver). ``in_fantasyland``: the
        stay rule of the tier of ``len(cards)`` cards decides Fantasyland next hand, else the
        entry rule; ``fantasyland_value``: points for qualifying (the server's default, 10,
        when ``None``); ``fantasyland_values``: points by the next hand's size, for sizes
        worth something else."""
        request = pb.SolveFantasylandRequest(cards=card_list(cards), in_fantasyland=in_fantasyland)
        for size, points in (fantasyland_values or {}).items():
            request.fantasyland_values.add(cards=size, value=points)
        for name, number in (
            ("fantasyland_value", fantasyland_value),
            ("fantasyland_streak", fantasyland_streak),
        ):
            if number is None:
                continue
            if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number < 2**32:
                raise invalid(f"{name} must be a non-negative integer, got {number!r}", name)
            setattr(request, name, number)
        spec = ruleset_spec(ruleset)
        if spec is not None:
            request.ruleset.CopyFrom(spec)
        return FantasylandSet.from_proto(self._call(self._stub.SolveFantasyland, request))

    # --- fairness ---------------------------------------------------------------------------
    def derive_deck(
        self,
        server_seed: bytes | str,
        *,
        client_seed: bytes | str = b"",
        nonce: int,
        include_first_block: bool = False,
        jokers: int = 0,
    ) -> Deck:
        """The commitment and deck: ofc-shuffle-v1's 52 cards, or with ``jokers`` (1, 2)
        ofc-shuffle-v2's 53 or 54. ``server_seed``: 32 bytes or 64 hex digits;
        ``client_seed``: bytes, or text (UTF-8)."""
        if isinstance(nonce, bool) or not isinstance(nonce, int) or not 0 <= nonce < 2**64:
            raise invalid(
                f"nonce must be an integer in 0..2^64-1, got {nonce!r}", "nonce", "INVALID_SEED"
            )
        request = pb.DeriveDeckRequest(
            nonce=nonce, include_first_block=include_first_block, jokers=jokers
        )
        if isinstance(server_seed, str):
            request.server_seed_hex = server_seed
        else:
            request.server_seed_bytes = server_seed
        if isinstance(client_seed, str):
            request.client_seed_text = client_seed
        else:
            request.client_seed_bytes = client_seed
        r = self._call(self._stub.DeriveDeck, request)
        return Deck(r.algorithm, r.commitment, tuple(r.deck), r.first_block_hex)

    def verify_commitment(self, server_seed: bytes | str, commitment: str) -> bool:
        """True when SHA-256(server_seed) is the published commitment."""
        request = pb.VerifyCommitmentRequest(commitment=commitment)
        if isinstance(server_seed, str):
            request.server_seed_hex = server_seed
        else:
            request.server_seed_bytes = server_seed
        response: pb.VerifyCommitmentResponse = self._call(self._stub.VerifyCommitment, request)
        return response.valid

    # --- health -----------------------------------------------------------------------------
    def health(self, service: str = "") -> str:
        """The server's health status name: SERVING, NOT_SERVING, ..."""
        request = health_pb2.HealthCheckRequest(service=service)
        response: health_pb2.HealthCheckResponse = self._call(self._health.Check, request)
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(response.status))
