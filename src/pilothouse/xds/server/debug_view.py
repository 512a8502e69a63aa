"""What admin/ reads of the running xDS server, and the few things it sets: one interface.

The admin app, ``/debug/*``, ``/metrics``, the admin API and the push knobs see the
discovery server only through :class:`DebugView`, and each stream only through
:class:`DebugConnection`. :class:`~pilothouse.xds.server.discovery_debug.DiscoveryDebugView`
implements both over a :class:`~pilothouse.xds.server.discovery.DiscoveryServer`, by
composition; ``serve`` (and a test) builds it and hands it to admin/. This module holds
the interfaces and :func:`rfc3339`, the time format every debug view writes, and nothing
that serves: admin/ imports no other part of ``xds/server``.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from pilothouse.config.model import Config
from pilothouse.metrics.histogram import Histogram, HistogramVec
from pilothouse.protocol.subscriptions import Subscription
from pilothouse.push.cache import Resource, ResourceCache
from pilothouse.push.context import PushContext
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.request import PushRequest
from pilothouse.registry.model import Service
from pilothouse.security.wasm_modules import WasmCacheState
from pilothouse.settings import DebounceSettings, XdsSettings
from pilothouse.sources.events import ConfigStore
from pilothouse.xds.server.stats import XdsStats


def rfc3339(moment: float) -> str:
    """``moment`` (epoch seconds) as RFC 3339 in UTC, as Go's JSON writes times."""
    stamp = datetime.datetime.fromtimestamp(moment, datetime.UTC)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class StreamFigures(Protocol):
    """What one stream has sent so far."""

    @property
    def responses(self) -> Mapping[str, int]:
        """Responses written, by type URL."""
        ...

    @property
    def resources_sent(self) -> Mapping[str, int]:
        """Resources sent, by type URL."""
        ...

    @property
    def bytes_sent(self) -> int: ...


class DebugConnection(Protocol):
    """One xDS stream as the debug views read it (and the admin API ends it)."""

    @property
    def id(self) -> str: ...

    @property
    def peer(self) -> str: ...

    @property
    def proxy(self) -> ProxyIdentity: ...

    @property
    def connected_at(self) -> float:
        """Wall-clock time the stream was accepted."""
        ...

    @property
    def delta(self) -> bool: ...

    @property
    def stats(self) -> StreamFigures: ...

    def watched_types(self) -> list[str]: ...

    def watched_names(self, type_url: str) -> frozenset[str] | None:
        """The names watched of ``type_url``; None for a wildcard watch."""
        ...

    def wants(self, type_url: str) -> Subscription | None:
        """The stream's subscription to ``type_url``, None when it watches none."""
        ...

    def acked(self) -> Mapping[str, Mapping[str, Resource]]:
        """Per type, the resources the proxy acknowledged and still subscribes to."""
        ...

    def close(self) -> None:
        """End the stream (the proxy reconnects as after any lost stream)."""
        ...


class DebugView(Protocol):
    """The discovery server as admin/ reads it, and the knobs admin/ sets on it."""

    # -- who and how this replica serves ------------------------------------------------

    @property
    def settings(self) -> XdsSettings:
        """The xDS settings in force (run-time knob changes included)."""
        ...

    @property
    def replica(self) -> str:
        """This replica's name (``control_plane.identifier`` of every response)."""
        ...

    @property
    def store(self) -> ConfigStore: ...

    def ready(self) -> bool:
        """True once every source has synced and the first PushContext exists."""
        ...

    # -- connections -------------------------------------------------------------------

    def connections(self) -> list[DebugConnection]:
        """Every stream open now, in the order they connected."""
        ...

    def proxies(self) -> list[DebugConnection]:
        """The proxies among the streams (not debug clients nor MCP consumers), one per
        proxy id (the newest), by id."""
        ...

    def find_connection(self, name: str) -> DebugConnection | None:
        """The newest stream named ``name`` (proxy id, node id or connection id)."""
        ...

    def syncz(self, namespace: str = "") -> list[dict[str, Any]]:
        """istiod's ``/debug/syncz`` entries of the proxies (in ``namespace`` if given)."""
        ...

    def dump_types(self, types: str, *, include_eds: bool) -> tuple[str, ...]:
        """The type URLs a ``types=cds,lds,...`` query names, in dump order; raises
        ValueError naming what is wrong with it."""
        ...

    def config_dump(self, connection: DebugConnection, types: tuple[str, ...]) -> dict[str, Any]:
        """What this replica would send ``connection``'s proxy of ``types``, as the JSON
        of Envoy's ``/config_dump``."""
        ...

    # -- the model and the push ----------------------------------------------------------

    def services(self) -> list[Service]: ...

    def endpoint_shards(self) -> dict[str, Any]:
        """Endpoints by hostname, namespace and shard (``/debug/endpointShardz``)."""
        ...

    @property
    def context(self) -> PushContext:
        """The current PushContext (only once :meth:`ready`)."""
        ...

    @property
    def version(self) -> str: ...

    @property
    def cache(self) -> ResourceCache: ...

    @property
    def stats(self) -> XdsStats: ...

    def pending_pushes(self) -> int: ...

    def rejects(self) -> dict[str, int]:
        """NACKs received so far, by istiod's type label (closed and open streams')."""
        ...

    def expired_nonces(self) -> dict[str, int]: ...

    def histograms(self) -> Iterable[Histogram | HistogramVec]:
        """The push distributions, in exposition order."""
        ...

    def refused(self) -> Mapping[str, int]:
        """Streams refused since start, by reason."""
        ...

    def wasm_cache(self) -> WasmCacheState:
        """The WasmPlugin modules kept (count, bytes, budget, drops) and fetched by result."""
        ...

    def refusals(self) -> dict[str, Any]:
        """The refusal record as ``/debug/refusals`` serves it."""
        ...

    async def impact(self, candidates: Sequence[Config], timeout: float) -> dict[str, Any]:
        """What applying ``candidates`` would push to the proxies connected here (the
        JSON of ``/debug/impact``, :mod:`pilothouse.xds.server.impact`); changes
        nothing. Raises :class:`~pilothouse.push.impact.NotPredicted` for candidates
        whose impact is not computed, LookupError before the first PushContext."""
        ...

    # -- what admin sets ---------------------------------------------------------------

    def request_push(self, request: PushRequest) -> None: ...

    def set_debounce(self, debounce: DebounceSettings) -> None: ...

    @property
    def push_throttle(self) -> int:
        """Concurrent pushes allowed now (the automatic default resolved)."""
        ...

    def set_push_throttle(self, configured: int) -> int: ...
