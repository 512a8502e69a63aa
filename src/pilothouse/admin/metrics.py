"""``/metrics``: one server's Prometheus metrics, in the text exposition format 0.0.4.

:func:`server_metrics` builds the server's own ``CollectorRegistry`` (never
prometheus_client's global one) with every collector: istiod's ``pilot_*`` families
(:mod:`pilothouse.admin.metrics_pilot`), pilothouse's own ``pilothouse_*``
(:mod:`pilothouse.admin.metrics_pilothouse`), ``istio_build`` and
``istiod_uptime_seconds``, and the ``process_*`` families of prometheus_client's
process collector. :func:`metrics_routes` mounts it on the admin app.

The answer is always the 0.0.4 text format, whatever the scraper's ``Accept`` says,
as istiod answers: in OpenMetrics every counter must end in ``_total``, which would
rename istiod's counters.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from aiohttp import web
from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.registry import Collector

from pilothouse import __version__
from pilothouse.admin.metrics_pilot import PilotCollector
from pilothouse.admin.metrics_pilothouse import (
    AdmissionRejections,
    ConfigSourceCollector,
    NamedSource,
    ResourceCacheCollector,
    WasmModuleCollector,
)
from pilothouse.metrics.families import gauge
from pilothouse.xds.server.debug_view import DebugView

COMPONENT = "pilot"
"""``istio_build``'s component label: the role pilothouse plays (istiod reports ``pilot``)."""


class BuildCollector(Collector):
    """``istio_build{component,tag}`` (always 1) and ``istiod_uptime_seconds``."""

    def __init__(
        self, started: float, *, tag: str = __version__, clock: Callable[[], float] = time.time
    ) -> None:
        self._started = started
        self._tag = tag
        self._clock = clock

    def collect(self) -> Iterator[Metric]:
        build = GaugeMetricFamily(
            "istio_build", "Istio component build info", labels=["component", "tag"]
        )
        build.add_metric([COMPONENT, self._tag], 1)
        yield build
        yield gauge(
            "istiod_uptime_seconds",
            "Current istiod server uptime in seconds",
            max(0.0, self._clock() - self._started),
        )


@dataclass(frozen=True)
class ServerMetrics:
    """One server's registry, and the refusal counter other components plug into."""

    registry: CollectorRegistry
    admission: AdmissionRejections
    """``add`` a ``() -> Mapping[reason, count]`` here to count its refused streams."""


def server_metrics(
    discovery: DebugView,
    sources: Sequence[NamedSource] = (),
    *,
    started: float | None = None,
) -> ServerMetrics:
    """Every metric of the server ``discovery`` is the debug view of, reading ``sources`` for the
    ``pilothouse_config_source_*`` families; ``started`` (wall time) is when it started
    (now unless given), for ``istiod_uptime_seconds``."""
    registry = CollectorRegistry(auto_describe=False)
    admission = AdmissionRejections(discovery.refused)
    registry.register(BuildCollector(time.time() if started is None else started))
    registry.register(PilotCollector(discovery))
    registry.register(admission)
    registry.register(ResourceCacheCollector(discovery.cache))
    registry.register(WasmModuleCollector(discovery.wasm_cache))
    registry.register(ConfigSourceCollector(sources))
    ProcessCollector(registry=registry)
    return ServerMetrics(registry, admission)


def metrics_routes(registry: CollectorRegistry) -> list[web.RouteDef]:
    """``GET /metrics`` answering ``registry``'s exposition."""

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_PLAIN_0_0_4}
        )

    return [web.get("/metrics", metrics)]
