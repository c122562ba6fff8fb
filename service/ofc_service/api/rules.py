"""The RulesService servicer: stateless rules over gRPC.

Each handler is a transport-neutral async function from request (and the caller's
credentials, unused: the rules are public) to response over the pure core; the one ``rpc``
adapter (:mod:`.rpc`) turns a core error into its rich status (one table, :mod:`.errors`)
and any other exception into INTERNAL, so no user mistake surfaces as UNKNOWN.
"""

from __future__ import annotations

import asyncio
import functools
import struct
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ofc import errors as core
from ofc.cards import MAX_JOKERS, card_codes
from ofc.engine import check_playable
from ofc.errors import InvalidRulesetError
from ofc.evaluator import rank_row
from ofc.rulesets import PRESETS, Ruleset
from ofc.scoring import assess, row_royalty
from ofc.shuffle import algorithm_for, commitment, deal_deck, verify_commitment, word_stream
from ofc.solver import DEFAULT_FANTASYLAND_VALUE, solve_fantasyland
from ofc.verify import check_history_json, verify_match
from ofcpoker.v1 import rules_service_pb2 as pb
from ofcpoker.v1 import settlement_pb2

from ofc_service.api import convert, decode, outcome_wire
from ofc_service.api.errors import (
    BatchTooLargeError,
    MalformedRequestError,
    error_detail,
    undecodable,
)
from ofc_service.api.settlement_feed import record_to_dict
from ofc_service.auth import Credentials
from ofc_service.metrics import REQUEST_ERRORS, settled_counters

MAX_BATCH_HANDS = 1000
MAX_HAND_ID_CHARS = 128
MAX_HISTORY_BYTES = 1 << 20  # VerifyHandHistory: a real history is some 10..60 KiB
MAX_MATCH_HANDS = 1000  # VerifyMatch; the message limit usually binds first
MAX_MATCH_SETTLEMENTS = 10_000
FANTASYLAND_CARDS = range(13, 18)  # a Fantasyland hand: 13..17 cards
SERVICE = pb.DESCRIPTOR.services_by_name["RulesService"]
SERVICE_NAME = SERVICE.full_name


def _record(settled: convert.SettledHand) -> None:
    hands, fouls = settled_counters(settled.ruleset_label, "rules")
    hands.inc()
    if settled.fouls:
        fouls.inc(settled.fouls)


class SettledTally:
    """Hands and fouls settled and hands refused by one batch, counted in the metrics once
    per batch (a counter's lock per hand costs more than reading the hand)."""

    def __init__(self) -> None:
        self.hands: dict[str, int] = {}
        self.fouls: dict[str, int] = {}
        self.errors: dict[str, int] = {}

    def refused(self, error: core.OfcError) -> bytes:
        """The outcome of a hand refused with ``error`` (its reason counted)."""
        self.errors[error.reason] = self.errors.get(error.reason, 0) + 1
        return outcome_wire.error_outcome_bytes(error_detail(error))

    def add(self, settled: convert.SettledHand) -> None:
        label = settled.ruleset_label
        self.hands[label] = self.hands.get(label, 0) + 1
        if settled.fouls:
            self.fouls[label] = self.fouls.get(label, 0) + settled.fouls

    def flush(self) -> None:
        for label, count in self.hands.items():
            hands, fouls = settled_counters(label, "rules")
            hands.inc(count)
            if label in self.fouls:
                fouls.inc(self.fouls[label])
        for reason, count in self.errors.items():
            REQUEST_ERRORS.labels(reason).inc(count)
        self.hands.clear()
        self.fouls.clear()
        self.errors.clear()


def settle_outcome(hand: settlement_pb2.Hand, tally: SettledTally) -> bytes:
    """One item of a batch or stream: its ``HandOutcome`` as wire bytes, a settlement or
    its error as a value (:mod:`.outcome_wire`)."""
    try:
        settled = convert.settle_hand(hand, "")
    except core.OfcError as exc:
        return tally.refused(exc)
    tally.add(settled)
    return outcome_wire.outcome_bytes(settled.settlement, settled.ids)


