"""A sidecar's outbound listener that several non-HTTP services share, one chain each.

istiod puts the TCP and TLS ports of services without an address on one listener,
``0.0.0.0_<port>``, and tells the services apart by filter chain match: the SNI the
TLS inspector reads (``server_names``), or the destination address range of a service
whose address is a CIDR (``prefix_ranges``). :func:`build_shared_outbound_listener`
builds such a listener from :class:`L4Chain` values already free of conflicts (see
lds_outbound.py, which decides who keeps what): each chain a ``tcp_proxy`` to its
destinations, the one matching every connection (if any) last, and otherwise istiod's
default chain ``PassthroughFilterChain`` for connections no chain matches
(PassthroughCluster, or BlackHoleCluster when the mesh allows registry services only).
Like every default-view outbound listener it does not bind: ``virtualOutbound`` hands
it its connections.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from envoy.config.listener.v3 import listener_pb2  # type: ignore[import-untyped]

from pilothouse.xds.builders.filter_chain import (
    WeightedCluster,
    build_filter_chain,
    build_tcp_proxy,
    needs_tls_inspector,
    tcp_proxy_filter,
)
from pilothouse.xds.builders.listener import cidr_range, listener_name, tls_inspector
from pilothouse.xds.builders.listener_sidecar import outbound_listener_frame
from pilothouse.xds.builders.names import BLACKHOLE_CLUSTER, PASSTHROUGH_CLUSTER

PASSTHROUGH_CHAIN: Final = "PassthroughFilterChain"
"""istiod's name for an outbound listener's default chain."""


@dataclass(frozen=True, slots=True)
class L4Chain:
    """One chain of a shared listener: what it matches and where it sends connections."""

    server_names: tuple[str, ...]
    """SNI names it takes (empty: any name)."""
    destination_cidr: str
    """The destination range it takes ("": any destination)."""
    destinations: tuple[WeightedCluster, ...]
    stat_prefix: str
    """Counts a weighted ``tcp_proxy`` (a single cluster counts under its own name)."""

    @property
    def matches_all(self) -> bool:
        return not self.server_names and not self.destination_cidr


def build_shared_outbound_listener(
    address: str, port: int, chains: Sequence[L4Chain], *, allow_any: bool
) -> listener_pb2.Listener:
    """The listener ``<address>_<port>`` running ``chains`` (in order, the chain matching
    every connection last), behind the TLS inspector when a chain matches SNI.

    Raises ``ValueError`` without chains or with two chains matching every connection.
    """
    if not chains:
        raise ValueError(f"listener {listener_name(address, port)}: no filter chain")
    catch_all = [c for c in chains if c.matches_all]
    if len(catch_all) > 1:
        raise ValueError(
            f"listener {listener_name(address, port)}: two chains match every connection"
        )
    listener = outbound_listener_frame(address, port, bind=False)
    for chain in [*(c for c in chains if not c.matches_all), *catch_all]:
        listener.filter_chains.append(_filter_chain(chain))
    if not catch_all:
        fallback = PASSTHROUGH_CLUSTER if allow_any else BLACKHOLE_CLUSTER
        proxy = build_tcp_proxy([WeightedCluster(fallback)])
        default = build_filter_chain(
            [tcp_proxy_filter(proxy)], name=PASSTHROUGH_CHAIN, connect_timeout=None
        )
        default.filter_chain_match.SetInParent()
        listener.default_filter_chain.CopyFrom(default)
    if needs_tls_inspector(listener.filter_chains):
        listener.listener_filters.append(tls_inspector())
    return listener


def _filter_chain(chain: L4Chain) -> listener_pb2.FilterChain:
    proxy = build_tcp_proxy(
        chain.destinations,
        stat_prefix=None if len(chain.destinations) == 1 else chain.stat_prefix,
    )
    built = build_filter_chain([tcp_proxy_filter(proxy)], sni=chain.server_names)
    if chain.destination_cidr:
        built.filter_chain_match.prefix_ranges.append(cidr_range(chain.destination_cidr))
    return built
