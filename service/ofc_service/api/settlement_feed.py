"""The SettlementFeedService servicer: the settlement feed's consumer groups over gRPC.

``Subscribe`` streams a consumer's pending records first (``XREADGROUP`` from ``0``), then
new ones (``>``), without end; ``Acknowledge`` marks records done by settlement id or stream
id and observes ``ofc_settlement_lag_seconds`` (settlement to acknowledgement) for each
record it acknowledged. Both need an operator key when the server has any configured.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from ofc import errors as core
from ofcpoker.v1 import settlement_feed_pb2 as pb

from ofc_service import auth, store
from ofc_service.api import parse
from ofc_service.api.errors import BatchTooLargeError
from ofc_service.api.shutdown import Shutdown
from ofc_service.application.settlements import PairSettlement, SeatSettlement, SettlementRecord
from ofc_service.metrics import SETTLEMENT_LAG
from ofc_service.store import FeedEntry, SettlementFeed
from ofc_service.store.feed import MAX_READ_COUNT, check_name

SERVICE = pb.DESCRIPTOR.services_by_name["SettlementFeedService"]
SERVICE_NAME = SERVICE.full_name
DEFAULT_BATCH_SIZE = 100
MAX_ACK_IDS = 1000
POLL_S = 5.0


def record_to_proto(entry: FeedEntry) -> pb.SettlementRecord:
    """A feed entry as the API's record (the entry's bytes are the JSON record)."""
    record = SettlementRecord.from_bytes(entry.data)
    out = pb.SettlementRecord(
        settlement_id=record.settlement_id,
        stream_id=entry.stream_id,
        table_id=record.table_id,
        hand_number=record.hand_number,
        ruleset=record.ruleset,
        unit_value=record.unit_value,
        loss_cap=record.loss_cap or 0,
        settled_at_ms=record.settled_at_ms,
        format=record.format,
    )
    for s in record.seats:
        out.seats.add(
            seat=s.seat,
            player_id=s.player_id,
            points=s.points,
            units=s.units,
            total_points=s.total_points,
            total_units=s.total_units,
            fouled=s.fouled,
            fantasyland_cards=s.fantasyland_cards,
            fantasyland_next_cards=s.fantasyland_next_cards,
        )
    for p in record.pairs:
        out.pairs.add(
            seat_a=p.seat_a,
            seat_b=p.seat_b,
            points=p.points,
            capped_points=p.capped_points,
            unit_value=p.unit_value,
            units=p.units,
        )
    return out


def record_to_dict(record: pb.SettlementRecord) -> dict[str, Any]:
    """A record of the API as the feed stream holds it (:meth:`SettlementRecord.to_dict`):
    what :func:`ofc.verify.verify_match` compares with the hands (a record of format 1 that
    sets Fantasyland fields keeps them: :meth:`SettlementRecord.to_dict`)."""
    return SettlementRecord(
        settlement_id=record.settlement_id,
        table_id=record.table_id,
        hand_number=record.hand_number,
        ruleset=record.ruleset,
        unit_value=record.unit_value,
        loss_cap=record.loss_cap or None,
        settled_at_ms=record.settled_at_ms,
        seats=tuple(
            SeatSettlement(
                seat=s.seat,
                player_id=s.player_id,
                points=s.points,
                units=s.units,
                total_points=s.total_points,
                total_units=s.total_units,
                fouled=s.fouled,
                fantasyland_cards=s.fantasyland_cards,
                fantasyland_next_cards=s.fantasyland_next_cards,
            )
            for s in record.seats
        ),
        pairs=tuple(
            PairSettlement(
                seat_a=p.seat_a,
                seat_b=p.seat_b,
                points=p.points,
                capped_points=p.capped_points,
                unit_value=p.unit_value,
                units=p.units,
            )
            for p in record.pairs
        ),
        format=record.format or 1,  # a record from a server before formats were sent: 1
    ).to_dict()


def record_from_proto_json(data: Any) -> dict[str, Any]:
    """:func:`record_to_dict` of a record in protobuf JSON (what ``grpcurl`` prints of
    ``Subscribe``); ``ValueError`` when it is not one. An integer is a JSON integer or a
    string of decimal digits, as protobuf JSON printers write them: the library alone would
    also take ``1.0``, ``"1e2"`` or ``"6\\n"`` (the Node verifier reads the same).

    >>> record_from_proto_json({"handNumber": "2", "seats": [{"points": -3}]})["seats"][0]["points"]
    -3
    >>> record_from_proto_json({"handNumber": "2\\n"})
    Traceback (most recent call last):
    ...
    ValueError: not a settlement record: handNumber is '2\\n', not an integer
    """
    _check_integers(data, pb.SettlementRecord.DESCRIPTOR)
    try:
        record = json_format.ParseDict(data, pb.SettlementRecord(), ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise ValueError(f"not a settlement record: {exc}") from None
    return record_to_dict(record)


_INTEGER = re.compile(r"-?[0-9]+")
_INTEGER_TYPES = frozenset(
    (
        FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT32,
        FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SINT64,
    )
)  # fmt: skip


def _check_integers(data: Any, descriptor: Descriptor) -> None:
    """Every integer field of ``data`` (protobuf JSON of ``descriptor``, camelCase or the
    .proto's names, nested messages too) a JSON integer or a string of decimal digits."""
    if not isinstance(data, dict):
        return  # ParseDict names what it is
    for field in descriptor.fields:
        value = data.get(field.json_name, data.get(field.name))
        if value is None:
            continue
        values = value if field.is_repeated else [value]
        if not isinstance(values, list):
            continue
        for item in values:
            if field.message_type is not None:
                _check_integers(item, field.message_type)
            elif field.type in _INTEGER_TYPES and not (
                (isinstance(item, int) and not isinstance(item, bool))
                or (isinstance(item, str) and _INTEGER.fullmatch(item))
            ):
                raise ValueError(
                    f"not a settlement record: {field.json_name} is {item!r}, not an integer"
                )


def _name(value: str, field: str) -> str:
    try:
        return check_name(value, what=field)
    except store.InvalidIdError as error:
        raise core.InvalidInputError(
            f"{field} must be 1..64 letters, digits, '.', '_', ':' or '-', "
            f"not {parse.quoted(value)}",
            field=field,
        ) from error


def _batch_size(value: int) -> int:
    return parse.at_most(value, MAX_READ_COUNT, "batch_size", zero="100") or DEFAULT_BATCH_SIZE


def _ids(values: Sequence[str], check: Callable[[str, str], str], field: str) -> list[str]:
    return [check(value, f"{field}[{k}]") for k, value in enumerate(values)]


class SettlementFeedHandlers:
    """ofcpoker.v1.SettlementFeedService over a :class:`~ofc_service.store.SettlementFeed`,
    transport-neutral (see :mod:`ofc_service.api.rpc`)."""

    def __init__(
        self,
        feed: SettlementFeed,
        authenticator: auth.Authenticator,
        *,
        clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
        poll_s: float = POLL_S,
        shutdown: Shutdown | None = None,
    ) -> None:
        self.feed = feed
        self.auth = authenticator
        self.clock_ms = clock_ms
        self.poll_s = poll_s
        self.shutdown = shutdown or Shutdown()  # ends every Subscribe when the server stops

    def _authorize(self, creds: auth.Credentials) -> None:
        self.auth.require_operator_when_keyed(creds)  # none configured: development mode

    async def Subscribe(
        self, request: pb.SubscribeRequest, creds: auth.Credentials
    ) -> AsyncIterator[pb.SubscribeResponse]:
        self._authorize(creds)
        group = _name(request.group, "group")
        consumer = _name(request.consumer, "consumer")
        batch = _batch_size(request.batch_size)
        records = self._records(group, consumer, batch)
        async for response in self.shutdown.until(records):
            yield response

    async def _records(
        self, group: str, consumer: str, batch: int
    ) -> AsyncIterator[pb.SubscribeResponse]:
        """Pending records first, then new ones, until the call ends (its cancellation
        ends the wait for news)."""
        sent: set[str] = set()  # stream ids this call handed out (pending until acked)
        cursor = "0"
        while entries := await self.feed.read_pending(group, consumer, after=cursor, count=batch):
            for entry in entries:
                sent.add(entry.stream_id)
                yield pb.SubscribeResponse(record=record_to_proto(entry), redelivered=True)
            cursor = entries[-1].stream_id
        while True:
            entries = await self.feed.read_new(group, consumer, count=batch, block_s=self.poll_s)
            for entry in entries:
                sent.add(entry.stream_id)
                yield pb.SubscribeResponse(record=record_to_proto(entry))
            if not entries:
                # Idle: records pending for this name that this call never handed out
                # (read by an earlier call of the same consumer, cut off after its
                # read) come now rather than at the next Subscribe.
                pending = await self.feed.read_pending(group, consumer, count=MAX_READ_COUNT)
                sent &= {e.stream_id for e in pending}
                for entry in pending:
                    if entry.stream_id not in sent:
                        sent.add(entry.stream_id)
                        yield pb.SubscribeResponse(record=record_to_proto(entry), redelivered=True)

    async def Acknowledge(
        self, request: pb.AcknowledgeRequest, creds: auth.Credentials
    ) -> pb.AcknowledgeResponse:
        self._authorize(creds)
        group = _name(request.group, "group")
        if len(request.settlement_ids) + len(request.stream_ids) > MAX_ACK_IDS:
            raise BatchTooLargeError(
                f"at most {MAX_ACK_IDS} ids per Acknowledge", field="settlement_ids"
            )
        by_settlement = _ids(request.settlement_ids, parse.settlement_id, "settlement_ids")
        by_stream = _ids(request.stream_ids, parse.stream_id, "stream_ids")
        resolved = await self.feed.stream_ids(by_settlement)
        unknown = [s for s in by_settlement if s not in resolved]
        ids = list(dict.fromkeys([*by_stream, *resolved.values()]))
        done = await self.feed.acknowledge(group, ids)
        now = self.clock_ms()
        for entry in done:
            if entry.data:  # empty: the entry was gone from the log
                settled_at = SettlementRecord.from_bytes(entry.data).settled_at_ms
                SETTLEMENT_LAG.observe(max(0.0, (now - settled_at) / 1000))
        return pb.AcknowledgeResponse(acknowledged=len(done), unknown_settlement_ids=unknown)


__all__ = [
    "SERVICE",
    "SERVICE_NAME",
    "SettlementFeedHandlers",
    "record_from_proto_json",
    "record_to_dict",
    "record_to_proto",
]
