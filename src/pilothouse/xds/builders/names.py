"""Istio's cluster names: build them, parse them back.

A service cluster is named ``<direction>|<port>|<subset>|<host>``, for example
``outbound|9080|v1|reviews.default.svc.cluster.local`` or, with no subset,
``outbound|9080||reviews.default.svc.cluster.local``.  A sidecar's inbound
cluster carries only the port: ``inbound|9080||``.  The same four parts joined
with ``_.`` (``outbound_.9080_.v1_.reviews.default.svc.cluster.local``) form the
DNS-SRV style name Istio uses as the SNI of ISTIO_MUTUAL connections; the parser
reads both forms.  ``BlackHoleCluster``, ``PassthroughCluster`` and
``InboundPassthroughCluster`` are the fixed names of the catch-all clusters.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

BLACKHOLE_CLUSTER: Final = "BlackHoleCluster"
PASSTHROUGH_CLUSTER: Final = "PassthroughCluster"
INBOUND_PASSTHROUGH_CLUSTER: Final = "InboundPassthroughCluster"

_SEPARATOR: Final = "|"
_SRV_SEPARATOR: Final = "_."


class Direction(enum.StrEnum):
    """Traffic direction, spelled as in the cluster name."""

    OUTBOUND = "outbound"
    INBOUND = "inbound"


_OUTBOUND: Final = Direction.OUTBOUND.value
_INBOUND: Final = Direction.INBOUND.value


@dataclass(frozen=True, slots=True)
class ClusterName:
    """The parts of an Istio service cluster name."""

    direction: Direction
    port: int
    subset: str
    host: str

    def __str__(self) -> str:
        return _SEPARATOR.join((self.direction.value, str(self.port), self.subset, self.host))


def outbound_cluster_name(host: str, port: int, subset: str = "") -> str:
    """``outbound|<port>|<subset>|<host>`` (what ``str(ClusterName(...))`` gives, made
    directly: names are made for every cluster, route and endpoint assignment)."""
    return _SEPARATOR.join((_OUTBOUND, str(port), subset, host))


def inbound_cluster_name(port: int) -> str:
    """``inbound|<port>||``: a sidecar's cluster for its own workload port."""
    return _SEPARATOR.join((_INBOUND, str(port), "", ""))


def srv_cluster_name(host: str, port: int, subset: str = "") -> str:
    """``outbound_.<port>_.<subset>_.<host>``: the default SNI for ISTIO_MUTUAL."""
    return _SRV_SEPARATOR.join((Direction.OUTBOUND.value, str(port), subset, host))


_DIRECTIONS: Final = {direction.value: direction for direction in Direction}
_SRV_PREFIXES: Final = tuple(direction.value + _SRV_SEPARATOR for direction in Direction)


def parse_cluster_name(name: str) -> ClusterName | None:
    """Split a service cluster name into its parts; ``None`` for any other name.

    Both the ``|`` form and the ``_.`` (DNS-SRV) form are understood.  The host
    part is taken whole, so a host that itself contains the separator survives.
    """
    separator = _SRV_SEPARATOR if name.startswith(_SRV_PREFIXES) else _SEPARATOR
    parts = name.split(separator, 3)
    if len(parts) != 4:
        return None
    direction_text, port_text, subset, host = parts
    direction = _DIRECTIONS.get(direction_text)
    if direction is None:
        return None
    if not port_text.isascii() or not port_text.isdigit():
        return None
    port = int(port_text)
    if not 0 < port < 65536:
        return None
    return ClusterName(direction, port, subset, host)


def is_service_cluster(name: str) -> bool:
    """True for names built by :func:`outbound_cluster_name` or :func:`inbound_cluster_name`."""
    return parse_cluster_name(name) is not None
