"""A PeerAuthentication edit: which proxies are pushed, and what changes in their config.

The store, registry, pipeline, context, cache and generators are real; connections are
stand-ins that only tell the pipeline who their proxy is. Each proxy's inbound
listener comes from the WorkloadEntry that is its workload.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from envoy.config.cluster.v3 import cluster_pb2
from envoy.config.listener.v3 import listener_pb2
from google.protobuf import any_pb2

from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.cache import ResourceCache
from pilothouse.push.pipeline import PushPipeline
from pilothouse.push.proxy import ProxyIdentity, parse_node
from pilothouse.registry.controller import ServiceEntryRegistry
from pilothouse.security.identity import Caller, ProvedBy, SpiffeId
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.generators.api import watched_kinds
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.generators.cds import ClusterGenerator
from pilothouse.xds.generators.eds import EndpointGenerator
from pilothouse.xds.generators.lds import ListenerGenerator

MESH = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: web, namespace: shop}
spec:
  hosts: [web.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 8080, name: http, protocol: HTTP}]
  workloadSelector: {labels: {app: web}}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db, namespace: shop}
spec:
  hosts: [db.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 5432, name: tcp, protocol: TCP}]
  workloadSelector: {labels: {app: db}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: web-1, namespace: shop}
spec:
  address: 10.0.0.1
  labels: {app: web, security.istio.io/tlsMode: istio}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: db-1, namespace: shop}
spec:
  address: 10.0.0.2
  labels: {app: db}
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: tool, namespace: other}
spec:
  hosts: [tool.other.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 8080, name: http, protocol: HTTP}]
  workloadSelector: {labels: {app: tool}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: tool-1, namespace: other}
spec:
  address: 10.0.0.3
  labels: {app: tool}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: default, namespace: other}
spec:
  egress: [{hosts: ["./*"]}]
"""

WEB_STRICT = """\
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  mtls: {mode: STRICT}
"""

SHOP_DISABLE = """\
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: shop}
spec:
  mtls: {mode: DISABLE}
"""


class Connection:
    """What the pipeline asks of a connection: its id and its proxy."""

    def __init__(self, connection_id: str, proxy: ProxyIdentity) -> None:
        self.id = connection_id
        self.proxy = proxy

    def watched_types(self) -> list[str]:
        return []

    def watches_any_host(self, hostnames: frozenset[str]) -> bool:
        return False


def proxy(
    name: str, namespace: str, address: str, *, authenticated: bool = True, **labels: str
) -> ProxyIdentity:
    """A sidecar; ``authenticated`` as if its stream proved its service account ``name``."""
    found = parse_node(
        f"sidecar~{address}~{name}.{namespace}~{namespace}.svc.cluster.local",
        {"LABELS": labels},
    )
    if not authenticated:
        return found
    spiffe = SpiffeId("cluster.local", namespace, name.split("-")[0])
    return dataclasses.replace(found, caller=Caller((spiffe,), ProvedBy.CLIENT_CERTIFICATE))


SIDECAR = {"security.istio.io/tlsMode": "istio"}
# web's proxy carries the label its WorkloadEntry has (injection sets it on the pod)
WEB = Connection("web", proxy("web-1", "shop", "10.0.0.1", app="web", **SIDECAR))
DB = Connection("db", proxy("db-1", "shop", "10.0.0.2", app="db"))
TOOL = Connection("tool", proxy("tool-1", "other", "10.0.0.3", app="tool"))


