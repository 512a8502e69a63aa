"""Proxy scopes and the PushContext: visibility by namespace, exportTo and Sidecar, DR choice,
scoped-push decisions, and index reuse."""

from __future__ import annotations

from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import ConfigKey
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.context import build_context
from pilothouse.push.proxy import parse_node
from pilothouse.push.request import PushRequest
from pilothouse.registry.controller import ServiceEntryRegistry
from pilothouse.registry.model import SERVICE_KIND
from pilothouse.sources.memory import MemoryStore

ROOT = "istio-system"


def se(name: str, ns: str, export: str = "") -> str:
    export_line = f"  exportTo: [{export}]\n" if export else ""
    return f"""\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: {name}, namespace: {ns}}}
spec:
  hosts: [{name}.{ns}.svc.cluster.local]
  resolution: STATIC
  ports: [{{number: 80, name: http, protocol: HTTP}}]
  endpoints: [{{address: 10.0.0.1}}]
{export_line}---
"""


MESH = (
    se("a", "team-a")
    + se("private", "team-a", '"."')
    + se("b", "team-b")
    + se("shared", "team-b", "team-a")
    + se("c", "team-c")
    + """\
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: team-c}
spec:
  egress:
  - hosts: ["./*", "team-b/b.team-b.svc.cluster.local"]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: b-local, namespace: team-a}
spec:
  host: b.team-b.svc.cluster.local
  subsets: [{name: mine, labels: {v: "1"}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: b-owner, namespace: team-b}
spec:
  host: b.team-b.svc.cluster.local
  subsets: [{name: theirs, labels: {v: "2"}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: mesh-wide, namespace: istio-system}
spec:
  host: "*.svc.cluster.local"
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: b-routes, namespace: team-b}
spec:
  hosts: [b.team-b.svc.cluster.local]
  http: [{route: [{destination: {host: b.team-b.svc.cluster.local}}]}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: a-routes, namespace: team-a}
spec:
  hosts: [a.team-a.svc.cluster.local]
  http: [{route: [{destination: {host: a.team-a.svc.cluster.local}}]}]
"""
)


def setup() -> tuple[MemoryStore, ServiceEntryRegistry]:
    store = MemoryStore()
    for config in Loader(SCHEMAS).load_strict(MESH, "mesh.yaml"):
        store.apply(config)
    store.mark_synced()
    registry = ServiceEntryRegistry(store, lambda _u: None)
    registry.initial_load()
    return store, registry


def proxy(ns: str, kind: str = "sidecar") -> object:
    return parse_node(f"{kind}~10.1.0.1~pod.{ns}~{ns}.svc.cluster.local")


def hosts(scope: object) -> set[str]:
    return set(scope.by_hostname)  # type: ignore[attr-defined]


def test_visibility_by_export_and_sidecar() -> None:
    store, registry = setup()
    context = build_context(store, registry.services, MeshSettings(), "v1")
    a = context.scope(proxy("team-a"))  # type: ignore[arg-type]
    b = context.scope(proxy("team-b"))  # type: ignore[arg-type]
    c = context.scope(proxy("team-c"))  # type: ignore[arg-type]
    assert hosts(a) == {
        "a.team-a.svc.cluster.local",
        "private.team-a.svc.cluster.local",
        "b.team-b.svc.cluster.local",
        "shared.team-b.svc.cluster.local",
        "c.team-c.svc.cluster.local",
    }
    assert hosts(b) == {
        "a.team-a.svc.cluster.local",
        "b.team-b.svc.cluster.local",
        "c.team-c.svc.cluster.local",
    }
    # team-c's Sidecar narrows its view to its own namespace plus b
    assert hosts(c) == {"c.team-c.svc.cluster.local", "b.team-b.svc.cluster.local"}
    assert ConfigKey("VirtualService", "team-b", "b-routes") in c.virtual_services
    assert ConfigKey("VirtualService", "team-a", "a-routes") not in c.virtual_services


def test_destination_rule_precedence() -> None:
    store, registry = setup()
    context = build_context(store, registry.services, MeshSettings(), "v1")
    (b_service,) = registry.services_by_hostname("b.team-b.svc.cluster.local")
    (c_service,) = registry.services_by_hostname("c.team-c.svc.cluster.local")
    rule_a = context.scope(proxy("team-a")).destination_rule(b_service)  # type: ignore[arg-type]
    rule_c = context.scope(proxy("team-c")).destination_rule(b_service)  # type: ignore[arg-type]
    rule_root = context.scope(proxy("team-c")).destination_rule(c_service)  # type: ignore[arg-type]
    assert rule_a is not None and rule_a.name == "b-local"  # the proxy's own namespace first
    assert rule_c is not None and rule_c.name == "b-owner"  # then the service's namespace
    assert rule_root is not None and rule_root.name == "mesh-wide"  # then the root namespace


def test_scoped_push_decisions() -> None:
    store, registry = setup()
    context = build_context(store, registry.services, MeshSettings(), "v1")
    a = context.scope(proxy("team-a"))  # type: ignore[arg-type]
    c = context.scope(proxy("team-c"))  # type: ignore[arg-type]
    private = ConfigKey(SERVICE_KIND, "team-a", "private.team-a.svc.cluster.local")
    assert a.sees(private, ROOT) and not c.sees(private, ROOT)
    rule = ConfigKey("DestinationRule", "team-a", "b-local")
    assert a.sees(rule, ROOT) and not c.sees(rule, ROOT)
    assert c.sees(ConfigKey("Sidecar", "team-c", "default"), ROOT)
    assert not a.sees(ConfigKey("Sidecar", "team-c", "default"), ROOT)
    assert a.sees(ConfigKey("PeerAuthentication", ROOT, "default"), ROOT)
    assert not c.sees(ConfigKey("VirtualService", "team-a", "a-routes"), ROOT)


def test_proxies_with_the_same_view_share_a_scope() -> None:
    store, registry = setup()
    context = build_context(store, registry.services, MeshSettings(), "v1")
    first = context.scope(parse_node("sidecar~10.0.0.1~x.team-b~team-b.svc.cluster.local"))
    second = context.scope(parse_node("sidecar~10.0.0.2~y.team-b~team-b.svc.cluster.local"))
    assert first is second


def test_untouched_indexes_are_reused() -> None:
    store, registry = setup()
    first = build_context(store, registry.services, MeshSettings(), "v1")
    request = PushRequest.for_configs([ConfigKey("VirtualService", "team-a", "a-routes")])
    second = build_context(store, registry.services, MeshSettings(), "v2", first, request)
    assert second.destination_rules is first.destination_rules
    assert second.services is first.services
    assert second.virtual_services is not first.virtual_services
    assert "virtual_services" in second.stats.rebuilt
    everything = build_context(
        store, registry.services, MeshSettings(), "v3", second, PushRequest.everything()
    )
    assert everything.destination_rules is not second.destination_rules
