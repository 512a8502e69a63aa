"""Telemetry in generated listeners: the client side on outbound listeners (HTTP
connection managers and TCP proxies), the server side on the workload's inbound
listener, each with its access logs (file logger, CEL filter) and tracing (zipkin
through the provider's cluster); a proxy no Telemetry selects keeps its listeners as
they were, and an edit reaches the listeners through their cache inputs."""

from __future__ import annotations

from typing import Any

from envoy.config.listener.v3 import listener_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2, json_format

from pilothouse.config.meshconfig import load_mesh_config
from pilothouse.protocol.type_urls import LDS
from pilothouse.push.proxy import ProxyIdentity, parse_node
from tests.unit.xds_server.generation_server import GenerationServer

MESH = """\
extensionProviders:
- name: file-log
  envoyFileAccessLog: {path: /tmp/mesh.log, logFormat: {text: "%REQ(:METHOD)% %RESPONSE_CODE%"}}
- name: json-log
  envoyFileAccessLog: {path: /tmp/mesh.json, logFormat: {labels: {code: "%RESPONSE_CODE%"}}}
- name: zipkin
  zipkin: {service: zipkin.obs.svc.cluster.local, port: 9411}
"""
CONFIG = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: web, namespace: shop}
spec:
  hosts: [web.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{name: http, number: 8080, protocol: HTTP}]
  workloadSelector: {labels: {app: web}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: web-1, namespace: shop}
spec: {address: 10.0.0.1, labels: {app: web}}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db, namespace: shop}
spec:
  hosts: [db.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: DNS
  ports: [{name: tcp, number: 5432, protocol: TCP}]
  endpoints: [{address: db.example.com}]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: zipkin, namespace: obs}
