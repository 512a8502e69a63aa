"""What a change costs on a real Envoy's ADS stream: messages per change type.

One Envoy gateway routes to ``reviews`` (subset ``stable``) through pilothouse; each
change below is applied and the stream recorded (:mod:`tests.e2e.harness.stream_log`)
until Envoy is in sync again, then traffic is checked:

- a cluster added (a DestinationRule subset) or changed (a connection-pool setting):
  one CDS response and one EDS response carrying the assignments of exactly the
  clusters Envoy warms (the added or changed ones), and nothing answers Envoy's
  warming re-request (SotW: the EDS ACK with its grown names; delta: its subscribe);
- a cluster removed: one CDS response (SotW EDS names simply shrink);
- endpoints moved (a WorkloadEntry's port): one EDS response, nothing else.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import pytest

from pilothouse.protocol.type_urls import CDS, EDS
from tests.e2e.harness.client import UPSTREAM_HEADER, fetch
from tests.e2e.harness.control_plane import ControlPlane
from tests.e2e.harness.envoy import EnvoyProcess
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.ports import LOOPBACK, free_port
from tests.e2e.harness.stream_log import StreamLog
from tests.e2e.harness.upstreams import Upstream, UpstreamPool
from tests.e2e.traffic_mesh import TRANSPORTS, fqdn, gateway, render, start_gateway

NAMESPACE = "cdsmsgs"
HOST = fqdn("reviews", NAMESPACE)
STABLE = f"outbound|9080|stable|{HOST}"
CANARY = f"outbound|9080|canary|{HOST}"
SETTLE = 0.5
"""How long the stream is watched after Envoy is in sync, for a late extra message."""


def mesh(port: int) -> str:
    return render(
        {
            "apiVersion": "networking.istio.io/v1",
            "kind": "ServiceEntry",
            "metadata": {"name": "reviews", "namespace": NAMESPACE},
            "spec": {
                "hosts": [HOST],
                "location": "MESH_INTERNAL",
                "resolution": "STATIC",
                "ports": [{"number": 9080, "name": "http", "protocol": "HTTP"}],
                "workloadSelector": {"labels": {"app": "reviews"}},
            },
        },
        gateway(NAMESPACE, port),
        {
            "apiVersion": "networking.istio.io/v1",
            "kind": "VirtualService",
            "metadata": {"name": "reviews", "namespace": NAMESPACE},
            "spec": {
                "hosts": ["*"],
                "gateways": ["gateway"],
                "http": [{"route": [{"destination": {"host": HOST, "subset": "stable"}}]}],
            },
        },
    )


def rule(*, canary: bool = False, max_connections: int | None = None) -> str:
    subsets = [{"name": "stable", "labels": {"app": "reviews"}}]
    if canary:
        subsets.append({"name": "canary", "labels": {"app": "reviews"}})
    spec: dict[str, object] = {"host": HOST, "subsets": subsets}
    if max_connections is not None:
        spec["trafficPolicy"] = {"connectionPool": {"tcp": {"maxConnections": max_connections}}}
    return render(
        {
            "apiVersion": "networking.istio.io/v1",
            "kind": "DestinationRule",
            "metadata": {"name": "reviews", "namespace": NAMESPACE},
            "spec": spec,
        }
    )


def workload(upstream: Upstream) -> str:
    return render(
        {
            "apiVersion": "networking.istio.io/v1",
            "kind": "WorkloadEntry",
            "metadata": {"name": "reviews-1", "namespace": NAMESPACE},
            "spec": {
                "address": upstream.host,
                "ports": {"http": upstream.port},
                "labels": {"app": "reviews"},
            },
        }
    )


@dataclass
class Gateway:
    plane: ControlPlane
    envoy: EnvoyProcess
    port: int
    log: StreamLog


@pytest.fixture(params=TRANSPORTS, ids=lambda t: str(t.value))
async def gateway_stream(
    request: pytest.FixtureRequest, envoy_factory: EnvoyFleet, upstream_factory: UpstreamPool
) -> AsyncIterator[tuple[Gateway, Upstream, Upstream]]:
    first = await upstream_factory("reviews-a")
    second = await upstream_factory("reviews-b")
    port = free_port()
    plane = ControlPlane()
    plane.apply_yaml(mesh(port) + "---\n" + rule() + "---\n" + workload(first))
    await plane.start()
    try:
        envoy = await start_gateway(envoy_factory, plane, NAMESPACE, port, request.param)
        log = StreamLog.attach(plane.only_connection())
        await until_synced(plane)
        yield Gateway(plane, envoy, port, log), first, second
    finally:
        await plane.stop()


async def eventually(check: Callable[[], Awaitable[bool] | bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


async def until_synced(plane: ControlPlane) -> None:
    """Every type the proxy watches has its latest response ACKed, and nothing is queued."""
    connection = plane.only_connection()

    def synced() -> bool:
        session = connection.session
        return (
            connection.outbound.empty()
            and not connection.settling
            and all(str(w.sync_status).endswith("SYNCED") for w in session.watches.values())
        )

    await eventually(synced)
    await asyncio.sleep(SETTLE)
    await eventually(synced)


async def warm(envoy: EnvoyProcess) -> None:
    await eventually(lambda: _no_warming(envoy))


async def _no_warming(envoy: EnvoyProcess) -> bool:
    return await envoy.stat("cluster_manager.warming_clusters") == 0


async def serves(gw: Gateway, upstream: Upstream) -> None:
    """Traffic through the gateway reaches ``upstream``."""

    async def reached() -> bool:
        try:
            response = await fetch(LOOPBACK, gw.port, "/", timeout=2)
        except (OSError, TimeoutError, EOFError):
            return False
        return response.status == 200 and response.header(UPSTREAM_HEADER) == upstream.name

    await eventually(reached)


async def change(gw: Gateway, text: str) -> int:
    mark = gw.log.mark()
    gw.plane.apply_yaml(text)
    await eventually(lambda: bool(gw.log.responses(mark)))
    await until_synced(gw.plane)
    await warm(gw.envoy)
    return mark


def counts(gw: Gateway, mark: int) -> dict[str, int]:
    """Responses per type since ``mark``."""
    found: dict[str, int] = {}
    for message in gw.log.responses(mark):
        found[message.kind] = found.get(message.kind, 0) + 1
    return found


def assignments(gw: Gateway, mark: int) -> list[set[str]]:
    """The cluster names each EDS response since ``mark`` carried."""
    return [set(m.names) for m in gw.log.responses(mark, EDS)]


async def test_each_change_costs_the_messages_envoy_needs(
    gateway_stream: tuple[Gateway, Upstream, Upstream],
) -> None:
    gw, first, second = gateway_stream
    await serves(gw, first)
    cluster = f"outbound|9080||{HOST}"

    # a cluster added: its assignment right behind CDS; Envoy's request for it is an ACK
    mark = await change(gw, rule(canary=True))
    steps = gw.log.describe(mark)
    assert counts(gw, mark) == {"CDS": 1, "EDS": 1}, steps
    assert assignments(gw, mark) == [{CANARY}], steps
    assert [m.kind for m in gw.log.responses(mark)] == ["CDS", "EDS"], steps
    await serves(gw, first)

    # clusters changed (connection pool): they warm again on one fresh assignment each
    mark = await change(gw, rule(canary=True, max_connections=7))
    steps = gw.log.describe(mark)
    assert counts(gw, mark) == {"CDS": 1, "EDS": 1}, steps
    assert assignments(gw, mark) == [{CANARY, STABLE, cluster}], steps
    await serves(gw, first)

    # a cluster removed: CDS alone (its assignment goes with it)
    mark = await change(gw, rule(canary=False, max_connections=7))
    steps = gw.log.describe(mark)
    assert counts(gw, mark) == {"CDS": 1}, steps
    await serves(gw, first)

    # endpoints moved: EDS alone, for the clusters whose endpoints moved
    mark = await change(gw, workload(second))
    steps = gw.log.describe(mark)
    assert counts(gw, mark) == {"EDS": 1}, steps
    assert assignments(gw, mark) == [{STABLE, cluster}], steps
    await serves(gw, second)

    clusters = {s["name"] for s in (await gw.envoy.clusters_json())["cluster_statuses"]}
    assert CANARY not in clusters and STABLE in clusters
    assert await gw.envoy.stat("cluster_manager.cds.update_rejected") == 0
    assert all(not m.error for m in gw.log.entries), gw.log.describe()
    assert CDS in {m.type_url for m in gw.log.entries}
