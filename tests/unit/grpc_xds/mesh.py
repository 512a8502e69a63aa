"""A mesh in memory for the gRPC generator tests: YAML in, decoded resources out.

:class:`Mesh` loads Istio YAML into a MemoryStore, derives services and endpoints with
the ServiceEntry registry, builds a PushContext, and runs a generator for a proxy the
way a connection does.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import any_pb2

from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.cache import ResourceCache
from pilothouse.push.context import build_context
from pilothouse.push.proxy import ProxyIdentity, parse_node
from pilothouse.registry.controller import ServiceEntryRegistry
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.generators.base import GenerationInput, Generator

GRPC_NODE = "sidecar~10.0.0.9~client-1.default~default.svc.cluster.local"


def grpc_proxy(namespace: str = "default", **metadata: Any) -> ProxyIdentity:
    """A proxyless client in ``namespace`` (``GENERATOR: grpc``)."""
    node = f"sidecar~10.0.0.9~client-1.{namespace}~{namespace}.svc.cluster.local"
    return parse_node(node, {"GENERATOR": "grpc", "NAMESPACE": namespace, **metadata})


GREETER = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: greeter, namespace: default}
spec:
  hosts: [greeter.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{name: grpc, number: 50051, protocol: GRPC}]
  endpoints:
  - {address: 10.0.0.1, ports: {grpc: 9001}, labels: {version: v1}, locality: eu/a}
  - {address: 10.0.0.2, ports: {grpc: 9002}, labels: {version: v2}}
"""

SUBSETS = """\
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: greeter, namespace: default}
spec:
  host: greeter.default.svc.cluster.local
  subsets:
  - {name: v1, labels: {version: v1}}
  - {name: v2, labels: {version: v2}}
"""

FQDN_TARGET = "greeter.default.svc.cluster.local:50051"
CLUSTER = "outbound|50051||greeter.default.svc.cluster.local"
V1 = "outbound|50051|v1|greeter.default.svc.cluster.local"
V2 = "outbound|50051|v2|greeter.default.svc.cluster.local"


class Mesh:
    """The services, rules and routes of some YAML, ready to generate from."""

    def __init__(self, text: str, mesh: MeshSettings | None = None) -> None:
        self.store = MemoryStore("test")
        for config in Loader(SCHEMAS, source="test").load_strict(text, "mesh.yaml"):
            self.store.apply(config)
        self.store.mark_synced()
        self.registry = ServiceEntryRegistry(self.store, lambda update: None)
        self.registry.initial_load()
        self.context = build_context(
            self.store, self.registry.services, mesh or MeshSettings(), "v1"
        )
        self.cache = ResourceCache()

    def given(
        self, names: frozenset[str] | set[str] | None, proxy: ProxyIdentity | None = None
    ) -> GenerationInput:
        chosen = proxy if proxy is not None else grpc_proxy()
        return GenerationInput(
            proxy=chosen,
            scope=self.context.scope(chosen),
            context=self.context,
            endpoints=self.registry.endpoint_index,
            cache=self.cache,
            names=frozenset(names) if names is not None else None,
        )

    def generate(
        self,
        generator: Generator,
        names: frozenset[str] | set[str] | None,
        message: type[Any],
        proxy: ProxyIdentity | None = None,
    ) -> dict[str, Any]:
        """``{name: resource}`` decoded into ``message``."""
        out = {}
        for name, resource in generator.generate(self.given(names, proxy)).items():
            packed = any_pb2.Any.FromString(resource.body)
            decoded = message()
            assert packed.Unpack(decoded), packed.type_url
            assert decoded.name == name or getattr(decoded, "cluster_name", None) == name
            out[name] = decoded
        return out
