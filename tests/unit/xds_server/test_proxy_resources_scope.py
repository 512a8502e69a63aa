"""A connection's generated view looks its proxy's scope up once per PushContext.

Every generator call reads the scope; :class:`ProxyResources` finds it in the context
once and reuses it for every type until the context changes (a push) or the proxy
does (its Pod's labels changed). The backend here is the in-process
:class:`GenerationServer` (store, registry, cache, context) with the server's own
generators; nothing is faked but the absence of a gRPC stream.
"""

from __future__ import annotations

from typing import Any

import pytest

from pilothouse.protocol.type_urls import CDS, LDS, RDS
from pilothouse.push.cache import ResourceCache
from pilothouse.push.context import PushContext
from pilothouse.push.proxy import ProxyIdentity, parse_node
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.xds.generators.base import Generator
from pilothouse.xds.generators.cds import ClusterGenerator
from pilothouse.xds.generators.lds import ListenerGenerator
from pilothouse.xds.generators.rds import RouteGenerator
from pilothouse.xds.server.proxy_resources import ProxyResources
from tests.unit.xds_server.generation_server import GenerationServer

MESH = """\
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: web, namespace: shop}}
spec:
  hosts: [web.shop.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{{name: http, number: {port}, protocol: HTTP}}]
  workloadSelector: {{labels: {{app: web}}}}
"""


class Backend:
    """The :class:`~pilothouse.xds.server.backend.Backend` view of a GenerationServer."""

    def __init__(self, server: GenerationServer) -> None:
        self.server = server
        self._generators: dict[str, Generator] = {
            CDS: ClusterGenerator(),
            LDS: ListenerGenerator(),
            RDS: RouteGenerator(),
        }

    @property
    def context(self) -> PushContext:
        return self.server.context

    @property
    def endpoints(self) -> EndpointIndex:
        return self.server.registry.endpoint_index

    @property
    def cache(self) -> ResourceCache:
        return self.server.cache

    @property
    def version(self) -> str:
        return self.server.context.version

    def generator(self, type_url: str) -> Generator | None:
        return self._generators.get(type_url)


def _proxy(version: str) -> ProxyIdentity:
    return parse_node(
        "sidecar~10.0.0.1~web-1.shop~shop.svc.cluster.local",
        {"NAMESPACE": "shop", "LABELS": {"app": "web", "version": version}},
    )


def test_the_scope_is_looked_up_once_per_context_and_again_after_a_push(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lookups: list[PushContext] = []
    original = PushContext.scope

    def counting(context: PushContext, proxy: ProxyIdentity) -> Any:
        lookups.append(context)
        return original(context, proxy)

    monkeypatch.setattr(PushContext, "scope", counting)
    server = GenerationServer(MESH.format(port=8080))
    resources = ProxyResources(_proxy("v1"), Backend(server))
    first = resources.generate(CDS, None)
    resources.generate(LDS, None)
    resources.generate(RDS, None)
    resources.warming(frozenset(first))
    assert lookups == [server.context]
    assert "outbound|8080||web.shop.svc.cluster.local" in first

    server.push(server.apply(MESH.format(port=9090)))
    pushed = resources.generate(CDS, None)
    assert lookups[1:] == [server.context]
    assert "outbound|9090||web.shop.svc.cluster.local" in pushed
    assert "outbound|8080||web.shop.svc.cluster.local" not in pushed

    resources.reidentify(_proxy("v2"))
    resources.generate(CDS, None)
    assert len(lookups) == 3  # a new identity may fall in another scope
