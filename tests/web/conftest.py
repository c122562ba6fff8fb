"""Fixtures of the web tests: a server with Redis tables and the URL a browser uses for it:
the server's own HTTP port (Connect, gRPC-Web, the web table at ``/``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from ofc_service.server.background import BackgroundServer
from ofc_service.server.config import ServerConfig


def web_config(redis_url: str, **changes: Any) -> ServerConfig:
    """A server with Redis tables and its HTTP port (``changes``: other settings)."""
    settings: dict[str, Any] = {"grace_seconds": 1, **changes}
    return ServerConfig(
        listen="127.0.0.1:0",
        metrics_listen="",
        http_listen="127.0.0.1:0",
        redis_url=redis_url,
        **settings,
    )


@pytest.fixture
def server(redis_url: str) -> Iterator[BackgroundServer]:
    with BackgroundServer(web_config(redis_url)) as running:
        yield running


@pytest.fixture
def web_url(server: BackgroundServer) -> str:
    """Where the browser finds the service: its HTTP port."""
    return server.http_url
