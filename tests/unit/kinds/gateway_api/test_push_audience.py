"""Which proxies a Gateway API change is pushed to: the push pipeline's own choice.

Two Gateways in one namespace (``alpha`` and ``beta``, each with its gateway proxy
labelled ``gateway.networking.k8s.io/gateway-name``), a GAMMA route for ``cart`` and
three sidecars: one in the route's namespace, one with no Sidecar (it sees every host),
one whose Sidecar admits only its own namespace (it does not see ``cart``). A change
must reach exactly the proxies whose generated config it went into, before or after.
The store, registry, push context and pipeline are real; the connections are fakes
(:class:`FakeConnection`: the pipeline asks a connection nothing else).
"""

from __future__ import annotations

import itertools

from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.cache import ResourceCache
from pilothouse.push.pipeline import PushPipeline
from pilothouse.push.proxy import ProxyIdentity, parse_node
from pilothouse.registry.controller import ServiceEntryRegistry
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.generators.api import watched_kinds


def entry(name: str, ns: str) -> str:
    return f"""\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: {name}, namespace: {ns}}}
spec:
  hosts: [{name}.{ns}.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{{number: 80, name: http, protocol: HTTP}}]
  endpoints: [{{address: 10.0.0.1}}]
---
"""


def gateway(name: str, cls: str = "istio") -> str:
    return f"""\
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: {name}, namespace: edge}}
spec:
  gatewayClassName: {cls}
  listeners: [{{name: http, port: 8080, protocol: HTTP}}]
---
"""


def route(parent: str = "alpha", path: str = "/", backend_ns: str = "edge") -> str:
    return f"""\
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: web, namespace: edge}}
spec:
  parentRefs: [{{name: {parent}}}]
  rules:
  - matches: [{{path: {{type: PathPrefix, value: "{path}"}}}}]
    backendRefs: [{{name: app, namespace: {backend_ns}, port: 80}}]
---
"""


def mesh_route(path: str = "/") -> str:
    return f"""\
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: cart-split, namespace: shop}}
spec:
  parentRefs: [{{group: "", kind: Service, name: cart}}]
  rules:
  - matches: [{{path: {{type: PathPrefix, value: "{path}"}}}}]
    backendRefs: [{{name: cart, port: 80}}]
---
"""


def grant(ns: str) -> str:
    return f"""\
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {{name: edge-in, namespace: {ns}}}
spec:
  from: [{{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: edge}}]
  to: [{{group: "", kind: Service}}]
---
"""


MESH = (
    entry("app", "edge")
    + entry("app", "web")
    + entry("cart", "shop")
    + entry("basket", "shop")
    + gateway("alpha")
    + gateway("beta")
    + route(backend_ns="web")
    + mesh_route()
    + """\
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: lonely}
spec:
  egress: [{hosts: ["./*"]}]
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: picky}
spec:
  egress: [{hosts: [shop/cart.shop.svc.cluster.local]}]
"""
)


class FakeConnection:
    """A connection as the pipeline sees it: an id, a proxy, no MCP watches."""

    def __init__(self, connection_id: str, proxy: ProxyIdentity) -> None:
        self.id = connection_id
        self.proxy = proxy

    def watched_types(self) -> list[str]:
        return []

    def watches_any_host(self, hostnames: frozenset[str]) -> bool:
        return False


def router(name: str) -> FakeConnection:
    labels = {"gateway.networking.k8s.io/gateway-name": name}
    node = parse_node(f"router~10.1.0.5~{name}-1.edge~edge.svc.cluster.local", {"LABELS": labels})
    return FakeConnection(name, node)


def sidecar(ns: str) -> FakeConnection:
    return FakeConnection(ns, parse_node(f"sidecar~10.1.0.1~app-1.{ns}~{ns}.svc.cluster.local"))


def configs(text: str) -> list[Config]:
    return Loader(SCHEMAS).load_strict(text, "test.yaml")


