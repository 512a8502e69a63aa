"""Fixtures for the simulated-proxy tests: a fake ADS server (standing in for pilothouse's
own, which lands separately) on 127.0.0.1, and quick reconnect settings."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from pilothouse.loadtest import Backoff

from .fake_ads import FakeAdsServer
from .mesh_fixtures import sidecar_mesh

FAST_BACKOFF = Backoff.envoy(initial=0.05, maximum=0.2)
FAST_CHANNEL = (
    ("grpc.initial_reconnect_backoff_ms", 50),
    ("grpc.min_reconnect_backoff_ms", 50),
    ("grpc.max_reconnect_backoff_ms", 200),
)


@pytest.fixture
async def ads_server() -> AsyncIterator[FakeAdsServer]:
    server = FakeAdsServer(sidecar_mesh())
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def eventually(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll until ``condition()`` holds (the server records requests a moment after they leave)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise TimeoutError("condition not met")
        await asyncio.sleep(0.005)
