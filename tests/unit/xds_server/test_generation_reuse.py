"""Generators reuse what a push did not change, and give what a fresh build would.

A small mesh (two namespaces, a default Sidecar each, one workload entry per pod) is
generated for, then a DestinationRule is edited and a new PushContext is built from the
old one, as the discovery server does. Every resource must equal what a fresh server
(new context, empty cache) generates for the same store, while what the edit does not
concern is found in the resource cache and the edited scope rebuilds nothing it need not.
"""

from __future__ import annotations

import ipaddress

import pytest
from google.protobuf import any_pb2

from pilothouse.config.model import ConfigKey
from pilothouse.protocol.type_urls import CDS, LDS, RDS
from pilothouse.push.proxy import ProxyIdentity, parse_node
from pilothouse.push.rule_reads import hash_policy_inputs
from pilothouse.xds.builders.listener_sidecar import build_inbound_listener
from pilothouse.xds.generators.cds import encode
from pilothouse.xds.generators.inbound import InboundPort
from pilothouse.xds.generators.lds_inbound import AddressTemplate
from pilothouse.xds.generators.routing import label_key
from tests.unit.xds_server.generation_server import GenerationServer

NAMESPACES = ("shop", "bank")


def _namespace(ns: str, *, max_connections: int = 10, hashed: bool = False) -> str:
    balancer = "loadBalancer: {consistentHash: {httpHeaderName: x-user}}" if hashed else ""
    return f"""\
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: web, namespace: {ns}}}
spec:
  hosts: [web.{ns}.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{{name: http, number: 8080, protocol: HTTP}}]
  workloadSelector: {{labels: {{app: web}}}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {{name: web-1, namespace: {ns}}}
spec: {{address: 10.{NAMESPACES.index(ns)}.0.1, labels: {{app: web, version: v1}}}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {{name: web, namespace: {ns}}}
spec:
  host: web.{ns}.svc.cluster.local
  trafficPolicy:
    connectionPool: {{tcp: {{maxConnections: {max_connections}}}}}
    {balancer}
  subsets:
  - {{name: v1, labels: {{version: v1}}}}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {{name: web, namespace: {ns}}}
spec:
  hosts: [web.{ns}.svc.cluster.local]
  http:
  - route:
    - destination: {{host: web.{ns}.svc.cluster.local, subset: v1}}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {{name: default, namespace: {ns}}}
spec:
  egress:
  - hosts: ["./*"]
"""


def _proxy(ns: str) -> ProxyIdentity:
    address = f"10.{NAMESPACES.index(ns)}.0.1"
    node = f"sidecar~{address}~web-1.{ns}~{ns}.svc.cluster.local"
    return parse_node(
        node,
        {
            "NAMESPACE": ns,
            "LABELS": {"app": "web", "version": "v1"},
            "INTERCEPTION_MODE": "REDIRECT",
        },
    )


class Server(GenerationServer):
    """Generation as the server does it, seen as ``{type: {name: version}}``."""

    def versions(self, proxy: ProxyIdentity) -> dict[str, dict[str, str]]:
        return {
            type_url: {name: r.version for name, r in made.items()}
            for type_url, made in self.resources(proxy).items()
        }


def _mesh(**changed: object) -> str:
    return "".join(
        _namespace(ns, **(changed if ns == "shop" else {}))  # type: ignore[arg-type]
        for ns in NAMESPACES
    )


def _fresh(text: str) -> Server:
    server = Server()
    server.apply(text)
    server.start()
    return server


@pytest.mark.parametrize(
    "change",
    [{"max_connections": 11}, {"hashed": True}],
    ids=["connection-pool", "consistent-hash"],
)
def test_after_an_edit_every_resource_is_what_a_fresh_server_gives(
    change: dict[str, object],
) -> None:
    server = _fresh(_mesh())
    before = {ns: server.versions(_proxy(ns)) for ns in NAMESPACES}
    server.push(server.apply(_mesh(**change)))
    after = {ns: server.versions(_proxy(ns)) for ns in NAMESPACES}
    fresh = _fresh(_mesh(**change))
    assert after == {ns: fresh.versions(_proxy(ns)) for ns in NAMESPACES}
    assert after["bank"] == before["bank"]
    assert after["shop"][CDS] != before["shop"][CDS]
    hashed = after["shop"][RDS] != before["shop"][RDS]
    assert hashed == ("hashed" in change)  # routes change only when hash policies do


def test_a_virtual_service_edit_takes_over_no_scope() -> None:
    server = _fresh(_mesh())
    assert server.context is not None
    old = server.context.scope(_proxy("bank"))
    text = _mesh().replace(
        "  - route:\n    - destination: {host: web.shop",
        "  - timeout: 5s\n    route:\n    - destination: {host: web.shop",
    )
    changed = server.apply(text)
    assert changed == [ConfigKey("VirtualService", "shop", "web")]
    server.push(changed)
    assert server.context is not None
    assert server.context.scope(_proxy("bank")) is not old


def _inbound_port(address: str, *, bind: bool, protocol: str) -> InboundPort:
    return InboundPort(8080, protocol, "127.0.0.1", 8080, bind, address)


