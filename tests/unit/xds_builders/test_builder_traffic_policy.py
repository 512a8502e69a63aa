"""The merge order of DestinationRule policies (top level, port level, subset)."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2
from pilothouse.xds.builders.traffic_policy import effective_policy, port_level_settings
from tests.unit.xds_builders.policies import policy, rule

TOP = {
    "loadBalancer": {"simple": "ROUND_ROBIN"},
    "connectionPool": {"tcp": {"maxConnections": 100}},
    "outlierDetection": {"consecutive5xxErrors": 7},
    "tls": {"mode": "ISTIO_MUTUAL"},
    "proxyProtocol": {"version": "V2"},
    "tunnel": {"protocol": "CONNECT", "targetHost": "egress", "targetPort": 8443},
}
PORT_9080 = {"port": {"number": 9080}, "loadBalancer": {"simple": "RANDOM"}}
SUBSET_V1 = {
    "name": "v1",
    "labels": {"version": "v1"},
    "trafficPolicy": {
        "connectionPool": {"http": {"http2MaxRequests": 5}},
        "tls": {"mode": "DISABLE"},
        "portLevelSettings": [
            {"port": {"number": 9443}, "outlierDetection": {"consecutiveGatewayErrors": 2}}
        ],
    },
}
RULE = {
    "host": "reviews.default.svc.cluster.local",
    "trafficPolicy": {**TOP, "portLevelSettings": [PORT_9080]},
    "subsets": [SUBSET_V1, {"name": "v2", "labels": {"version": "v2"}}],
}


def as_json(message: dr_pb2.TrafficPolicy) -> dict[str, Any]:
    return json_format.MessageToDict(message)


@pytest.mark.parametrize(
    ("port", "subset", "expected"),
    [
        # No port-level entry, no subset: the top level, without portLevelSettings.
        pytest.param(8080, None, TOP, id="top-level"),
        # Port-level entry: replaces all four components; unset ones fall to defaults.
        pytest.param(
            9080,
            None,
            {
                "loadBalancer": {"simple": "RANDOM"},
                "proxyProtocol": {"version": "V2"},
                "tunnel": TOP["tunnel"],
            },
            id="port-level-replaces-all-four",
        ),
        # Subset: its components replace the rule's, component by component.
        pytest.param(
            8080,
            "v1",
            {
                **TOP,
                "connectionPool": {"http": {"http2MaxRequests": 5}},
                "tls": {},  # mode DISABLE is the proto default, so the JSON is empty
            },
            id="subset-overrides-components",
        ),
        # Port-level of the rule, then the subset on top.
        pytest.param(
            9080,
            "v1",
            {
                "loadBalancer": {"simple": "RANDOM"},
                "connectionPool": {"http": {"http2MaxRequests": 5}},
                "tls": {},
                "proxyProtocol": {"version": "V2"},
                "tunnel": TOP["tunnel"],
            },
            id="rule-port-level-then-subset",
        ),
        # The subset's own port-level entry replaces all four again.
        pytest.param(
            9443,
            "v1",
            {
                "outlierDetection": {"consecutiveGatewayErrors": 2},
                "proxyProtocol": {"version": "V2"},
                "tunnel": TOP["tunnel"],
            },
            id="subset-port-level-replaces-all-four",
        ),
        # A subset without a policy, or an unknown subset, adds nothing.
        pytest.param(8080, "v2", TOP, id="subset-without-policy"),
        pytest.param(8080, "nope", TOP, id="unknown-subset"),
        pytest.param(8080, "", TOP, id="empty-subset-is-default-cluster"),
    ],
)
def test_builder_merge_order(port: int, subset: str | None, expected: dict[str, Any]) -> None:
    assert as_json(effective_policy(rule(RULE), port, subset)) == expected


def test_builder_merge_is_component_granular_not_field_granular() -> None:
    spec = rule(
        {
            "host": "h",
            "trafficPolicy": {
                "connectionPool": {"tcp": {"maxConnections": 1}, "http": {"maxRetries": 3}}
            },
            "subsets": [
                {"name": "a", "trafficPolicy": {"connectionPool": {"http": {"maxRetries": 9}}}}
            ],
        }
    )
    merged = effective_policy(spec, 80, "a")
    # The subset's connection pool replaces the rule's whole; tcp is not inherited.
    assert as_json(merged) == {"connectionPool": {"http": {"maxRetries": 9}}}


def test_builder_merge_without_rule_or_policy_is_empty() -> None:
    assert effective_policy(None, 80, None) == dr_pb2.TrafficPolicy()
    assert effective_policy(rule({"host": "h"}), 80, "v1") == dr_pb2.TrafficPolicy()


def test_builder_merge_subset_policy_without_rule_policy() -> None:
    spec = rule(
        {"host": "h", "subsets": [{"name": "a", "trafficPolicy": {"tls": {"mode": "SIMPLE"}}}]}
    )
    assert as_json(effective_policy(spec, 80, "a")) == {"tls": {"mode": "SIMPLE"}}
    assert as_json(effective_policy(spec, 80, None)) == {}


def test_builder_merge_first_matching_port_entry_wins() -> None:
    spec = policy(
        {
            "portLevelSettings": [
                {"port": {"number": 80}, "loadBalancer": {"simple": "RANDOM"}},
                {"port": {"number": 80}, "loadBalancer": {"simple": "ROUND_ROBIN"}},
            ]
        }
    )
    entry = port_level_settings(spec, 80)
    assert entry is not None
    assert entry.load_balancer.simple == dr_pb2.LoadBalancerSettings.RANDOM
    assert port_level_settings(spec, 81) is None


def test_builder_merge_does_not_modify_inputs() -> None:
    spec = rule(RULE)
    before = spec.SerializeToString(deterministic=True)
    merged = effective_policy(spec, 9080, "v1")
    merged.load_balancer.simple = dr_pb2.LoadBalancerSettings.LEAST_REQUEST
    assert spec.SerializeToString(deterministic=True) == before
    assert not merged.port_level_settings
