"""What an Envoy holds, read from its ``/config_dump?include_eds``: digests by type and name.

Only what came over xDS is compared: the dynamic clusters, listeners, route
configurations and endpoints. Resources from the bootstrap (``static_*``) were never
sent by a control plane; they are counted, not compared.

Which copy of a resource counts as held:

- clusters: a warming cluster is held (Envoy ACKs CDS before the cluster warms) and
  wins over the active copy of the same name, which it is about to replace;
- listeners: the warming state wins over the active one; a listener with only a
  draining state is on its way out and is not held; ``error_state`` is a rejected
  update and is not held;
- endpoints: Envoy dumps an assignment for every cluster, whatever its discovery type;
  only those of EDS clusters came over EDS, keyed by the cluster's EDS service name
  (its name when unset).

A resource that cannot be read into its message is kept with an ``unreadable:``
digest and the reason in :attr:`HeldResources.problems`; it then matches nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pilothouse.inspector.digest import Unreadable, json_digest
from pilothouse.inspector.message_types import MessageTypes
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS, TYPE_PREFIX

_DUMP_PREFIX: Final = TYPE_PREFIX + "envoy.admin.v3."
BOOTSTRAP_DUMP: Final = _DUMP_PREFIX + "BootstrapConfigDump"
CLUSTERS_DUMP: Final = _DUMP_PREFIX + "ClustersConfigDump"
LISTENERS_DUMP: Final = _DUMP_PREFIX + "ListenersConfigDump"
ROUTES_DUMP: Final = _DUMP_PREFIX + "RoutesConfigDump"
ENDPOINTS_DUMP: Final = _DUMP_PREFIX + "EndpointsConfigDump"
UNREADABLE: Final = "unreadable: "
"""How the digest of a resource that could not be read starts."""


class BadDump(ValueError):
    """The document is not an Envoy ``/config_dump``."""


@dataclass(frozen=True)
class HeldResources:
    """Digest by name, per type URL, of what the Envoy holds from xDS."""

    digests: Mapping[str, Mapping[str, str]]
    static: Mapping[str, int] = field(default_factory=dict)
    """Resources from the bootstrap, per type URL: counted, not compared."""
    problems: tuple[str, ...] = ()
    """Resources that could not be read, one line each."""


def held_resources(dump: Mapping[str, Any], types: MessageTypes) -> HeldResources:
    """Read a ``/config_dump?include_eds`` document."""
    configs = dump.get("configs") if isinstance(dump, Mapping) else None
    if not isinstance(configs, list):
        raise BadDump("no 'configs' list: not an Envoy /config_dump")
    by_type: dict[str, Mapping[str, Any]] = {}
    for config in configs:
        if isinstance(config, Mapping) and isinstance(config.get("@type"), str):
            by_type[config["@type"]] = config
    reader = _Reader(types)
    clusters = by_type.get(CLUSTERS_DUMP, {})
    cluster_dumps = _clusters(clusters)
    reader.add(CDS, cluster_dumps.items())
    reader.count_static(CDS, clusters.get("static_clusters"))
    listeners = by_type.get(LISTENERS_DUMP, {})
    reader.add(LDS, _listeners(listeners))
    reader.count_static(LDS, listeners.get("static_listeners"))
    routes = by_type.get(ROUTES_DUMP, {})
    reader.add(RDS, _named(routes.get("dynamic_route_configs"), "route_config", "name"))
    reader.count_static(RDS, routes.get("static_route_configs"))
    endpoints = by_type.get(ENDPOINTS_DUMP, {})
    reader.add(EDS, _eds(endpoints, cluster_dumps))
    reader.count_static(EDS, endpoints.get("static_endpoint_configs"))
    return HeldResources(reader.digests, reader.static, tuple(reader.problems))


def dumped_node_id(dump: Mapping[str, Any]) -> str | None:
    """The node id in the dump's bootstrap: which proxy this Envoy is."""
    for config in _entries(dump.get("configs")):
        if config.get("@type") == BOOTSTRAP_DUMP:
            node = _field(_field(config, "bootstrap"), "node")
            if node is not None and isinstance(node.get("id"), str):
                return str(node["id"])
    return None


class _Reader:
    def __init__(self, types: MessageTypes) -> None:
        self.types = types
        self.digests: dict[str, dict[str, str]] = {CDS: {}, EDS: {}, LDS: {}, RDS: {}}
        self.static: dict[str, int] = {}
        self.problems: list[str] = []

    def add(self, type_url: str, resources: Iterable[tuple[str, Mapping[str, Any]]]) -> None:
        held = self.digests[type_url]
        for name, resource in resources:
            try:
                held[name] = json_digest(type_url, resource, self.types)
            except Unreadable as problem:
                held[name] = UNREADABLE + str(problem)
                self.problems.append(f"{name}: {problem}")

    def count_static(self, type_url: str, entries: Any) -> None:
        if isinstance(entries, list) and entries:
            self.static[type_url] = len(entries)


def _clusters(dump: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Cluster name → cluster, warming copies over active ones."""
    found = dict(_named(dump.get("dynamic_active_clusters"), "cluster", "name"))
    found.update(_named(dump.get("dynamic_warming_clusters"), "cluster", "name"))
    return found


def _listeners(dump: Mapping[str, Any]) -> Iterable[tuple[str, Mapping[str, Any]]]:
    for entry in _entries(dump.get("dynamic_listeners")):
        for state in ("warming_state", "active_state"):
            listener = _field(entry.get(state), "listener")
            if listener is not None:
                yield str(entry.get("name") or listener.get("name", "")), listener
                break


def _eds(
    dump: Mapping[str, Any], clusters: Mapping[str, Mapping[str, Any]]
) -> Iterable[tuple[str, Mapping[str, Any]]]:
    eds_names = {}  # the name an assignment is dumped under → its EDS resource name
    for name, cluster in clusters.items():
        if cluster.get("type") == "EDS":
            config = cluster.get("eds_cluster_config")
            service = config.get("service_name") if isinstance(config, Mapping) else None
            eds_names[name] = service or name
            if service:
                eds_names[service] = service
    for name, assignment in _named(
        dump.get("dynamic_endpoint_configs"), "endpoint_config", "cluster_name"
    ):
        if name in eds_names:
            yield eds_names[name], assignment


def _named(entries: Any, key: str, name_field: str) -> Iterable[tuple[str, Mapping[str, Any]]]:
    for entry in _entries(entries):
        resource = _field(entry, key)
        if resource is not None:
            yield str(resource.get(name_field, "")), resource


def _entries(entries: Any) -> Iterable[Mapping[str, Any]]:
    if isinstance(entries, list):
        yield from (entry for entry in entries if isinstance(entry, Mapping))


def _field(entry: Any, key: str) -> Mapping[str, Any] | None:
    value = entry.get(key) if isinstance(entry, Mapping) else None
    return value if isinstance(value, Mapping) else None
