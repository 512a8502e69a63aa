"""What every generator receives and returns.

A generator turns a proxy's view of the mesh into resources of one type URL. It
returns :class:`~pilothouse.push.cache.Resource` values (name, content hash, ``Any``
bytes) so the server can assemble responses by concatenating bytes. ``names`` is
None for a wildcard watch (every resource) and a set for a named watch. ``rest`` is
set when the proxy polls REST-JSON instead of holding an ADS stream: resources that
point at other resources (a cluster's EDS, a listener's RDS) must then point at REST.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple, Protocol

from pilothouse.push.cache import Resource, ResourceCache
from pilothouse.push.context import PushContext
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.scope import ProxyScope
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.xds.builders.cluster import RestPolling

Resources = Mapping[str, Resource]


class GenerationInput(NamedTuple):
    """Everything a generator may read for one proxy and one type (a named tuple: one
    is made per type per push, and a frozen dataclass costs more to make)."""

    proxy: ProxyIdentity
    scope: ProxyScope
    context: PushContext
    endpoints: EndpointIndex
    cache: ResourceCache
    names: frozenset[str] | None = None
    rest: RestPolling | None = None


class Generator(Protocol):
    """Builds the resources of one type URL."""

    type_url: str

    def generate(self, given: GenerationInput) -> Resources: ...
