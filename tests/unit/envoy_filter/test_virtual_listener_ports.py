"""``listener.portNumber`` on istiod's virtual listeners (``virtualOutbound``, which takes
the traffic of every port): it picks the filter chains whose ``destination_port`` is that
port, not the listener's own port; a LISTENER patch still compares the listener's port."""

from __future__ import annotations

from typing import Any

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.xds.builders.envoy_patch_listener import patch_listeners
from pilothouse.xds.builders.envoy_patch_match import Applied
from pilothouse.xds.builders.listener_sidecar import (
    VIRTUAL_OUTBOUND_BLACKHOLE_CHAIN,
    build_outbound_listener,
    build_virtual_outbound_listener,
)

from .patching import rules

OUTBOUND = EnvoyFilter.SIDECAR_OUTBOUND
TCP_PROXY = "envoy.filters.network.tcp_proxy"
RBAC = "type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC"


def run(listener: Any, *patches: dict[str, Any]) -> tuple[Any, Applied]:
    applied: Applied = set()
    (patched,) = patch_listeners([listener], rules(*patches), OUTBOUND, applied)
    return patched, applied


def rename_chains(port: int) -> dict[str, Any]:
    return {
        "applyTo": "FILTER_CHAIN",
        "match": {"listener": {"portNumber": port}},
        "patch": {"operation": "MERGE", "value": {"name": f"port-{port}"}},
    }


def test_a_chain_patch_picks_the_chains_of_that_destination_port() -> None:
    virtual = build_virtual_outbound_listener(port=15001)
    blackhole, catch_all = (c.name for c in virtual.filter_chains)
    assert blackhole == VIRTUAL_OUTBOUND_BLACKHOLE_CHAIN
    patched, applied = run(virtual, rename_chains(15001))
    # the chain for destination port 15001, not the catch-all (no destination port)
    assert [c.name for c in patched.filter_chains] == ["port-15001", catch_all]
    assert applied


def test_a_port_no_chain_is_for_matches_nothing_though_the_listener_is_on_it() -> None:
    virtual = build_virtual_outbound_listener(port=15001)
    before = [c.name for c in virtual.filter_chains]
    patched, applied = run(virtual, rename_chains(8080))
    assert [c.name for c in patched.filter_chains] == before and not applied


def test_a_network_filter_patch_follows_the_chain_port_too() -> None:
    insert = {
        "applyTo": "NETWORK_FILTER",
        "match": {
            "listener": {"portNumber": 15001, "filterChain": {"filter": {"name": TCP_PROXY}}}
        },
        "patch": {
            "operation": "INSERT_BEFORE",
            "value": {"name": "envoy.filters.network.rbac", "typed_config": {"@type": RBAC}},
        },
    }
    patched, _ = run(build_virtual_outbound_listener(port=15001), insert)
    blackhole, catch_all = patched.filter_chains
    assert [f.name for f in blackhole.filters] == ["envoy.filters.network.rbac", TCP_PROXY]
    assert [f.name for f in catch_all.filters] == [TCP_PROXY]


def test_a_listener_patch_still_compares_the_listener_port() -> None:
    merge = {
        "applyTo": "LISTENER",
        "match": {"listener": {"portNumber": 15001}},
        "patch": {"operation": "MERGE", "value": {"stat_prefix": "patched"}},
    }
    on_port, _ = run(build_virtual_outbound_listener(port=15001), merge)
    assert on_port.stat_prefix == "patched"
    elsewhere, applied = run(build_virtual_outbound_listener(port=15002), merge)
    assert elsewhere.stat_prefix == "" and not applied


def test_other_listeners_keep_matching_their_own_port() -> None:
    listener = build_outbound_listener("0.0.0.0", 8080, "HTTP", capture_none=False)
    # its chain has no destination port: on a plain listener portNumber is the socket's
    patched, applied = run(listener, rename_chains(8080))
    assert {c.name for c in patched.filter_chains} == {"port-8080"} and applied
    _, none = run(
        build_outbound_listener("0.0.0.0", 9090, "HTTP", capture_none=False), rename_chains(8080)
    )
    assert not none
