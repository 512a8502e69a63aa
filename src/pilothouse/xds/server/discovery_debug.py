"""The debug interface (:mod:`pilothouse.xds.server.debug_view`) over a discovery server.

:class:`DiscoveryDebugView` wraps a :class:`~pilothouse.xds.server.discovery.DiscoveryServer`
and :class:`StreamDebug` one of its connections, by composition: each member reads or
sets what the server already offers, so admin/ depends on the interface and this module
is the one place that knows how the server holds it. ``config_dump`` renders resources
with the REST endpoint's JSON cache when ``serve`` hands it in (one cache for both).
``syncz`` names, beside a type's NACK, the EnvoyFilters that patch that type for the
proxy (``envoyFilters``), so a rejection their patches may have caused says so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pilothouse.config.model import Config
from pilothouse.metrics.histogram import Histogram, HistogramVec
from pilothouse.protocol.subscriptions import Subscription
from pilothouse.push.cache import Resource, ResourceCache
from pilothouse.push.context import PushContext
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.request import PushRequest
from pilothouse.registry.model import Service
from pilothouse.security.wasm_modules import WasmCacheState
from pilothouse.settings import DebounceSettings, RestSettings, XdsSettings
from pilothouse.sources.events import ConfigStore
from pilothouse.xds.server.config_dump import config_dump_json, dump_types, proxy_dump
from pilothouse.xds.server.connection import Connection, ConnectionStats
from pilothouse.xds.server.debug_view import DebugConnection
from pilothouse.xds.server.discovery import DiscoveryServer
from pilothouse.xds.server.impact import predict
from pilothouse.xds.server.proxies import find_connection, proxies
from pilothouse.xds.server.rest import ResourceJsonCache
from pilothouse.xds.server.stats import XdsStats
from pilothouse.xds.server.syncz import proxy_syncs, syncz_entry


class StreamDebug:
    """One connection as :class:`~pilothouse.xds.server.debug_view.DebugConnection`."""

    __slots__ = ("_connection",)

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    @property
    def id(self) -> str:
        return self._connection.id

    @property
    def peer(self) -> str:
        return self._connection.peer

    @property
    def proxy(self) -> ProxyIdentity:
        return self._connection.proxy

    @property
    def connected_at(self) -> float:
        return self._connection.connected_at

    @property
    def delta(self) -> bool:
        return self._connection.delta

    @property
    def stats(self) -> ConnectionStats:
        return self._connection.stats

    def watched_types(self) -> list[str]:
        return self._connection.watched_types()

    def watched_names(self, type_url: str) -> frozenset[str] | None:
        return self._connection.watched_names(type_url)

    def wants(self, type_url: str) -> Subscription | None:
        return self._connection.engine.session.wants(type_url)

    def acked(self) -> Mapping[str, Mapping[str, Resource]]:
        return self._connection.engine.acked()

    def close(self) -> None:
        self._connection.close()


def _streams(connections: Iterable[Connection]) -> list[DebugConnection]:
    return [StreamDebug(connection) for connection in connections]


class DiscoveryDebugView:
    """:class:`~pilothouse.xds.server.debug_view.DebugView` over ``discovery``;
    ``render`` is one resource's JSON for ``config_dump`` (a cache of its own unless
    given: the REST endpoint's, in ``serve``)."""

    def __init__(
        self, discovery: DiscoveryServer, render: Callable[[Resource], str] | None = None
    ) -> None:
        self._discovery = discovery
        self._render = (
            render
            if render is not None
            else ResourceJsonCache(RestSettings().json_cache_entries).render
        )

    @property
    def settings(self) -> XdsSettings:
        return self._discovery.settings

    @property
    def replica(self) -> str:
        return self._discovery.identity.replica

    @property
    def store(self) -> ConfigStore:
        return self._discovery.store

    def ready(self) -> bool:
        return self._discovery.ready()

    def connections(self) -> list[DebugConnection]:
        return _streams(self._discovery.connections.values())

    def proxies(self) -> list[DebugConnection]:
        return _streams(proxies(self._discovery.connections.values()))

    def find_connection(self, name: str) -> DebugConnection | None:
        found = find_connection(self._discovery.connections, name)
        return StreamDebug(found) if found is not None else None

    def syncz(self, namespace: str = "") -> list[dict[str, Any]]:
        discovery = self._discovery
        syncs = proxy_syncs(discovery.connections.values(), self.replica, namespace)
        entries = [syncz_entry(sync) for sync in syncs]
        if discovery.ready():
            filters = discovery.context.envoy_filters
            for sync, entry in zip(syncs, entries, strict=True):
                for type_url, found in entry["resources"].items():
                    # a NACK of a type EnvoyFilters patch for this proxy names them
                    if found.get("lastError"):
                        named = filters.patching(sync.proxy, type_url)
                        if named:
                            found["envoyFilters"] = named
        return entries

    def dump_types(self, types: str, *, include_eds: bool) -> tuple[str, ...]:
        return dump_types(types, include_eds=include_eds)

    def config_dump(self, connection: DebugConnection, types: tuple[str, ...]) -> dict[str, Any]:
        dump = proxy_dump(connection.proxy, connection.wants, self._discovery, types)
        return config_dump_json(dump, self._render)

    def services(self) -> list[Service]:
        return list(self._discovery.registry.services())

    def endpoint_shards(self) -> dict[str, Any]:
        return self._discovery.endpoints.dump()

    @property
    def context(self) -> PushContext:
        return self._discovery.context

    @property
    def version(self) -> str:
        return self._discovery.version

    @property
    def cache(self) -> ResourceCache:
        return self._discovery.cache

    @property
    def stats(self) -> XdsStats:
        return self._discovery.stats

    def pending_pushes(self) -> int:
        return self._discovery.pending_pushes()

    def rejects(self) -> dict[str, int]:
        return self._discovery.rejects()

    def expired_nonces(self) -> dict[str, int]:
        return self._discovery.expired_nonces()

    def histograms(self) -> Iterable[Histogram | HistogramVec]:
        return self._discovery.metrics.histograms()

    def refused(self) -> Mapping[str, int]:
        return self._discovery.admission.snapshot().rejected

    def wasm_cache(self) -> WasmCacheState:
        return self._discovery.wasm_modules.state()

    def refusals(self) -> dict[str, Any]:
        return self._discovery.admission.refusals.view()

    async def impact(self, candidates: Sequence[Config], timeout: float) -> dict[str, Any]:
        report = await predict(self._discovery, candidates, timeout=timeout)
        return report.view()

    def request_push(self, request: PushRequest) -> None:
        self._discovery.request_push(request)

    def set_debounce(self, debounce: DebounceSettings) -> None:
        self._discovery.set_debounce(debounce)

    @property
    def push_throttle(self) -> int:
        return self._discovery.push_throttle

    def set_push_throttle(self, configured: int) -> int:
        return self._discovery.set_push_throttle(configured)
