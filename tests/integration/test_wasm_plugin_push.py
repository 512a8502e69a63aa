"""A WasmPlugin change pushes the proxies it selects, listeners only.

The server is pilothouse's real DiscoveryServer over gRPC; the proxies are the loadtest
package's simulated Envoys in one namespace, SotW ones labelled ``app: cart`` and delta
ones ``app: till``. A plugin selecting ``app: cart`` (its module a local file) must reach
the cart proxies as new listeners, and push no cluster, endpoint or route to anyone, and
nothing at all to the till proxies; deleting it does the same again.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pilothouse.loadtest.fleet import ProxyFleet, fleet_identities
from pilothouse.loadtest.proxy import SimulatedProxy
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from tests.e2e.harness.control_plane import ControlPlane
from tests.integration.push_settled import quiet

MODULE = b"\0asm\x01\0\0\0"
MESH = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: httpbin, namespace: shop}
spec:
  hosts: [httpbin.shop.svc.cluster.local]
  resolution: STATIC
  ports: [{number: 8000, name: http, protocol: HTTP}]
  endpoints: [{address: 10.0.0.7}]
"""


def plugin(path: Path) -> str:
    return f"""\
apiVersion: extensions.istio.io/v1alpha1
kind: WasmPlugin
metadata: {{name: add-header, namespace: shop}}
spec:
  selector: {{matchLabels: {{app: cart}}}}
  url: file://{path}
  sha256: {hashlib.sha256(MODULE).hexdigest()}
"""


@pytest.fixture
async def plane() -> AsyncIterator[tuple[ControlPlane, list[SimulatedProxy], list[SimulatedProxy]]]:
    control_plane = ControlPlane()
    control_plane.apply_yaml(MESH)
    await control_plane.start()
    target = f"127.0.0.1:{control_plane.port}"
    cart = ProxyFleet(target, fleet_identities(3, namespaces=("shop",), app="cart"))
    till = ProxyFleet(
        target, fleet_identities(3, namespaces=("shop",), app="till", start=3), delta=True
    )
    try:
        for group in (cart, till):
            await group.start()
            report = await group.wait_converged(timeout=30)
            assert report.converged, report.unconverged[:5]
        yield control_plane, cart.proxies, till.proxies
    finally:
        await cart.close()
        await till.close()
        await control_plane.stop()


def responses(proxies: list[SimulatedProxy]) -> dict[str, list[int]]:
    return {p.node_id: [p.counters(t).responses for t in (CDS, EDS, LDS, RDS)] for p in proxies}


async def until_listeners_pushed(
    proxies: list[SimulatedProxy], before: dict[str, list[int]]
) -> None:
    deadline = time.monotonic() + 15
    while any(p.counters(LDS).responses == before[p.node_id][2] for p in proxies):
        assert time.monotonic() < deadline, "the selected proxies got no listeners"
        await asyncio.sleep(0.05)


async def test_a_plugin_pushes_the_listeners_of_the_proxies_it_selects(
    plane: tuple[ControlPlane, list[SimulatedProxy], list[SimulatedProxy]], tmp_path: Path
) -> None:
    control_plane, cart, till = plane
    path = tmp_path / "m.wasm"
    path.write_bytes(MODULE)
    for change in ("apply", "delete"):
        before = responses(cart + till)
        if change == "apply":
            control_plane.apply_yaml(plugin(path))
        else:
            control_plane.delete("WasmPlugin", "shop", "add-header")
        await until_listeners_pushed(cart, before)
        await quiet(control_plane)  # any other push the change caused has landed
        after = responses(cart + till)
        for proxy in cart:
            was, now = before[proxy.node_id], after[proxy.node_id]
            assert now[2] > was[2], change
            assert (now[0], now[1], now[3]) == (was[0], was[1], was[3]), change
        for proxy in till:
            assert after[proxy.node_id] == before[proxy.node_id], change
