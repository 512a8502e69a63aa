"""Simulated proxies for tests and benchmarks: Envoy-like (and grpcio-like) xDS clients.

``SimulatedProxy`` is one ADS stream that behaves like Envoy 1.40 (sidecar or
router) or like grpcio's proxyless client; ``ProxyFleet`` runs many of them
over a few shared channels and times their convergence.  They talk to any ADS
server; the protocol work is done by the I/O-free xDS client engine of
``xds/protocol`` (``SotwClient``, ``DeltaClient`` wrap it) following a
``RequestPlan``.
"""

from pilothouse.backoff import Backoff
from pilothouse.loadtest.client import DeltaClient, ProxyClient, RejectHook, SotwClient
from pilothouse.loadtest.convergence import (
    all_of,
    holding,
    holding_exactly,
    holding_versions,
    settled,
)
from pilothouse.loadtest.fleet import ConvergenceReport, ProxyFleet, fleet_identities
from pilothouse.loadtest.holdings import HeldResource, ReceivedResource, TypeCounters, XdsEvent
from pilothouse.loadtest.identity import ProxyFlavour, ProxyNode, istio_node_id, mesh_identity
from pilothouse.loadtest.plans import ALL_TYPES, EnvoyPlan, GrpcPlan, RequestPlan, parse_types
from pilothouse.loadtest.proxy import ProxyPredicate, SimulatedProxy
from pilothouse.loadtest.references import ResourceReader
from pilothouse.loadtest.stalls import Stalls, find_stalls
from pilothouse.loadtest.stats import Summary, p50, p90, p99, percentile, summarize

__all__ = [
    "ALL_TYPES",
    "Backoff",
    "ConvergenceReport",
    "DeltaClient",
    "EnvoyPlan",
    "GrpcPlan",
    "HeldResource",
    "ProxyClient",
    "ProxyFlavour",
    "ProxyFleet",
    "ProxyNode",
    "ProxyPredicate",
    "ReceivedResource",
    "RejectHook",
    "RequestPlan",
    "ResourceReader",
    "SimulatedProxy",
    "SotwClient",
    "Stalls",
    "Summary",
    "TypeCounters",
    "XdsEvent",
    "all_of",
    "find_stalls",
    "fleet_identities",
    "holding",
    "holding_exactly",
    "holding_versions",
    "istio_node_id",
    "mesh_identity",
    "p50",
    "p90",
    "p99",
    "parse_types",
    "percentile",
    "settled",
    "summarize",
]
