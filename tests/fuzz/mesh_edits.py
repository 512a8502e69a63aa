"""Hypothesis strategies for config edits of every kind the mesh reads.

An edit applies one object (added, or changed when the name is taken) or deletes one by
key. :func:`edits` is given the keys the store holds and mostly changes or deletes one
of them, so edits meet the caches of what exists; new objects take names from small
pools shared with the bookinfo example (``bookinfo/reviews``, ``bookinfo/productpage``
...). Every object generated is valid (``load_strict``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hypothesis import strategies as st

from pilothouse.config.load import Loader
from pilothouse.config.model import Config, ConfigKey
from pilothouse.kinds.table import SCHEMAS
from tests.unit.security.sample_keys import RSA_2048_JWKS

NAMESPACES = ("bookinfo", "shop", "bank")
SERVICES = ("reviews", "ratings", "productpage", "a", "b")
APPS = ("reviews", "productpage", "a", "b", "client")
PORTS = (("http", 9080, "HTTP"), ("grpc", 7070, "GRPC"), ("tcp", 5432, "TCP"))
KINDS = (
    "ServiceEntry",
    "WorkloadEntry",
    "VirtualService",
    "DestinationRule",
    "Gateway",
    "Sidecar",
    "PeerAuthentication",
    "AuthorizationPolicy",
    "EnvoyFilter",
    "RequestAuthentication",
    "Telemetry",
)
NAMES: dict[str, tuple[str, ...]] = {
    "ServiceEntry": SERVICES,
    "WorkloadEntry": ("w1", "w2", "reviews-v1", "productpage-v1"),
    "VirtualService": ("reviews", "r1", "r2"),
    "DestinationRule": SERVICES,
    "Gateway": ("bookinfo-gateway", "g1"),
    "Sidecar": ("default", "productpage"),
    "PeerAuthentication": ("default",),
    "AuthorizationPolicy": ("reviews-read-only", "p1"),
    "EnvoyFilter": ("f1", "f2"),
    "RequestAuthentication": ("jwt", "r1"),
    "Telemetry": ("logs", "t1"),
}


@dataclass(frozen=True, repr=False)
class Apply:
    config: Config

    def __repr__(self) -> str:
        return f"Apply({self.config.key})"


@dataclass(frozen=True)
class Delete:
    key: ConfigKey


Edit = Apply | Delete
Slot = tuple[str, str]
"""(namespace, name) of an object."""


def load_one(text: str) -> Config:
    (config,) = Loader(SCHEMAS, source="fuzz").load_strict(text, "edit.yaml")
    return config


def host(name: str, namespace: str) -> str:
    return f"{name}.{namespace}.svc.cluster.local"


@st.composite
def service_entries(draw: st.DrawFn, at: Slot | None = None) -> Config:
    namespace, name = at or (draw(st.sampled_from(NAMESPACES)), draw(st.sampled_from(SERVICES)))
    dns = draw(st.booleans())
    ports = draw(st.lists(st.sampled_from(PORTS), min_size=1, max_size=3, unique=True))
    lines = [
        "apiVersion: networking.istio.io/v1",
        "kind: ServiceEntry",
        f"metadata: {{name: {name}, namespace: {namespace}}}",
        "spec:",
        f"  hosts: [{host(name, namespace)}]",
        "  location: MESH_INTERNAL",
        f"  resolution: {'DNS' if dns else 'STATIC'}",
        "  ports:",
        *(f"  - {{name: {p}, number: {n}, protocol: {proto}}}" for p, n, proto in ports),
    ]
    endpoints = draw(st.sampled_from(("selector", "inline", "none") if dns else ("selector",)))
    if endpoints == "selector":
        lines.append(f"  workloadSelector: {{labels: {{app: {name}}}}}")
    elif endpoints == "inline":
        lines.append(f"  endpoints: [{{address: {name}.example.org}}]")
    export = draw(st.sampled_from((None, '["."]', '["*"]')))
    if export is not None:
        lines.append(f"  exportTo: {export}")
    return load_one("\n".join(lines) + "\n")


@st.composite
def workload_entries(draw: st.DrawFn, at: Slot | None = None) -> Config:
    namespace, name = at or draw(slots("WorkloadEntry"))
    address = draw(st.sampled_from(("127.0.0.1", f"10.{NAMESPACES.index(namespace)}.0.1")))
    app, version = draw(st.sampled_from(APPS)), draw(st.sampled_from(("v1", "v2")))
    port = draw(st.sampled_from(("", ", ports: {http: 19080}")))
    sidecar = draw(st.sampled_from(("", ", security.istio.io/tlsMode: istio")))  # auto-mTLS
    return load_one(
        "apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\n"
        f"metadata: {{name: {name}, namespace: {namespace}}}\n"
        f"spec: {{address: {address}, labels: {{app: {app}, version: {version}{sidecar}}}{port}}}\n"
    )


@st.composite
def virtual_services(draw: st.DrawFn, at: Slot | None = None) -> Config:
    namespace, name = at or draw(slots("VirtualService"))
    target = host(draw(st.sampled_from(SERVICES)), namespace)
    lines = [
        "apiVersion: networking.istio.io/v1",
        "kind: VirtualService",
        f"metadata: {{name: {name}, namespace: {namespace}}}",
        "spec:",
        f"  hosts: [{target}]",
    ]
    if draw(st.booleans()):
        lines.append("  gateways: [mesh, bookinfo/bookinfo-gateway]")
    lines.append("  http:")
    if draw(st.booleans()):
        lines.append(f"  - match: [{{sourceLabels: {{app: {draw(st.sampled_from(APPS))}}}}}]")
        lines.append("    route:")
    else:
        lines.append("  - route:")
    subset = draw(st.sampled_from(("", ", subset: v1", ", subset: v2")))
    lines.append(f"    - destination: {{host: {target}{subset}}}")
    timeout = draw(st.sampled_from(("", "1s", "5s")))
    if timeout:
        lines.append(f"    timeout: {timeout}")
    return load_one("\n".join(lines) + "\n")


@st.composite
def destination_rules(draw: st.DrawFn, at: Slot | None = None) -> Config:
    namespace, name = at or draw(slots("DestinationRule"))
    balancer = draw(
        st.sampled_from(
            (
                "{simple: ROUND_ROBIN}",
                "{simple: LEAST_REQUEST}",
                "{consistentHash: {httpHeaderName: x-user}}",
            )
        )
    )
    limit = draw(st.integers(min_value=1, max_value=3))
    subsets = draw(st.sampled_from(((), ("v1",), ("v1", "v2"))))
    lines = [
        "apiVersion: networking.istio.io/v1",
        "kind: DestinationRule",
        f"metadata: {{name: {name}, namespace: {namespace}}}",
        "spec:",
        f"  host: {host(name, namespace)}",
        "  trafficPolicy:",
        f"    connectionPool: {{tcp: {{maxConnections: {limit}}}}}",
        f"    loadBalancer: {balancer}",
    ]
    if subsets:
        lines.append("  subsets:")
        for subset in subsets:  # a subset's labels may change under its name
            version = draw(st.sampled_from(("v1", "v2")))
            lines.append(f"  - {{name: {subset}, labels: {{version: {version}}}}}")
    return load_one("\n".join(lines) + "\n")


@st.composite
def gateways(draw: st.DrawFn, at: Slot | None = None) -> Config:
    namespace, name = at or draw(slots("Gateway"))
    port = draw(st.sampled_from((8080, 9000)))
    hosts = draw(st.sampled_from(('"*"', '"bookinfo/*"', '"./*"')))
    return load_one(
        "apiVersion: networking.istio.io/v1\nkind: Gateway\n"
        f"metadata: {{name: {name}, namespace: {namespace}}}\n"
        "spec:\n  selector: {istio: ingressgateway}\n  servers:\n"
        f"  - port: {{number: {port}, name: http, protocol: HTTP}}\n    hosts: [{hosts}]\n"
    )


@st.composite
def sidecars(draw: st.DrawFn, at: Slot | None = None) -> Config:
    namespace, name = at or draw(slots("Sidecar"))
    lines = [
        "apiVersion: networking.istio.io/v1",
        "kind: Sidecar",
        f"metadata: {{name: {name}, namespace: {namespace}}}",
        "spec:",
    ]
    if name != "default":
        lines.append(f"  workloadSelector: {{labels: {{app: {name}}}}}")
    hosts = draw(st.sampled_from(('["./*"]', '["./*", "istio-system/*"]', '["*/*"]')))
    lines.append("  egress:")
    if draw(st.booleans()):
        lines.append("  - port: {number: 9080, protocol: HTTP, name: egress-http}")
        lines.append("    bind: 127.0.0.1")
        lines.append("    captureMode: NONE")
        lines.append(f"    hosts: {hosts}")
    else:
        lines.append(f"  - hosts: {hosts}")
    if draw(st.booleans()):
        lines.append("  ingress:")
        lines.append("  - port: {number: 9080, protocol: HTTP, name: in}")
        lines.append("    defaultEndpoint: 127.0.0.1:19080")
    return load_one("\n".join(lines) + "\n")


@st.composite
def peer_authentications(draw: st.DrawFn, at: Slot | None = None) -> Config:
    namespace, _ = at or draw(slots("PeerAuthentication"))
    modes = ("UNSET", "PERMISSIVE", "STRICT", "DISABLE")
    mode = draw(st.sampled_from(modes))
    spec = f"mtls: {{mode: {mode}}}"
    if draw(st.booleans()):  # workload-wide, maybe with a port of its own
        spec += f", selector: {{matchLabels: {{app: {draw(st.sampled_from(APPS))}}}}}"
        if draw(st.booleans()):
            port = draw(st.sampled_from((9080, 19080)))
            spec += f", portLevelMtls: {{{port}: {{mode: {draw(st.sampled_from(modes))}}}}}"
    return load_one(
        "apiVersion: security.istio.io/v1\nkind: PeerAuthentication\n"
        f"metadata: {{name: default, namespace: {namespace}}}\n"
        f"spec: {{{spec}}}\n"
    )


@st.composite
def authorization_policies(draw: st.DrawFn, at: Slot | None = None) -> Config:
    """A policy on a workload (or a gateway), namespace-wide or mesh-wide, with rules
    on methods and ports (inbound listeners, a gateway's listeners)."""
    namespace, name = at or draw(slots("AuthorizationPolicy"))
    selected = draw(st.sampled_from((*APPS, "ingressgateway", None)))
    key = "istio" if selected == "ingressgateway" else "app"
    selector = "" if selected is None else f"selector: {{matchLabels: {{{key}: {selected}}}}}, "
    action = draw(st.sampled_from(("ALLOW", "DENY")))
    methods = draw(st.sampled_from(("[GET]", "[DELETE]", "[GET, HEAD]")))
    port = draw(st.sampled_from(("", ', ports: ["9080"]')))
    return load_one(
        "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\n"
        f"metadata: {{name: {name}, namespace: {namespace}}}\n"
        f"spec: {{{selector}action: {action}, "
        f"rules: [{{to: [{{operation: {{methods: {methods}{port}}}}}]}}]}}\n"
    )


_LUA = "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua"
_HCM = "envoy.filters.network.http_connection_manager"
ENVOY_FILTER_PATCHES = (
    "{applyTo: CLUSTER, match: {context: %s, cluster: {service: "
    "reviews.bookinfo.svc.cluster.local}}, patch: {operation: MERGE, value: "
    "{per_connection_buffer_limit_bytes: %d}}}",
    "{applyTo: HTTP_FILTER, match: {context: %s, listener: {filterChain: {filter: {name: " + _HCM
    + ", subFilter: {name: envoy.filters.http.router}}}}}, patch: {operation: INSERT_BEFORE,"
    " value: {name: lua, typed_config: {'@type': " + _LUA + ", inline_code: '-- %d'}}}}",
    "{applyTo: VIRTUAL_HOST, match: {context: %s}, patch: {operation: MERGE, value:"
    " {response_headers_to_add: [{header: {key: x-f, value: '%d'}}]}}}",
    "{applyTo: LISTENER, match: {context: %s, listener: {portNumber: 9080}}, patch:"
    " {operation: MERGE, value: {per_connection_buffer_limit_bytes: %d}}}",
    "{applyTo: HTTP_ROUTE, match: {context: %s}, patch: {operation: INSERT_FIRST, value:"
    " {name: r, match: {prefix: /f}, direct_response: {status: %d}}}}",
)
"""EnvoyFilter patches, each formatted with a context and a number."""


@st.composite
def envoy_filters(draw: st.DrawFn, at: Slot | None = None) -> Config:
    """Patches of listeners, routes and clusters for one workload, a namespace, or (from
    the root namespace) the mesh."""
    namespace, name = at or draw(slots("EnvoyFilter"))
    if at is None and draw(st.booleans()):
        namespace = "istio-system"
    selected = draw(st.sampled_from((*APPS, "ingressgateway", None)))
    key = "istio" if selected == "ingressgateway" else "app"
    selector = "" if selected is None else f"workloadSelector: {{labels: {{{key}: {selected}}}}}, "
    contexts = ("ANY", "SIDECAR_INBOUND", "SIDECAR_OUTBOUND", "GATEWAY")
    chosen = draw(st.lists(st.sampled_from(ENVOY_FILTER_PATCHES), min_size=1, max_size=3))
    patches = ", ".join(
        p % (draw(st.sampled_from(contexts)), draw(st.integers(200, 299))) for p in chosen
    )
    priority = draw(st.integers(-2, 2))
    return load_one(
        "apiVersion: networking.istio.io/v1alpha3\nkind: EnvoyFilter\n"
        f"metadata: {{name: {name}, namespace: {namespace}}}\n"
        f"spec: {{{selector}priority: {priority}, configPatches: [{patches}]}}\n"
    )


@st.composite
def request_authentications(draw: st.DrawFn, at: Slot | None = None) -> Config:
    """A JWT rule on a workload (or a gateway), namespace-wide or mesh-wide, its key set
    inline (a ``jwksUri`` would make what the servers send depend on a fetch)."""
    namespace, name = at or draw(slots("RequestAuthentication"))
    selected = draw(st.sampled_from((*APPS, "ingressgateway", None)))
    key = "istio" if selected == "ingressgateway" else "app"
    selector = "" if selected is None else f"selector: {{matchLabels: {{{key}: {selected}}}}}, "
    issuer = draw(st.sampled_from(("https://issuer.test", "https://other.test")))
    forward = draw(st.sampled_from(("", ", forwardOriginalToken: true")))
    return load_one(
        "apiVersion: security.istio.io/v1\nkind: RequestAuthentication\n"
        f"metadata: {{name: {name}, namespace: {namespace}}}\n"
        f"spec: {{{selector}jwtRules: "
        f"[{{issuer: '{issuer}', jwks: '{RSA_2048_JWKS}'{forward}}}]}}\n"
    )


@st.composite
def telemetries(draw: st.DrawFn, at: Slot | None = None) -> Config:
    """Access logs (the built-in ``envoy`` provider, the only one every mesh config has)
    for one workload (or a gateway), a namespace, or (from the root namespace) the mesh:
    on or off, filtered or not, on one side or both."""
    namespace, name = at or draw(slots("Telemetry"))
    if at is None and draw(st.booleans()):
        namespace = "istio-system"
    selected = draw(st.sampled_from((*APPS, "ingressgateway", None)))
    key = "istio" if selected == "ingressgateway" else "app"
    selector = "" if selected is None else f"selector: {{matchLabels: {{{key}: {selected}}}}}, "
    mode = draw(st.sampled_from(("", ", match: {mode: CLIENT}", ", match: {mode: SERVER}")))
    switch = draw(st.sampled_from(("", ", disabled: true", ", filter: {expression: 'true'}")))
    providers = draw(st.sampled_from(("providers: [{name: envoy}]", "")))
    entry = f"{{{providers}{mode}{switch}}}".replace("{, ", "{")
    return load_one(
        "apiVersion: telemetry.istio.io/v1\nkind: Telemetry\n"
        f"metadata: {{name: {name}, namespace: {namespace}}}\n"
        f"spec: {{{selector}accessLogging: [{entry}]}}\n"
    )


CONFIGS: dict[str, Callable[[Slot | None], st.SearchStrategy[Config]]] = {
    "ServiceEntry": service_entries,
    "WorkloadEntry": workload_entries,
    "VirtualService": virtual_services,
    "DestinationRule": destination_rules,
    "Gateway": gateways,
    "Sidecar": sidecars,
    "PeerAuthentication": peer_authentications,
    "AuthorizationPolicy": authorization_policies,
    "EnvoyFilter": envoy_filters,
    "RequestAuthentication": request_authentications,
    "Telemetry": telemetries,
}


def slots(kind: str) -> st.SearchStrategy[Slot]:
    """A (namespace, name) from the kind's pools."""
    return st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(NAMES[kind]))


def configs() -> st.SearchStrategy[Config]:
    """One object of any kind, anywhere in the pools (a new one, or a change)."""
    return st.one_of(*(make(None) for make in CONFIGS.values()))


@st.composite
def edits(draw: st.DrawFn, held: Sequence[ConfigKey] = ()) -> Edit:
    """One edit, given the keys the store holds: mostly a change or a deletion of one of
    them (so edits meet the caches of what exists), else any object applied."""
    choice = draw(st.sampled_from(("change", "change", "delete", "apply") if held else ("apply",)))
    if choice == "apply":
        return Apply(draw(configs()))
    kind = draw(st.sampled_from(sorted({k.kind for k in held})))  # every kind as likely
    key = draw(st.sampled_from([k for k in held if k.kind == kind]))
    if choice == "delete" or key.kind not in CONFIGS:
        return Delete(key)
    return Apply(draw(CONFIGS[key.kind]((key.namespace, key.name))))
