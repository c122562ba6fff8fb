"""An in-process server on a free port for the end-to-end tests (client, command line)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from ofc_client import OfcClient
from ofc_service.server.background import BackgroundServer
from ofc_service.server.config import ServerConfig


@pytest.fixture(scope="package")
def server() -> Iterator[BackgroundServer]:
    config = ServerConfig(listen="127.0.0.1:0", metrics_listen="", http_listen="", grace_seconds=1)
    with BackgroundServer(config) as running:
        yield running


@pytest.fixture
def client(server: BackgroundServer) -> Iterator[OfcClient]:
    with OfcClient(server.address) as c:
        yield c
