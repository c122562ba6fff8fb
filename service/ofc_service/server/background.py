"""A server on its own event loop in a background thread: for tests and embedding.

>>> from ofc_service.server.config import ServerConfig
>>> config = ServerConfig(listen="127.0.0.1:0", metrics_listen="", http_listen="")
>>> with BackgroundServer(config) as bg:
...     bg.port > 0
True
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from types import TracebackType

from ofc_service.server.config import ServerConfig
from ofc_service.server.main import OfcServer, create_server


class BackgroundServer:
    """``with BackgroundServer(config) as bg:`` serves on ``bg.address`` until the block ends."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="ofc-server", daemon=True
        )
        self._server: OfcServer | None = None

    @property
    def server(self) -> OfcServer:
        if self._server is None:
            raise RuntimeError("the server is not running")
        return self._server

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def http_url(self) -> str:
        """The HTTP port's base URL (Connect, gRPC-Web, the web table)."""
        if self.server.http is None:
            raise RuntimeError("the server has no HTTP port (http_listen is empty)")
        return f"http://127.0.0.1:{self.server.http.port}"

    @property
    def metrics_port(self) -> int | None:
        return self.server.metrics_port

    def start(self) -> BackgroundServer:
        self._thread.start()
        self._server = self._call(self._start())
        return self

    async def _start(self) -> OfcServer:
        server = await create_server(self.config)
        await server.start()
        return server

    def stop(self, grace: float | None = 0.5) -> None:
        if self._server is not None:
            self._call(self._server.stop(grace))
            self._server = None
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        if not self._loop.is_running():
            self._loop.close()

    def _call(self, coroutine: object) -> OfcServer:
        future: Future[OfcServer] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)  # type: ignore[arg-type]
        return future.result(timeout=30)

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
