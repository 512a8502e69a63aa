"""Which flavour of resources a proxy gets: Envoy's or proxyless gRPC's.

A proxy gets the gRPC flavour when its node metadata says ``GENERATOR: grpc``
(Istio's convention, written by ``pilothouse bootstrap --grpc``) or when its node
shows it is a gRPC library: gRPC's xDS clients name themselves in
``node.user_agent_name`` (``gRPC C-core ...``, ``gRPC Java``, ``gRPC Go``), which is
the first thing a proxyless client's requests carry.

:class:`ByFlavour` is a generator for one type URL that hands each request to the
Envoy or the gRPC generator of that type; the discovery server registers one per
type for which the flavours differ (CDS, LDS, RDS; EDS is shared).
"""

from __future__ import annotations

from pilothouse.push.proxy import GeneratorFamily, ProxyIdentity
from pilothouse.xds.generators.base import GenerationInput, Generator, Resources


def is_proxyless(proxy: ProxyIdentity) -> bool:
    """Whether ``proxy`` is a proxyless gRPC process."""
    if proxy.generator is GeneratorFamily.GRPC:
        return True
    return proxy.generator is GeneratorFamily.ENVOY and proxy.user_agent.lower().startswith("grpc")


class ByFlavour:
    """Generates with ``grpc`` for proxyless gRPC proxies and with ``envoy`` for the rest."""

    def __init__(self, envoy: Generator, grpc: Generator) -> None:
        if envoy.type_url != grpc.type_url:
            raise ValueError(f"flavours of different types: {envoy.type_url}, {grpc.type_url}")
        self.type_url = envoy.type_url
        self.envoy = envoy
        self.grpc = grpc

    def generate(self, given: GenerationInput) -> Resources:
        chosen = self.grpc if is_proxyless(given.proxy) else self.envoy
        return chosen.generate(given)
