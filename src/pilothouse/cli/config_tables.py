"""Envoy config (as ``/config_dump`` JSON) in istioctl ``proxy-config`` tables.

Each kind has a function that takes the resources out of a config dump and one that
makes its rows; the columns are istioctl's:

- clusters: ``SERVICE FQDN  PORT  SUBSET  DIRECTION  TYPE  DESTINATION RULE``, read from
  Istio's cluster names (``outbound|9080|v1|reviews.bookinfo.svc.cluster.local``);
  other clusters (``BlackHoleCluster``) show their name and ``-``. The rule comes from
  the cluster's ``istio`` filter metadata when it has any.
- listeners: ``ADDRESSES  PORT  TYPE`` (HTTP when a filter chain holds an HTTP
  connection manager, TCP when it holds a TCP proxy, both as ``HTTP+TCP``).
- routes: ``NAME  VHOST NAME  DOMAINS  MATCH  VIRTUAL SERVICE``, one row per route
  (a virtual host without routes is ``/*`` and ``404``); domains are shortened as
  istioctl does (names without a port, two of them, ``+ N more...``).
- endpoints: ``ENDPOINT  STATUS  OUTLIER CHECK  CLUSTER`` from the cluster load
  assignments (EDS, and those inside STATIC and DNS clusters). This is the control
  plane's view: it cannot see outlier ejections, so that column is ``-``.

The JSON keys are the proto field names (``dynamic_active_clusters``), as Envoy and
``/debug/config_dump`` print them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

ADMIN: Final = "type.googleapis.com/envoy.admin.v3."
HCM: Final = "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
TCP_PROXY: Final = "envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy"

Rows = tuple[list[str], list[list[str]]]


def _part(dump: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    for config in dump.get("configs", ()):
        if config.get("@type") == ADMIN + kind:
            return config  # type: ignore[no-any-return]
    return {}


def clusters_of(dump: Mapping[str, Any]) -> list[dict[str, Any]]:
    entries = _part(dump, "ClustersConfigDump").get("dynamic_active_clusters", ())
    return [e["cluster"] for e in entries if "cluster" in e]


def listeners_of(dump: Mapping[str, Any]) -> list[dict[str, Any]]:
    entries = _part(dump, "ListenersConfigDump").get("dynamic_listeners", ())
    states = [e.get("active_state", {}) for e in entries]
    return [state["listener"] for state in states if "listener" in state]


def routes_of(dump: Mapping[str, Any]) -> list[dict[str, Any]]:
    entries = _part(dump, "RoutesConfigDump").get("dynamic_route_configs", ())
    return [e["route_config"] for e in entries if "route_config" in e]


def endpoints_of(dump: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every cluster load assignment: EDS ones, then those clusters carry inline."""
    entries = _part(dump, "EndpointsConfigDump").get("dynamic_endpoint_configs", ())
    found = [e["endpoint_config"] for e in entries if "endpoint_config" in e]
    eds = {a.get("cluster_name") for a in found}
    for cluster in clusters_of(dump):
        inline = cluster.get("load_assignment")
        if inline and cluster.get("name") not in eds:
            found.append({**inline, "cluster_name": inline.get("cluster_name", cluster["name"])})
    return sorted(found, key=lambda a: str(a.get("cluster_name", "")))


def _resource_ref(metadata: Any) -> str:
    """``name.namespace`` of the Istio config an ``istio`` filter metadata points at."""
    if not isinstance(metadata, dict):
        return "-"
    path = metadata.get("filter_metadata", {}).get("istio", {}).get("config", "")
    parts = str(path).strip("/").split("/")
    if len(parts) >= 7 and parts[3] == "namespaces":
        return f"{parts[6]}.{parts[4]}"
    return "-"


def cluster_rows(clusters: Iterable[Mapping[str, Any]]) -> Rows:
    header = ["SERVICE FQDN", "PORT", "SUBSET", "DIRECTION", "TYPE", "DESTINATION RULE"]
    rows = []
    for cluster in clusters:
        name = str(cluster.get("name", ""))
        parts = name.split("|")
        if len(parts) == 4 and parts[1].isdigit():
            direction, port, subset, fqdn = parts
            fqdn = fqdn or "-"
        else:
            direction, port, subset, fqdn = "-", "-", "-", name
        kind = cluster.get("type", "STATIC")
        if "cluster_type" in cluster:
            kind = str(cluster["cluster_type"].get("name", "CUSTOM"))
        rule = _resource_ref(cluster.get("metadata"))
        rows.append([fqdn, port, subset or "-", direction, str(kind), rule])
    rows.sort(key=lambda r: (r[3] == "-", r[0], int(r[1]) if r[1].isdigit() else 0, r[2], r[3]))
    return header, rows


