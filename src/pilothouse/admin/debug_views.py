"""The debug views as JSON-ready values, one function per view, no HTTP in sight.

Each reads the running server's state at one moment (the event loop runs one handler
at a time, so a view never mixes two snapshots) and returns plain dicts and lists in
istiod's shapes where istiod has the view:

- :func:`configz`: every config object, as Kubernetes writes it (``apiVersion``,
  ``kind``, ``metadata``, ``spec``), plus where pilothouse read it (``origin``,
  ``file:line`` for files);
- :func:`registryz`: every service of the registry;
- :func:`adsz` and :func:`connectionz`: the connected streams
  (``{"totalClients", "clients": [...]}``), with labels, metadata, locality and
  watched resources for ``adsz``;
- :func:`push_status`: the current PushContext and the push counters;
- :func:`sources_view`: each config source's state, with every problem its files have
  at ``file:line``.

``/debug/syncz``, ``/debug/config_dump`` and the endpoint shards come from the
discovery server's debug view (:class:`~pilothouse.xds.server.debug_view.DebugView`:
:mod:`pilothouse.xds.server.syncz`, :mod:`pilothouse.xds.server.config_dump` and
:meth:`pilothouse.registry.endpoint_index.EndpointIndex.dump` behind it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from google.protobuf import json_format

from pilothouse.config.model import Config, ConfigKey
from pilothouse.config.problems import Problem
from pilothouse.kinds.table import SCHEMAS
from pilothouse.protocol.type_urls import short_name
from pilothouse.registry.model import Service
from pilothouse.sources.availability import ReportsAvailability
from pilothouse.sources.fs import FileStatus
from pilothouse.sources.xds_upstream import UpstreamStatus
from pilothouse.xds.server.debug_view import DebugConnection, DebugView, rfc3339


class NamedSource(Protocol):
    """A config source as the views see it (the sources ``serve`` runs)."""

    @property
    def name(self) -> str: ...

    def has_synced(self) -> bool: ...


@runtime_checkable
class ReportsFiles(Protocol):
    """A source made of files (``fs://``): the last load of each file."""

    def statuses(self) -> Mapping[str, FileStatus]: ...


@runtime_checkable
class ReportsUpstream(Protocol):
    """A source fed by a stream (``xds://``): its connection and what it rejected."""

    def status(self) -> UpstreamStatus: ...


@runtime_checkable
class ReportsObjects(Protocol):
    """A source of objects without files (``k8s://``): each object's current problems,
    and the kinds it cannot read (CRD not installed, not allowed)."""

    def problems(self) -> Mapping[ConfigKey, tuple[Problem, ...]]: ...

    def unread(self) -> Mapping[str, str]: ...


def configz(
    configs: Iterable[Config], *, namespace: str = "", kind: str = ""
) -> list[dict[str, Any]]:
    """Every object (of ``kind``, in ``namespace``, when given), sorted by key."""
    schemas = SCHEMAS
    out: list[dict[str, Any]] = []
    for config in sorted(configs, key=lambda c: c.key):
        if (namespace and config.namespace != namespace) or (kind and config.kind != kind):
            continue
        schema = schemas.by_kind(config.kind)
        metadata: dict[str, Any] = {"name": config.name}
        if config.namespace:
            metadata["namespace"] = config.namespace
        if config.resource_version:
            metadata["resourceVersion"] = config.resource_version
        if config.creation_time is not None:
            metadata["creationTimestamp"] = rfc3339(config.creation_time.timestamp())
        if config.labels:
            metadata["labels"] = dict(config.labels)
        if config.annotations:
            metadata["annotations"] = dict(config.annotations)
        out.append(
            {
                "apiVersion": schema.api_versions[0] if schema is not None else "",
                "kind": schema.manifest_kind if schema is not None else config.kind,
                "metadata": metadata,
                "spec": json_format.MessageToDict(config.spec),
                "origin": str(config.origin),
            }
        )
    return out


def registryz(services: Iterable[Service]) -> list[dict[str, Any]]:
    """Every service, by hostname then namespace."""
    out: list[dict[str, Any]] = []
    for service in sorted(services, key=lambda s: s.key):
        entry: dict[str, Any] = {
            "hostname": service.hostname,
            "namespace": service.namespace,
            "addresses": list(service.addresses),
            "ports": [
                {
                    "name": port.name,
                    "port": port.number,
                    "protocol": port.protocol,
                    "targetPort": port.target_port,
                }
                for port in service.ports
            ],
            "resolution": str(service.resolution),
            "location": str(service.location),
            "exportTo": sorted(service.export_to),
            "subjectAltNames": list(service.subject_alt_names),
            "source": str(service.source),
        }
        if service.workload_selector is not None:
            entry["workloadSelector"] = dict(service.workload_selector)
        if service.creation_time is not None:
            entry["creationTimestamp"] = rfc3339(service.creation_time.timestamp())
        out.append(entry)
    return out


def _client(connection: DebugConnection, *, detail: bool) -> dict[str, Any]:
    proxy = connection.proxy
    entry: dict[str, Any] = {
        "connectionId": connection.id,
        "connectedAt": rfc3339(connection.connected_at),
        "address": connection.peer,
    }
    if not detail:
        return entry
    entry["proxy"] = proxy.id
    entry["nodeId"] = proxy.node_id
    entry["delta"] = connection.delta
    entry["labels"] = dict(proxy.labels)
    entry["metadata"] = dict(proxy.metadata or {})
    if proxy.locality:
        entry["locality"] = proxy.locality
    watches: dict[str, list[str]] = {}
    for type_url in connection.watched_types():
        names = connection.watched_names(type_url)
        watches[type_url] = ["*"] if names is None else sorted(names)
    entry["watches"] = watches
    stats = connection.stats
    entry["sent"] = {
        "responses": {short_name(t): n for t, n in stats.responses.items()},
        "resources": {short_name(t): n for t, n in stats.resources_sent.items()},
        "bytes": stats.bytes_sent,
    }
    return entry


def adsz(connections: Iterable[DebugConnection]) -> dict[str, Any]:
    """istiod's ``/debug/adsz``: every stream with what it is and what it watches."""
    clients = [_client(c, detail=True) for c in sorted(connections, key=lambda c: c.id)]
    return {"totalClients": len(clients), "clients": clients}


def connectionz(connections: Iterable[DebugConnection]) -> dict[str, Any]:
    """istiod's ``/debug/connections``: id, time and address of every stream."""
    clients = [_client(c, detail=False) for c in sorted(connections, key=lambda c: c.id)]
    return {"totalClients": len(clients), "clients": clients}


def push_status(discovery: DebugView) -> dict[str, Any]:
    """The current PushContext's figures and the push counters since start."""
    stats = discovery.stats
    cache = discovery.cache.stats
    out: dict[str, Any] = {
        "replica": discovery.replica,
        "ready": discovery.ready(),
        "version": discovery.version,
        "connections": len(discovery.connections()),
        "proxies": len(discovery.proxies()),
        "pendingPushes": discovery.pending_pushes(),
        "pushes": {
            "full": stats.full_pushes,
            "endpoint": stats.eds_pushes,
            "secret": stats.secret_pushes,
            "connectionsQueued": stats.connections_queued,
            "failures": stats.push_failures,
            "contextBuilds": stats.context_builds,
            "responsesByType": dict(sorted(stats.pushes.items())),
            "triggers": dict(sorted(stats.push_triggers.items())),
            "rejects": dict(sorted(stats.rejects.items())),
            "expiredNonces": dict(sorted(stats.expired_nonces.items())),
        },
        "cache": {
            "entries": len(discovery.cache),
            "hits": cache.hits,
            "misses": cache.misses,
            "evictions": cache.evictions,
            "invalidations": cache.invalidations,
        },
    }
    if discovery.ready():
        context = discovery.context
        out["context"] = {
            "version": context.version,
            "buildSeconds": round(context.stats.build_seconds, 6),
            "rebuilt": list(context.stats.rebuilt),
            "reused": list(context.stats.reused),
            "services": len(context.services.services),
            "destinationRules": len(context.destination_rules.keys),
            "virtualServices": len(context.virtual_services.keys),
            "sidecars": len(context.sidecars.keys),
            "gateways": len(context.gateways.keys),
        }
    return out


def sources_view(sources: Sequence[NamedSource]) -> list[dict[str, Any]]:
    """Each config source, in precedence order: its state, and every problem it has."""
    out: list[dict[str, Any]] = []
    for source in sources:
        entry: dict[str, Any] = {"source": source.name, "synced": source.has_synced()}
        if isinstance(source, ReportsAvailability):
            availability = source.availability()
            entry["state"] = availability.state
            entry["reason"] = availability.reason
            entry["since"] = rfc3339(availability.since) if availability.since else None
        if isinstance(source, ReportsFiles):
            statuses = source.statuses()
            entry["files"] = len(statuses)
            entry["objects"] = sum(len(s.objects) for s in statuses.values())
            problems = []
            for path in sorted(statuses):
                for problem in statuses[path].problems:
                    problems.append({**problem.as_dict(), "text": str(problem)})
            entry["problems"] = problems
        if isinstance(source, ReportsObjects):
            entry["unread"] = dict(source.unread())
            found = source.problems()
            entry["problems"] = [
                {**problem.as_dict(), "text": str(problem)}
                for key in sorted(found)
                for problem in found[key]
            ]
        if isinstance(source, ReportsUpstream):
            upstream = source.status()
            entry["state"] = "connected" if upstream.connected else "disconnected"
            entry["failures"] = upstream.failures
            entry["lastError"] = upstream.last_error
            entry["acceptedVersions"] = dict(upstream.accepted_versions)
            entry["problems"] = [
                {"type": type_url, "text": str(rejection)}
                for type_url, rejections in sorted(upstream.rejections.items())
                for rejection in rejections
            ]
        out.append(entry)
    return out
