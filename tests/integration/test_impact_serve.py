"""A change's impact, predicted by a real ``pilothouse serve`` and then really applied.

One ``serve`` process over a config directory; two sidecars hold real grpcio ADS
streams (SotW: CDS, LDS and the ``8080`` routes), ACKing everything. ``shop``'s
sidecar sees every namespace; ``other``'s has a Sidecar that sees ``./*`` only. The
promise checked: what ``POST /debug/impact`` (and ``analyze --impact``) predicts for
each proxy is exactly what that proxy then receives when the file is written to the
config directory: the same resources added, changed and removed per type, and nothing
for the proxies it does not name.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
from envoy.config.listener.v3 import listener_pb2  # type: ignore[import-untyped]
from envoy.config.route.v3 import route_pb2  # type: ignore[import-untyped]

from pilothouse.protocol.type_urls import CDS, LDS, RDS
from tests.e2e.harness.cli_in_process import run_cli_in_thread
from tests.e2e.harness.client import fetch
from tests.e2e.harness.etcd import EtcdServer
from tests.e2e.harness.ports import LOOPBACK, free_ports
from tests.e2e.harness.serve_process import ServeProcess
from tests.integration.ads_stream import AdsStream, open_ads, sotw_request

MESH = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: web, namespace: shop}
spec:
  hosts: [web.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 8080, name: http, protocol: HTTP}]
  endpoints: [{address: 10.0.0.1}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: tool, namespace: other}
spec:
  hosts: [tool.other.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 8080, name: http, protocol: HTTP}]
  endpoints: [{address: 10.0.0.3}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: other}
spec:
  egress: [{hosts: ["./*"]}]
"""
WEB_TIMEOUT = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web, namespace: shop}
spec:
  hosts: [web.shop.svc.cluster.local]
  http:
  - timeout: 3s
    route: [{destination: {host: web.shop.svc.cluster.local}}]
"""
TOOL_TIMEOUT = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: tool, namespace: other}
spec:
  hosts: [tool.other.svc.cluster.local]
  exportTo: ["."]
  http:
  - timeout: 4s
    route: [{destination: {host: tool.other.svc.cluster.local}}]
"""
SHOP = "sidecar~10.0.0.5~client-1.shop~shop.svc.cluster.local"
OTHER = "sidecar~10.0.0.6~client-1.other~other.svc.cluster.local"
MESSAGES: dict[str, Callable[[], Any]] = {
    CDS: cluster_pb2.Cluster,
    LDS: listener_pb2.Listener,
    RDS: route_pb2.RouteConfiguration,
}
SHORT = {CDS: "CDS", LDS: "LDS", RDS: "RDS"}


@dataclass
class Sidecar:
    """A SotW client that ACKs every response and keeps what it holds, per type."""

    node: str
    stream: AdsStream
    held: dict[str, dict[str, bytes]] = field(default_factory=dict)
    responses: list[tuple[str, dict[str, bytes]]] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def follow(self) -> None:
        await self.stream.send(sotw_request(CDS, self.node))
        await self.stream.send(sotw_request(LDS))
        await self.stream.send(sotw_request(RDS, resource_names=["8080"]))
        while True:
            response = await self.stream.read(timeout=60)
            made = MESSAGES[response.type_url]
            resources = {}
            for packed in response.resources:
                message = made()
                packed.Unpack(message)
                resources[message.name] = packed.SerializeToString()
            self.responses.append((response.type_url, resources))
            self.held[response.type_url] = resources
            names = ["8080"] if response.type_url == RDS else []
            await self.stream.send(
                sotw_request(
                    response.type_url,
                    version_info=response.version_info,
                    response_nonce=response.nonce,
                    resource_names=names,
                )
            )
            self.arrived.set()

    def diff_since(self, before: dict[str, dict[str, bytes]]) -> dict[str, dict[str, list[str]]]:
        """Per short type name with a difference: the names added, changed, removed."""
        found = {}
        for type_url, now in self.held.items():
            was = before.get(type_url, {})
            diff = {
                "added": sorted(set(now) - set(was)),
                "changed": sorted(n for n in now.keys() & was.keys() if now[n] != was[n]),
                "removed": sorted(set(was) - set(now)),
            }
            if any(diff.values()):
                found[SHORT[type_url]] = diff
        return found


