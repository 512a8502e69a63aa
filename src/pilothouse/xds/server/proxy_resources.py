"""One proxy's view of the current snapshot, as a stream engine's resource source.

The stream engine (:mod:`pilothouse.xds.protocol.stream_engine`) knows nothing of
generators, PushContexts or services; it asks this for a type's resources, the push
version, and which newly added clusters the proxy will warm.

It also times its generator calls per type (with the ``clock`` it is given), for
``pilot_xds_push_time``: a push generates every type before the connection queues any
response, and the connection takes each type's time as it queues that type's
response (:meth:`ProxyResources.generation_time`).
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Mapping

from pilothouse.push.cache import Resource
from pilothouse.push.context import PushContext
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.scope import ProxyScope
from pilothouse.registry.model import Resolution
from pilothouse.xds.builders.names import parse_cluster_name
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.generators.grpc_flavour import is_proxyless
from pilothouse.xds.server.backend import Backend


class ProxyResources:
    """Generates ``proxy``'s resources from ``backend``'s current snapshot."""

    def __init__(
        self,
        proxy: ProxyIdentity,
        backend: Backend,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._proxy = proxy
        self._backend = backend
        self._clock = clock
        self._timed: dict[str, float] = {}
        """Seconds spent generating each type since its last response was queued."""
        # gRPC waits for a route's clusters and endpoints itself before using the route
        # (and sends no new EDS request when a cluster comes back), so it is not warmed.
        self._warms_clusters = not is_proxyless(proxy)
        self._scope: tuple[weakref.ref[PushContext], ProxyScope] | None = None
        """The proxy's scope in the last context it was generated from (a scope is the
        context's answer for the proxy: the same while both are). The context is held
        weakly: a stream no push reaches for a while must not keep an old one alive."""

    def reidentify(self, proxy: ProxyIdentity) -> None:
        """Generate for ``proxy`` from now on (same stream, same flavour)."""
        self._proxy = proxy
        self._scope = None

    def _scope_in(self, context: PushContext) -> ProxyScope:
        """The proxy's scope in ``context``: looked up once per context, not per type."""
        held = self._scope
        if held is not None and held[0]() is context:
            return held[1]
        scope = context.scope(self._proxy)
        self._scope = (weakref.ref(context), scope)
        return scope

    @property
    def version(self) -> str:
        return self._backend.version

    def generate(self, type_url: str, names: frozenset[str] | None) -> Mapping[str, Resource]:
        clock = self._clock
        started = clock()
        try:
            return self._generate(type_url, names)
        finally:
            timed = self._timed
            timed[type_url] = timed.get(type_url, 0.0) + clock() - started

    def generation_time(self, type_url: str) -> float:
        """Seconds spent generating ``type_url`` since its last response was queued."""
        return self._timed.pop(type_url, 0.0)

    def forget_generation_time(self) -> None:
        """Drop generation time that produced no response (nothing had changed)."""
        if self._timed:
            self._timed = {}

    def _generate(self, type_url: str, names: frozenset[str] | None) -> Mapping[str, Resource]:
        generator = self._backend.generator(type_url)
        if generator is None:
            return {}
        context = self._backend.context
        given = GenerationInput(
            proxy=self._proxy,
            scope=self._scope_in(context),
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
        scope = self._scope_in(self._backend.context)
        warming = set()
        for name in added:
            parsed = parse_cluster_name(name)
            service = scope.service(parsed.host) if parsed is not None else None
            if service is not None and service.resolution is Resolution.STATIC:
                warming.add(name)
        return frozenset(warming)
