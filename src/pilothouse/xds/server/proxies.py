"""Which connections are proxies, and finding one by the name ``istioctl`` uses.

Every stream is a connection, but not every connection is a proxy: ``istioctl`` (and
``pilothouse proxy-status`` over xDS) asks for the debug types with ``GENERATOR=event``,
and MCP-over-xDS consumers (another pilothouse, istiod) say ``GENERATOR=api``. istiod's
syncz lists only connections whose metadata carries ``PROXY_CONFIG``; pilothouse's
own bootstraps do not set it, so a connection counts as a proxy when it is neither of
those and watches at least one type (a client that only asks debug questions watches
none: those are answered outside the stream engine).

A proxy is named by its id (``pod.namespace``, istioctl's NAME), its full node id, or
its connection id. Two connections may carry one name while an old stream drains; the
most recent one is the proxy as it is now.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol, TypeVar

from pilothouse.push.proxy import GeneratorFamily, ProxyIdentity

_NOT_PROXIES = frozenset({GeneratorFamily.EVENT, GeneratorFamily.API})


class Named(Protocol):
    """What these rules read of a connection."""

    @property
    def id(self) -> str: ...

    @property
    def proxy(self) -> ProxyIdentity: ...

    @property
    def connected_at(self) -> float: ...

    def watched_types(self) -> list[str]: ...


C = TypeVar("C", bound=Named)


def is_proxy(connection: Named) -> bool:
    """Whether ``connection`` is a proxy (not a debug client nor an MCP consumer)."""
    if connection.proxy.generator in _NOT_PROXIES:
        return False
    return bool(connection.watched_types())


def proxies(connections: Iterable[C]) -> list[C]:
    """The proxies among ``connections``, one per proxy id (the newest), by id."""
    newest: dict[str, C] = {}
    for connection in connections:
        if not is_proxy(connection):
            continue
        name = connection.proxy.id
        seen = newest.get(name)
        if seen is None or connection.connected_at >= seen.connected_at:
            newest[name] = connection
    return [newest[name] for name in sorted(newest)]


def find_connection(connections: Mapping[str, C], name: str) -> C | None:
    """The newest connection named ``name`` (proxy id, node id or connection id)."""
    found = connections.get(name)
    if found is not None:
        return found
    chosen: C | None = None
    for connection in connections.values():
        proxy = connection.proxy
        if name not in (proxy.id, proxy.node_id):
            continue
        if chosen is None or connection.connected_at >= chosen.connected_at:
            chosen = connection
    return chosen