@dataclass
class Served:
    serve: ServeProcess
    config: Path
    sidecars: dict[str, Sidecar]


async def until(condition: Callable[[], Any], what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not await condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


async def admin_json(port: int, path: str, body: bytes = b"", method: str = "GET") -> Any:
    reply = await fetch(LOOPBACK, port, path, method=method, body=body, timeout=30.0)
    return reply.status, json.loads(reply.body or b"null")


pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    tmp_path = tmp_path_factory.mktemp("impact")
    config = tmp_path / "mesh"
    config.mkdir()
    (config / "mesh.yaml").write_text(MESH)
    xds, admin = free_ports(2)
    serve = ServeProcess(
        [config], xds_port=xds, admin_port=admin, log_path=tmp_path / "serve.log",
        environment={"PILOTHOUSE_DEBOUNCE_AFTER": "0.02"},
    ).start()  # fmt: skip
    tasks: list[asyncio.Task[None]] = []
    sidecars: dict[str, Sidecar] = {}
    try:
        await serve.wait_ready()
        for node in (SHOP, OTHER):
            sidecar = sidecars[node] = Sidecar(node, await open_ads(xds))
            tasks.append(asyncio.create_task(sidecar.follow()))

        async def settled() -> bool:  # each proxy ACKed all three types, as it holds them
            for node, sidecar in sidecars.items():
                if set(sidecar.held) != {CDS, LDS, RDS}:
                    return False
                status, acked = await admin_json(admin, f"/debug/acked?proxyID={node}")
                if status != 200 or any(
                    set(acked.get(t, {})) != set(sidecar.held[t]) for t in sidecar.held
                ):
                    return False
            return True

        await until(settled, "both sidecars to ACK CDS, LDS and RDS")
        yield Served(serve, config, sidecars)
    finally:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for sidecar in sidecars.values():
            await sidecar.stream.close()
        await serve.stop()


def predicted(answer: dict[str, Any]) -> dict[str, dict[str, dict[str, list[str]]]]:
    """node id → the non-empty type diffs the answer names."""
    found: dict[str, dict[str, dict[str, list[str]]]] = {}
    for proxy in answer["proxies"]:
        found[proxy["nodeID"]] = {
            name: {k: diff[k] for k in ("added", "changed", "removed")}
            for name, diff in proxy["types"].items()
            if diff["addedCount"] or diff["changedCount"] or diff["removedCount"]
        }
    return found


async def test_the_predicted_impact_is_what_the_proxies_then_receive(served: Served) -> None:
    admin = served.serve.admin_port
    shop, other = served.sidecars[SHOP], served.sidecars[OTHER]
    counts = [len(s.responses) for s in (shop, other)]

    status, answer = await admin_json(admin, "/debug/impact", WEB_TIMEOUT.encode(), "POST")
    assert status == 200, answer
    assert answer["changed"] == ["VirtualService/shop/web"]
    assert answer["connected"] == 2 and answer["complete"]
    # the VirtualService's host is seen by shop's sidecar only: its routes change
    assert predicted(answer) == {SHOP: {"RDS": {"added": [], "changed": ["8080"], "removed": []}}}
    (entry,) = answer["proxies"]
    assert entry["types"]["RDS"]["before"] == entry["types"]["RDS"]["after"] == 1
    assert set(entry["types"]) == {"RDS"}  # clusters and a sidecar's listeners never read it

    # the CLI asks the same and prints a row per proxy pushed
    candidate = served.config.parent / "candidate.yaml"
    candidate.write_text(WEB_TIMEOUT)
    ran = await run_cli_in_thread(
        "analyze", "--impact", str(candidate), "--admin", f"{LOOPBACK}:{admin}"
    )
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0] == "1 of 2 connected proxies would be pushed, 1 with resources that change"
    assert lines[1].split() == ["PROXY", "TYPES", "ADDED", "CHANGED", "REMOVED"]
    assert lines[2].split() == ["client-1.shop", "RDS", "0", "1", "0"]

    # nothing was applied: no proxy got anything
    assert [len(s.responses) for s in (shop, other)] == counts

    # now really: the file lands in the config directory
    shop_before = {t: dict(r) for t, r in shop.held.items()}
    other_before = {t: dict(r) for t, r in other.held.items()}
    other_count = len(other.responses)
    shop.arrived.clear()
    (served.config / "web.yaml").write_text(WEB_TIMEOUT)

    async def routes_moved() -> bool:
        return shop.held[RDS] != shop_before[RDS]

    await until(routes_moved, "shop's sidecar to receive the new routes")
    assert shop.diff_since(shop_before) == predicted(answer)[SHOP]

    # a second change, seen by other's sidecar only, predicted and applied the same way;
    # its response comes after anything the first change could have sent on that stream
    status, second = await admin_json(admin, "/debug/impact", TOOL_TIMEOUT.encode(), "POST")
    assert status == 200, second
    assert set(predicted(second)) == {OTHER}
    (served.config / "tool.yaml").write_text(TOOL_TIMEOUT)

    async def other_routes_moved() -> bool:
        return other.held[RDS] != other_before[RDS]

    await until(other_routes_moved, "other's sidecar to receive the new routes")
    assert other.diff_since(other_before) == predicted(second)[OTHER]
    changed_since = [
        t for t, resources in other.responses[other_count:] if resources != other_before[t]
    ]
    assert changed_since == [RDS]  # the first change reached it with nothing new
    assert shop.diff_since(shop_before) == predicted(answer)[SHOP]  # nothing from the second


