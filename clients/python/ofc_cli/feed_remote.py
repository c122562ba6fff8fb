"""Reading a table's settlement-feed records from a running service, for ``ofc verify
--match ... --feed-from ADDR --table TABLE``.

It subscribes (``SettlementFeedService.Subscribe``, an operator key when the server has keys)
as consumer :data:`CONSUMER` of its own group (default :data:`GROUP`) and **never
acknowledges**: no other group's delivery changes (each group gets every record), and what
this group read stays pending for this consumer, so the next audit reads it all again
(pending records first, then new ones). The stream never ends by itself: reading stops once
no record has come for ``idle_s`` seconds after one did (the first may take ``first_s``: the
connection, a TLS handshake, a loaded server), or after ``timeout_s`` in all. The price of
never acknowledging is stated in docs/settlement-feed.md: the feed's trim keeps records a
group has pending, so drop the group when the audits are over.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import grpc

GROUP = "ofc-verify"
CONSUMER = "read-only-never-acks"
IDLE_S = 2.0
FIRST_S = 30.0
TIMEOUT_S = 300.0
API_KEY_HEADER = "x-ofc-api-key"
_END = object()


def fetch_feed(
    address: str,
    table_id: str,
    *,
    api_key: str | None = None,
    credentials: grpc.ChannelCredentials | None = None,
    group: str = GROUP,
    idle_s: float = IDLE_S,
    first_s: float = FIRST_S,
    timeout_s: float = TIMEOUT_S,
) -> list[tuple[str, dict[str, Any]]]:
    """The records of ``table_id`` on the feed of the server at ``address``, in the order
    delivered, each as ``(source, record)``: source ``"ADDRESS feed #N"`` (the N-th record
    received), the record as the feed stream holds it (what ``--feed FILE`` reads).
    ``credentials``: TLS (None: plaintext). ``grpc.RpcError`` when the server refuses or
    cannot be reached."""
    import grpc
    from ofc_service.api.settlement_feed import record_to_dict
    from ofcpoker.v1 import settlement_feed_pb2 as pb
    from ofcpoker.v1 import settlement_feed_pb2_grpc as pb_grpc

    metadata = ((API_KEY_HEADER, api_key),) if api_key else ()
    received: queue.Queue[Any] = queue.Queue()
    opened = (
        grpc.insecure_channel(address)
        if credentials is None
        else grpc.secure_channel(address, credentials)
    )
    with opened as channel:
        call = pb_grpc.SettlementFeedServiceStub(channel).Subscribe(
            pb.SubscribeRequest(group=group, consumer=CONSUMER, batch_size=1000),
            metadata=metadata,
        )

        def read() -> None:
            try:
                for response in call:
                    received.put(response)
            except grpc.RpcError as error:
                received.put(error)
            received.put(_END)

        reader = threading.Thread(target=read, name="feed-reader", daemon=True)
        reader.start()
        records: list[tuple[str, dict[str, Any]]] = []
        count = 0
        stop_at = time.monotonic() + timeout_s
        try:
            while True:
                wait = min(idle_s if count else first_s, stop_at - time.monotonic())
                if wait <= 0:
                    break
                try:
                    item = received.get(timeout=wait)
                except queue.Empty:
                    break  # idle: the retained feed and what settled meanwhile are read
                if item is _END:
                    break
                if isinstance(item, grpc.RpcError):
                    if item.code() == grpc.StatusCode.CANCELLED:
                        break
                    raise item
                count += 1
                record = record_to_dict(item.record)
                if record["table_id"] == table_id:
                    records.append((f"{address} feed #{count}", record))
        finally:
            call.cancel()
            reader.join(timeout=5)
    return records


__all__ = ["CONSUMER", "GROUP", "fetch_feed"]