@pytest.mark.parametrize("address", ["10.0.0.1", "10.200.30.4", "fd00::1", "2001:db8::abcd:1"])
@pytest.mark.parametrize("bind", [False, True])
@pytest.mark.parametrize("protocol", ["HTTP", "TCP"])
def test_an_address_template_gives_the_bytes_of_a_fresh_build(
    address: str, bind: bool, protocol: str
) -> None:
    def build(at: str) -> object:
        listener = build_inbound_listener(at, 8080, protocol, cluster="inbound|8080||")
        if not bind:
            listener.name = "inbound|8080||"
            listener.bind_to_port.value = False
        return listener

    template = AddressTemplate.make(len(address), build)
    assert template is not None
    made = template.resource(address, "name")
    fresh = encode(build(address), "name")
    assert made == fresh
    decoded = any_pb2.Any.FromString(made.body)
    assert ipaddress.ip_address(address)  # the patched address is a real one
    assert address.encode() in decoded.value


def test_an_address_template_refuses_a_builder_that_reads_the_address() -> None:
    def build(at: str) -> object:
        listener = build_inbound_listener("10.0.0.1", 8080, "TCP")
        listener.name = at.replace("~", "-")  # the placeholder does not reach the bytes as is
        return listener

    assert AddressTemplate.make(8, build) is None


def test_label_key_names_only_the_source_label_selectors_a_proxy_meets() -> None:
    text = _mesh().replace(
        "  - route:\n    - destination: {host: web.shop",
        "  - match: [{sourceLabels: {app: web}}, {sourceLabels: {app: db}}]\n"
        "    route:\n    - destination: {host: web.shop",
    )
    server = _fresh(text)
    assert server.context is not None
    proxy = _proxy("shop")
    selectors = server.context.virtual_services.source_selectors
    assert label_key(selectors, proxy.labels) == ((("app", "web"),),)
    plain = _fresh(_mesh()).context or server.context
    assert label_key(plain.virtual_services.source_selectors, proxy.labels) == ()


def test_hash_policy_inputs_see_only_consistent_hashing() -> None:
    plain = _fresh(_mesh())
    pooled = _fresh(_mesh(max_connections=99))
    hashed = _fresh(_mesh(hashed=True))

    def inputs(server: Server) -> object:
        assert server.context is not None
        scope = server.context.scope(_proxy("shop"))
        service = scope.by_hostname["web.shop.svc.cluster.local"]
        return hash_policy_inputs(scope.destination_rule(service))

    assert inputs(plain) is None
    assert inputs(pooled) is None
    assert isinstance(inputs(hashed), bytes)


def test_inbound_ports_follow_an_endpoint_change_within_one_context() -> None:
    """A WorkloadEntry change reaches proxies by the EDS fast path, without a new
    PushContext: the proxy's inbound cluster and listener come and go with it."""
    server = _fresh(_mesh())
    proxy = _proxy("shop")
    inbound = "inbound|8080||"
    before = server.versions(proxy)
    assert inbound in before[CDS] and inbound in before[LDS]
    workload = ConfigKey("WorkloadEntry", "shop", "web-1")
    held = server.store.get(workload)
    assert held is not None
    server.store.delete(workload)
    gone = server.versions(proxy)
    assert inbound not in gone[CDS] and inbound not in gone[LDS]
    server.store.apply(held)
    assert server.versions(proxy) == before


def _read_only(ns: str, methods: str = "[GET]") -> str:
    return f"""\
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {{name: read-only, namespace: {ns}}}
spec:
  selector: {{matchLabels: {{app: web}}}}
  action: ALLOW
  rules:
  - to:
    - operation: {{methods: {methods}}}
"""


def test_inbound_listener_templates_outlive_a_context_until_their_policies_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An inbound listener's template is keyed by everything it is built from, so a new
    PushContext after an edit that does not touch it (a DestinationRule) builds none;
    an AuthorizationPolicy edit rebuilds the templates of the workloads it selects, and
    they match what a fresh server builds."""
    made: list[int] = []
    original = AddressTemplate.make

    def counting(length: int, build: object) -> AddressTemplate | None:
        made.append(length)
        return original(length, build)  # type: ignore[arg-type]

    monkeypatch.setattr(AddressTemplate, "make", staticmethod(counting))
    policies = "".join(_read_only(ns) for ns in NAMESPACES)
    server = _fresh(_mesh() + policies)
    before = {ns: server.versions(_proxy(ns)) for ns in NAMESPACES}
    assert len(made) == 2  # one guarded template per namespace: their policies differ

    made.clear()
    server.push(server.apply(_mesh(max_connections=11) + policies))
    assert {ns: server.versions(_proxy(ns))[LDS] for ns in NAMESPACES} == {
        ns: before[ns][LDS] for ns in NAMESPACES
    }
    assert made == []

    edited = _mesh(max_connections=11) + _read_only("shop") + _read_only("bank", "[GET, HEAD]")
    server.push(server.apply(edited))
    after = {ns: server.versions(_proxy(ns)) for ns in NAMESPACES}
    assert len(made) == 1
    assert after["bank"][LDS]["inbound|8080||"] != before["bank"][LDS]["inbound|8080||"]
    assert after["shop"][LDS] == before["shop"][LDS]
    assert after == {ns: _fresh(edited).versions(_proxy(ns)) for ns in NAMESPACES}
