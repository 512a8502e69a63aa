"""TCPRoute and TLSRoute rules as the ``tcp`` and ``tls`` routes of Istio VirtualServices.

- A TCP listener, or a TLS listener in ``Terminate`` mode, takes ``tcp`` routes: every
  attached route's backends, the oldest route first (a connection has no request to
  match; the first route wins, as istiod's merged VirtualServices do).
- A TLS listener in ``Passthrough`` mode takes ``tls`` routes matched by SNI: each
  attached TLSRoute's hostnames (intersected with the listener's) as ``sniHosts``.
- Backends: Services and ``networking.istio.io/Hostname`` hosts with their weights; a
  backend of another namespace needs a ReferenceGrant.
- A Service parent (GAMMA) takes the same ``tcp`` routes, and ``tls`` routes matched
  by the TLSRoute's hostnames (:mod:`.mesh_translation`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pilothouse.api.k8s.gateway.v1 import routes_pb2, shared_pb2
from pilothouse.config.model import Config
from pilothouse.kinds.gateway_api.http_translation import (
    BackendCheck,
    Entry,
    backend_host,
    destination,
    route_order,
)


def l4_destinations(
    route: Config, refs: Sequence[shared_pb2.BackendRef], domain: str, allowed: BackendCheck
) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for ref in refs:
        weight = ref.weight if ref.HasField("weight") else 1
        host = backend_host(ref, route.namespace, domain)
        if weight == 0 or host is None:
            continue
        elsewhere = bool(ref.namespace) and ref.namespace != route.namespace
        if elsewhere and not allowed(ref.kind or "Service", ref.namespace, ref.name):
            continue
        found.append({"destination": destination(ref, host), "weight": weight})
    if len(found) == 1:
        found[0].pop("weight")
    return found


def l4_entries(
    route: Config, domain: str, allowed: BackendCheck, sni_hosts: Sequence[str] = ()
) -> list[Entry]:
    """The ``tcp`` routes of a TCPRoute or TLSRoute (``sni_hosts``: ``tls`` routes
    matched by these SNI names instead, for a Passthrough listener)."""
    spec = route.spec
    assert isinstance(spec, routes_pb2.TCPRoute | routes_pb2.TLSRoute)
    entries: list[Entry] = []
    for index, rule in enumerate(spec.rules):
        destinations = l4_destinations(route, rule.backend_refs, domain, allowed)
        if not destinations:
            continue
        entry: dict[str, Any] = {"route": destinations}
        if sni_hosts:
            entry["match"] = [{"sniHosts": list(sni_hosts)}]
        entries.append(Entry((*route_order(route), index), entry))
    return entries
