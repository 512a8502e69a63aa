"""Mesh-wide settings that shape generated config (Istio's MeshConfig defaults)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pilothouse.config.telemetry_providers import NO_MESH_TELEMETRY, MeshTelemetry


class OutboundPolicy(StrEnum):
    ALLOW_ANY = "ALLOW_ANY"
    REGISTRY_ONLY = "REGISTRY_ONLY"


@dataclass(frozen=True, slots=True)
class MeshSettings:
    """The MeshConfig fields pilothouse reads, with istiod's defaults."""

    root_namespace: str = "istio-system"
    domain_suffix: str = "cluster.local"
    trust_domain: str = "cluster.local"
    default_service_export_to: frozenset[str] = frozenset({"*"})
    default_virtual_service_export_to: frozenset[str] = frozenset({"*"})
    default_destination_rule_export_to: frozenset[str] = frozenset({"*"})
    connect_timeout: float = 10.0
    outbound_traffic_policy: OutboundPolicy = OutboundPolicy.ALLOW_ANY
    proxy_listen_port: int = 15001
    proxy_inbound_listen_port: int = 15006
    enable_auto_mtls: bool = True
    """Clusters without DestinationRule TLS use ISTIO_MUTUAL towards sidecar endpoints."""
    telemetry: MeshTelemetry = NO_MESH_TELEMETRY
    """``extensionProviders``, ``defaultProviders`` and the legacy access-log and tracing
    fields, as Telemetry resolution reads them."""
    unapplied: bytes = b""
    """The MeshConfig fields read but not applied (ingress, TLS defaults, …), the
    telemetry fields (applied through :attr:`telemetry`) and ``defaultConfig`` (which
    bootstraps apply, not the server), as MeshConfig bytes: served again over MCP exactly
    as they were written."""


def exported_to(
    export_to: frozenset[str] | set[str] | tuple[str, ...],
    own_namespace: str,
    namespace: str,
    default: frozenset[str],
) -> bool:
    """Istio's exportTo rule for a config of ``own_namespace`` seen from ``namespace``.

    Empty means the mesh default; ``*`` every namespace; ``.`` the config's own
    namespace; ``~`` none; anything else a namespace name.
    """
    entries = frozenset(export_to) or default
    if "*" in entries:
        return True
    if "~" in entries and len(entries) == 1:
        return False
    if "." in entries and namespace == own_namespace:
        return True
    return namespace in entries