def settle_outcome_bytes(raw: bytes, tally: SettledTally) -> bytes:
    """:func:`settle_outcome` of a ``Hand``'s wire bytes (from a parsed message): a plain
    hand (boards of canonical codes, maybe ids and a preset's name; a back office's batch)
    is read from its bytes (:func:`convert.read_wire`), any other is parsed and takes the
    message API's way."""
    hand = convert.read_wire(raw)
    if hand is None:
        return settle_outcome(settlement_pb2.Hand.FromString(raw), tally)
    return settle_plain(hand, tally)


def settle_plain(hand: convert.PlainHand, tally: SettledTally) -> bytes:
    """:func:`settle_outcome` of a hand read from its bytes (:func:`convert.read_wire`)."""
    try:
        settled = convert.settle_boards(hand.boards, hand.ids, hand.resolved, "")
    except core.OfcError as exc:
        return tally.refused(exc)
    tally.add(settled)
    return outcome_wire.outcome_bytes(settled.settlement, settled.ids)


def settle_batch(request: bytes) -> bytes | None:
    """A ``SettleHandsRequest``'s wire bytes answered with its response's, each plain hand
    read from its bytes (:func:`convert.read_wire`): ``None`` for more than
    :data:`MAX_BATCH_HANDS` hands or a field other than ``hands`` (the caller parses the
    request). At the first hand that is not plain the whole request is parsed (bytes that
    do not decode are refused as a whole, as the server's parser refuses them, before
    anything is counted) and that hand takes the message API's way."""
    fields = outcome_wire.length_delimited(request)
    if fields is None or len(fields) > MAX_BATCH_HANDS or any(n != 1 for n, _ in fields):
        return None
    tally = SettledTally()
    parsed: pb.SettleHandsRequest | None = None
    results: list[bytes] = []
    for k, (_, raw) in enumerate(fields):
        hand = convert.read_wire(raw)
        if hand is not None:
            results.append(settle_plain(hand, tally))
            continue
        if parsed is None:
            parsed = _parsed_batch(request)
        results.append(settle_outcome(parsed.hands[k], tally))
    tally.flush()
    return outcome_wire.repeated_field(1, results)


def _parsed_batch(request: bytes) -> pb.SettleHandsRequest:
    try:
        return _parse_batch(request)
    except MalformedRequestError:  # a number too wide for its field, named
        raise
    except Exception as exc:  # protobuf's DecodeError: what the server's parser answers
        raise undecodable(exc) from None


_parse_batch = decode.parser(pb.SettleHandsRequest)


def _hands_of(request: pb.SettleHandsRequest) -> list[bytes]:
    """Each hand of the request as its wire bytes (one serialisation of the request, split)."""
    fields = outcome_wire.length_delimited(request.SerializeToString())
    if fields is None or any(number != 1 for number, _ in fields):
        return [hand.SerializeToString() for hand in request.hands]
    return [value for _, value in fields]


def _identified(entry: bytes) -> tuple[str, bytes] | None:
    """An ``IdentifiedHand``'s (hand_id, hand bytes), or ``None`` for anything but those
    two fields (then the message API reads it)."""
    fields = outcome_wire.length_delimited(entry)
    if fields is None:
        return None
    hand_id, hand = "", b""
    for number, value in fields:
        if number == 1:
            hand_id = value.decode()
        elif number == 2:
            hand = value
        else:
            return None
    return hand_id, hand


def _stream_item(hand_id: str, hand: bytes, tally: SettledTally) -> tuple[str, bytes]:
    """One hand of a stream: its (hand_id, outcome), the id cut to its limit when too long
    (the outcome then says so)."""
    if len(hand_id) > MAX_HAND_ID_CHARS:
        error = core.InvalidInputError(
            f"hand_id has at most {MAX_HAND_ID_CHARS} characters", field="hand_id"
        )
        return hand_id[:MAX_HAND_ID_CHARS], tally.refused(error)
    return hand_id, settle_outcome_bytes(hand, tally)


