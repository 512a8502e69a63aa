"""Listener-class patches (LISTENER, LISTENER_FILTER, FILTER_CHAIN, NETWORK_FILTER,
HTTP_FILTER) on listeners the sidecar builders make, each operation as istiod applies it."""

from __future__ import annotations

from typing import Any

import pytest

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.xds.builders.envoy_patch_listener import patch_listeners
from pilothouse.xds.builders.envoy_patch_match import Applied
from pilothouse.xds.builders.filter_chain import WeightedCluster
from pilothouse.xds.builders.listener_sidecar import build_outbound_listener

from .patching import HCM, ROUTER, http_filter_match, http_filter_names, lua, rules

OUTBOUND = EnvoyFilter.SIDECAR_OUTBOUND
INBOUND = EnvoyFilter.SIDECAR_INBOUND
TYPE = "type.googleapis.com/"


def http_listener(port: int = 8080) -> Any:
    return build_outbound_listener("0.0.0.0", port, "HTTP", capture_none=False)


def tcp_listener(port: int = 3306) -> Any:
    return build_outbound_listener(
        "0.0.0.0", port, "TCP", capture_none=False, destinations=(WeightedCluster("db", 1),)
    )


def run(listeners: list[Any], *patches: dict[str, Any], context: int = OUTBOUND) -> list[Any]:
    applied: Applied = set()
    return patch_listeners(listeners, rules(*patches), context, applied)


@pytest.mark.parametrize(
    ("operation", "sub_filter", "expected"),
    [
        ("INSERT_BEFORE", ROUTER, ["envoy.filters.http.lua", ROUTER]),
        ("INSERT_AFTER", ROUTER, [ROUTER, "envoy.filters.http.lua"]),
        ("INSERT_FIRST", ROUTER, ["envoy.filters.http.lua", "..."]),
        ("INSERT_BEFORE", "", ["envoy.filters.http.lua", "..."]),
        ("INSERT_AFTER", "", [ROUTER, "envoy.filters.http.lua"]),
        ("INSERT_BEFORE", "no.such.filter", [ROUTER]),
        ("ADD", "", [ROUTER, "envoy.filters.http.lua"]),
        ("REPLACE", ROUTER, ["envoy.filters.http.lua"]),
    ],
)
def test_http_filter_list_operations(operation: str, sub_filter: str, expected: list[str]) -> None:
    before = http_filter_names(http_listener())
    assert before[-1] == ROUTER
    (patched,) = run(
        [http_listener()],
        {
            "applyTo": "HTTP_FILTER",
            "match": http_filter_match(sub_filter),
            "patch": {"operation": operation, "value": lua()},
        },
    )
    if expected[-1] == "...":  # prepended to the whole list
        assert http_filter_names(patched) == [*expected[:-1], *before]
    else:
        assert http_filter_names(patched) == [*before[:-1], *expected]


def test_http_filter_remove_and_merge() -> None:
    (removed,) = run(
        [http_listener()],
        {
            "applyTo": "HTTP_FILTER",
            "match": http_filter_match(ROUTER),
            "patch": {"operation": "REMOVE"},
        },
    )
    assert ROUTER not in http_filter_names(removed)
    (renamed,) = run(
        [http_listener()],
        {
            "applyTo": "HTTP_FILTER",
            "match": http_filter_match(ROUTER),
            "patch": {
                "operation": "MERGE",
                "value": {
                    "name": "router.renamed",
                    "typed_config": {
                        "@type": TYPE + "envoy.extensions.filters.http.router.v3.Router",
                        "suppress_envoy_headers": True,
                    },
                },
            },
        },
    )
    assert http_filter_names(renamed)[-1] == "router.renamed"


def test_a_merge_of_another_type_is_skipped_and_the_pass_goes_on() -> None:
    (patched,) = run(
        [http_listener()],
        {
            "applyTo": "HTTP_FILTER",
            "match": http_filter_match(ROUTER),
            "patch": {"operation": "MERGE", "value": lua()},
        },
        {
            "applyTo": "HTTP_FILTER",
            "match": http_filter_match(),
            "patch": {"operation": "INSERT_FIRST", "value": lua()},
        },
    )
    assert http_filter_names(patched)[0] == "envoy.filters.http.lua"
    assert http_filter_names(patched)[-1] == ROUTER


def test_context_and_port_pick_the_listeners() -> None:
    insert = {
        "applyTo": "HTTP_FILTER",
        "match": {"context": "SIDECAR_INBOUND", **http_filter_match(ROUTER)},
        "patch": {"operation": "INSERT_BEFORE", "value": lua()},
    }
    (outbound,) = run([http_listener()], insert, context=OUTBOUND)
    assert "envoy.filters.http.lua" not in http_filter_names(outbound)
    (inbound,) = run([http_listener()], insert, context=INBOUND)
    assert "envoy.filters.http.lua" in http_filter_names(inbound)
    by_port = {
        "applyTo": "HTTP_FILTER",
        "match": {"listener": {"portNumber": 9090, "filterChain": {"filter": {"name": HCM}}}},
        "patch": {"operation": "INSERT_FIRST", "value": lua()},
    }
    on_8080, on_9090 = run([http_listener(8080), http_listener(9090)], by_port)
    assert "envoy.filters.http.lua" not in http_filter_names(on_8080)
    assert http_filter_names(on_9090)[0] == "envoy.filters.http.lua"