spec:
  hosts: [zipkin.obs.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: DNS
  ports: [{name: http, number: 9411, protocol: HTTP}]
  endpoints: [{address: zipkin.example.com}]
---
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  accessLogging:
  - providers: [{name: file-log}]
    filter: {expression: "response.code >= 400"}
    match: {mode: CLIENT}
  - providers: [{name: json-log}]
    match: {mode: SERVER}
  tracing:
  - providers: [{name: zipkin}]
    randomSamplingPercentage: 20
    customTags: {team: {literal: {value: shop}}}
"""
FILE_LOG = "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog"
CEL = "type.googleapis.com/envoy.extensions.access_loggers.filters.cel.v3.ExpressionFilter"
ZIPKIN = "type.googleapis.com/envoy.config.trace.v3.ZipkinConfig"


def proxy(app: str) -> ProxyIdentity:
    node = f"sidecar~10.0.0.1~{app}-1.shop~shop.svc.cluster.local"
    return parse_node(node, {"LABELS": {"app": app}, "INTERCEPTION_MODE": "REDIRECT"})


def server(config: str = CONFIG) -> GenerationServer:
    made = GenerationServer()
    made.mesh = load_mesh_config(MESH, "mesh.yaml").mesh
    made.apply(config)
    made.start()
    return made


def listeners(made: GenerationServer, who: ProxyIdentity) -> dict[str, dict[str, Any]]:
    found = {}
    for name, resource in made.resources(who)[LDS].items():
        listener = listener_pb2.Listener()
        any_pb2.Any.FromString(resource.body).Unpack(listener)
        found[name] = json_format.MessageToDict(listener)
    return found


def network_filter(listener: dict[str, Any], name: str) -> dict[str, Any]:
    for chain in listener["filterChains"]:
        for found in chain["filters"]:
            if found["name"] == name:
                return dict(found["typedConfig"])
    raise AssertionError(f"no {name}")


HCM = "envoy.filters.network.http_connection_manager"


def test_the_client_side_is_on_outbound_listeners() -> None:
    built = listeners(server(), proxy("web"))
    manager = network_filter(built["0.0.0.0_8080"], HCM)
    (log,) = manager["accessLog"]
    assert log["name"] == "envoy.access_loggers.file"
    assert log["typedConfig"] == {
        "@type": FILE_LOG,
        "path": "/tmp/mesh.log",
        "logFormat": {"textFormatSource": {"inlineString": "%REQ(:METHOD)% %RESPONSE_CODE%\n"}},
    }
    assert log["filter"]["extensionFilter"] == {
        "name": "envoy.access_loggers.extension_filters.cel",
        "typedConfig": {"@type": CEL, "expression": "response.code >= 400"},
    }
    tracing = manager["tracing"]
    assert tracing["clientSampling"] == {"value": 100.0}
    assert tracing["randomSampling"] == {"value": 20.0}
    assert tracing["overallSampling"] == {"value": 100.0}
    assert tracing["customTags"] == [{"tag": "team", "literal": {"value": "shop"}}]
    assert tracing["provider"]["name"] == "envoy.tracers.zipkin"
    zipkin = tracing["provider"]["typedConfig"]
    assert zipkin["@type"] == ZIPKIN and zipkin["collectorEndpointVersion"] == "HTTP_JSON"
    assert zipkin["collectorService"]["httpUri"] == {
        "uri": "http://zipkin.obs.svc.cluster.local/api/v2/spans",
        "cluster": "outbound|9411||zipkin.obs.svc.cluster.local",
        "timeout": "5s",
    }
    assert zipkin["traceId128bit"] is True and zipkin["sharedSpanContext"] is False
    tcp = network_filter(built["0.0.0.0_5432"], "envoy.filters.network.tcp_proxy")
    assert [entry["typedConfig"]["path"] for entry in tcp["accessLog"]] == ["/tmp/mesh.log"]


def test_the_server_side_is_on_the_inbound_listener() -> None:
    built = listeners(server(), proxy("web"))
    inbound = [name for name in built if name.startswith("inbound|8080")]
    assert inbound
    manager = network_filter(built[inbound[0]], HCM)
    (log,) = manager["accessLog"]
    assert log["typedConfig"]["path"] == "/tmp/mesh.json"
    assert log["typedConfig"]["logFormat"] == {"jsonFormat": {"code": "%RESPONSE_CODE%"}}
    assert "filter" not in log
    assert manager["tracing"]["provider"]["name"] == "envoy.tracers.zipkin"


def test_a_proxy_no_telemetry_selects_keeps_its_listeners() -> None:
    with_telemetry = server()
    without = server(CONFIG.split("---\napiVersion: telemetry.istio.io")[0])
    other = proxy("shelf")
    assert with_telemetry.generate(other)[LDS] == without.generate(other)[LDS]
    manager = network_filter(listeners(with_telemetry, other)["0.0.0.0_8080"], HCM)
    assert "accessLog" not in manager and "tracing" not in manager


def test_an_edit_reaches_the_listeners_and_a_revert_gives_the_same_bytes() -> None:
    made = server()
    web = proxy("web")
    before = made.generate(web)[LDS]
    keys = made.apply(
        CONFIG.replace("randomSamplingPercentage: 20", "randomSamplingPercentage: 70")
    )
    made.push(keys)
    after = listeners(made, web)
    assert network_filter(after["0.0.0.0_8080"], HCM)["tracing"]["randomSampling"] == {
        "value": 70.0
    }
    keys = made.apply(CONFIG)
    made.push(keys)
    assert made.generate(web)[LDS] == before


GATEWAY_CONFIG = """\
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: edge, namespace: shop}
spec:
  selector: {istio: ingressgateway}
  servers: [{port: {number: 8080, name: http, protocol: HTTP}, hosts: ["*"]}]
---
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {name: mesh, namespace: istio-system}
spec:
  accessLogging: [{providers: [{name: file-log}], match: {mode: CLIENT}}]
  tracing: [{providers: [{name: zipkin}]}]
"""


def test_a_gateway_takes_the_client_side_and_spawns_an_upstream_span() -> None:
    made = server(CONFIG.split("---\napiVersion: telemetry.istio.io")[0] + "---\n" + GATEWAY_CONFIG)
    node = "router~10.0.0.9~edge-1.istio-system~istio-system.svc.cluster.local"
    edge = parse_node(node, {"LABELS": {"istio": "ingressgateway"}})
    built = listeners(made, edge)
    (name,) = built
    manager = network_filter(built[name], HCM)
    assert [log["typedConfig"]["path"] for log in manager["accessLog"]] == ["/tmp/mesh.log"]
    assert manager["tracing"]["spawnUpstreamSpan"] is True
    assert manager["tracing"]["randomSampling"] == {"value": 1.0}  # the 1 % default