class Stage:
    """The store, registry and a started pipeline with every proxy connected."""

    def __init__(self) -> None:
        self.store = MemoryStore()
        for config in configs(MESH):
            self.store.apply(config)
        self.store.mark_synced()
        registry = ServiceEntryRegistry(self.store, lambda _update: None)
        registry.initial_load()
        versions = (f"v{n}" for n in itertools.count(1))
        self.pipeline: PushPipeline[FakeConnection] = PushPipeline(
            self.store,
            registry.services,
            MeshSettings(),
            ResourceCache(),
            next_version=lambda: next(versions),
            api_kinds=watched_kinds,
        )
        self.pipeline.start()
        for connection in (router("alpha"), router("beta"), *map(sidecar, SIDECARS)):
            self.pipeline.connect(connection)

    def pushed(self, text: str, *, delete: bool = False) -> set[str]:
        """The connections a change to the objects in ``text`` is pushed to."""
        requests = []
        for config in configs(text):
            if delete:
                self.store.delete(config.key)
            else:
                self.store.apply(config)
            requests.append(self.pipeline.config_changed(config.key, start=1.0))
        merged = requests[0]
        assert merged is not None and merged.full
        for request in requests[1:]:
            assert request is not None
            merged = merged.merge(request)
        plan = self.pipeline.plan(merged)
        assert plan is not None and plan.failed == ()
        return {connection.id for connection, _ in plan.pushes}


SIDECARS = ("shop", "team", "lonely", "picky")


def test_a_route_edit_reaches_the_gateway_it_attaches_to_only() -> None:
    stage = Stage()
    assert stage.pushed(route(path="/v2", backend_ns="web")) == {"alpha"}


def test_a_route_moving_to_another_gateway_reaches_both_gateways() -> None:
    stage = Stage()
    assert stage.pushed(route(parent="beta", backend_ns="web")) == {"alpha", "beta"}
    assert stage.pushed(route(parent="beta", path="/b", backend_ns="web")) == {"beta"}


def test_a_gamma_route_edit_reaches_the_sidecars_seeing_its_service_only() -> None:
    stage = Stage()
    # "lonely"'s Sidecar admits its own namespace only: cart is not among its hosts
    assert stage.pushed(mesh_route(path="/v2")) == {"shop", "team", "picky"}
    assert stage.pushed(mesh_route(path="/v2"), delete=True) == {"shop", "team", "picky"}


def test_a_gateway_or_its_class_reaches_its_own_proxies() -> None:
    stage = Stage()
    edited = gateway("beta").replace("port: 8080", "port: 8081")
    assert stage.pushed(edited) == {"beta"}
    other_class = """\
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: other}
spec: {controllerName: example.com/not-istio}
"""
    assert stage.pushed(gateway("beta", cls="other")) == {"beta"}
    # a class no served Gateway uses concerns nobody; "istio" concerns alpha, left in it
    assert stage.pushed(other_class) == set()
    assert stage.pushed(other_class.replace("name: other", "name: istio")) == {"alpha"}


def test_a_reference_grant_reaches_the_proxies_referring_into_its_namespace() -> None:
    stage = Stage()
    assert stage.pushed(grant("web")) == {"alpha"}  # alpha's route has a backend in "web"
    assert stage.pushed(grant("elsewhere")) == set()
    assert stage.pushed(grant("web"), delete=True) == {"alpha"}


def test_a_new_route_for_a_gateway_without_routes_reaches_that_gateway() -> None:
    stage = Stage()
    fresh = route(parent="beta").replace("name: web,", "name: fresh,")
    assert stage.pushed(fresh) == {"beta"}
    assert stage.pushed(fresh, delete=True) == {"beta"}


def test_a_mesh_route_renaming_another_host_s_routes_reaches_their_sidecars() -> None:
    """Mesh VirtualServices are numbered per namespace in host order: a route for a host
    sorted before ``cart`` renames cart's, which its sidecars are sent (route metadata
    names it), so they are pushed too ("picky" sees cart and not basket)."""
    stage = Stage()
    before = """\
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: basket, namespace: shop}
spec:
  parentRefs: [{group: "", kind: Service, name: basket}]
  rules: [{backendRefs: [{name: basket, port: 80}]}]
"""
    assert stage.pushed(before) == {"shop", "team", "picky"}
    names = {
        (c.name, tuple(c.spec.hosts))  # type: ignore[attr-defined]
        for c in stage.pipeline.context.gateway_api.virtual_services  # type: ignore[union-attr]
    }
    assert ("mesh~1~istio-autogenerated-k8s-gateway", ("cart.shop.svc.cluster.local",)) in names
