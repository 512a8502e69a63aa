"""The discovery server's parts, built and handed to each other in one place.

:func:`wire` builds, in the pipeline's order: the resource cache; the registries (the
ServiceEntry registry, and the Kubernetes one beside it when its feeds are given); the
key sets of RequestAuthentication jwksUris; the modules of WasmPlugin urls; the push
pipeline and, with Kubernetes, the Pods' sidecars; the push service, which every
registry, key-set, module and store change is handed to; and the generator table by type
URL, with the ``api`` generator behind it for Istio types. The discovery server keeps
what it is given and only serves streams from it.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass

from pilothouse.config.mesh import MeshSettings
from pilothouse.metrics.push import PushMetrics
from pilothouse.push.cache import ResourceCache
from pilothouse.push.context import PushContext
from pilothouse.push.pipeline import PushPipeline
from pilothouse.push.pod_sidecars import PodSidecars
from pilothouse.push.service import PushService
from pilothouse.registry.aggregate import AggregateRegistry, ServiceRegistry
from pilothouse.registry.controller import ServiceEntryRegistry
from pilothouse.registry.kubernetes.feeds import KubeFeeds
from pilothouse.registry.kubernetes.registry import KubeRegistry
from pilothouse.security.jwks import JwksResolver
from pilothouse.security.jwks_addresses import JwksAddressPolicy
from pilothouse.security.wasm_modules import WasmModules
from pilothouse.settings import XdsSettings
from pilothouse.sources.events import ConfigStore
from pilothouse.xds.generators.api import ApiGenerator, watched_kinds
from pilothouse.xds.generators.base import Generator
from pilothouse.xds.generators.cds import ClusterGenerator
from pilothouse.xds.generators.ecds import ExtensionConfigGenerator
from pilothouse.xds.generators.eds import EndpointGenerator
from pilothouse.xds.generators.grpc_cds import GrpcClusterGenerator
from pilothouse.xds.generators.grpc_flavour import ByFlavour
from pilothouse.xds.generators.grpc_lds import GrpcListenerGenerator
from pilothouse.xds.generators.grpc_rds import GrpcRouteGenerator
from pilothouse.xds.generators.lds import ListenerGenerator
from pilothouse.xds.generators.rds import RouteGenerator
from pilothouse.xds.protocol.versions import PushVersions
from pilothouse.xds.server.connection import Connection
from pilothouse.xds.server.stats import XdsStats


@dataclass(frozen=True, slots=True)
class Wired:
    """The parts of one discovery server."""

    cache: ResourceCache
    registry: ServiceRegistry
    kube: KubeRegistry | None
    jwks: JwksResolver
    wasm_modules: WasmModules
    pushes: PushService[Connection]
    generators: dict[str, Generator]
    """The Envoy generators by type URL (empty in the config-server role)."""
    api: ApiGenerator


def wire(
    store: ConfigStore,
    mesh: MeshSettings,
    settings: XdsSettings,
    stats: XdsStats,
    metrics: PushMetrics,
    *,
    kube: KubeFeeds | None,
    envoy_generators: bool,
    api_clock: Callable[[], datetime.datetime] | None,
) -> Wired:
    """Build one discovery server's parts (its arguments are the server's own)."""
    pushes: PushService[Connection]  # made below: the callbacks run only once it exists
    cache = ResourceCache(settings.cache_size)
    service_entries = ServiceEntryRegistry(store, lambda update: pushes.registry_changed(update))
    registry: ServiceRegistry = service_entries
    kube_registry = None
    if kube is not None:
        kube_registry = KubeRegistry(
            kube,
            service_entries.endpoint_index,
            lambda update: pushes.registry_changed(update),
            domain_suffix=mesh.domain_suffix,
            trust_domain=mesh.trust_domain,
            on_pods=lambda pods: pushes.pods_changed(pods),
        )
        registry = AggregateRegistry(service_entries, kube_registry)
    jwks = JwksResolver(
        lambda uri: pushes.jwks_changed(uri),
        fetch=settings.jwks_fetch,
        policy=JwksAddressPolicy(settings.jwks_allowed_hosts),
        named_by=lambda uri: [str(key) for key in pushes.jwks_users(uri)],
    )
    wasm_modules = WasmModules(
        lambda url: pushes.wasm_module_arrived(url),
        policy=JwksAddressPolicy(settings.wasm_allowed_hosts),
        budget=settings.wasm_cache_bytes,
        referenced=lambda: served_modules(pipeline.context),
    )
    pipeline: PushPipeline[Connection] = PushPipeline(
        store,
        registry.services,
        mesh,
        cache,
        next_version=PushVersions().next,
        api_kinds=watched_kinds,
        jwks=jwks,
        wasm_modules=wasm_modules,
    )
    pod_sidecars = None
    if kube_registry is not None:
        pod_sidecars = PodSidecars(kube_registry, pipeline.own_sidecars)
    pushes = PushService(pipeline, store, registry, cache, settings, stats, metrics, pod_sidecars)
    return Wired(
        cache,
        registry,
        kube_registry,
        jwks,
        wasm_modules,
        pushes,
        envoy_generator_table() if envoy_generators else {},
        ApiGenerator(store, clock=api_clock),
    )


def served_modules(context: PushContext | None) -> frozenset[str]:
    """The digests of the Wasm modules ``context`` serves (none before the first)."""
    return context.wasm_plugins.module_digests() if context is not None else frozenset()


def envoy_generator_table() -> dict[str, Generator]:
    """CDS, EDS, LDS and RDS by type URL, each in its Envoy and proxyless gRPC flavour,
    and ECDS (Envoy's alone)."""
    envoy: tuple[Generator, ...] = (
        ByFlavour(ClusterGenerator(), GrpcClusterGenerator()),
        EndpointGenerator(),
        ByFlavour(ListenerGenerator(), GrpcListenerGenerator()),
        ByFlavour(RouteGenerator(), GrpcRouteGenerator()),
        ExtensionConfigGenerator(),
    )
    return {generator.type_url: generator for generator in envoy}
