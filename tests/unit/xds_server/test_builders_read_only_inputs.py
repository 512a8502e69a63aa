"""The listener and route builders read their inputs value and nothing else.

A cached resource's key is its inputs (DESIGN.md §2), so a builder that could read
something outside them could serve stale config from the cache. Three checks keep
LDS and RDS honest:

- every builder takes inputs values (``ListenerInputs``, ``RouteInputs``, ``ScopeInputs``)
  and no other parameter;
- nothing of a PushContext, a proxy scope, a proxy or a generation request is reachable
  from those values (fields, compared or not, what their lookups hold, closures
  included), once the builders have filled every lookup;
- the scope inputs gathered from a context that also holds config no proxy here can
  see are equal to those gathered without it, and what the builders make of them alone
  is byte for byte what the generators send.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import inspect
import types
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, get_type_hints

import pytest
from google.protobuf.message import Message

from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import ConfigKey
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.authorization import NO_AUTHORIZATION, WorkloadAuthorization
from pilothouse.push.cache import ResourceCache
from pilothouse.push.context import PushContext, build_context
from pilothouse.push.inputs import dependencies
from pilothouse.push.peer_authentication import MtlsMode
from pilothouse.push.proxy import ProxyIdentity, parse_node
from pilothouse.push.scope import ProxyScope
from pilothouse.registry.controller import ServiceEntryRegistry
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.security.identity import Caller, ProvedBy, SpiffeId
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.builders.names import inbound_cluster_name
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.generators.cds import encode
from pilothouse.xds.generators.inbound import inbound_ports
from pilothouse.xds.generators.lds import (
    CAPTURING,
    ListenerGenerator,
    ListenerInputs,
    build_listeners,
    outbound_listeners,
    router_listeners,
)
from pilothouse.xds.generators.lds_inbound import InboundListenerInputs, build_inbound
from pilothouse.xds.generators.rds import (
    RouteGenerator,
    RouteInputs,
    build_route,
    gateway_route_config,
    route_names,
    sidecar_route_config,
)
from pilothouse.xds.generators.routing import label_key
from pilothouse.xds.generators.scope_inputs import ScopeInputs, scope_inputs

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "bookinfo"

EXTRA = """\
---
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
kind: ServiceEntry
metadata: {name: db, namespace: shop}
spec:
  hosts: [db.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{name: tcp, number: 5432, protocol: TCP}]
  workloadSelector: {labels: {app: db}}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: web, namespace: shop}
spec:
  host: web.shop.svc.cluster.local
  trafficPolicy:
    connectionPool: {tcp: {maxConnections: 10}}
  subsets:
  - name: v1
    labels: {version: v1}
    trafficPolicy:
      loadBalancer: {consistentHash: {httpHeaderName: x-user}}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web, namespace: shop}
spec:
  hosts: [web.shop.svc.cluster.local]
  http:
  - match: [{uri: {prefix: /own}, sourceLabels: {app: web}}]
    route:
    - destination: {host: web.shop.svc.cluster.local, subset: v1}
  - match: [{uri: {prefix: /api}}]
    delegate: {name: web-api, namespace: shop}
  - route:
    - destination: {host: web.shop.svc.cluster.local}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web-api, namespace: shop}
spec:
  http:
  - match: [{uri: {prefix: /api/v2}, sourceLabels: {version: v1}}]
    route:
    - destination: {host: web.shop.svc.cluster.local, subset: v1}
  - route:
    - destination: {host: db.shop.svc.cluster.local}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: bank}
