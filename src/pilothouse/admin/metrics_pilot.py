"""istiod's ``pilot_*`` metrics, read from one discovery server when ``/metrics`` is scraped.

Counters come from the server's plain ``stats`` (and, for NACKs and expired nonces,
from the streams still open as well), gauges from its connections and its current
PushContext, histograms from its :class:`~pilothouse.metrics.push.PushMetrics`.
Nothing here runs on the push path: the collector reads when Prometheus asks.

Names, types, labels and buckets are istiod's (``pilot/pkg/xds/monitoring.go``,
``pkg/xds/monitoring.go``); see :mod:`pilothouse.metrics.families` for why istiod's
counters are exposed untyped. ``pilot_xds_push_errors`` is the compatibility counter
community alerts still query (istiod stopped emitting it): pushes that failed, by
``type="unrecoverable"`` (a push whose generation raised and ended its stream, or a
response whose write failed).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Final

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pilothouse.metrics.families import gauge, histogram_family, istiod_counter
from pilothouse.push.envoy_filter_status import METRIC_PATCH, PatchReport, PatchStatus
from pilothouse.push.listener_conflicts import TCP_OVER_CURRENT_HTTP, TCP_OVER_CURRENT_TCP
from pilothouse.xds.server.debug_view import DebugView

CONFLICT_HELP: Final[Mapping[str, str]] = {
    TCP_OVER_CURRENT_TCP: "Number of conflicting tcp listeners with current tcp listener.",
    TCP_OVER_CURRENT_HTTP: "Number of conflicting wildcard tcp listeners with current wildcard "
    "http listener.",
}
"""istiod's help texts of the outbound listener conflict gauges."""


class PilotCollector(Collector):
    """The ``pilot_*`` families of one discovery server, read through its debug view."""

    def __init__(self, discovery: DebugView) -> None:
        self._discovery = discovery
        self._versions: set[str] = set()
        """Proxy versions ever connected: their ``pilot_xds`` series stays, at 0 when none is."""

    def collect(self) -> Iterator[Metric]:
        discovery = self._discovery
        stats = discovery.stats
        yield gauge(
            "pilot_xds",
            "Number of endpoints connected to this pilot using XDS.",
            self._clients_by_version(),
            "version",
        )
        yield istiod_counter(
            "pilot_xds_pushes",
            "Pilot build and send errors for lds, rds, cds and eds.",
            stats.pushes,
            "type",
        )
        yield istiod_counter(
            "pilot_push_triggers",
            "Total number of times a push was triggered, labeled by reason for the push.",
            stats.push_triggers,
            "type",
        )
        yield istiod_counter(
            "pilot_inbound_updates",
            "Total number of updates received by pilot.",
            stats.inbound_updates,
            "type",
        )
        yield istiod_counter(
            "pilot_total_xds_rejects",
            "Total number of XDS responses from pilot rejected by proxy.",
            discovery.rejects(),
            "type",
        )
        yield istiod_counter(
            "pilot_xds_expired_nonce",
            "Total number of XDS requests with an expired nonce.",
            discovery.expired_nonces(),
            "type",
        )
        yield istiod_counter(
            "pilot_total_xds_internal_errors",
            "Total number of internal XDS errors in pilot.",
            stats.internal_errors,
        )
        yield istiod_counter(
            "pilot_xds_push_errors",
            "Number of errors (timeouts) pushing to sidecars.",
            {"unrecoverable": stats.push_failures + stats.send_errors},
            "type",
        )
        yield istiod_counter(
            "pilot_sds_certificate_errors_total",
            "Total number of failures to fetch SDS key and certificate.",
            stats.sds_certificate_errors,
        )
        for histogram in discovery.histograms():
            yield histogram_family(histogram)
        yield from self._context_gauges()

    def _clients_by_version(self) -> dict[str, float]:
        counts: dict[str, float] = dict.fromkeys(self._versions, 0)
        for connection in self._discovery.connections():
            version = connection.proxy.istio_version
            counts[version] = counts.get(version, 0) + 1
        self._versions.update(counts)
        return counts

    def _context_gauges(self) -> Iterator[Metric]:
        if not self._discovery.ready():
            return
        context = self._discovery.context
        yield gauge(
            "pilot_services", "Total services known to pilot.", len(context.services.services)
        )
        yield envoy_filter_status(context.envoy_filters.statuses())
        yield gauge(
            "pilot_virt_services",
            "Total virtual services known to pilot.",
            len(context.virtual_services.entries),
        )
        for metric, listeners in context.listener_conflicts.listeners_by_metric().items():
            yield gauge(metric, CONFLICT_HELP[metric], listeners)


def envoy_filter_status(reports: Iterable[PatchReport]) -> Metric:
    """istiod's ``pilot_envoy_filter_status``: 1 per EnvoyFilter (``ns/name``) and patch
    class (``httpfilter``, ``cluster`` …) that changed some proxy's config (istiod writes
    it only with ``PILOT_ENVOY_FILTER_STATS``; here always). A patch that reached proxies
    and matched nothing is ``result="matched_nothing"``, a series istiod does not have."""
    family = GaugeMetricFamily(
        "pilot_envoy_filter_status",
        "Status of Envoy filters whether it was applied or errored.",
        labels=["name", "patch", "result"],
    )
    seen: dict[tuple[str, str], str] = {}
    for report in reports:
        patch = METRIC_PATCH.get(report.apply_to)
        if patch is None or report.status not in (PatchStatus.APPLIED, PatchStatus.MATCHED_NOTHING):
            continue
        name = f"{report.key.namespace}/{report.key.name}"
        result = "applied" if report.status is PatchStatus.APPLIED else "matched_nothing"
        if seen.get((name, patch)) != "applied":
            seen[name, patch] = result
    for (name, patch), result in sorted(seen.items()):
        family.add_metric([name, patch, result], 1)
    return family
