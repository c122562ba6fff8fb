"""``ofc serve``: run the gRPC server (rules, tables, settlement feed, health, reflection,
/metrics).

Every flag can also come from its environment variable (``OFC_LISTEN``, ...); a flag wins.
gRPC is imported only when the server starts, so other commands stay fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ofc_service.server.config import ConfigError, add_arguments, config_from_args


def register(subparsers: Any) -> None:
    serve = subparsers.add_parser(
        "serve",
        help="run the gRPC server",
        description="Serve, on one gRPC port: ofcpoker.v1.RulesService (evaluation, "
        "settlement, presets, the Fantasyland solver, deck derivation, hand-history and match "
        "verification; needs no store), ofcpoker.v1.TableService (live tables: seats, hands, "
        "moves, turn deadlines, Watch streams, hand histories) and "
        "ofcpoker.v1.SettlementFeedService (every settled hand, for back offices: Subscribe "
        "and Acknowledge), with grpc.health.v1.Health and server reflection; and Prometheus "
        "metrics over HTTP. Tables and the feed live in Redis (--redis-url) or, without it, "
        "in this process's memory. SIGTERM stops it gracefully. With --workers N, N processes "
        "share the port and one metrics endpoint sums their metrics.",
    )
    add_arguments(serve)
    serve.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    try:
        config = config_from_args(args)
    except ConfigError as exc:
        print(f"error: CONFIG: {exc}", file=sys.stderr)
        return 2
    # gRPC core reads its log level once, when it loads: only its errors by default (its
    # INFO lines, e.g. every failed TLS handshake, would flood the log). They reach stderr
    # as JSON lines (server.main.serve).
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    if config.workers > 1:  # a supervisor: it imports no gRPC, its workers do
        from ofc_service.server.supervisor import supervise

        return supervise(config)
    from ofc_service.server.main import serve

    return serve(config)
