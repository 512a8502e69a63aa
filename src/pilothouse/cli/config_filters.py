"""``proxy-config``'s filters, as istioctl's: which clusters, listeners and endpoints to show.

- clusters: ``--fqdn`` (a part of the service's FQDN, or a cluster name such as
  ``BlackHoleCluster``), ``--port``, ``--subset``, ``--direction``
  (``outbound``/``inbound``), read from Istio's cluster names
  (``outbound|9080|v1|reviews.bookinfo.svc.cluster.local``);
- listeners: ``--port``;
- endpoints: ``--port`` (the endpoint's), and ``--fqdn``, ``--subset``, ``--direction`` of
  the cluster they belong to;
- routes take none.

A filter applies to the table and to ``-o json|yaml`` alike. A cluster whose name is not
Istio's (``PassthroughCluster``) has no port, subset or direction: any of those filters
leaves it out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ConfigFilter:
    """What the user asked to keep (empty or 0: anything)."""

    fqdn: str = ""
    port: int = 0
    subset: str = ""
    direction: str = ""

    def __bool__(self) -> bool:
        return bool(self.fqdn or self.port or self.subset or self.direction)

    def keeps_cluster_name(self, name: str, *, port: bool = True) -> bool:
        """Whether a cluster named ``name`` passes (``port``: compare its port too)."""
        parts = name.split("|")
        if len(parts) == 4 and parts[1].isdigit():
            direction, cluster_port, subset, fqdn = parts
        else:
            direction, cluster_port, subset, fqdn = "", "", "", name
        if self.fqdn and self.fqdn not in fqdn:
            return False
        if port and self.port and cluster_port != str(self.port):
            return False
        if self.subset and subset != self.subset:
            return False
        return not (self.direction and direction != self.direction)

    def clusters(self, clusters: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [c for c in clusters if self.keeps_cluster_name(str(c.get("name", "")))]

    def listeners(self, listeners: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not self.port:
            return listeners
        return [entry for entry in listeners if _port(entry.get("address")) == self.port]

    def endpoints(self, assignments: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The assignments of the clusters kept, holding only the endpoints kept."""
        kept = []
        for assignment in assignments:
            name = str(assignment.get("cluster_name", ""))
            if not self.keeps_cluster_name(name, port=False):
                continue
            if not self.port:
                kept.append(assignment)
                continue
            localities = []
            for locality in assignment.get("endpoints", ()):
                lb_endpoints = [
                    e
                    for e in locality.get("lb_endpoints", ())
                    if _port(e.get("endpoint", {}).get("address")) == self.port
                ]
                if lb_endpoints:
                    localities.append({**locality, "lb_endpoints": lb_endpoints})
            if localities:
                kept.append({**assignment, "endpoints": localities})
        return kept


def _port(address: Any) -> int:
    if not isinstance(address, Mapping):
        return 0
    value = address.get("socket_address", {}).get("port_value", 0)
    return int(value) if isinstance(value, int | str) and str(value).isdigit() else 0
