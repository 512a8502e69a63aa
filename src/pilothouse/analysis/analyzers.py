"""Every analyzer, by name, and one run of them all over a view.

An analyzer that fails (a bug) costs only its own findings: the run reports it as
IST0001 InternalError naming the analyzer, and the others still run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from pilothouse.analysis import (
    authorization,
    destination_hosts,
    destination_rules,
    destination_subsets,
    envoy_filters,
    gateway_api,
    gateway_targets,
    gateways,
    mesh_gateway_hosts,
    mtls_conflicts,
    proxy_configs,
    selectors,
    service_entries,
    sidecar_egress,
    telemetry_providers,
    telemetry_selectors,
    virtual_service_gateways,
    wasm_plugins,
)
from pilothouse.analysis.mesh_view import MeshView
from pilothouse.analysis.messages import INTERNAL_ERROR, Message

log = logging.getLogger("pilothouse.analysis")


@dataclass(frozen=True, slots=True)
class Analyzer:
    """One check: istioctl-style name, what it checks (its module's first line), and
    the function that yields its findings."""

    name: str
    run: Callable[[MeshView], Iterable[Message]]
    description: str


def _analyzer(name: str, module: object, run: Callable[[MeshView], Iterable[Message]]) -> Analyzer:
    doc = (getattr(module, "__doc__", None) or "").strip()
    return Analyzer(name, run, " ".join(doc.split("\n\n")[0].split()))


ANALYZERS: tuple[Analyzer, ...] = (
    _analyzer("authorization.AuthorizationPoliciesAnalyzer", authorization, authorization.analyze),
    _analyzer("destinationrule.HostAnalyzer", destination_rules, destination_rules.analyze),
    _analyzer("destinationrule.MTLSConflictAnalyzer", mtls_conflicts, mtls_conflicts.analyze),
    _analyzer("gateway.GatewayAnalyzer", gateways, gateways.analyze),
    _analyzer("selector.WorkloadSelectorAnalyzer", selectors, selectors.analyze),
    _analyzer("serviceentry.ServiceEntryAnalyzer", service_entries, service_entries.analyze),
    _analyzer("sidecar.EgressHostAnalyzer", sidecar_egress, sidecar_egress.analyze),
    _analyzer("telemetry.ProviderAnalyzer", telemetry_providers, telemetry_providers.analyze),
    _analyzer("telemetry.SelectorAnalyzer", telemetry_selectors, telemetry_selectors.analyze),
    _analyzer(
        "virtualservice.ConflictingMeshGatewayHostsAnalyzer",
        mesh_gateway_hosts,
        mesh_gateway_hosts.analyze,
    ),
    _analyzer(
        "virtualservice.DestinationHostAnalyzer", destination_hosts, destination_hosts.analyze
    ),
    _analyzer(
        "virtualservice.DestinationRuleAnalyzer", destination_subsets, destination_subsets.analyze
    ),
    _analyzer(
        "virtualservice.GatewayAnalyzer", virtual_service_gateways, virtual_service_gateways.analyze
    ),
    _analyzer("envoyfilter.EnvoyPatchAnalyzer", envoy_filters, envoy_filters.analyze),
    _analyzer("gatewayapi.ConditionAnalyzer", gateway_api, gateway_api.analyze),
    _analyzer("proxyconfig.SelectorAnalyzer", proxy_configs, proxy_configs.analyze),
    _analyzer("targetref.GatewayTargetAnalyzer", gateway_targets, gateway_targets.analyze),
    _analyzer("wasmplugin.ModuleAnalyzer", wasm_plugins, wasm_plugins.analyze),
)


def analyze(view: MeshView, analyzers: Iterable[Analyzer] = ANALYZERS) -> list[Message]:
    """Every finding of every analyzer, each once, ordered by object, then code."""
    found: dict[tuple[object, ...], Message] = {}
    for analyzer in analyzers:
        for message in _guarded(analyzer, view):
            found.setdefault((message.key, message.type.code, message.text), message)
    return sorted(found.values(), key=Message.sort_key)


def _guarded(analyzer: Analyzer, view: MeshView) -> Iterator[Message]:
    try:
        yield from list(analyzer.run(view))
    except Exception as exc:
        log.warning("the analyzer %s failed", analyzer.name, exc_info=True)
        detail = f"the analyzer {analyzer.name} failed: {type(exc).__name__}: {exc}"
        yield Message(INTERNAL_ERROR, (detail,), None)
