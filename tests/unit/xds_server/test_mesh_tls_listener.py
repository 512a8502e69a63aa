"""A sidecar's outbound listener for a TLS or HTTPS port follows the mesh VirtualService
``tls`` routes by SNI, as istiod's: a chain per route with its ``sniHosts`` (the
VirtualService's hosts when none), weighted clusters for several destinations, a name
claimed once, matches with ``destinationSubnets`` and routes bound to a gateway only left
out, and the service's own cluster for connections no name matches."""

from __future__ import annotations

from typing import Any

from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.proxy import parse_node
from pilothouse.sources.memory import MemoryStore
from tests.golden.xds_snapshot import snapshot_store
from tests.unit.kinds.gateway_api.test_l4_routes import proxies_by_sni


def entry(name: str, port: int, protocol: str) -> str:
    return f"""\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: {name}, namespace: web}}
spec:
  hosts: [{name}.web.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{{number: {port}, name: tls, protocol: {protocol}}}]
  endpoints: [{{address: 10.1.0.{len(name)}}}]
---
"""


MESH = (
    entry("shop", 443, "HTTPS")
    + entry("blue", 8443, "TLS")
    + entry("green", 9443, "TLS")
    + entry("vault", 7443, "TLS")
    + """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: shop, namespace: web, creationTimestamp: "2024-01-01T00:00:00Z"}
spec:
  hosts: [shop.web.svc.cluster.local, "*.shop.test"]
  tls:
  - match: [{sniHosts: [a.shop.test, b.shop.test]}]
    route:
    - {destination: {host: blue.web.svc.cluster.local, port: {number: 8443}}, weight: 80}
    - {destination: {host: green.web.svc.cluster.local, port: {number: 9443}}, weight: 20}
  - match: [{sniHosts: [b.shop.test, c.shop.test]}]
    route: [{destination: {host: green.web.svc.cluster.local, port: {number: 9443}}}]
  - match: [{sniHosts: [d.shop.test], destinationSubnets: [10.9.0.0/16]}]
    route: [{destination: {host: green.web.svc.cluster.local, port: {number: 9443}}}]
  - match: [{sniHosts: [e.shop.test], gateways: [web/edge]}]
    route: [{destination: {host: green.web.svc.cluster.local, port: {number: 9443}}}]
  - match: [{sniHosts: ["*.shop.test"]}]
    route: [{destination: {host: blue.web.svc.cluster.local, port: {number: 8443}}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: vault, namespace: web}
spec:
  hosts: [vault.web.svc.cluster.local]
  tls:
  - match: [{port: 7443, sniHosts: [vault.web.svc.cluster.local]}]
    route: [{destination: {host: green.web.svc.cluster.local, port: {number: 9443}}}]
"""
)


async def listeners() -> dict[str, Any]:
    store = MemoryStore(name="test")
    for config in Loader(SCHEMAS).load_strict(MESH, "mesh.yaml"):
        store.apply(config)
    store.mark_synced()
    client = parse_node("sidecar~10.0.0.9~app-1.web~web.svc.cluster.local")
    (snapshot,) = (await snapshot_store(store, {"client": client})).values()
    found: dict[str, Any] = snapshot.json("lds")
    return found


async def test_tls_routes_make_sni_chains_on_a_sidecar_s_listener() -> None:
    found = await listeners()
    blue = "outbound|8443||blue.web.svc.cluster.local"
    green = "outbound|9443||green.web.svc.cluster.local"
    shop = found["0.0.0.0_443"]
    assert proxies_by_sni(shop) == {
        ("a.shop.test", "b.shop.test"): [(blue, 80), (green, 20)],
        ("c.shop.test",): green,  # b.shop.test went to the first route
        ("*.shop.test",): blue,
        (): "outbound|443||shop.web.svc.cluster.local",  # no name matched: the service
    }
    weighted = shop["filterChains"][0]["filters"][0]["typedConfig"]
    assert weighted["statPrefix"] == "shop.web"
    assert [f["name"] for f in shop["listenerFilters"]] == ["envoy.filters.listener.tls_inspector"]
    # a match naming the port
    assert proxies_by_sni(found["0.0.0.0_7443"]) == {
        ("vault.web.svc.cluster.local",): green,
        (): "outbound|7443||vault.web.svc.cluster.local",
    }
    # a TLS port no VirtualService routes keeps one chain to its own cluster
    assert proxies_by_sni(found["0.0.0.0_9443"]) == {(): green}
    assert "listenerFilters" not in found["0.0.0.0_9443"]
