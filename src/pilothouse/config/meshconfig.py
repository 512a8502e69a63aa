"""Istio MeshConfig files: what ``pilothouse serve --mesh FILE`` reads.

The file is Istio's mesh config as users already have it: either the MeshConfig YAML
itself, or the ``istio`` ConfigMap whose ``data.mesh`` key holds it as a string. Fields
pilothouse does not model are reported as warnings and ignored, so an existing mesh
config loads unchanged; so are the fields of ``defaultConfig`` other than those
``pilothouse bootstrap`` applies (:mod:`pilothouse.config.proxy_defaults`:
``concurrency``, ``proxyMetadata``, ``image``) and ``tracing``, which Telemetry
resolution reads. Fields it models are decoded strictly, with their path and line on
error. Of those, the ones in :data:`NOT_APPLIED` (``ingressClass``, ``tlsDefaults``, …) are
kept and served again over MCP as written, with a warning that pilothouse does not apply
them; the :data:`TELEMETRY` ones (``extensionProviders``, ``defaultProviders``,
``accessLogFile``, …) are applied (:mod:`pilothouse.config.telemetry_providers`), with a
warning for each provider accepted and not applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pilothouse.api.istio.mesh.v1alpha1 import config_pb2
from pilothouse.config.decode import decode_message
from pilothouse.config.documents import read_documents
from pilothouse.config.mesh import MeshSettings, OutboundPolicy
from pilothouse.config.proxy_defaults import split_proxy_config
from pilothouse.config.telemetry_providers import mesh_telemetry, provider_warnings

NOT_APPLIED = frozenset(
    {
        "proxy_http_port", "hbone_idle_timeout", "protocol_detection_timeout", "tcp_keepalive",
        "ingress_class", "ingress_service", "ingress_controller_mode", "ingress_selector",
        "enable_envoy_access_log_service", "disable_envoy_listener_log",
        "inbound_traffic_policy", "ca_certificates", "zone_aware_lb_setting",
        "h2_upgrade_policy", "inbound_cluster_stat_name", "outbound_cluster_stat_name",
        "service_settings", "enable_prometheus_merge", "verify_certificate_at_client", "ca",
        "path_normalization", "mesh_mTLS", "tls_defaults", "default_traffic_policy",
        "discovery_selectors", "service_scope_configs", "service_entry_visibility",
        "certificates",
    }
)  # fmt: skip
"""MeshConfig fields (proto names) parsed and served over MCP, but not applied here."""

TELEMETRY = frozenset(
    {
        "extension_providers", "default_providers", "enable_tracing", "access_log_file",
        "access_log_format", "access_log_encoding",
    }
)  # fmt: skip
"""MeshConfig fields (proto names) Telemetry resolution applies
(:mod:`pilothouse.config.telemetry_providers`); served over MCP as written."""


class MeshConfigError(ValueError):
    """The mesh config file cannot be used; the message names file, line and field."""


@dataclass(frozen=True, slots=True)
class MeshFile:
    """A loaded mesh config: the settings it implies, its config sources, and warnings."""

    mesh: MeshSettings
    config_sources: tuple[str, ...]
    message: config_pb2.MeshConfig
    warnings: tuple[str, ...] = ()


def load_mesh_config(text: str, file: str) -> MeshFile:
    read = read_documents(text, file)
    if read.errors:
        error = read.errors[0]
        raise MeshConfigError(f"{error.file}:{error.line}: {error.message}")
    if len(read.objects) != 1:
        raise MeshConfigError(
            f"{file}: expected one mesh config document, found {len(read.objects)}"
        )
    raw = read.objects[0]
    if raw.problems:
        unreadable = raw.problems[0]
        raise MeshConfigError(f"{file}:{unreadable.line}: {unreadable.message}")
    data: Mapping[str, Any] = raw.data
    line_of = raw.line_of
    prefix = ""
    if data.get("kind") == "ConfigMap":
        inner = (data.get("data") or {}).get("mesh")
        if not isinstance(inner, str):
            raise MeshConfigError(f"{file}:{raw.line}: a ConfigMap mesh config needs data.mesh")
        nested = read_documents(inner, file)
        if nested.errors or len(nested.objects) != 1 or nested.objects[0].problems:
            reason = "no mapping in data.mesh"
            if nested.errors:
                reason = nested.errors[0].message
            elif nested.objects and nested.objects[0].problems:
                reason = nested.objects[0].problems[0].message
            raise MeshConfigError(f"{file}:{line_of('data.mesh')}: data.mesh: {reason}")
        data = nested.objects[0].data
        base = line_of("data.mesh")
        inner_lines = nested.objects[0]

        def line_of(path: str) -> int:
            return base + inner_lines.line_of(path)

        prefix = "data.mesh."
    known = {f.json_name for f in config_pb2.MeshConfig.DESCRIPTOR.fields} | {
        f.name for f in config_pb2.MeshConfig.DESCRIPTOR.fields
    }
    not_applied = {
        name
        for f in config_pb2.MeshConfig.DESCRIPTOR.fields
        if f.name in NOT_APPLIED
        for name in (f.name, f.json_name)
    }
    warnings = tuple(
        f"{file}:{line_of(key)}: {prefix}{key}: not used by pilothouse; ignored"
        if key not in known
        else f"{file}:{line_of(key)}: {prefix}{key}: accepted and served over MCP;"
        " not applied by pilothouse"
        for key in data
        if key not in known or key in not_applied
    )
    modelled = {k: v for k, v in data.items() if k in known}
    for key in ("defaultConfig", "default_config"):
        if isinstance(modelled.get(key), Mapping):
            modelled[key], dropped = split_proxy_config(modelled[key])
            warnings += tuple(
                f"{file}:{line_of(f'{key}.{name}')}: {prefix}{key}.{name}: accepted;"
                " not applied by pilothouse"
                for name in dropped
            )
    message, problems = decode_message(modelled, config_pb2.MeshConfig, path="")
    if message is None:
        first = problems[0]
        raise MeshConfigError(
            f"{file}:{line_of(first.path)}: {prefix}{first.path}: {first.message}"
        )
    assert isinstance(message, config_pb2.MeshConfig)
    for key in ("extensionProviders", "extension_providers"):
        if key in modelled:
            warnings += tuple(
                f"{file}:{line_of(f'{key}[{index}]')}: {prefix}{key}[{index}]: {warning}"
                for index, warning in provider_warnings(message)
            )
    sources = tuple(source.address for source in message.config_sources)
    for index, address in enumerate(sources):
        if not address:
            path = f"configSources[{index}].address"
            raise MeshConfigError(f"{file}:{line_of(path)}: {prefix}{path}: required")
    return MeshFile(mesh_settings(message), sources, message, warnings)


def mesh_settings(message: config_pb2.MeshConfig, base: MeshSettings | None = None) -> MeshSettings:
    """The MeshSettings a MeshConfig implies (unset fields keep istiod's defaults)."""
    settings = base if base is not None else MeshSettings()
    changes: dict[str, Any] = {}
    if message.root_namespace:
        changes["root_namespace"] = message.root_namespace
    if message.trust_domain:
        changes["trust_domain"] = message.trust_domain
    if message.HasField("connect_timeout"):
        changes["connect_timeout"] = message.connect_timeout.ToTimedelta().total_seconds()
    if message.HasField("outbound_traffic_policy"):
        mode = config_pb2.MeshConfig.OutboundTrafficPolicy.Mode.Name(
            message.outbound_traffic_policy.mode
        )
        changes["outbound_traffic_policy"] = OutboundPolicy(mode)
    for field, target in (
        ("default_service_export_to", "default_service_export_to"),
        ("default_virtual_service_export_to", "default_virtual_service_export_to"),
        ("default_destination_rule_export_to", "default_destination_rule_export_to"),
    ):
        values = getattr(message, field)
        if values:
            changes[target] = frozenset(values)
    if message.proxy_listen_port:
        changes["proxy_listen_port"] = message.proxy_listen_port
    if message.proxy_inbound_listen_port:
        changes["proxy_inbound_listen_port"] = message.proxy_inbound_listen_port
    if message.HasField("enable_auto_mtls"):
        changes["enable_auto_mtls"] = message.enable_auto_mtls.value
    changes["telemetry"] = mesh_telemetry(message)
    changes["unapplied"] = _not_applied_bytes(message)
    return replace(settings, **changes)


def _not_applied_bytes(message: config_pb2.MeshConfig) -> bytes:
    """The :data:`NOT_APPLIED` and :data:`TELEMETRY` fields of ``message`` alone,
    serialised (b"" when none), with ``defaultConfig`` (applied by bootstraps, not by the
    server: served as written)."""
    kept = config_pb2.MeshConfig()
    kept.CopyFrom(message)
    for field, _ in message.ListFields():
        if field.name not in NOT_APPLIED | TELEMETRY and field.name != "default_config":
            kept.ClearField(field.name)
    return kept.SerializeToString(deterministic=True)


def mesh_config_message(settings: MeshSettings) -> config_pb2.MeshConfig:
    """The MeshConfig that describes ``settings`` (served as ``core/v1alpha1/MeshConfig``)."""
    message = config_pb2.MeshConfig.FromString(settings.unapplied)
    message.MergeFrom(
        config_pb2.MeshConfig(
            root_namespace=settings.root_namespace,
            trust_domain=settings.trust_domain,
            proxy_listen_port=settings.proxy_listen_port,
            proxy_inbound_listen_port=settings.proxy_inbound_listen_port,
            default_service_export_to=sorted(settings.default_service_export_to),
            default_virtual_service_export_to=sorted(settings.default_virtual_service_export_to),
            default_destination_rule_export_to=sorted(settings.default_destination_rule_export_to),
        )
    )
    message.connect_timeout.FromNanoseconds(int(settings.connect_timeout * 1e9))
    message.enable_auto_mtls.value = settings.enable_auto_mtls
    mode = config_pb2.MeshConfig.OutboundTrafficPolicy.Mode
    message.outbound_traffic_policy.mode = mode.Value(settings.outbound_traffic_policy.value)  # type: ignore[assignment]
    return message
