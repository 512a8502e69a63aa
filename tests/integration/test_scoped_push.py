"""Scoped push with 500 SotW and 500 delta simulated proxies in five namespaces.

The server is pilothouse's real DiscoveryServer over gRPC; the proxies are the
loadtest package's simulated Envoys. Each change must reach exactly the proxies that
can see it, and no others: checked on the server (which connections were queued) and
on the proxies (who received a CDS or EDS response).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from pilothouse.loadtest.fleet import ProxyFleet, fleet_identities
from pilothouse.loadtest.proxy import SimulatedProxy
from pilothouse.protocol.type_urls import CDS, EDS
from tests.e2e.harness.control_plane import ControlPlane
from tests.integration.push_settled import quiet, released, released_since

NAMESPACES = ("ns-0", "ns-1", "ns-2", "ns-3", "ns-4")
PER_FLAVOUR = 500


def service(ns: str, port: int = 80, export: str = "", name: str = "svc") -> str:
    export_line = f"  exportTo: [{export}]\n" if export else ""
    return f"""\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: {name}, namespace: {ns}}}
spec:
  hosts: [{name}.{ns}.svc.cluster.local]
  resolution: STATIC
  ports: [{{number: {port}, name: http, protocol: HTTP}}]
  workloadSelector: {{labels: {{app: {name}}}}}
{export_line}---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {{name: {name}-1, namespace: {ns}}}
spec:
  address: 10.9.0.1
  labels: {{app: {name}}}
---
"""


MESH = (
    "".join(service(ns) for ns in NAMESPACES)
    + """\
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: ns-2}
spec:
  egress: [{hosts: ["./*"]}]
"""
)


@pytest.fixture
async def fleet() -> AsyncIterator[tuple[ControlPlane, list[SimulatedProxy]]]:
    plane = ControlPlane()
    plane.apply_yaml(MESH)
    await plane.start()
    target = f"127.0.0.1:{plane.port}"
    sotw = ProxyFleet(
        target, fleet_identities(PER_FLAVOUR, namespaces=NAMESPACES), streams_per_channel=100
    )
    delta = ProxyFleet(
        target,
        fleet_identities(PER_FLAVOUR, namespaces=NAMESPACES, app="d"),
        delta=True,
        streams_per_channel=100,
    )
    try:
        await sotw.start()
        await delta.start()
        for group in (sotw, delta):
            report = await group.wait_converged(timeout=60)
            assert report.converged, report.unconverged[:5]
        yield plane, [*sotw.proxies, *delta.proxies]
    finally:
        await sotw.close()
        await delta.close()
        await plane.stop()


def namespace_of(proxy: SimulatedProxy) -> str:
    return proxy.node_id.split("~")[2].split(".", 1)[1]


async def changed_exactly(
    plane: ControlPlane,
    proxies: list[SimulatedProxy],
    type_url: str,
    before: dict[str, int],
    expected: set[str],
    timeout: float = 20.0,
) -> None:
    """Wait until every proxy of ``expected`` got a new ``type_url`` response; then, once
    nothing is queued or unanswered (so anything else the change caused has landed),
    check that no other proxy did."""
    deadline = time.monotonic() + timeout
    while True:
        got = {p.node_id for p in proxies if p.counters(type_url).responses > before[p.node_id]}
        if expected <= got:
            break
        assert time.monotonic() < deadline, f"{len(expected - got)} proxies never got the push"
        await asyncio.sleep(0.05)
    await quiet(plane)
    got = {p.node_id for p in proxies if p.counters(type_url).responses > before[p.node_id]}
    assert got == expected, f"{len(got - expected)} proxies out of scope were pushed"


def counts(proxies: list[SimulatedProxy], type_url: str) -> dict[str, int]:
    return {p.node_id: p.counters(type_url).responses for p in proxies}


async def test_changes_reach_exactly_the_proxies_in_scope(
    fleet: tuple[ControlPlane, list[SimulatedProxy]],
) -> None:
    plane, proxies = fleet
    assert len(proxies) == 2 * PER_FLAVOUR
    discovery = plane.discovery
    assert discovery is not None
    by_ns = {ns: {p.node_id for p in proxies if namespace_of(p) == ns} for ns in NAMESPACES}

    await quiet(plane)
    # 1. a new service visible only to its own namespace: only ns-3's proxies see it
    before = counts(proxies, CDS)
    queued = discovery.stats.connections_queued
    plane.apply_yaml(service("ns-3", export='"."', name="private"))
    await changed_exactly(plane, proxies, CDS, before, by_ns["ns-3"])
    assert discovery.stats.connections_queued - queued == len(by_ns["ns-3"])

    await quiet(plane)
    # 2. a mesh-wide service: everyone but ns-2 (whose Sidecar imports only ./*)
    before = counts(proxies, CDS)
    queued = discovery.stats.connections_queued
    plane.apply_yaml(service("ns-0", port=82))
    expected = set().union(*(by_ns[ns] for ns in NAMESPACES if ns != "ns-2"))
    await changed_exactly(plane, proxies, CDS, before, expected)
    assert discovery.stats.connections_queued - queued == len(expected)

    await quiet(plane)
    # 3. a DestinationRule exported only to its namespace: only ns-1
    before = counts(proxies, CDS)
    queued = discovery.stats.connections_queued
    plane.apply_yaml(
        """\
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: svc, namespace: ns-1}
spec:
  host: svc.ns-1.svc.cluster.local
  exportTo: ["."]
  subsets: [{name: v1, labels: {version: v1}}]
"""
    )
    await changed_exactly(plane, proxies, CDS, before, by_ns["ns-1"])
    assert discovery.stats.connections_queued - queued == len(by_ns["ns-1"])

    await quiet(plane)
    # 4. a change nobody can see pushes nobody
    queued = discovery.stats.connections_queued
    triggers = released(plane)
    plane.apply_yaml(
        """\
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: nobody-here}
spec:
  egress: [{hosts: ["./*"]}]
"""
    )
    await released_since(plane, triggers)
    await quiet(plane)
    assert discovery.stats.connections_queued == queued

    await quiet(plane)
    # 5. an endpoint change (EDS fast path): EDS only, to the watchers of ns-4's service
    before_eds = counts(proxies, EDS)
    before_cds = counts(proxies, CDS)
    contexts = discovery.stats.context_builds
    plane.apply_yaml(
        """\
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: svc-1, namespace: ns-4}
spec:
  address: 10.9.0.2
  labels: {app: svc}
"""
    )
    watchers = {p.node_id for p in proxies if namespace_of(p) != "ns-2"}
    await changed_exactly(plane, proxies, EDS, before_eds, watchers)
    assert counts(proxies, CDS) == before_cds, "an endpoint change must not push CDS"
    assert discovery.stats.context_builds == contexts, "the EDS path builds no PushContext"