def _listener_type(listener: Mapping[str, Any]) -> str:
    chains = list(listener.get("filter_chains", ()))
    if "default_filter_chain" in listener:
        chains.append(listener["default_filter_chain"])
    kinds = set()
    for chain in chains:
        for network_filter in chain.get("filters", ()):
            config_type = str(network_filter.get("typed_config", {}).get("@type", ""))
            if config_type.endswith(HCM):
                kinds.add("HTTP")
            elif config_type.endswith(TCP_PROXY):
                kinds.add("TCP")
    return "+".join(sorted(kinds)) or "-"


def _socket(address: Any) -> tuple[str, str]:
    if not isinstance(address, dict):
        return "-", "-"
    if "pipe" in address:
        return f"unix://{address['pipe'].get('path', '')}", "-"
    socket = address.get("socket_address", {})
    return str(socket.get("address", "-")), str(socket.get("port_value", 0))


def listener_rows(listeners: Iterable[Mapping[str, Any]]) -> Rows:
    rows = []
    for listener in listeners:
        address, port = _socket(listener.get("address"))
        extra = [_socket(a.get("address"))[0] for a in listener.get("additional_addresses", ())]
        rows.append([",".join([address, *extra]), port, _listener_type(listener)])
    rows.sort(key=lambda r: (int(r[1]) if r[1].isdigit() else -1, r[0]))
    return ["ADDRESSES", "PORT", "TYPE"], rows


def describe_domains(domains: Sequence[str]) -> str:
    if len(domains) <= 1:
        return domains[0] if domains else ""
    without_port = [d for d in domains if ":" not in d or d.startswith("[")]
    if len(without_port) > 2:
        return f"{', '.join(without_port[:2])} + {len(without_port) - 2} more..."
    return ", ".join(without_port)


def describe_match(match: Mapping[str, Any]) -> str:
    if "prefix" in match:
        text = f"{match['prefix']}*"
    elif "path" in match:
        text = str(match["path"])
    elif "safe_regex" in match:
        text = f"~{match['safe_regex'].get('regex', '')}"
    elif "path_separated_prefix" in match:
        text = f"{match['path_separated_prefix']}/*"
    else:
        text = "/*"
    headers = [h.get("name", "") for h in match.get("headers", ())]
    if headers:
        text += f" ({', '.join(headers)})"
    return text


def route_rows(routes: Iterable[Mapping[str, Any]]) -> Rows:
    header = ["NAME", "VHOST NAME", "DOMAINS", "MATCH", "VIRTUAL SERVICE"]
    rows = []
    for route in routes:
        name = str(route.get("name", ""))
        for host in route.get("virtual_hosts", ()):
            domains = describe_domains(list(host.get("domains", ())))
            if not host.get("routes"):
                rows.append([name, str(host.get("name", "")), domains, "/*", "404"])
            for item in host.get("routes", ()):
                service = _resource_ref(item.get("metadata"))
                match = describe_match(item.get("match", {}))
                rows.append([name, str(host.get("name", "")), domains, match, service])
    return header, rows


def endpoint_rows(assignments: Iterable[Mapping[str, Any]]) -> Rows:
    rows = []
    for assignment in assignments:
        cluster = str(assignment.get("cluster_name", ""))
        for locality in assignment.get("endpoints", ()):
            for lb_endpoint in locality.get("lb_endpoints", ()):
                address, port = _socket(lb_endpoint.get("endpoint", {}).get("address"))
                where = address if port == "-" else f"{address}:{port}"
                status = str(lb_endpoint.get("health_status", "UNKNOWN"))
                if status == "UNKNOWN":
                    status = "HEALTHY"  # Envoy treats an endpoint of unknown health as healthy
                rows.append([where, status, "-", cluster])
    return ["ENDPOINT", "STATUS", "OUTLIER CHECK", "CLUSTER"], rows
