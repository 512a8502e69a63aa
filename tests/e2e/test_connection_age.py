"""Maximum connection age against real ``pilothouse serve`` processes: a stream is ended
about the age (gRPC's ±10 % jitter) plus the grace after it opened, its proxy reconnects,
and proxies that all connected to one replica spread over a second one added later.

Both tests shorten the age to a second through the environment, as an operator would,
and share two replicas started side by side for the module: the first test uses only the
first; in the second, no proxy knows of the second replica until it is added to the
Service's endpoints (starting it only then would cost the test its start-up).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
import pytest_asyncio

from pilothouse.loadtest.fleet import ProxyFleet, fleet_identities
from pilothouse.loadtest.proxy import SimulatedProxy
from pilothouse.protocol.type_urls import CDS
from tests.e2e.harness.serve_process import ServeProcess
from tests.integration.test_xds_server import open_stream, request

ROOT = Path(__file__).resolve().parents[2]
AGE = 1.0
GRACE = 0.3
AGED = {
    "PILOTHOUSE_XDS_MAX_CONNECTION_AGE": str(AGE),
    "PILOTHOUSE_XDS_MAX_CONNECTION_AGE_GRACE": str(GRACE),
    "PILOTHOUSE_DRAIN_SECONDS": "1",
}
PROXIES = 200
NODE = "sidecar~10.0.0.1~app-1.bookinfo~bookinfo.svc.cluster.local"

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def replicas(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[list[ServeProcess]]:
    """Two replicas of the example mesh with the short connection age, ready."""
    root = tmp_path_factory.mktemp("connection-age")
    mesh = root / "mesh"
    shutil.copytree(ROOT / "examples", mesh)
    async with serving(mesh, root / "first.log", root / "second.log") as processes:
        yield processes


@contextlib.asynccontextmanager
async def serving(mesh: Path, *logs: Path) -> AsyncIterator[list[ServeProcess]]:
    """One ``pilothouse serve`` per log, on ports 0 with the short connection age, started
    side by side and all ready."""
    processes = [
        ServeProcess(
            [mesh], xds_port=0, admin_port=0, log_path=log, log_level="warn,serve:info",
            environment=AGED,
        ).start()
        for log in logs
    ]  # fmt: skip
    try:
        await asyncio.gather(*(process.wait_listening() for process in processes))
        await asyncio.gather(*(process.wait_ready() for process in processes))
        yield processes
    finally:
        await asyncio.gather(*(process.stop() for process in processes))


def address(process: ServeProcess) -> str:
    return f"127.0.0.1:{process.xds_port}"


def placed(fleet: ProxyFleet) -> Counter[str]:
    """Every proxy by the server of its current stream, or of its last one while it is
    between streams."""
    return Counter(proxy.server for proxy in fleet.proxies)


async def most_connected(fleet: ProxyFleet, within: float = 10.0) -> Counter[str]:
    """The connected proxies by server at the first instant at least half the fleet is."""
    deadline = time.monotonic() + within
    while sum((connected := fleet.by_server()).values()) < len(fleet.proxies) / 2:
        assert time.monotonic() < deadline, f"most proxies stayed between streams: {connected}"
        await asyncio.sleep(0.01)
    return connected


async def test_a_stream_ends_after_about_the_age_and_its_proxy_comes_back(
    replicas: list[ServeProcess],
) -> None:
    server = replicas[0]

    async def raw_stream() -> tuple[grpc.aio.AioRpcError, float]:
        """A stream of this test's own: the error that ended it, and how long it lasted
        from its first response."""
        channel, call = await open_stream(server.xds_port)
        try:
            await call.write(request(CDS, NODE))
            await asyncio.wait_for(call.read(), 10)
            opened = time.monotonic()
            with pytest.raises(grpc.aio.AioRpcError) as ended:
                await asyncio.wait_for(call.read(), 3 * AGE + GRACE)
            return ended.value, time.monotonic() - opened
        finally:
            await channel.close()

    async def simulated_proxy() -> None:
        """A proxy with Envoy's backoff, through three streams."""
        identity = fleet_identities(1, namespaces=("bookinfo",))[0]
        async with SimulatedProxy(identity, target=address(server)) as proxy:
            await proxy.wait_for(SimulatedProxy.settled, 10)
            await proxy.wait_for(lambda p: p.streams_opened >= 3, 4 * (AGE + GRACE) + 2)
            # every stream had delivered its config: each reconnect waited only the first step
            assert proxy.retries and all(failures == 1 for failures, _ in proxy.retries)
            assert all(error.startswith("UNAVAILABLE") for error in proxy.stream_errors)
            await proxy.wait_for(lambda p: p.connected and p.settled(), 10)

    # the two side by side: each on its own connection, so each ages on its own
    (ended, lasted), _ = await asyncio.gather(raw_stream(), simulated_proxy())
    assert ended.code() is grpc.StatusCode.UNAVAILABLE
    assert "max connection age" in (ended.details() or "")
    # GOAWAY after the age less or more 10 % (gRPC's jitter) from when the connection
    # opened, the stream cut when the grace has run out; the bounds allow 0.2 s from
    # connecting to the first response and 0.5 s for a busy machine
    assert 0.9 * AGE + GRACE - 0.2 <= lasted <= 1.1 * AGE + GRACE + 0.5, lasted


async def test_connection_age_spreads_proxies_over_a_replica_added_later(
    replicas: list[ServeProcess],
) -> None:
    first, second = replicas
    fleet = ProxyFleet(
        [address(first)],
        fleet_identities(PROXIES, namespaces=("bookinfo",)),
        streams_per_channel=10,
        seed=17,
    )
    try:
        await fleet.start()
        assert (await fleet.wait_converged(timeout=30)).converged
        assert placed(fleet) == {address(first): PROXIES}

        fleet.set_servers([address(first), address(second)])  # the Service's endpoints
        opened = sum(proxy.streams_opened for proxy in fleet.proxies)
        # rounds of ageing: every proxy reconnects, each time to either, until two
        # rounds' worth of new streams have come (three rounds' time on a quiet machine;
        # how long a stream lives is the first test's to check, the deadline bounds a
        # failure only)
        deadline = time.monotonic() + 30
        while sum(p.streams_opened for p in fleet.proxies) - opened < 2 * PROXIES:
            assert time.monotonic() < deadline, "the proxies stopped reconnecting"
            await asyncio.sleep(0.1)
        for _ in range(5):
            # each connect is a fair coin: 200 proxies put 100 ± 7 on each replica,
            # and a fair share is at least 30 % (over five deviations from even)
            after = placed(fleet)
            assert min(after[address(first)], after[address(second)]) >= 0.3 * PROXIES
            # the same among those connected at one instant (the rest are between an
            # aged-out stream and the next one's first response): a look waits for an
            # instant with most of the fleet connected, as the streams of a round age
            # out close together and a loaded machine is slow to bring them back
            connected = await most_connected(fleet)
            assert min(connected.values()) >= 0.3 * sum(connected.values()), connected
            assert set(connected) == {address(first), address(second)}, connected
            await asyncio.sleep(AGE / 4)  # a quarter of a round between looks
        report = await fleet.wait_converged(timeout=30)
        assert report.converged
        assert not any(proxy.counters(t).nacks for proxy in fleet.proxies for t in (CDS,))
        assert first.running() and second.running()
    finally:
        await fleet.close()
