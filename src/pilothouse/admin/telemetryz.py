"""``/debug/telemetryz``: the effective telemetry of each connected proxy.

For every proxy connected to this replica: the Telemetry objects that apply to it
(lowest level first), what its client side (outbound listeners, gateways) and server
side (inbound listeners) carry — access logs by provider with their filters, tracing
with its provider and sampling — and what was accepted and not applied (metrics, unknown
or unsupported providers, providers whose service is not known), as
:mod:`pilothouse.push.telemetry` resolved it.
"""

from __future__ import annotations

from typing import Any

from pilothouse.push.telemetry import ModeTelemetry
from pilothouse.xds.server.debug_view import DebugView


def telemetryz(discovery: DebugView) -> dict[str, Any]:
    """The view's JSON (``{"proxies": []}`` before the first push context)."""
    if not discovery.ready():
        return {"proxies": []}
    context = discovery.context
    found = []
    for connection in discovery.proxies():
        proxy = connection.proxy
        telemetry = context.selections.telemetry(proxy, discovery.cache)
        found.append(
            {
                "proxy": proxy.name,
                "telemetry": [f"{k.namespace}/{k.name}" for k in telemetry.applied_from],
                "client": _mode(telemetry.client),
                "server": _mode(telemetry.server),
                "notApplied": list(telemetry.not_applied),
            }
        )
    return {"proxies": sorted(found, key=lambda entry: str(entry["proxy"]))}


def _mode(mode: ModeTelemetry) -> dict[str, Any]:
    tracing = mode.tracing
    return {
        "accessLogs": [
            {"provider": log.provider.name, "filter": log.filter} for log in mode.access_logs
        ],
        "tracing": None
        if tracing is None
        else {
            "provider": tracing.provider.name if tracing.provider is not None else None,
            "sampling": tracing.sampling,
            "tags": [tag.name for tag in tracing.tags],
        },
    }
