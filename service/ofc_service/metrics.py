"""Every Prometheus metric the service exports, declared once with bounded label sets.

The gRPC ones use the standard names of go-grpc-prometheus / py-grpc-prometheus:
``grpc_server_started_total``, ``grpc_server_handled_total`` and the
``grpc_server_handling_seconds`` histogram, labelled by ``grpc_type``, ``grpc_service``,
``grpc_method`` (and ``grpc_code`` once handled: the status name as gRPC's Python library and
py-grpc-prometheus spell it, ``OK``, ``INVALID_ARGUMENT``, ``DEADLINE_EXCEEDED``; a query
written for go-grpc-prometheus matches ``OK`` but not ``InvalidArgument``), and by the wire
``protocol`` the call came in on: ``grpc`` (the gRPC port, or gRPC over HTTP/2 on the HTTP
port), ``connect`` (Connect JSON or binary) or ``grpc-web`` (both on the HTTP port). Domain
metrics are labelled by ruleset: a preset name, or ``custom`` for any ruleset with overrides
(never a free-form name).
"""

from __future__ import annotations

import functools
from typing import Any, Literal

from prometheus_client import Counter, Gauge, Histogram

GRPC_LABELS = ("grpc_type", "grpc_service", "grpc_method", "protocol")
PROTOCOLS = ("grpc", "connect", "grpc-web")

GRPC_STARTED = Counter(
    "grpc_server_started_total",
    "RPCs started on the server.",
    GRPC_LABELS,
)
GRPC_HANDLED = Counter(
    "grpc_server_handled_total",
    "RPCs completed on the server, regardless of success or failure.",
    (*GRPC_LABELS, "grpc_code"),
)
GRPC_HANDLING_SECONDS = Histogram(
    "grpc_server_handling_seconds",
    "Response latency (seconds) of RPCs handled by the server.",
    GRPC_LABELS,
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
GRPC_MSG_RECEIVED = Counter(
    "grpc_server_msg_received_total",
    "RPC stream messages received on the server.",
    GRPC_LABELS,
)
GRPC_MSG_SENT = Counter(
    "grpc_server_msg_sent_total",
    "RPC stream messages sent by the server.",
    GRPC_LABELS,
)


class RpcMetrics:
    """The ``grpc_server_*`` children of one method on one protocol, made once, so that a
    call costs a few increments; :meth:`handled` records its end (latency and code)."""

    __slots__ = ("_handled", "labels", "latency", "received", "sent", "started")

    def __init__(self, grpc_type: str, service: str, method: str, protocol: str) -> None:
        self.labels = (grpc_type, service, method, protocol)
        self.started = GRPC_STARTED.labels(*self.labels)
        self.latency = GRPC_HANDLING_SECONDS.labels(*self.labels)
        self.received = GRPC_MSG_RECEIVED.labels(*self.labels)
        self.sent = GRPC_MSG_SENT.labels(*self.labels)
        self._handled: dict[str, Any] = {}

    def handled(self, code: str, seconds: float) -> None:
        self.latency.observe(seconds)
        child = self._handled.get(code)
        if child is None:
            child = self._handled[code] = GRPC_HANDLED.labels(*self.labels, code)
        child.inc()


CUSTOM_RULESET_LABEL = "custom"

# ``source``: "rules" for the rules service's settle calls (SettleHand, SettleHands,
# SettleHandsStream), "table" for hands played to the end at live tables (counted once, by
# the replica whose commit ended the hand).
HANDS_SETTLED = Counter(
    "ofc_hands_settled_total",
    "Hands settled, by ruleset preset and source (rules: the settle RPCs; table: live tables).",
    ("ruleset", "source"),
)
FOULS = Counter(
    "ofc_fouls_total",
    "Fouled boards in settled hands, by ruleset preset and source.",
    ("ruleset", "source"),
)


@functools.cache  # labels are preset names or "custom", times two sources: a handful
def settled_counters(ruleset: str, source: Literal["rules", "table"]) -> tuple[Counter, Counter]:
    """The hands-settled and fouls counters of one ruleset label and source, looked up once
    (``labels()`` takes a lock and builds a key every call)."""
    return HANDS_SETTLED.labels(ruleset, source), FOULS.labels(ruleset, source)


REQUEST_ERRORS = Counter(
    "ofc_request_errors_total",
    "Requests or batch items rejected, by ErrorInfo reason.",
    ("reason",),
)


MOVES = Counter("ofc_moves_total", "Moves accepted at live tables, by kind", ["kind"])
# Each kind's child, looked up once: ``labels()`` takes a lock and builds a key every call.
MOVES_BY_KIND = {kind: MOVES.labels(kind) for kind in ("place", "set_fantasyland", "timeout")}

# Cluster-wide, not per replica: every replica reports the size of the shared deadline index,
# so dashboards aggregate it with max(), never sum(); the workers of one `ofc serve --workers N`
# likewise (the multiprocess mode: the maximum over the live workers).
ACTIVE_TABLES = Gauge(
    "ofc_active_tables",
    "Tables waiting for a move (a pending turn deadline; a hand just ended stays counted "
    "until its last deadline passes), across all replicas: use max().",
    multiprocess_mode="livemax",
)
SETTLEMENT_LAG = Histogram(
    "ofc_settlement_lag_seconds",
    "Seconds from a hand's settlement to its acknowledgement on the settlement feed.",
    buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0),
)
