"""One proxy's view of the current snapshot, as a stream engine's resource source.

The stream engine (:mod:`pilothouse.xds.protocol.stream_engine`) knows nothing of
generators, PushContexts or services; it asks this for a type's resources, the push
version, and which newly added clusters the proxy will warm.
"""

from __future__ import annotations

from collections.abc import Mapping

from pilothouse.push.cache import Resource
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.registry.model import Resolution
from pilothouse.xds.builders.names import parse_cluster_name
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.generators.grpc_flavour import is_proxyless
from pilothouse.xds.server.backend import Backend


class ProxyResources:
    """Generates ``proxy``'s resources from ``backend``'s current snapshot."""

    def __init__(self, proxy: ProxyIdentity, backend: Backend) -> None:
        self._proxy = proxy
        self._backend = backend
        # gRPC waits for a route's clusters and endpoints itself before using the route
        # (and sends no new EDS request when a cluster comes back), so it is not warmed.
        self._warms_clusters = not is_proxyless(proxy)

    @property
    def version(self) -> str:
        return self._backend.version

    def generate(self, type_url: str, names: frozenset[str] | None) -> Mapping[str, Resource]:
        generator = self._backend.generator(type_url)
        if generator is None:
            return {}
        context = self._backend.context
        given = GenerationInput(
            proxy=self._proxy,
            scope=context.scope(self._proxy),
            context=context,
            endpoints=self._backend.endpoints,
            cache=self._backend.cache,
            names=names,
        )
        return generator.generate(given)

    def warming(self, added: frozenset[str]) -> frozenset[str]:
        """Added clusters of STATIC services: EDS clusters, which Envoy warms."""
        if not self._warms_clusters:
            return frozenset()
        scope = self._backend.context.scope(self._proxy)
        warming = set()
        for name in added:
            parsed = parse_cluster_name(name)
            service = scope.service(parsed.host) if parsed is not None else None
            if service is not None and service.resolution is Resolution.STATIC:
                warming.add(name)
        return frozenset(warming)
