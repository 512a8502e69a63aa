"""What the xDS servers read from the discovery server, as one Protocol.

A gRPC :class:`~pilothouse.xds.server.connection.Connection` and REST discovery
(:mod:`pilothouse.xds.server.rest`) both generate resources the same way, from the
same current snapshot; :class:`Backend` is that shared view. Each side asks for one
more thing it alone needs (a connection reports what it sent; REST checks readiness
and reads the store revision), declared beside it as an extension of this one.
"""

from __future__ import annotations

from typing import Protocol

from pilothouse.push.cache import ResourceCache
from pilothouse.push.context import PushContext
from pilothouse.registry.endpoint_index import EndpointIndex
from pilothouse.xds.generators.base import Generator


class Backend(Protocol):
    """The current snapshot and the generators that turn it into resources."""

    @property
    def context(self) -> PushContext: ...

    @property
    def endpoints(self) -> EndpointIndex: ...

    @property
    def cache(self) -> ResourceCache: ...

    @property
    def version(self) -> str:
        """The push version: it moves on every push."""
        ...

    def generator(self, type_url: str) -> Generator | None: ...
