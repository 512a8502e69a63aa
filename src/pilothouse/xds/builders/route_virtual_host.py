"""Virtual hosts and route configurations: domains a sidecar answers for, the RDS resource.

:func:`virtual_host_domains` gives the ``Host`` header forms istiod accepts for a
service seen from a sidecar in ``namespace``:

- always the FQDN and ``FQDN:port``;
- for a Kubernetes-style host ``<name>.<ns>.svc.<suffix>`` (with the proxy's
  own suffix), the short forms: in the proxy's namespace ``name``,
  ``name.ns.svc`` and ``name.ns``; from another namespace only ``name.ns`` and
  ``name.ns.svc`` (a bare ``name`` would mean a service of the proxy's own
  namespace); each with its ``:port`` twin;
- no short forms for any other host (``api.example.com``);
- then the service's addresses, with and without port.

Options follow newer istiod: ``include_port=False`` drops every ``:port`` form
(istiod ≥ 1.22 sets ``ignore_port_in_host_matching`` on sidecar route
configurations instead), ``absolute_fqdn=True`` adds ``FQDN.`` (and
``FQDN.:port``), as istiod ≥ 1.27 does by default.

:func:`sidecar_domains` remembers those domains per hostname and port for the service's
own namespace and for any other. :func:`service_virtual_host` is the virtual host of a
service no VirtualService covers (its default route to its cluster). Sidecar scopes of
different namespaces differ in a few short domain names only, so each distinct one
(name, domains, cluster, hash policies) is encoded once and decoded for every other
route configuration that has it: decoding is a C call, building it a dozen Python-level
message writes.

:func:`build_route_configuration` sorts virtual hosts by name, the catch-all
(``*``) hosts last, and writes ``validate_clusters: false`` and a 1 MiB
``max_direct_response_body_size_bytes`` as istiod does.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable, Sequence
from typing import Final

from envoy.config.route.v3 import (  # type: ignore[import-untyped]
    route_components_pb2 as rc_pb2,
)
from envoy.config.route.v3 import route_pb2

from pilothouse.push.hostnames import DEFAULT_DOMAIN_SUFFIX
from pilothouse.xds.builders.names import PASSTHROUGH_CLUSTER
from pilothouse.xds.builders.route import build_default_route

MAX_DIRECT_RESPONSE_BODY_BYTES: Final = 1024 * 1024
SERVICE_HOSTS_KEPT: Final = 4096
"""Distinct encoded service virtual hosts remembered (the least recently used go)."""
ALLOW_ANY: Final = "allow_any"
BLOCK_ALL: Final = "block_all"

VirtualHost = rc_pb2.VirtualHost
RouteConfiguration = route_pb2.RouteConfiguration


def domain_name(host: str, port: int) -> str:
    """``host:port``, IPv6 addresses in brackets."""
    return f"{_ipv6_compliant(host)}:{port}"


def _ipv6_compliant(host: str) -> str:
    if ":" not in host:
        return host  # every IPv6 address has a colon; nothing else is bracketed
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    return f"[{host}]" if address.version == 6 else host


def virtual_host_domains(
    hostname: str,
    port: int,
    namespace: str,
    *,
    short_names: bool = True,
    include_port: bool = True,
    absolute_fqdn: bool = False,
    addresses: Iterable[str] = (),
    domain_suffix: str = DEFAULT_DOMAIN_SUFFIX,
) -> list[str]:
    """The ``domains`` of a service's virtual host for a sidecar in ``namespace``."""
    out: list[str] = []

    def add(host: str) -> None:
        out.append(_ipv6_compliant(host))
        if include_port:
            out.append(domain_name(host, port))

    add(hostname)
    if absolute_fqdn:
        add(f"{hostname}.")
    if short_names:
        for short in kubernetes_short_names(hostname, namespace, domain_suffix):
            add(short)
    for address in addresses:
        if address and address != "0.0.0.0":
            add(address)
    return out


def sidecar_domains(
    hostname: str, port: int, namespace: str, domain_suffix: str = DEFAULT_DOMAIN_SUFFIX
) -> tuple[str, ...]:
    """:func:`virtual_host_domains` with its defaults, worked out once per hostname and
    port for the service's own namespace and once for every other (the namespace
    matters only as the one the short names of the service are in, or not)."""
    home = service_namespace(hostname, domain_suffix)
    local = home is not None and home == namespace
    return _sidecar_domains(hostname, port, local, domain_suffix)


@functools.lru_cache(maxsize=SERVICE_HOSTS_KEPT)
def _sidecar_domains(hostname: str, port: int, local: bool, domain_suffix: str) -> tuple[str, ...]:
    """:func:`sidecar_domains` of the service's own namespace (``local``) or of another
    (the empty name: no service's namespace)."""
    namespace = (service_namespace(hostname, domain_suffix) or "") if local else ""
    return tuple(virtual_host_domains(hostname, port, namespace, domain_suffix=domain_suffix))


