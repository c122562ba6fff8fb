"""``python -m tests.e2e.stuck_store LISTEN GRACE``: ``ofc serve`` (in memory) whose table
store never finishes closing and swallows the cancellation, as a Redis client waiting on a
node that never answers can. test_shutdown_bounded.py stops it with SIGTERM."""

from __future__ import annotations

import asyncio
import sys

from ofc_service.server import main as server_main
from ofc_service.server.config import ServerConfig
from ofc_service.store import TableStore
from ofc_service.store.memory import MemoryTableStore


class StuckStore(MemoryTableStore):
    async def close(self) -> None:
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                continue  # swallowed: only a step given up on lets the stop go on


def open_stuck_store(redis_url: str | None, **_: object) -> TableStore:
    return StuckStore()


def main() -> int:
    listen, grace = sys.argv[1], float(sys.argv[2])
    server_main.open_store = open_stuck_store  # type: ignore[attr-defined]
    config = ServerConfig(listen=listen, metrics_listen="", http_listen="", grace_seconds=grace)
    return server_main.serve(config)


if __name__ == "__main__":
    sys.exit(main())
