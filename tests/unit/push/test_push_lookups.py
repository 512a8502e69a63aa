"""The lookups the push stage keeps for generators: indexes by gateway and namespace, keys
hashed once, cache groups, which namespaces a Sidecar's egress can reach."""

from __future__ import annotations

import pytest

from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config, ConfigKey
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.cache import InputKey, Resource, ResourceCache, ResourceGroup
from pilothouse.push.context import ServiceIndex
from pilothouse.push.indexes import SidecarIndex, VirtualServiceIndex
from pilothouse.push.proxy import ProxyType
from pilothouse.push.scope import EgressHost, ScopeKey, egress_namespaces
from pilothouse.registry.model import Location, Resolution, Service

ROUTES = """\
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: front, namespace: web}
spec:
  hosts: [front.example.com]
  gateways: [ingress, istio-system/shared, ingress]
  http:
  - match: [{sourceLabels: {app: a}}]
    delegate: {name: child}
  - delegate: {name: other, namespace: lib}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: back, namespace: web}
spec:
  hosts: [back.web.svc.cluster.local]
  http:
  - match: [{sourceLabels: {app: a}}, {sourceLabels: {app: b, tier: x}}]
    route: [{destination: {host: back}}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: web}
spec:
  egress: [{hosts: ["./*"]}]
"""


def _configs(kind: str) -> list[Config]:
    loaded = Loader(SCHEMAS, source="test").load_strict(ROUTES, "r.yaml")
    return [c for c in loaded if c.kind == kind]


def test_virtual_services_by_gateway_keep_key_order_and_appear_once() -> None:
    index = VirtualServiceIndex(_configs("VirtualService"), MeshSettings())
    bound = index.for_gateway(ConfigKey("Gateway", "web", "ingress"))
    assert [e.config.name for e in bound] == ["front"]
    assert [
        e.config.name for e in index.for_gateway(ConfigKey("Gateway", "istio-system", "shared"))
    ] == ["front"]
    assert index.for_gateway(ConfigKey("Gateway", "web", "none")) == ()


def test_virtual_service_entries_name_their_delegates_and_source_label_selectors() -> None:
    index = VirtualServiceIndex(_configs("VirtualService"), MeshSettings())
    front = index.by_key[ConfigKey("VirtualService", "web", "front")]
    assert front.delegates == (
        ConfigKey("VirtualService", "web", "child"),
        ConfigKey("VirtualService", "lib", "other"),
    )
    assert index.source_selectors == ((("app", "a"),), (("app", "b"), ("tier", "x")))


def test_visible_to_among_namespaces_is_the_filtered_whole() -> None:
    index = VirtualServiceIndex(_configs("VirtualService"), MeshSettings())
    assert index.visible_to("web", ["web", "other"]) == index.visible_to("web")
    assert index.visible_to("web", ["other"]) == ()


def test_sidecars_by_key() -> None:
    index = SidecarIndex(_configs("Sidecar"), MeshSettings())
    assert index.by_key[ConfigKey("Sidecar", "web", "default")].name == "default"


def _service(host: str, namespace: str) -> Service:
    return Service(
        host,
        namespace,
        (),
        Resolution.STATIC,
        Location.MESH_INTERNAL,
        ConfigKey("ServiceEntry", namespace, host),
    )


def test_services_in_namespaces_keep_the_index_order() -> None:
    services = tuple(
        _service(f"s{i}.example.com", ns) for i, ns in enumerate(["a", "b", "a", "c", "b"])
    )
    index = ServiceIndex(services)
    assert index.in_namespaces(frozenset({"b"})) == (services[1], services[4])
    assert index.in_namespaces(frozenset({"a", "b"})) == tuple(
        s for s in services if s.namespace in ("a", "b")
    )
    assert index.in_namespaces(frozenset({"zz"})) == ()
    assert index.by_namespace["c"] == (services[3],)


@pytest.mark.parametrize(
    ("hosts", "reach"),
    [
        (None, None),
        ((EgressHost("web", "*"), EgressHost("istio-system", "*")), {"web", "istio-system"}),
        ((EgressHost("web", "*"), EgressHost("*", "api.example.com")), None),
        ((EgressHost("~", "*"), EgressHost("web", "x.web.svc.cluster.local")), {"web"}),
    ],
)
def test_egress_namespaces(hosts: tuple[EgressHost, ...] | None, reach: set[str] | None) -> None:
    assert egress_namespaces(hosts) == (None if reach is None else frozenset(reach))


def test_scope_keys_hash_once_and_compare_by_content() -> None:
    gateways = tuple(ConfigKey("Gateway", "ns", f"g{i}") for i in range(200))
    one = ScopeKey(ProxyType.ROUTER, "istio-system", None, gateways)
    two = ScopeKey(ProxyType.ROUTER, "istio-system", None, tuple(gateways))
    assert one == two and hash(one) == hash(two)
    assert one != ScopeKey(ProxyType.ROUTER, "istio-system", None, gateways[:-1])
    assert "_hash" not in repr(one)


def test_input_keys_compare_by_parts() -> None:
    parts = ("cds-scope", tuple(range(1000)))
    assert InputKey(parts) == InputKey(tuple(parts))
    assert hash(InputKey(parts)) == hash(parts)
    assert InputKey(parts) != InputKey(("cds-scope", ()))
    assert InputKey(parts) != parts


def test_groups_and_resources_share_the_cache_but_not_their_keys() -> None:
    cache = ResourceCache()
    resource = Resource("a", "1", b"x")
    group = ResourceGroup((resource,), frozenset({("0.0.0.0", 80)}))
    rule = ConfigKey("DestinationRule", "ns", "r")
    cache.put_group(("g", rule), group)
    cache.put(("r", rule), resource)
    assert cache.get_group(("g", rule)) is group
    assert cache.get(("r", rule)) is resource
    assert cache.get_group("missing") is None
    with pytest.raises(TypeError):
        cache.get(("g", rule))
    with pytest.raises(TypeError):
        cache.get_group(("r", rule))
    assert cache.invalidate([rule]) == 2
    assert cache.get_group(("g", rule)) is None