async def test_bad_candidates_are_refused_precisely_and_change_nothing(served: Served) -> None:
    admin = served.serve.admin_port
    counts = [len(s.responses) for s in served.sidecars.values()]
    broken = WEB_TIMEOUT.replace("timeout: 3s", "timeout: soon")
    status, answer = await admin_json(admin, "/debug/impact", broken.encode(), "POST")
    assert status == 400
    assert "request:" in answer["error"] and "timeout" in answer["error"]
    status, answer = await admin_json(admin, "/debug/impact", MESH.encode(), "POST")
    assert status == 200 and answer["proxies"] == [] and answer["changed"] == []
    assert "ServiceEntry/shop/web" in answer["unchanged"]
    entry = MESH.split("---")[0].replace("10.0.0.1", "10.0.0.2")
    status, answer = await admin_json(admin, "/debug/impact", entry.encode(), "POST")
    assert status == 422 and "ServiceEntry" in answer["error"]
    status, answer = await admin_json(admin, "/debug/impact", b"", "POST")
    assert status == 400
    never = "/debug/impact?timeout=0"
    status, answer = await admin_json(admin, never, WEB_TIMEOUT.encode(), "POST")
    assert status == 400
    status, _ = await admin_json(admin, "/debug/impact")
    assert status == 405
    assert [len(s.responses) for s in served.sidecars.values()] == counts


async def test_apply_dry_run_prints_the_impact_after_its_lines(
    served: Served, module_etcd: EtcdServer, tmp_path: Path
) -> None:
    """``apply --dry-run --admin``: kubectl's line for the store, then the server's table;
    ``-o json`` prints the answer alone. (The store is an empty etcd; the server reads its
    directory: the impact is the server's, of the objects apply would write.)"""
    admin = f"{LOOPBACK}:{served.serve.admin_port}"
    edit = tmp_path / "web.yaml"
    edit.write_text(WEB_TIMEOUT.replace("timeout: 3s", "timeout: 7s"))
    store = module_etcd.address("/impact")
    ran = await run_cli_in_thread(
        "apply", "-f", str(edit), "--dry-run=server", "--store", store, "--admin", admin
    )
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0] == "virtualservice.networking.istio.io/web created (server dry run)"
    assert lines[1].startswith("1 of 2 connected proxies would be pushed, 1 with")
    assert lines[3].split() == ["client-1.shop", "RDS", "0", "1", "0"]
    ran = await run_cli_in_thread(
        "apply", "-f", str(edit), "--dry-run", "--store", store, "--admin", admin, "-o", "json"
    )
    assert ran.returncode == 0, ran.stderr
    answer = json.loads(ran.stdout)
    assert predicted(answer) == {SHOP: {"RDS": {"added": [], "changed": ["8080"], "removed": []}}}
    assert answer["proxies"][0]["source"] == f"http://{admin}"
    ran = await run_cli_in_thread("apply", "-f", str(edit), "--store", store, "--admin", admin)
    assert ran.returncode == 1 and "add --dry-run" in ran.stderr
    assert await module_etcd.etcdctl("get", "", "--prefix", "--keys-only") == ""
