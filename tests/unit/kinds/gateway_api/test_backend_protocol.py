"""A backendRef Service port's ``appProtocol`` chooses the upstream protocol, as istiod's
(the Gateway API's BackendProtocolH2C and BackendProtocolWebSocket): ``kubernetes.io/h2c``
and ``grpc`` make the gateway's cluster speak HTTP/2 in clear text; ``kubernetes.io/ws``
and ``http`` leave it HTTP/1.1, where the gateway's connection manager upgrades
WebSockets. The Services come from in-memory Kubernetes feeds (no API server can run
here); the gateway's resources are what a connection would be sent."""

from __future__ import annotations

from typing import Any

from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.proxy import parse_node
from pilothouse.sources.memory import MemoryStore
from tests.golden.xds_snapshot import snapshot_store
from tests.memory_kube import MemoryCluster, service

APP_PROTOCOLS = {
    "h2c": "kubernetes.io/h2c",
    "ws": "kubernetes.io/ws",
    "plain": "http",
    "rpc": "grpc",
}
GATEWAY = """\
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: edge}
spec:
  gatewayClassName: istio
  listeners: [{name: http, port: 8080, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: edge}
spec:
  parentRefs: [{name: web}]
  rules:
"""
RULE = """\
  - matches: [{{path: {{type: PathPrefix, value: /{name}}}}}]
    backendRefs: [{{name: {name}, port: 80}}]
"""
HTTP2 = {"explicitHttpConfig": {"http2ProtocolOptions": {}}}


def upstream(cluster: dict[str, Any]) -> dict[str, Any]:
    options = cluster.get("typedExtensionProtocolOptions") or {}
    found = options.get("envoy.extensions.upstreams.http.v3.HttpProtocolOptions") or {}
    return {k: v for k, v in found.items() if k != "@type"}


async def test_app_protocol_chooses_the_backend_s_upstream_protocol() -> None:
    cluster = MemoryCluster()
    for name, app in APP_PROTOCOLS.items():
        cluster.services.apply(
            service(name, "edge", [{"name": "web", "port": 80, "appProtocol": app}])
        )
    text = GATEWAY + "".join(RULE.format(name=name) for name in APP_PROTOCOLS)
    store = MemoryStore(name="test")
    for config in Loader(SCHEMAS).load_strict(text, "web.yaml"):
        store.apply(config)
    store.mark_synced()
    gateway = parse_node(
        "router~10.0.0.3~web-istio-1.edge~edge.svc.cluster.local",
        {"LABELS": {"gateway.networking.k8s.io/gateway-name": "web"}, "NAMESPACE": "edge"},
    )
    (snapshot,) = (await snapshot_store(store, {"web": gateway}, cluster.feeds())).values()
    clusters = snapshot.json("cds")
    chosen = {
        name: upstream(clusters[f"outbound|80||{name}.edge.svc.cluster.local"])
        for name in APP_PROTOCOLS
    }
    assert chosen["h2c"] == chosen["rpc"] == HTTP2
    assert HTTP2 != chosen["ws"] == chosen["plain"]
    routes = snapshot.json("rds")["http.8080"]
    (host,) = routes["virtualHosts"]
    targets = {r["match"].get("path"): r["route"].get("cluster") for r in host["routes"]}
    assert targets["/ws"] == "outbound|80||ws.edge.svc.cluster.local"
    listener = snapshot.json("lds")["0.0.0.0_8080"]
    (manager,) = [f["typedConfig"] for c in listener["filterChains"] for f in c["filters"]]
    assert {"upgradeType": "websocket"} in manager["upgradeConfigs"]