class Stage:
    def __init__(self, extra: str = "", mesh: MeshSettings | None = None) -> None:
        self.store = MemoryStore()
        for config in Loader(SCHEMAS).load_strict(MESH + extra, "mesh.yaml"):
            self.store.apply(config)
        self.store.mark_synced()
        self.registry = ServiceEntryRegistry(self.store, lambda _update: None)
        self.registry.initial_load()
        self.cache = ResourceCache()
        versions = (f"v{n}" for n in itertools.count(1))
        self.pipeline: PushPipeline[Connection] = PushPipeline(
            self.store,
            self.registry.services,
            mesh or MeshSettings(),
            self.cache,
            next_version=lambda: next(versions),
            api_kinds=watched_kinds,
        )
        self.pipeline.start()
        for connection in (WEB, DB, TOOL):
            self.pipeline.connect(connection)

    def apply(self, text: str) -> list[str]:
        """Apply one config and plan its push: the ids of the connections pushed."""
        (config,) = Loader(SCHEMAS).load_strict(text, "edit.yaml")
        self.store.apply(config)
        request = self.pipeline.config_changed(config.key, start=1.0)
        assert request is not None and request.full
        plan = self.pipeline.plan(request)
        assert plan is not None and plan.failed == ()
        return sorted(c.id for c, _ in plan.pushes)

    def generate(self, connection: Connection, generator: Any) -> dict[str, bytes]:
        context = self.pipeline.context
        assert context is not None
        given = GenerationInput(
            proxy=connection.proxy,
            scope=context.scope(connection.proxy),
            context=context,
            endpoints=self.registry.endpoint_index,
            cache=self.cache,
        )
        return {name: r.body for name, r in generator.generate(given).items()}


def unpack(body: bytes, message: Any) -> Any:
    wrapped = any_pb2.Any()
    wrapped.ParseFromString(body)
    assert wrapped.Unpack(message)
    return message


def inbound_transports(listeners: dict[str, bytes], name: str) -> list[str]:
    listener = unpack(listeners[name], listener_pb2.Listener())
    return [chain.filter_chain_match.transport_protocol for chain in listener.filter_chains]


def test_workload_policy_changes_the_inbound_listener_of_the_selected_proxy_only() -> None:
    stage = Stage()
    before = {c.id: stage.generate(c, ListenerGenerator()) for c in (WEB, DB, TOOL)}
    # no policy: PERMISSIVE, mutual TLS or plaintext
    assert inbound_transports(before["web"], "inbound|8080||") == ["tls", "raw_buffer"]
    assert inbound_transports(before["db"], "inbound|5432||") == ["tls", "tls", "raw_buffer"]

    # the policy's namespace is pushed; the other namespace's proxy is not
    assert stage.apply(WEB_STRICT) == ["db", "web"]
    after = {c.id: stage.generate(c, ListenerGenerator()) for c in (WEB, DB, TOOL)}
    assert inbound_transports(after["web"], "inbound|8080||") == ["tls"]
    assert after["web"] != before["web"]
    assert after["db"] == before["db"]
    assert after["tool"] == before["tool"]


def test_namespace_disable_turns_off_auto_mtls_towards_the_namespace() -> None:
    stage = Stage()
    # a client in a third namespace that sees shop's services: their mode is its concern
    cart = Connection("cart", proxy("cart-1", "cart", "10.0.0.9", app="cart"))
    stage.pipeline.connect(cart)
    cds = stage.generate(WEB, ClusterGenerator())
    web_cluster = unpack(cds["outbound|8080||web.shop.svc.cluster.local"], cluster_pb2.Cluster())
    assert [m.name for m in web_cluster.transport_socket_matches] == [
        "tlsMode-istio",
        "tlsMode-disabled",
    ]
    tool_before = stage.generate(TOOL, ClusterGenerator())

    assert stage.apply(SHOP_DISABLE) == ["cart", "db", "web"]
    cds = stage.generate(WEB, ClusterGenerator())
    web_cluster = unpack(cds["outbound|8080||web.shop.svc.cluster.local"], cluster_pb2.Cluster())
    assert not web_cluster.transport_socket_matches
    assert not web_cluster.HasField("transport_socket")
    listeners = stage.generate(DB, ListenerGenerator())
    assert inbound_transports(listeners, "inbound|5432||") == [""]
    assert stage.generate(TOOL, ClusterGenerator()) == tool_before
    cart_cds = stage.generate(cart, ClusterGenerator())
    cart_view = unpack(cart_cds["outbound|8080||web.shop.svc.cluster.local"], cluster_pb2.Cluster())
    assert not cart_view.transport_socket_matches


def test_eds_marks_the_sidecar_endpoints_only() -> None:
    stage = Stage()
    endpoints = stage.generate(WEB, EndpointGenerator())
    assert b"envoy.transport_socket_match" in endpoints["outbound|8080||web.shop.svc.cluster.local"]
    assert (
        b"envoy.transport_socket_match" not in endpoints["outbound|5432||db.shop.svc.cluster.local"]
    )