spec:
  egress:
  - port: {number: 5432, protocol: TCP, name: db}
    bind: 127.0.0.2
    hosts: [shop/db.shop.svc.cluster.local]
  - port: {number: 8080, protocol: HTTP, name: web}
    hosts: [shop/*]
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: edge, namespace: shop}
spec:
  selector: {istio: ingressgateway}
  servers:
  - port: {number: 443, name: tls, protocol: TLS}
    tls: {mode: PASSTHROUGH}
    hosts: ["*.shop.example.com"]
  - port: {number: 5432, name: tcp, protocol: TCP}
    hosts: ["*"]
  - port: {number: 8081, name: http, protocol: HTTP}
    tls: {httpsRedirect: true}
    hosts: ["shop/*"]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: edge, namespace: shop}
spec:
  hosts: ["web.shop.example.com", "web.shop.svc.cluster.local"]
  gateways: [edge]
  http:
  - match: [{uri: {prefix: /api}}]
    delegate: {name: web-api}
  - route:
    - destination: {host: web.shop.svc.cluster.local, subset: v1}
  tls:
  - match: [{sniHosts: [web.shop.example.com]}]
    route:
    - destination: {host: web.shop.svc.cluster.local, port: {number: 8080}}
  tcp:
  - route:
    - destination: {host: db.shop.svc.cluster.local, port: {number: 5432}}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: edge, namespace: istio-system}
spec:
  selector: {matchLabels: {istio: ingressgateway}}
  action: DENY
  rules: [{to: [{operation: {paths: [/private]}}]}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: frontend-only, namespace: bookinfo}
spec:
  rules:
  - from: [{source: {principals: [cluster.local/ns/bookinfo/sa/frontend]}}]
  - from: [{source: {requestPrincipals: [https://issuer.test/*]}}]
---
apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: jwt, namespace: bookinfo}
spec:
  jwtRules:
  - issuer: https://issuer.test
    jwks: '{"keys": [{"kty": "EC", "crv": "P-256",
      "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
      "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}'
"""

UNSEEN = """\
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: hidden, namespace: hidden}
spec:
  hosts: [hidden.hidden.svc.cluster.local]
  exportTo: ["."]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{name: http, number: 8080, protocol: HTTP}]
  workloadSelector: {labels: {app: hidden}}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: hidden, namespace: hidden}
spec:
  hosts: [hidden.hidden.svc.cluster.local]
  exportTo: ["."]
  http:
  - route:
    - destination: {host: hidden.hidden.svc.cluster.local}
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: elsewhere, namespace: hidden}
spec:
  selector: {istio: other-gateway}
  servers:
  - port: {number: 80, name: http, protocol: HTTP}
    hosts: ["*"]
"""


def _proxy(node: str, namespace: str, labels: Mapping[str, str], **extra: str) -> ProxyIdentity:
    return parse_node(node, {"NAMESPACE": namespace, "LABELS": dict(labels), **extra})


PROXIES = (
    _proxy(
        "sidecar~10.0.0.1~web-1.shop~shop.svc.cluster.local",
        "shop",
        {"app": "web", "version": "v1"},
        INTERCEPTION_MODE="REDIRECT",
    ),
    _proxy("sidecar~10.0.0.2~client-1.shop~shop.svc.cluster.local", "shop", {"app": "client"}),
    _proxy("sidecar~10.0.1.1~teller-1.bank~bank.svc.cluster.local", "bank", {"app": "teller"}),
    _proxy(
        "sidecar~127.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local",
        "bookinfo",
        {"app": "productpage", "version": "v1"},
    ),
    _proxy(
        "router~10.0.0.9~ingress.istio-system~istio-system.svc.cluster.local",
        "istio-system",
        {"istio": "ingressgateway"},
    ),
)

FORBIDDEN: tuple[type, ...] = (
    PushContext,
    ProxyScope,
    ProxyIdentity,
    GenerationInput,
    ResourceCache,
    EndpointIndex,
)
"""What a builder could read beyond its inputs through them."""


class World:
    """A store, registry, context and cache, as a discovery server holds them."""

    def __init__(self, *texts: str) -> None:
        self.store = MemoryStore("test")
        loader = Loader(SCHEMAS, source="test")
        for path in sorted(EXAMPLE.glob("*.yaml")):
            for config in loader.load_strict(path.read_text(), path.name):
                self.store.apply(config)
        for text in texts:
            for config in loader.load_strict(text, "extra.yaml"):
                self.store.apply(config)
        self.store.mark_synced()
        self.registry = ServiceEntryRegistry(self.store, lambda update: None)
        self.registry.initial_load()
        self.context = build_context(self.store, self.registry.services, MeshSettings(), "v1")
        self.cache = ResourceCache()

    def given(self, proxy: ProxyIdentity) -> GenerationInput:
        return GenerationInput(
            proxy=proxy,
            scope=self.context.scope(proxy),
            context=self.context,
            endpoints=self.registry.endpoint_index,
            cache=self.cache,
        )

    def generate(self, proxy: ProxyIdentity, generator: ListenerGenerator | RouteGenerator) -> Any:
        return generator.generate(self.given(proxy))

    def inputs(self, proxy: ProxyIdentity) -> ScopeInputs:
        return scope_inputs(self.given(proxy))

    def label_key(self, proxy: ProxyIdentity) -> Any:
        return label_key(self.context.virtual_services.source_selectors, proxy.labels)


def _capturing(proxy: ProxyIdentity) -> bool:
    return (proxy.metadata or {}).get("INTERCEPTION_MODE", "") in CAPTURING


BUILDERS: tuple[Callable[..., object], ...] = (
    build_listeners,
    router_listeners,
    outbound_listeners,
    build_route,
    sidecar_route_config,
    gateway_route_config,
    route_names,
)


@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.__name__)
def test_every_builder_takes_inputs_values_and_nothing_else(
    builder: Callable[..., object],
) -> None:
    hints = get_type_hints(builder)
    parameters = inspect.signature(builder).parameters
    assert parameters
    for name in parameters:
        assert hints[name] in (ListenerInputs, RouteInputs, ScopeInputs), (name, hints[name])


def reachable(root: object) -> set[type]:
    """The types of everything reachable from ``root``: fields and slots (compared or
    not), container items, and what functions close over."""
    seen: set[int] = set()
    found: set[type] = set()
    stack = [root]
    while stack:
        value = stack.pop()
        if isinstance(
            value,
            (str, bytes, int, float, type(None), Message, datetime.datetime, enum.Enum, type),
        ):
            continue
        if id(value) in seen:
            continue
        seen.add(id(value))
        found.add(type(value))
        if isinstance(value, Mapping):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, (tuple, list, set, frozenset)):
            stack.extend(value)
        elif isinstance(value, types.FunctionType):
            stack.extend(_cells(value.__closure__ or ()))
            stack.extend(value.__defaults__ or ())
            stack.extend((value.__kwdefaults__ or {}).values())
        elif isinstance(value, types.MethodType):
            stack.extend((value.__self__, value.__func__))
        else:
            for kind in type(value).__mro__:
                slots = kind.__dict__.get("__slots__", ())
                for name in (slots,) if isinstance(slots, str) else slots:
                    if hasattr(value, name):
                        stack.append(getattr(value, name))
            stack.extend(getattr(value, "__dict__", {}).values())
    return found


def _cells(cells: Iterable[types.CellType]) -> list[object]:
    out = []
    for cell in cells:
        try:
            out.append(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    return out


def test_the_reachability_walk_finds_a_context_behind_a_closure() -> None:
    world = World()
    planted = world.context

    def lookup(name: str) -> object:
        return planted.scope(PROXIES[0]) if name else None

    holder = dataclasses.replace(world.inputs(PROXIES[0]))
    object.__setattr__(holder, "_delegates", lookup)
    assert PushContext in reachable(holder)
    assert PushContext not in reachable(dataclasses.replace(holder))


def test_nothing_of_a_context_scope_or_proxy_is_reachable_from_the_inputs() -> None:
    world = World(EXTRA)
    for proxy in PROXIES:
        scope = world.inputs(proxy)
        listeners = ListenerInputs(scope, _capturing(proxy), None, _authorization(world, proxy))
        assert build_listeners(listeners).resources
        routes = [RouteInputs(scope, name, world.label_key(proxy)) for name in route_names(scope)]
        assert routes
        for inputs in routes:
            build_route(inputs)  # fills every lookup the inputs hold
        kinds = reachable((listeners, routes))
        assert not [k for k in kinds if issubclass(k, FORBIDDEN)], proxy.id
        assert any(isinstance(v, types.FunctionType) for v in _lookups(scope)), proxy.id


def _authorization(world: World, proxy: ProxyIdentity) -> WorkloadAuthorization:
    """A gateway's access-control inputs (sidecars' guard their inbound listeners)."""
    if not proxy.is_router:
        return NO_AUTHORIZATION
    found = world.context.authorizations.for_workload(proxy.namespace, proxy.labels, world.cache)
    assert found.policies  # the EXTRA policy selecting the gateway
    return found


def _lookups(scope: ScopeInputs) -> list[object]:
    return [scope._hash_policies, scope._delegates]


@pytest.mark.parametrize("proxy", PROXIES, ids=lambda p: p.id)
def test_the_builders_make_from_the_inputs_alone_what_the_generators_send(
    proxy: ProxyIdentity,
) -> None:
    world = World(EXTRA)
    other = World(EXTRA, UNSEEN)  # holds more config, none of it visible to these proxies
    assert other.context.virtual_services.keys > world.context.virtual_services.keys
    held = other.inputs(proxy)
    assert held == world.inputs(proxy) and held is not world.inputs(proxy)
    # A value with the compared fields only: none of the lookups the generators filled.
    alone = dataclasses.replace(held)

    listeners = world.generate(proxy, ListenerGenerator())
    authorization = _authorization(world, proxy)
    built = build_listeners(ListenerInputs(alone, _capturing(proxy), None, authorization)).resources
    assert built
    assert {r.name: r.body for r in built}.items() <= {
        n: r.body for n, r in listeners.items()
    }.items()

    routes = world.generate(proxy, RouteGenerator())
    labels = world.label_key(proxy)
    assert routes
    for name, resource in routes.items():
        made = build_route(RouteInputs(alone, name, labels))
        assert made is not None and made.body == resource.body, name


def test_proxies_whose_labels_meet_the_same_selectors_share_routes() -> None:
    world = World(EXTRA)
    web = PROXIES[0]
    twin = _proxy(
        "sidecar~10.0.0.3~web-2.shop~shop.svc.cluster.local",
        "shop",
        {"app": "web", "version": "v1", "team": "blue"},
    )
    client = PROXIES[1]
    assert world.label_key(twin) == world.label_key(web) != world.label_key(client)
    first = world.generate(web, RouteGenerator())
    assert world.generate(twin, RouteGenerator()) == first
    assert world.generate(client, RouteGenerator())["8080"].body != first["8080"].body


def test_listener_and_route_inputs_depend_on_the_configs_they_hold_never_on_a_rule() -> None:
    """A DestinationRule reaches listeners and routes only through what hash policies read
    of it (shop/web sets a consistent hash): its edits must not evict them (clusters are
    rebuilt, listeners and routes are not)."""
    world = World(EXTRA)
    web, bank, router = PROXIES[0], PROXIES[2], PROXIES[4]
    assert ConfigKey("DestinationRule", "shop", "web") in world.context.scope(web).rule_keys
    assert any(held is not None for _, held in world.inputs(web).services)

    def named(proxy: ProxyIdentity) -> frozenset[ConfigKey]:
        scope = world.inputs(proxy)
        listeners = dependencies(ListenerInputs(scope, _capturing(proxy), None))
        routes = dependencies(RouteInputs(scope, "8080", world.label_key(proxy)))
        assert routes == listeners
        return listeners

    for proxy in PROXIES:
        assert not [k for k in named(proxy) if k.kind == "DestinationRule"], proxy.id
    assert {
        ConfigKey("ServiceEntry", "shop", "web"),
        ConfigKey("VirtualService", "shop", "web"),
        ConfigKey("VirtualService", "shop", "web-api"),  # a delegate
    } <= named(web)
    assert ConfigKey("Sidecar", "bank", "default") in named(bank)
    assert {
        ConfigKey("Gateway", "shop", "edge"),
        ConfigKey("Gateway", "bookinfo", "bookinfo-gateway"),
        ConfigKey("VirtualService", "shop", "edge"),
    } <= named(router)


REVIEWS_STRICT_PORT = """\
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: reviews, namespace: bookinfo}
spec:
  selector: {matchLabels: {app: reviews}}
  mtls: {mode: STRICT}
"""


REVIEWS_ACCESS = """\
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: reviews, namespace: bookinfo}
spec:
  selector: {matchLabels: {app: reviews}}
  rules:
  - from: [{source: {principals: [cluster.local/ns/bookinfo/sa/productpage]}}]
    to: [{operation: {methods: [GET]}}]
---
apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: reviews, namespace: bookinfo}
spec:
  selector: {matchLabels: {app: reviews}}
  jwtRules:
  - issuer: https://issuer.test
    jwks: '{"keys": [{"kty": "EC", "crv": "P-256",
      "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
      "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}'
"""


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (REVIEWS_STRICT_PORT, MtlsMode.STRICT),
        # port-level modes name the application's port (the WorkloadEntry's 19082)
        (
            REVIEWS_STRICT_PORT + "  portLevelMtls: {19082: {mode: PERMISSIVE}}\n",
            MtlsMode.PERMISSIVE,
        ),
        (REVIEWS_STRICT_PORT + "  portLevelMtls: {9080: {mode: PERMISSIVE}}\n", MtlsMode.STRICT),
        # access control guards the listener: the policies are part of the inputs
        (REVIEWS_STRICT_PORT + REVIEWS_ACCESS, MtlsMode.STRICT),
    ],
)
def test_inbound_listeners_are_built_from_their_inputs_and_the_address_alone(
    policy: str, expected: MtlsMode
) -> None:
    """The inbound builder takes an InboundListenerInputs value (the port's mTLS mode
    included) and the proxy's address, and nothing of a context or proxy is reachable
    from the value."""
    hints = get_type_hints(build_inbound)
    assert [hints[name] for name in inspect.signature(build_inbound).parameters] == [
        InboundListenerInputs,
        str,
    ]
    world = World(policy)
    reviews = dataclasses.replace(
        _proxy(
            "sidecar~127.0.0.1~reviews-v1.bookinfo~bookinfo.svc.cluster.local",
            "bookinfo",
            {"app": "reviews", "version": "v1"},
        ),
        caller=Caller((SpiffeId("cluster.local", "bookinfo", "reviews"),), ProvedBy.JWT),
    )
    given = GenerationInput(
        proxy=reviews,
        scope=world.context.scope(reviews),
        context=world.context,
        endpoints=world.registry.endpoint_index,
        cache=world.cache,
    )
    listeners = ListenerGenerator().generate(given)
    ports = inbound_ports(given)
    assert ports
    for port in ports:
        inputs = InboundListenerInputs.of(given, port)
        assert inputs.mtls is expected
        names = {p.key.name for p in inputs.authorization.policies}
        assert names == (
            {"reviews-read-only", "reviews"} if "Authorization" in policy else {"reviews-read-only"}
        )
        assert bool(inputs.authorization.authentications) == ("RequestAuthentication" in policy)
        assert not [k for k in reachable(inputs) if issubclass(k, FORBIDDEN)]
        built = encode(build_inbound(inputs, port.address), "")
        assert built.body == listeners[inbound_cluster_name(port.port)].body
