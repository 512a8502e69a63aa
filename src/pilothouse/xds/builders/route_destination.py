"""Route destinations → cluster names: the resolver the route builders take.

A VirtualService names a destination by host (short or fully qualified), subset
and an optional port.  The route builders turn that into an Istio cluster name
(``outbound|<port>|<subset>|<fqdn>``) through a :class:`DestinationResolver`
the caller supplies, so that they never read a registry themselves.

- Short names are read relative to the namespace of the VirtualService that
  wrote them (``reviews`` in ``bookinfo`` → ``reviews.bookinfo.svc.cluster.local``)
  *before* the resolver is asked; the resolver always sees a fully qualified host.
- The resolver gets ``port=None`` when the destination names no port; it then
  picks the service's only port, else the port being built.
  :func:`service_resolver` does exactly that from a ``{host: ports}`` table.
- An unknown host (the resolver answers ``None``) still gets a cluster named
  after the host, ``outbound|<port or current port>|<subset>|<host>``, as istiod
  does (``GetDestinationCluster`` with no service): nothing is dropped, and the
  request ends in Envoy's "cluster not found" 503 unless a bootstrap cluster of
  that name exists.  We do not substitute ``BlackHoleCluster``: istiod leaves that
  check to callers that want it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as vs_pb2
from pilothouse.push.hostnames import DEFAULT_DOMAIN_SUFFIX, resolve_host
from pilothouse.xds.builders.names import outbound_cluster_name


@dataclass(frozen=True, slots=True)
class ResolvedDestination:
    """A destination the registry knows: its cluster name, service host and port."""

    cluster: str
    hostname: str
    port: int


class DestinationResolver(Protocol):
    """``(fqdn, subset, port or None) → ResolvedDestination | None`` (``None``: unknown host)."""

    def __call__(
        self, host: str, subset: str, port: int | None, /
    ) -> ResolvedDestination | None: ...


def service_resolver(
    ports_by_host: Mapping[str, Sequence[int]], *, current_port: int
) -> DestinationResolver:
    """A resolver over a ``{fqdn: service ports}`` table, for the listener port ``current_port``.

    Port choice, as istiod: the destination's port, else the service's only port,
    else ``current_port``.
    """

    def resolve(host: str, subset: str, port: int | None, /) -> ResolvedDestination | None:
        ports = ports_by_host.get(host)
        if ports is None:
            return None
        if port is None:
            port = ports[0] if len(ports) == 1 else current_port
        return ResolvedDestination(outbound_cluster_name(host, port, subset), host, port)

    return resolve


def destination_port(destination: vs_pb2.Destination) -> int | None:
    """The port a destination names, or ``None``."""
    if destination.HasField("port") and destination.port.number:
        return int(destination.port.number)
    return None


def destination_cluster(
    destination: vs_pb2.Destination,
    namespace: str,
    resolver: DestinationResolver,
    *,
    current_port: int,
    domain_suffix: str = DEFAULT_DOMAIN_SUFFIX,
) -> str:
    """The cluster name for ``destination`` written in a config of ``namespace``."""
    host = resolve_host(destination.host, namespace, domain_suffix)
    port = destination_port(destination)
    resolved = resolver(host, destination.subset, port)
    if resolved is not None:
        return resolved.cluster
    return outbound_cluster_name(host, current_port if port is None else port, destination.subset)