def _stream_hands(request: pb.SettleHandsStreamRequest) -> list[tuple[str, bytes]]:
    """The (hand_id, hand bytes) of each entry of ``request.hands``."""
    entries = outcome_wire.length_delimited(request.SerializeToString())
    items: list[tuple[str, bytes]] = []
    if entries is not None and all(number == 3 for number, _ in entries):
        for _, entry in entries:
            item = _identified(entry)
            if item is None:
                break
            items.append(item)
        else:
            return items
    return [(h.hand_id, h.hand.SerializeToString()) for h in request.hands]


def stream_response(request: pb.SettleHandsStreamRequest, tally: SettledTally) -> bytes:
    """The ``SettleHandsStreamResponse`` of one stream message, as wire bytes."""
    if not request.hands:
        hand_id, outcome = _stream_item(request.hand_id, request.hand.SerializeToString(), tally)
        return outcome_wire.identified_outcome(hand_id, outcome)
    refused: core.OfcError | None = None
    if len(request.hands) > MAX_BATCH_HANDS:
        refused = BatchTooLargeError(
            f"at most {MAX_BATCH_HANDS} hands per message, got {len(request.hands)}; "
            "split them over several messages",
            field="hands",
        )
    elif request.hand_id or request.HasField("hand"):
        refused = core.InvalidInputError(
            "a message holds one hand (hand_id, hand) or many (hands), not both", field="hands"
        )
    if refused is not None:
        echoed = request.hand_id[:MAX_HAND_ID_CHARS]
        return outcome_wire.identified_outcome(echoed, tally.refused(refused))
    results = [
        outcome_wire.identified_outcome(*_stream_item(hand_id, hand, tally))
        for hand_id, hand in _stream_hands(request)
    ]
    return outcome_wire.repeated_field(3, results)


def _fantasyland_values(request: pb.SolveFantasylandRequest, value: int) -> int | dict[int, int]:
    """The objective's price of a next Fantasyland hand: ``value`` for every size, or per
    size where ``fantasyland_values`` lists it (each checked, errors naming the entry)."""
    if not request.fantasyland_values:
        return value
    values = dict.fromkeys(FANTASYLAND_CARDS, value)
    seen: set[int] = set()
    for k, entry in enumerate(request.fantasyland_values):
        field = f"fantasyland_values[{k}]"
        if entry.cards not in FANTASYLAND_CARDS or entry.cards in seen:
            raise core.InvalidInputError(
                f"{field}.cards must be 13..17 and listed once, got {entry.cards}",
                field=f"{field}.cards",
            )
        if entry.value > convert.MAX_POINTS:
            raise core.InvalidInputError(
                f"{field}.value must be 0..{convert.MAX_POINTS}, got {entry.value}",
                field=f"{field}.value",
            )
        seen.add(entry.cards)
        values[entry.cards] = entry.value
    return values


def _history_text(text: str, field: str) -> str:
    if len(text) > MAX_HISTORY_BYTES or len(text.encode()) > MAX_HISTORY_BYTES:
        raise core.InvalidInputError(f"{field} has at most {MAX_HISTORY_BYTES} bytes", field=field)
    return text


def _expected_ruleset(
    request: pb.VerifyHandHistoryRequest | pb.VerifyMatchRequest,
) -> Ruleset | None:
    if not request.HasField("expected_ruleset"):
        return None
    return convert.ruleset_from_proto(request.expected_ruleset, "expected_ruleset").ruleset