@functools.lru_cache(maxsize=SERVICE_HOSTS_KEPT)
def service_namespace(hostname: str, domain_suffix: str) -> str | None:
    """The namespace of a Kubernetes-style ``<name>.<ns>.svc.<suffix>`` host (None: not
    one, so it has no short names)."""
    if not hostname.endswith(f".svc.{domain_suffix}"):
        return None
    svc = hostname.find(".svc.")
    first = hostname.find(".")
    if first <= 0 or first + 1 >= svc:
        return None
    return hostname[first + 1 : svc]


def kubernetes_short_names(hostname: str, namespace: str, domain_suffix: str) -> list[str]:
    """The shorter names that reach ``hostname`` from a pod in ``namespace``."""
    if not hostname.endswith(f".svc.{domain_suffix}"):
        return []
    svc = hostname.find(".svc.")
    first = hostname.find(".")
    if first <= 0 or first + 1 >= svc:
        return []
    name, service_namespace = hostname[:first], hostname[first + 1 : svc]
    with_namespace = hostname[:svc]
    if service_namespace == namespace:
        return [name, f"{with_namespace}.svc", with_namespace]
    return [with_namespace, f"{with_namespace}.svc"]


def build_virtual_host(
    name: str,
    domains: Sequence[str],
    routes: Iterable[rc_pb2.Route],
    *,
    include_request_attempt_count: bool = True,
) -> rc_pb2.VirtualHost:
    """A virtual host; ``x-envoy-attempt-count`` is sent upstream by default, as istiod."""
    return VirtualHost(
        name=name,
        domains=list(domains),
        routes=list(routes),
        include_request_attempt_count=include_request_attempt_count,
    )


def service_virtual_host(
    name: str,
    domains: Sequence[str],
    cluster: str,
    hash_policy: Sequence[rc_pb2.RouteAction.HashPolicy] = (),
) -> rc_pb2.VirtualHost:
    """The virtual host ``name`` sending ``domains`` to ``cluster`` by its default route
    (:func:`~pilothouse.xds.builders.route.build_default_route`), a message of the
    caller's own, equal to one built afresh."""
    policies = tuple([p.SerializeToString(deterministic=True) for p in hash_policy])
    encoded = _encoded_service_host(name, tuple(domains), cluster, policies)
    return VirtualHost.FromString(encoded)


@functools.lru_cache(maxsize=SERVICE_HOSTS_KEPT)
def _encoded_service_host(
    name: str, domains: tuple[str, ...], cluster: str, hash_policy: tuple[bytes, ...]
) -> bytes:
    """:func:`service_virtual_host`, encoded: a pure function of its arguments."""
    policies = [rc_pb2.RouteAction.HashPolicy.FromString(p) for p in hash_policy]
    route = build_default_route(cluster, hash_policy=policies)
    return bytes(build_virtual_host(name, domains, [route]).SerializeToString(deterministic=True))


def build_catch_all_virtual_host(
    *, allow_any: bool, include_request_attempt_count: bool = True
) -> rc_pb2.VirtualHost:
    """istiod's last virtual host for unknown hosts.

    ``allow_any`` (outbound traffic policy ALLOW_ANY): everything to
    ``PassthroughCluster`` with no timeout; otherwise ``block_all``: a 502.
    """
    route = rc_pb2.Route(name=ALLOW_ANY if allow_any else BLOCK_ALL)
    route.match.prefix = "/"
    if allow_any:
        route.route.cluster = PASSTHROUGH_CLUSTER
        route.route.timeout.SetInParent()
        route.route.max_stream_duration.max_stream_duration.SetInParent()
        route.route.max_stream_duration.grpc_timeout_header_max.SetInParent()
    else:
        route.direct_response.status = 502
    return build_virtual_host(
        route.name, ["*"], [route], include_request_attempt_count=include_request_attempt_count
    )


def build_route_configuration(
    name: str,
    virtual_hosts: Iterable[rc_pb2.VirtualHost],
    *,
    validate_clusters: bool = False,
    ignore_port_in_host_matching: bool = False,
) -> route_pb2.RouteConfiguration:
    """The RDS resource: virtual hosts in a stable order (by name, ``*`` hosts last)."""
    ordered = sorted(virtual_hosts, key=lambda vhost: ("*" in vhost.domains, vhost.name))
    out = RouteConfiguration(name=name, virtual_hosts=ordered)
    out.validate_clusters.value = validate_clusters
    out.max_direct_response_body_size_bytes.value = MAX_DIRECT_RESPONSE_BODY_BYTES
    if ignore_port_in_host_matching:
        out.ignore_port_in_host_matching = True
    return out
