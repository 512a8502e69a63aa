"""What a proxy would receive from pilothouse for a mesh directory, as deterministic JSON.

:func:`snapshot` loads a directory the way ``pilothouse serve --config`` does (the file
source), runs a :class:`DiscoveryServer` over it until its first PushContext exists, and
calls the generators exactly as a connection does, subscribing the way Envoy does:
LDS and CDS wildcard, RDS for the route configurations the listeners name, EDS for the
EDS clusters of CDS.  Every resource becomes JSON (``MessageToDict``, the proto3 JSON
mapping) under its name; nothing in it depends on time, versions or nonces.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
from envoy.config.listener.v3 import listener_pb2  # type: ignore[import-untyped]
from envoy.extensions.filters.network.http_connection_manager.v3 import (  # type: ignore[import-untyped]
    http_connection_manager_pb2 as hcm_pb2,
)
from google.protobuf import any_pb2, json_format

from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.registry.kubernetes.feeds import KubeFeeds
from pilothouse.sources.events import ConfigStore
from pilothouse.sources.fs import FileSource
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.server.discovery import DiscoveryServer

TYPES: Mapping[str, str] = {"lds": LDS, "rds": RDS, "cds": CDS, "eds": EDS}
"""Short name (the golden file's name) → type URL."""


@dataclass(frozen=True, slots=True)
class ProxySnapshot:
    """One proxy's resources: ``{short type: {name: decoded Any}}``, plus the JSON form."""

    resources: Mapping[str, Mapping[str, any_pb2.Any]]

    def json(self, short_type: str) -> dict[str, Any]:
        """``{name: resource as proto3 JSON}`` for one type."""
        return {
            name: json_format.MessageToDict(resource)
            for name, resource in sorted(self.resources[short_type].items())
        }

    def messages(self, short_type: str, message: type[Any]) -> dict[str, Any]:
        """The resources of one type unpacked into ``message``."""
        unpacked = {}
        for name, resource in self.resources[short_type].items():
            target = message()
            if not resource.Unpack(target):
                raise TypeError(f"{name} is a {resource.type_url}, not a {message.__name__}")
            unpacked[name] = target
        return unpacked


def dump(document: Mapping[str, Any]) -> str:
    """The stored form: sorted keys, one-space indent, a final newline."""
    return json.dumps(document, sort_keys=True, indent=1) + "\n"


async def snapshot(mesh: Path, proxies: Mapping[str, ProxyIdentity]) -> dict[str, ProxySnapshot]:
    """Each proxy's LDS, RDS, CDS and EDS for the mesh in directory ``mesh``."""
    source = FileSource(mesh)
    source.load_all()
    problems = [status for status in source.statuses().values() if not status.ok]
    if problems:
        raise ValueError(f"{mesh} does not load cleanly: {problems}")
    return await snapshot_store(source.store, proxies)


async def snapshot_store(
    store: ConfigStore, proxies: Mapping[str, ProxyIdentity], kube: KubeFeeds | None = None
) -> dict[str, ProxySnapshot]:
    """Each proxy's LDS, RDS, CDS and EDS for the configs of ``store`` (synced), with the
    Services of the Kubernetes ``kube`` feeds when given."""
    async with _serving(DiscoveryServer(store, kube=kube)) as server:
        return {key: _proxy_snapshot(server, proxy) for key, proxy in proxies.items()}


@contextlib.asynccontextmanager
async def _serving(server: DiscoveryServer) -> AsyncIterator[DiscoveryServer]:
    task = asyncio.create_task(server.run())
    try:
        await asyncio.wait_for(server.wait_ready(), 10)
        yield server
    finally:
        server.close()
        await asyncio.wait_for(task, 10)


def _proxy_snapshot(server: DiscoveryServer, proxy: ProxyIdentity) -> ProxySnapshot:
    def generate(type_url: str, names: frozenset[str] | None) -> dict[str, any_pb2.Any]:
        generator = server.generator(type_url)
        assert generator is not None, type_url
        context = server.context
        given = GenerationInput(
            proxy=proxy,
            scope=context.scope(proxy),
            context=context,
            endpoints=server.endpoints,
            cache=server.cache,
            names=names,
        )
        return {
            name: any_pb2.Any.FromString(resource.body)
            for name, resource in generator.generate(given).items()
        }

    listeners = generate(LDS, None)
    clusters = generate(CDS, None)
    routes = generate(RDS, frozenset(route_names(listeners.values())))
    endpoints = generate(EDS, frozenset(eds_cluster_names(clusters.values())))
    return ProxySnapshot({"lds": listeners, "rds": routes, "cds": clusters, "eds": endpoints})


def connection_managers(listeners: Any) -> Iterator[Any]:
    """Every HTTP connection manager in the filter chains of ``listeners`` (packed Anys)."""
    for packed in listeners:
        listener = listener_pb2.Listener()
        packed.Unpack(listener)
        chains = [*listener.filter_chains]
        if listener.HasField("default_filter_chain"):
            chains.append(listener.default_filter_chain)
        for chain in chains:
            for network_filter in chain.filters:
                if network_filter.typed_config.Is(hcm_pb2.HttpConnectionManager.DESCRIPTOR):
                    manager = hcm_pb2.HttpConnectionManager()
                    network_filter.typed_config.Unpack(manager)
                    yield manager


def route_names(listeners: Any) -> set[str]:
    """The RDS names the listeners' connection managers ask for (what Envoy subscribes)."""
    return {m.rds.route_config_name for m in connection_managers(listeners) if m.HasField("rds")}


def eds_cluster_names(clusters: Any) -> set[str]:
    """The EDS names of the EDS clusters (what Envoy subscribes while they warm)."""
    names = set()
    for packed in clusters:
        cluster = cluster_pb2.Cluster()
        packed.Unpack(cluster)
        if cluster.type == cluster_pb2.Cluster.EDS:
            names.add(cluster.eds_cluster_config.service_name or cluster.name)
    return names
