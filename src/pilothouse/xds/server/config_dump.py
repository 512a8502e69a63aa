"""What pilothouse would send one connected proxy, in the shape of Envoy's ``/config_dump``.

istiod answers ``/debug/config_dump?proxyID=`` and the ``istio.io/debug/config_dump``
xDS type by generating, for the proxy's connection, each type it watches from the
current PushContext, and wrapping the resources as Envoy's admin API does:
``ClustersConfigDump`` (``dynamic_active_clusters``), ``EndpointsConfigDump`` (only with
``include_eds``), ``ListenersConfigDump`` (``dynamic_listeners`` with an active state)
and ``RoutesConfigDump`` (``dynamic_route_configs``). pilothouse does the same through
the proxy's own generators (:class:`~pilothouse.xds.server.proxy_resources.ProxyResources`)
and the resource cache, with the names the connection watches: a per-name type it does
not watch (RDS on a gateway without routes) is empty, a wildcard type it does not
watch is everything it would get if it asked. Each resource's ``version_info`` is the
current push version.

:class:`ProxyDump` is that content; :func:`config_dump` makes the protobuf message (the
xDS answer carries its ``configs``) and :func:`config_dump_json` the JSON Envoy prints,
built from each resource's JSON rendering (REST discovery's cache) rather than by
converting the whole message again. Both give the same document.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from envoy.admin.v3 import config_dump_pb2, config_dump_shared_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2

from pilothouse.protocol.subscriptions import Subscription
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS, is_wildcard_type, type_url_for
from pilothouse.push.cache import Resource
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.xds.server.backend import Backend
from pilothouse.xds.server.proxy_resources import ProxyResources

ADMIN_PREFIX: Final = "type.googleapis.com/envoy.admin.v3."
DUMP_ORDER: Final = (CDS, EDS, LDS, RDS)
"""The types a dump holds, in the order Envoy lists them."""


class BadTypes(ValueError):
    """A ``types=`` value names something that is not CDS, EDS, LDS or RDS."""


@dataclass(frozen=True, slots=True)
class ProxyDump:
    """The resources of each type included, sorted by name, and the push version."""

    version: str
    resources: Mapping[str, tuple[Resource, ...]]


def dump_types(types: str, *, include_eds: bool) -> tuple[str, ...]:
    """The types asked for: ``types`` (comma-separated short names such as ``cds`` or
    type URLs; empty means all but EDS) plus EDS when ``include_eds``. Raises BadTypes."""
    wanted: set[str] = set()
    for word in (w.strip() for w in types.split(",")):
        if not word:
            continue
        type_url = type_url_for(word)
        if type_url not in DUMP_ORDER:
            raise BadTypes(f"types: {word!r} is not one of cds, eds, lds, rds")
        wanted.add(type_url)
    if not wanted:
        wanted = {CDS, LDS, RDS}
    if include_eds:
        wanted.add(EDS)
    return tuple(t for t in DUMP_ORDER if t in wanted)


def proxy_dump(
    proxy: ProxyIdentity,
    subscriptions: Callable[[str], Subscription | None],
    backend: Backend,
    types: Collection[str] = (CDS, LDS, RDS),
) -> ProxyDump:
    """Generate ``types`` for ``proxy`` with the names ``subscriptions`` gives per type."""
    source = ProxyResources(proxy, backend)
    found: dict[str, tuple[Resource, ...]] = {}
    for type_url in DUMP_ORDER:
        if type_url not in types:
            continue
        subscription = subscriptions(type_url)
        names: frozenset[str] | None
        if subscription is None:
            names = None if is_wildcard_type(type_url) else frozenset()
        else:
            names = None if subscription.wildcard else subscription.names
        generated = source.generate(type_url, names) if names != frozenset() else {}
        found[type_url] = tuple(generated[name] for name in sorted(generated))
    return ProxyDump(backend.version, found)


def config_dump(dump: ProxyDump) -> Any:
    """``envoy.admin.v3.ConfigDump`` of ``dump``."""
    message = config_dump_pb2.ConfigDump()
    for type_url, resources in dump.resources.items():
        part = _PARTS[type_url](dump.version, resources)
        message.configs.add().Pack(part)
    return message


def config_dump_json(dump: ProxyDump, render: Callable[[Resource], str]) -> dict[str, Any]:
    """The proto3 JSON of :func:`config_dump` (field names as in the protos, as Envoy
    prints them), from ``render`` (one resource's JSON, with ``@type``)."""
    version = dump.version
    configs: list[dict[str, Any]] = []
    for type_url, resources in dump.resources.items():
        rendered = [json.loads(render(r)) for r in resources]
        if type_url == CDS:
            entry = {"@type": ADMIN_PREFIX + "ClustersConfigDump", "version_info": version}
            items = [{"version_info": version, "cluster": r} for r in rendered]
            _add(entry, "dynamic_active_clusters", items)
        elif type_url == EDS:
            entry = {"@type": ADMIN_PREFIX + "EndpointsConfigDump"}
            items = [{"version_info": version, "endpoint_config": r} for r in rendered]
            _add(entry, "dynamic_endpoint_configs", items)
        elif type_url == LDS:
            entry = {"@type": ADMIN_PREFIX + "ListenersConfigDump", "version_info": version}
            items = [
                {"name": resource.name, "active_state": {"version_info": version, "listener": r}}
                for resource, r in zip(resources, rendered, strict=True)
            ]
            _add(entry, "dynamic_listeners", items)
        else:
            entry = {"@type": ADMIN_PREFIX + "RoutesConfigDump"}
            items = [{"version_info": version, "route_config": r} for r in rendered]
            _add(entry, "dynamic_route_configs", items)
        configs.append(entry)
    return {"configs": configs} if configs else {}


def _add(entry: dict[str, Any], key: str, items: list[dict[str, Any]]) -> None:
    if items:  # proto3 JSON leaves empty lists out
        entry[key] = items


def _any(resource: Resource) -> Any:
    return any_pb2.Any.FromString(resource.body)


def _clusters(version: str, resources: tuple[Resource, ...]) -> Any:
    part = config_dump_shared_pb2.ClustersConfigDump(version_info=version)
    for resource in resources:
        part.dynamic_active_clusters.add(version_info=version, cluster=_any(resource))
    return part


def _endpoints(version: str, resources: tuple[Resource, ...]) -> Any:
    part = config_dump_shared_pb2.EndpointsConfigDump()
    for resource in resources:
        part.dynamic_endpoint_configs.add(version_info=version, endpoint_config=_any(resource))
    return part


def _listeners(version: str, resources: tuple[Resource, ...]) -> Any:
    part = config_dump_shared_pb2.ListenersConfigDump(version_info=version)
    for resource in resources:
        listener = part.dynamic_listeners.add(name=resource.name)
        listener.active_state.version_info = version
        listener.active_state.listener.CopyFrom(_any(resource))
    return part


def _routes(version: str, resources: tuple[Resource, ...]) -> Any:
    part = config_dump_shared_pb2.RoutesConfigDump()
    for resource in resources:
        part.dynamic_route_configs.add(version_info=version, route_config=_any(resource))
    return part


_PARTS: Final[Mapping[str, Callable[[str, tuple[Resource, ...]], Any]]] = MappingProxyType(
    {CDS: _clusters, EDS: _endpoints, LDS: _listeners, RDS: _routes}
)