def test_network_filter_operations() -> None:
    tcp_proxy = "envoy.filters.network.tcp_proxy"
    value = {
        "name": "envoy.filters.network.connection_limit",
        "typed_config": {
            "@type": TYPE + "envoy.extensions.filters.network.connection_limit.v3.ConnectionLimit",
            "stat_prefix": "limit",
            "max_connections": 10,
        },
    }
    match = {"listener": {"filterChain": {"filter": {"name": tcp_proxy}}}}
    (inserted,) = run(
        [tcp_listener()],
        {
            "applyTo": "NETWORK_FILTER",
            "match": match,
            "patch": {"operation": "INSERT_BEFORE", "value": value},
        },
    )
    names = [f.name for f in inserted.filter_chains[0].filters]
    assert names[-2:] == ["envoy.filters.network.connection_limit", tcp_proxy]
    (removed,) = run(
        [tcp_listener()],
        {"applyTo": "NETWORK_FILTER", "match": match, "patch": {"operation": "REMOVE"}},
    )
    assert tcp_proxy not in [f.name for f in removed.filter_chains[0].filters]
    unnamed = {"applyTo": "NETWORK_FILTER", "patch": {"operation": "REMOVE"}}
    (kept,) = run([tcp_listener()], unnamed)
    assert tcp_proxy in [f.name for f in kept.filter_chains[0].filters]


def test_listener_merge_remove_and_add() -> None:
    (merged,) = run(
        [http_listener()],
        {
            "applyTo": "LISTENER",
            "match": {"listener": {"portNumber": 8080}},
            "patch": {"operation": "MERGE", "value": {"per_connection_buffer_limit_bytes": 4096}},
        },
    )
    assert merged.per_connection_buffer_limit_bytes.value == 4096
    kept = run(
        [http_listener(8080), http_listener(9090)],
        {
            "applyTo": "LISTENER",
            "match": {"listener": {"portNumber": 8080}},
            "patch": {"operation": "REMOVE"},
        },
    )
    assert [listener.address.socket_address.port_value for listener in kept] == [9090]
    add = {
        "applyTo": "LISTENER",
        "patch": {
            "operation": "ADD",
            "value": {
                "name": "extra",
                "address": {"socket_address": {"address": "127.0.0.1", "port_value": 7000}},
            },
        },
    }
    assert [listener.name for listener in run([], add, context=OUTBOUND)] == ["extra"]
    assert run([], add, context=INBOUND) == []  # an ANY-context ADD is never inbound


def test_listener_filter_operations() -> None:
    tls_inspector = {
        "name": "envoy.filters.listener.tls_inspector",
        "typed_config": {
            "@type": TYPE + "envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector"
        },
    }
    (added,) = run(
        [http_listener()],
        {
            "applyTo": "LISTENER_FILTER",
            "patch": {"operation": "INSERT_FIRST", "value": tls_inspector},
        },
    )
    assert added.listener_filters[0].name == "envoy.filters.listener.tls_inspector"
    (removed,) = run(
        [added],
        {
            "applyTo": "LISTENER_FILTER",
            "match": {"listener": {"listenerFilter": "envoy.filters.listener.tls_inspector"}},
            "patch": {"operation": "REMOVE"},
        },
    )
    assert not any(
        f.name == "envoy.filters.listener.tls_inspector" for f in removed.listener_filters
    )


def test_filter_chain_merge_remove_and_add() -> None:
    (merged,) = run(
        [http_listener()],
        {"applyTo": "FILTER_CHAIN", "patch": {"operation": "MERGE", "value": {"name": "renamed"}}},
    )
    assert all(chain.name == "renamed" for chain in merged.filter_chains)
    (removed,) = run(
        [http_listener()],
        {
            "applyTo": "FILTER_CHAIN",
            "match": {"listener": {"filterChain": {"filter": {"name": HCM}}}},
            "patch": {"operation": "REMOVE"},
        },
    )
    assert not any(f.name == HCM for chain in removed.filter_chains for f in chain.filters)
    chains = len(http_listener().filter_chains)
    (added,) = run(
        [http_listener()],
        {
            "applyTo": "FILTER_CHAIN",
            "match": {"listener": {"portNumber": 8080}},
            "patch": {
                "operation": "ADD",
                "value": {
                    "name": "added",
                    "filters": [{"name": "envoy.filters.network.tcp_proxy"}],
                },
            },
        },
    )
    assert len(added.filter_chains) == chains + 1 and added.filter_chains[-1].name == "added"


def test_patches_that_applied_are_reported() -> None:
    applied: Applied = set()
    listeners = [http_listener()]
    found = rules(
        {
            "applyTo": "HTTP_FILTER",
            "match": http_filter_match(ROUTER),
            "patch": {"operation": "INSERT_BEFORE", "value": lua()},
        },
        {
            "applyTo": "HTTP_FILTER",
            "match": http_filter_match("absent"),
            "patch": {"operation": "INSERT_BEFORE", "value": lua()},
        },
    )
    patch_listeners(listeners, found, OUTBOUND, applied)
    assert {position for _, position in applied} == {0}
