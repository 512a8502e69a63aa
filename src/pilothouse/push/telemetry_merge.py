"""istiod's merge of the Telemetry objects that apply to a proxy, one mode at a time
(``mergeLogs`` and ``mergeTracing`` in ``pilot/pkg/model/telemetry.go``).

:func:`layer` takes the specs lowest level first (root namespace, namespace, workload)
and gives, before any provider is looked up in the mesh config: the access-log providers
in scope with their filters (or that the legacy ``accessLogFile`` applies), and the
tracing provider with the fields overridden one by one (or None: no Telemetry says
anything about tracing). :mod:`pilothouse.push.telemetry` resolves the providers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pilothouse.api.istio.telemetry.v1alpha1 import telemetry_pb2
from pilothouse.config.telemetry_providers import MeshTelemetry


@dataclass(frozen=True, slots=True)
class SpanTag:
    """A custom span tag: ``literal`` value, ``environment`` variable or request
    ``header`` (with a default), or a ``formatter`` (Envoy's access-log command)."""

    name: str
    kind: str
    value: str
    default: str = ""


@dataclass(frozen=True, slots=True)
class Layered:
    """One mode's result before providers are resolved to their collectors."""

    logs: tuple[tuple[str, str], ...]
    """(provider, filter) in provider-name order."""
    legacy_log: bool
    tracing: tuple[str | None, dict[str, Any]] | None
    """(provider, overrides) or None (no tracing Telemetry: the legacy rule)."""


def layer(specs: Sequence[telemetry_pb2.Telemetry], mesh: MeshTelemetry, mode: int) -> Layered:
    """One mode's providers and overrides from ``specs`` (lowest level first), before
    the providers are looked up (istiod's ``mergeLogs`` and ``mergeTracing``)."""
    return Layered(*_logging(specs, mesh, mode), _tracing_fields(specs, mesh, mode))


def _applies(match: Any, holder: Any, mode: int) -> bool:
    wanted = match.mode if holder.HasField("match") else telemetry_pb2.CLIENT_AND_SERVER
    return wanted in (telemetry_pb2.CLIENT_AND_SERVER, mode)


def _logging(
    specs: Sequence[telemetry_pb2.Telemetry], mesh: MeshTelemetry, mode: int
) -> tuple[tuple[tuple[str, str], ...], bool]:
    levels = [s.access_logging for s in specs if s.access_logging]
    if not levels:
        if mesh.default_logging:
            return tuple((n, "") for n in sorted(set(mesh.default_logging))), False
        return (), True
    in_scope = list(mesh.default_logging)
    filters: dict[str, str] = {}
    for entries in levels:
        named: list[str] = []
        for entry in entries:
            if not _applies(entry.match, entry, mode):
                continue
            names = [p.name for p in entry.providers]
            named.extend(names)
            if entry.HasField("filter"):
                filters.update((n, entry.filter.expression) for n in names)
        if named:
            in_scope = named
    scope = set(in_scope)
    chosen: dict[str, str] = {}
    parent = list(mesh.default_logging)
    for entries in levels:
        for entry in entries:
            names = [p.name for p in entry.providers] or parent
            parent = names
            if not _applies(entry.match, entry, mode):
                continue
            for name in names:
                if name not in scope:
                    continue
                if entry.disabled.value:
                    chosen.pop(name, None)
                else:
                    chosen[name] = filters.get(name, "")
    return tuple(sorted(chosen.items())), False


def _tracing_fields(
    specs: Sequence[telemetry_pb2.Telemetry], mesh: MeshTelemetry, mode: int
) -> tuple[str | None, dict[str, Any]] | None:
    levels = [s.tracing for s in specs if s.tracing]
    if not levels:
        return None
    providers = list(mesh.default_tracing)
    fields: dict[str, Any] = {}
    for entries in levels:
        for entry in entries:
            if not _applies(entry.match, entry, mode):
                continue
            if entry.providers:
                providers = [p.name for p in entry.providers]
            if entry.HasField("disable_span_reporting"):
                fields["disabled"] = entry.disable_span_reporting.value
            if entry.custom_tags:
                fields["tags"] = tuple(
                    _tag(name, entry.custom_tags[name]) for name in sorted(entry.custom_tags)
                )
            if entry.HasField("random_sampling_percentage"):
                fields["sampling"] = entry.random_sampling_percentage.value
            if entry.HasField("use_request_id_for_trace_sampling"):
                fields["use_request_id"] = entry.use_request_id_for_trace_sampling.value
    return (providers[0] if providers else None), fields


def _tag(name: str, tag: telemetry_pb2.Tracing.CustomTag) -> SpanTag:
    kind = tag.WhichOneof("type") or "literal"
    if kind == "environment":
        return SpanTag(name, kind, tag.environment.name, tag.environment.default_value)
    if kind == "header":
        return SpanTag(name, kind, tag.header.name, tag.header.default_value)
    if kind == "formatter":
        return SpanTag(name, kind, tag.formatter.value)
    return SpanTag(name, kind, tag.literal.value)