SECOND_WEB = """\
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: web-2, namespace: shop}
spec:
  address: 10.0.0.4
  labels: {app: web, security.istio.io/tlsMode: istio, version: v2}
"""

V2_PORT_DISABLE = """\
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: web-v2, namespace: shop}
spec:
  selector: {matchLabels: {version: v2}}
  mtls: {mode: STRICT}
  portLevelMtls: {8080: {mode: DISABLE}}
"""


def test_workloads_of_one_service_in_one_context_keep_their_own_modes() -> None:
    """Inbound listeners are made once per port and address length and shared: the mode
    must be part of what they are shared by."""
    stage = Stage(SECOND_WEB)
    second = Connection(
        "web-2", proxy("web-2", "shop", "10.0.0.4", app="web", version="v2", **SIDECAR)
    )
    stage.pipeline.connect(second)
    assert stage.apply(V2_PORT_DISABLE) == ["db", "web", "web-2"]
    first_listeners = stage.generate(WEB, ListenerGenerator())
    second_listeners = stage.generate(second, ListenerGenerator())
    assert inbound_transports(first_listeners, "inbound|8080||") == ["tls", "raw_buffer"]
    assert inbound_transports(second_listeners, "inbound|8080||") == [""]


def test_a_proxy_without_a_proved_identity_gets_nothing_that_waits_for_certificates() -> None:
    """SDS serves ``default`` only to authenticated streams: an unauthenticated proxy gets
    plaintext clusters and plaintext-only PERMISSIVE ports; STRICT still refuses plaintext."""
    stage = Stage()
    anonymous = Connection(
        "anonymous",
        proxy("web-1", "shop", "10.0.0.1", authenticated=False, app="web", **SIDECAR),
    )
    stage.pipeline.connect(anonymous)
    cds = stage.generate(anonymous, ClusterGenerator())
    assert all(b"tlsMode-istio" not in body for body in cds.values())
    assert (
        b"tlsMode-istio"
        in stage.generate(WEB, ClusterGenerator())["outbound|8080||web.shop.svc.cluster.local"]
    )
    listeners = stage.generate(anonymous, ListenerGenerator())
    assert inbound_transports(listeners, "inbound|8080||") == [""]
    stage.apply(WEB_STRICT)
    listeners = stage.generate(anonymous, ListenerGenerator())
    assert inbound_transports(listeners, "inbound|8080||") == ["tls"]


def test_without_auto_mtls_clusters_stay_plaintext_and_inbound_keeps_its_mode() -> None:
    stage = Stage(mesh=MeshSettings(enable_auto_mtls=False))
    cds = stage.generate(WEB, ClusterGenerator())
    assert all(b"tlsMode-istio" not in body for body in cds.values())
    listeners = stage.generate(WEB, ListenerGenerator())
    assert inbound_transports(listeners, "inbound|8080||") == ["tls", "raw_buffer"]


WEB_DISABLE = """\
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  mtls: {mode: DISABLE}
"""

WEB_PORT_DISABLE = """\
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  mtls: {mode: STRICT}
  portLevelMtls: {8080: {mode: DISABLE}}
"""


def test_a_workload_that_disables_mtls_is_reached_in_plaintext() -> None:
    """istiod's mTLS checker: the cluster keeps auto-mTLS (the namespace allows it), but
    the endpoint of a workload whose policy is DISABLE on its port is not marked."""
    stage = Stage()
    web = "outbound|8080||web.shop.svc.cluster.local"
    marked = b"envoy.transport_socket_match"
    assert marked in stage.generate(WEB, EndpointGenerator())[web]
    assert stage.apply(WEB_DISABLE) == ["db", "web"]
    assert marked not in stage.generate(WEB, EndpointGenerator())[web]
    cds = stage.generate(WEB, ClusterGenerator())
    assert b"tlsMode-istio" in cds[web]
    # port-level: the WorkloadEntry has no port of its own, so 8080 is its port
    stage.apply(WEB_PORT_DISABLE)
    assert marked not in stage.generate(WEB, EndpointGenerator())[web]
    stage.apply(WEB_STRICT)
    assert marked in stage.generate(WEB, EndpointGenerator())[web]
