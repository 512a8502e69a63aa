"""The shared outbound listener builder: chains in order with the catch-all last, the TLS
inspector only for SNI, istiod's PassthroughFilterChain when no chain takes the rest
(BlackHoleCluster under REGISTRY_ONLY), and precise errors for impossible chain sets."""

from __future__ import annotations

import pytest
from envoy.extensions.filters.network.tcp_proxy.v3 import tcp_proxy_pb2

from pilothouse.xds.builders.filter_chain import WeightedCluster
from pilothouse.xds.builders.listener_shared import L4Chain, build_shared_outbound_listener

A = L4Chain(("a.example",), "", (WeightedCluster("outbound|443||a.example"),), "a")
ALL = L4Chain((), "", (WeightedCluster("outbound|443||all.example"),), "all")
RANGE = L4Chain((), "10.1.2.3/8", (WeightedCluster("outbound|443||range.example"),), "r")


def test_the_chain_for_every_connection_goes_last_behind_the_tls_inspector() -> None:
    listener = build_shared_outbound_listener("0.0.0.0", 443, [ALL, A, RANGE], allow_any=True)
    assert listener.name == "0.0.0.0_443"
    assert not listener.bind_to_port.value and listener.HasField("bind_to_port")
    matches = [list(c.filter_chain_match.server_names) for c in listener.filter_chains]
    assert matches == [["a.example"], [], []]
    (cidr,) = listener.filter_chains[1].filter_chain_match.prefix_ranges
    assert (cidr.address_prefix, cidr.prefix_len.value) == ("10.0.0.0", 8)
    assert not listener.filter_chains[2].HasField("filter_chain_match")
    assert not listener.HasField("default_filter_chain")
    assert [f.name for f in listener.listener_filters] == ["envoy.filters.listener.tls_inspector"]


@pytest.mark.parametrize(("allow_any", "fallback"), [(True, "Passthrough"), (False, "BlackHole")])
def test_without_a_chain_for_every_connection_the_rest_goes_to_istiod_s_default(
    allow_any: bool, fallback: str
) -> None:
    listener = build_shared_outbound_listener("0.0.0.0", 443, [A], allow_any=allow_any)
    default = listener.default_filter_chain
    assert default.name == "PassthroughFilterChain"
    assert default.HasField("filter_chain_match")
    proxy = tcp_proxy_pb2.TcpProxy()
    assert default.filters[0].typed_config.Unpack(proxy)
    assert proxy.cluster == f"{fallback}Cluster"


def test_impossible_chain_sets_are_refused() -> None:
    with pytest.raises(ValueError, match=r"0\.0\.0\.0_443: no filter chain"):
        build_shared_outbound_listener("0.0.0.0", 443, [], allow_any=True)
    with pytest.raises(ValueError, match="two chains match every connection"):
        build_shared_outbound_listener("0.0.0.0", 443, [ALL, ALL], allow_any=True)