def _match_inputs(
    request: pb.VerifyMatchRequest,
) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]] | None, Ruleset | None]:
    count = len(request.history_jsons)
    if not 1 <= count <= MAX_MATCH_HANDS:
        raise core.InvalidInputError(
            f"history_jsons holds 1..{MAX_MATCH_HANDS} histories, not {count}",
            field="history_jsons",
        )
    if len(request.settlements) > MAX_MATCH_SETTLEMENTS:
        raise core.InvalidInputError(
            f"settlements holds at most {MAX_MATCH_SETTLEMENTS} records", field="settlements"
        )
    histories: list[tuple[str, Any]] = [
        (f"history_jsons[{i}]", _history_text(text, f"history_jsons[{i}]"))
        for i, text in enumerate(request.history_jsons)
    ]
    feed = None
    if request.check_settlements:
        feed = [(f"settlements[{i}]", record_to_dict(r)) for i, r in enumerate(request.settlements)]
    return histories, feed, _expected_ruleset(request)


VERIFY_THREADS = 2
"""Threads verifying matches at once (:meth:`RulesHandlers.VerifyMatch`); more would only
share the one interpreter lock."""


class RulesHandlers:
    """ofcpoker.v1.RulesService over the pure core, transport-neutral."""

    RAW_REQUESTS = frozenset({"SettleHands"})
    """Methods whose request comes as its bytes over gRPC (:func:`.rpc.method_handlers`)."""

    def __init__(self) -> None:
        self._presets = pb.ListPresetsResponse(
            presets=[convert.ruleset_to_proto(r) for r in PRESETS.values()]
        )
        # VerifyMatch's threads, apart from the default pool: there a few long matches
        # (seconds each) would queue the timeout policy's choices behind them, and every
        # table's clock with them. Calls past these wait their turn here.
        self._verify_threads = ThreadPoolExecutor(VERIFY_THREADS, thread_name_prefix="ofc-verify")

    async def EvaluateRow(
        self, request: pb.EvaluateRowRequest, creds: Credentials
    ) -> pb.EvaluateRowResponse:
        row = convert.row_position(request.row, "row")
        if not (len(request.cards) in (3, 5) if row is None else len(request.cards) == row.size):
            sizes = "3 or 5" if row is None else str(row.size)
            raise core.WrongRowSizeError(
                f"a row has {sizes} cards, got {len(request.cards)}", field="cards"
            )
        cards = convert.parse_cards(request.cards, "cards")
        convert.check_distinct(cards, "cards")
        ruleset = None
        if row is not None or request.HasField("ruleset"):
            # A row of a game: its ruleset's deck says which jokers it may hold (alone, the
            # cards are only ranked, a joker as the card it stands for, as `ofc eval` does).
            spec = request.ruleset if request.HasField("ruleset") else None
            ruleset = convert.ruleset_from_proto(spec, "ruleset").ruleset
            convert.check_jokers(cards, ruleset.jokers, "cards")
        value = rank_row(cards)
        royalty = 0
        if row is not None and ruleset is not None:
            royalty = row_royalty(row, value, ruleset.royalties)
        response = pb.EvaluateRowResponse(royalty=royalty)
        convert.write_hand_value(value, response.hand)
        return response

    async def ValidateBoard(
        self, request: pb.ValidateBoardRequest, creds: Credentials
    ) -> pb.ValidateBoardResponse:
        spec = request.ruleset if request.HasField("ruleset") else None
        ruleset = convert.ruleset_from_proto(spec, "ruleset").ruleset
        if request.fantasyland_streak > convert.MAX_FANTASYLAND_STREAK:
            raise core.InvalidInputError(
                f"fantasyland_streak must be 0..{convert.MAX_FANTASYLAND_STREAK}",
                field="fantasyland_streak",
            )
        board = convert.board_from_proto(request.board, "board")
        convert.validate_board(board, "board", jokers=ruleset.jokers)
        tier = convert.fantasyland_tier(
            ruleset, request.in_fantasyland, request.fantasyland_cards, "fantasyland_cards"
        )
        result = assess(
            board,
            ruleset,
            fantasyland_cards=tier,
            fantasyland_streak=max(request.fantasyland_streak, 1) if tier else 0,
        )
        response = pb.ValidateBoardResponse()
        convert.write_assessment(result, response.assessment)
        return response

    async def SettleHand(
        self, request: pb.SettleHandRequest, creds: Credentials
    ) -> pb.SettleHandResponse:
        settled = convert.settle_hand(request.hand, "hand.")
        _record(settled)
        response = pb.SettleHandResponse()
        convert.write_settlement(settled, response.settlement)
        return response

    async def SettleHands(
        self, request: pb.SettleHandsRequest | bytes, creds: Credentials
    ) -> bytes:
        if isinstance(request, bytes):  # over gRPC: RAW_REQUESTS
            response = settle_batch(request)
            if response is not None:
                return response
            request = _parsed_batch(request)
        if len(request.hands) > MAX_BATCH_HANDS:
            raise BatchTooLargeError(
                f"at most {MAX_BATCH_HANDS} hands per call, got {len(request.hands)}; "
                "split the batch or use SettleHandsStream",
                field="hands",
            )
        tally = SettledTally()
        results = [settle_outcome_bytes(hand, tally) for hand in _hands_of(request)]
        tally.flush()
        # The outcomes are wire bytes already: the response is those bytes, sent as they are.
        return outcome_wire.repeated_field(1, results)

    async def SettleHandsStream(
        self,
        request_iterator: AsyncIterator[pb.SettleHandsStreamRequest],
        creds: Credentials,
    ) -> AsyncIterator[bytes]:
        tally = SettledTally()
        async for request in request_iterator:
            response = stream_response(request, tally)
            tally.flush()
            yield response

    async def ListPresets(
        self, request: pb.ListPresetsRequest, creds: Credentials
    ) -> pb.ListPresetsResponse:
        return self._presets

    async def ResolveRuleset(
        self, request: pb.ResolveRulesetRequest, creds: Credentials
    ) -> pb.ResolveRulesetResponse:
        spec = request.ruleset if request.HasField("ruleset") else None
        ruleset = convert.ruleset_from_proto(spec, "ruleset").ruleset
        try:
            check_playable(ruleset)
        except InvalidRulesetError as unplayable:
            table_error = str(unplayable)
        else:
            table_error = ""
        return pb.ResolveRulesetResponse(
            ruleset=convert.ruleset_to_proto(ruleset), live_table_error=table_error
        )

    async def SolveFantasyland(
        self, request: pb.SolveFantasylandRequest, creds: Credentials
    ) -> pb.SolveFantasylandResponse:
        n = len(request.cards)
        if n not in FANTASYLAND_CARDS:  # before parsing: an oversized list costs nothing
            raise core.InvalidInputError(
                f"a Fantasyland hand has 13..17 cards, got {n}", field="cards"
            )
        cards = convert.parse_cards(request.cards, "cards")
        convert.check_distinct(cards, "cards")
        value = DEFAULT_FANTASYLAND_VALUE
        if request.HasField("fantasyland_value"):
            value = request.fantasyland_value
            if value > convert.MAX_POINTS:
                raise core.InvalidInputError(
                    f"fantasyland_value must be 0..{convert.MAX_POINTS}, got {value}",
                    field="fantasyland_value",
                )
        values = _fantasyland_values(request, value)
        streak = request.fantasyland_streak
        if streak > convert.MAX_FANTASYLAND_STREAK:
            raise core.InvalidInputError(
                f"fantasyland_streak must be 0..{convert.MAX_FANTASYLAND_STREAK}",
                field="fantasyland_streak",
            )
        spec = request.ruleset if request.HasField("ruleset") else None
        ruleset = convert.ruleset_from_proto(spec, "ruleset").ruleset
        convert.check_jokers(cards, ruleset.jokers, "cards")  # named by place, as a bad card is
        in_fantasyland = request.in_fantasyland
        solution = solve_fantasyland(
            cards,
            ruleset,
            in_fantasyland=in_fantasyland,
            fantasyland_value=values,
            fantasyland_streak=max(streak, 1) if in_fantasyland else 0,
        )
        response = pb.SolveFantasylandResponse(
            discards=card_codes(solution.discards),
            royalties=solution.royalties,
            fantasyland_next=solution.fantasyland_next,
            objective=solution.objective,
            fantasyland_next_cards=solution.fantasyland_next_cards,
        )
        board = response.board
        board.top.extend(card_codes(solution.top))
        board.middle.extend(card_codes(solution.middle))
        board.bottom.extend(card_codes(solution.bottom))
        return response

    async def DeriveDeck(
        self, request: pb.DeriveDeckRequest, creds: Credentials
    ) -> pb.DeriveDeckResponse:
        seed = convert.server_seed_from_proto(
            request.WhichOneof("server_seed"), request.server_seed_hex, request.server_seed_bytes
        )
        client_seed = (
            request.client_seed_text.encode()
            if request.WhichOneof("client_seed") == "client_seed_text"
            else request.client_seed_bytes
        )
        if request.jokers > MAX_JOKERS:  # a count out of range, not a bad seed
            raise core.InvalidInputError(
                f"a deck has 0..{MAX_JOKERS} jokers, not {request.jokers}", field="jokers"
            )
        deck = deal_deck(seed, client_seed, request.nonce, jokers=request.jokers)
        first_block = ""
        if request.include_first_block:
            words = word_stream(seed, client_seed, request.nonce)
            first_block = struct.pack(">8I", *(next(words) for _ in range(8))).hex()
        return pb.DeriveDeckResponse(
            algorithm=algorithm_for(request.jokers),
            commitment=commitment(seed),
            deck=card_codes(deck),
            first_block_hex=first_block,
        )

    async def VerifyCommitment(
        self, request: pb.VerifyCommitmentRequest, creds: Credentials
    ) -> pb.VerifyCommitmentResponse:
        seed = convert.server_seed_from_proto(
            request.WhichOneof("server_seed"), request.server_seed_hex, request.server_seed_bytes
        )
        expected = convert.commitment_from_proto(request.commitment)
        return pb.VerifyCommitmentResponse(
            valid=verify_commitment(seed, expected), computed_commitment=commitment(seed)
        )

    async def VerifyHandHistory(
        self, request: pb.VerifyHandHistoryRequest, creds: Credentials
    ) -> pb.VerifyHandHistoryResponse:
        text = _history_text(request.history_json, "history_json")
        expected = _expected_ruleset(request)
        verdict = check_history_json(
            text, expected_ruleset=expected, check_policy=request.check_policy
        )
        found = verdict.discrepancy
        if found is None:
            return pb.VerifyHandHistoryResponse(ok=True, notes=verdict.notes)
        discrepancy = pb.HistoryDiscrepancy(
            code=found.code, location=found.location, message=found.message
        )
        return pb.VerifyHandHistoryResponse(ok=False, discrepancy=discrepancy)

    async def VerifyMatch(
        self, request: pb.VerifyMatchRequest, creds: Credentials
    ) -> pb.VerifyMatchResponse:
        # Checked here; verified on a worker thread, so that a long match does not hold
        # the event loop (and the other calls on it) for its whole run.
        histories, feed, expected = _match_inputs(request)
        verify = functools.partial(
            verify_match, histories, feed, expected_ruleset=expected,
            check_policy=request.check_policy,
        )  # fmt: skip
        report = await asyncio.get_running_loop().run_in_executor(self._verify_threads, verify)
        return pb.VerifyMatchResponse(
            ok=report.ok,
            hands_verified=report.verified,
            discrepancies=[
                pb.MatchDiscrepancy(
                    code=d.code,
                    source=d.source,
                    hand_number=d.hand_number or 0,
                    location=d.location,
                    message=d.message,
                )
                for d in report.discrepancies
            ],
            notes=report.notes,
        )
