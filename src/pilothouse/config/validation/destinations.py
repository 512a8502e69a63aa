"""Route destinations: the host/subset/port a route sends to, and weights across several."""

from __future__ import annotations

from collections.abc import Sequence

from pilothouse.api.istio.networking.v1alpha3.virtual_service_pb2 import (
    Destination,
    HTTPRouteDestination,
    RouteDestination,
)
from pilothouse.config.validation.headers import check_header_operations
from pilothouse.config.validation.hosts import check_host, is_dns_label
from pilothouse.config.validation.ports import check_port_number
from pilothouse.config.validation.report import Report


def check_destination(destination: Destination, path: str, report: Report) -> None:
    """A destination names a service host (short names allowed, no bare ``*``)."""
    if not destination.host:
        report.error(f"{path}.host", "destination host is required")
    else:
        check_host(destination.host, f"{path}.host", report, bare_star=False)
    if destination.subset and not is_dns_label(destination.subset):
        report.error(
            f"{path}.subset", f"subset name {destination.subset!r} is not a DNS-1123 label"
        )
    if destination.HasField("port"):
        check_port_number(destination.port.number, f"{path}.port.number", report)


def check_route_destinations(
    destinations: Sequence[HTTPRouteDestination | RouteDestination],
    path: str,
    report: Report,
) -> None:
    """Check each destination of a route and the weights between them.

    A single destination needs no weight. Several must have weights adding up to 100.
    (Recent Istio and Envoy would also take other positive totals as relative
    proportions; pilothouse holds to the documented rule.)
    """
    total = 0
    for index, weighted in enumerate(destinations):
        item = f"{path}[{index}]"
        if not weighted.HasField("destination"):
            report.error(f"{item}.destination", "destination is required")
        else:
            check_destination(weighted.destination, f"{item}.destination", report)
        if weighted.weight < 0:
            report.error(f"{item}.weight", f"weight {weighted.weight} must not be negative")
        total += weighted.weight
        if isinstance(weighted, HTTPRouteDestination) and weighted.HasField("headers"):
            check_header_operations(weighted.headers, f"{item}.headers", report)
    if len(destinations) > 1 and total != 100:
        report.error(
            path,
            f"weights of a route with several destinations must add up to 100 (they add up "
            f"to {total})",
        )
