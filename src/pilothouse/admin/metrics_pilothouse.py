"""pilothouse's own ``pilothouse_*`` metrics: cache, config sources, refused streams, Wasm.

Like the ``pilot_*`` collector, these read plain counters and states when ``/metrics``
is scraped and cost the push path nothing. They follow Prometheus's naming
conventions (counters exposed with ``_total``).

:class:`AdmissionRejections` sums any number of snapshot sources, each a callable
returning counts by reason, so a component that refuses streams for a reason of its
own (say, an admission controller's ``rate_limited`` and ``max_connections``) is
counted by one more ``add(component.rejections)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Protocol, runtime_checkable

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from pilothouse.metrics.families import counter, gauge
from pilothouse.push.cache import ResourceCache
from pilothouse.security.wasm_modules import WasmCacheState
from pilothouse.sources.availability import ReportsAvailability

RejectionCounts = Callable[[], Mapping[str, int]]
"""A snapshot of streams refused so far, by reason."""


class AdmissionRejections(Collector):
    """``pilothouse_xds_admission_rejections_total{reason}``: xDS streams refused before
    they started, summed over every source of counts."""

    def __init__(self, *sources: RejectionCounts) -> None:
        self._sources = list(sources)

    def add(self, source: RejectionCounts) -> None:
        """Count ``source``'s rejections too."""
        self._sources.append(source)

    def collect(self) -> Iterator[Metric]:
        totals: dict[str, int] = {}
        for source in self._sources:
            for reason, count in source().items():
                totals[reason] = totals.get(reason, 0) + count
        yield counter(
            "pilothouse_xds_admission_rejections",
            "xDS streams refused before they started, by reason (rate_limited: the rate "
            "limit; max_connections: the connection limit; not_ready: config not synced "
            "yet; bad_node: missing or malformed node; bad_request: a first message that "
            "is not a discovery request).",
            totals,
            "reason",
        )


class WasmModuleCollector(Collector):
    """The Wasm module cache: ``pilothouse_wasm_module_fetches_total{result}`` (modules
    fetched, ``ok``, or not kept: ``checksum_mismatch``, ``not_wasm``, ``fetch_failure``,
    ``refused``), ``wasm_cache_entries`` (istio-agent's name for the modules its cache
    holds) and ``pilothouse_wasm_cache_*`` (bytes held, the budget, drops, over it)."""

    def __init__(self, state: Callable[[], WasmCacheState]) -> None:
        self._state = state

    def collect(self) -> Iterator[Metric]:
        state = self._state()
        yield counter(
            "pilothouse_wasm_module_fetches",
            "WasmPlugin module fetches by result: ok, checksum_mismatch (the module does not "
            "hash to the plugin's sha256), not_wasm, fetch_failure, refused (the address "
            "policy). A plugin whose module is not kept keeps its last good one.",
            state.fetches,
            "result",
        )
        yield gauge("wasm_cache_entries", "Wasm modules kept in the cache.", state.entries)
        yield gauge(
            "pilothouse_wasm_cache_bytes", "Bytes of the Wasm modules kept.", state.bytes_held
        )
        yield gauge(
            "pilothouse_wasm_cache_budget_bytes",
            "The byte budget of the Wasm modules kept (PILOTHOUSE_WASM_CACHE_BYTES).",
            state.budget,
        )
        yield counter(
            "pilothouse_wasm_cache_evictions",
            "Wasm modules dropped to keep within the budget (none a served WasmPlugin names).",
            state.evictions,
        )
        yield gauge(
            "pilothouse_wasm_cache_over_budget",
            "1 while the modules kept exceed the budget with only modules still served "
            "(none can be dropped), else 0.",
            int(state.over_budget),
        )


class ResourceCacheCollector(Collector):
    """``pilothouse_resource_cache_*``: the generated-resource cache's counters and size."""

    def __init__(self, cache: ResourceCache) -> None:
        self._cache = cache

    def collect(self) -> Iterator[Metric]:
        stats = self._cache.stats
        yield counter(
            "pilothouse_resource_cache_hits",
            "Generated resources found in the resource cache.",
            stats.hits,
        )
        yield counter(
            "pilothouse_resource_cache_misses",
            "Generated resources not in the resource cache (built and encoded).",
            stats.misses,
        )
        yield counter(
            "pilothouse_resource_cache_evictions",
            "Resource cache entries dropped to stay within the cache size.",
            stats.evictions,
        )
        yield counter(
            "pilothouse_resource_cache_invalidations",
            "Resource cache entries dropped because a config they were built from changed.",
            stats.invalidations,
        )
        yield gauge(
            "pilothouse_resource_cache_entries",
            "Entries in the resource cache.",
            len(self._cache),
        )


class NamedSource(Protocol):
    @property
    def name(self) -> str: ...

    def has_synced(self) -> bool: ...


@runtime_checkable
class ReportsConfigErrors(Protocol):
    """A source that can say how much of its config it could not apply right now."""

    def config_errors(self) -> int: ...


class ConfigSourceCollector(Collector):
    """``pilothouse_config_source_*{source}``: each config source's sync state,
    availability and current errors."""

    def __init__(self, sources: Sequence[NamedSource]) -> None:
        self._sources = tuple(sources)

    def collect(self) -> Iterator[Metric]:
        sources = self._sources
        yield gauge(
            "pilothouse_config_source_synced",
            "1 once the config source has delivered its initial config, else 0.",
            {s.name: float(s.has_synced()) for s in sources},
            "source",
        )
        yield gauge(
            "pilothouse_config_source_available",
            "1 while the config source can be read, 0 while it cannot (it keeps serving "
            "its last good config meanwhile).",
            {
                s.name: float(s.availability().available)
                for s in sources
                if isinstance(s, ReportsAvailability)
            },
            "source",
        )
        yield gauge(
            "pilothouse_config_source_errors",
            "Config the source holds but cannot apply right now: files whose last load "
            "had errors (fs://), objects rejected in the latest responses (xds://).",
            {s.name: s.config_errors() for s in sources if isinstance(s, ReportsConfigErrors)},
            "source",
        )
