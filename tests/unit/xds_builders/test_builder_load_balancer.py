"""LoadBalancerSettings → lb_policy, LB configs, locality config; and the route hash policy."""

from __future__ import annotations

from typing import Any

import pytest
from envoy.config.cluster.v3 import cluster_pb2
from envoy.config.route.v3 import route_components_pb2
from google.protobuf import json_format

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2
from pilothouse.xds.builders.cluster import ClusterInputs, Discovery, build_cluster
from pilothouse.xds.builders.load_balancer import hash_policy, is_passthrough, locality_setting
from tests.unit.xds_builders.policies import policy

Cluster = cluster_pb2.Cluster
NAME = "outbound|9080||reviews.default.svc.cluster.local"


def lb_fields(lb: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    """The LB-related fields of the built cluster, as JSON."""
    spec: dict[str, Any] = {} if lb is None else {"loadBalancer": lb}
    spec.update(extra)
    cluster = build_cluster(ClusterInputs(name=NAME, policy=policy(spec)))
    as_json = json_format.MessageToDict(cluster, preserving_proto_field_name=True)
    keys = (
        "lb_policy",
        "round_robin_lb_config",
        "least_request_lb_config",
        "ring_hash_lb_config",
        "maglev_lb_config",
    )
    out = {key: as_json[key] for key in keys if key in as_json}
    out["lb_policy"] = Cluster.LbPolicy.Name(cluster.lb_policy)
    locality = cluster.common_lb_config.HasField("locality_weighted_lb_config")
    if locality:
        out["locality_weighted"] = True
    return out


@pytest.mark.parametrize(
    ("lb", "expected"),
    [
        pytest.param(None, {"lb_policy": "LEAST_REQUEST"}, id="no-settings-istio-default"),
        pytest.param({"simple": "UNSPECIFIED"}, {"lb_policy": "LEAST_REQUEST"}, id="unspecified"),
        pytest.param({"simple": "LEAST_CONN"}, {"lb_policy": "LEAST_REQUEST"}, id="least-conn"),
        pytest.param({"simple": "LEAST_REQUEST"}, {"lb_policy": "LEAST_REQUEST"}, id="least-req"),
        pytest.param({"simple": "ROUND_ROBIN"}, {"lb_policy": "ROUND_ROBIN"}, id="round-robin"),
        pytest.param({"simple": "RANDOM"}, {"lb_policy": "RANDOM"}, id="random"),
        pytest.param(
            {"simple": "ROUND_ROBIN", "warmupDurationSecs": "30s"},
            {
                "lb_policy": "ROUND_ROBIN",
                "round_robin_lb_config": {"slow_start_config": {"slow_start_window": "30s"}},
            },
            id="round-robin-warmup-duration",
        ),
        pytest.param(
            {"simple": "LEAST_REQUEST", "warmupDurationSecs": "5s"},
            {
                "lb_policy": "LEAST_REQUEST",
                "least_request_lb_config": {"slow_start_config": {"slow_start_window": "5s"}},
            },
            id="least-request-warmup-duration",
        ),
        pytest.param(
            {"warmup": {"duration": "20s", "minimumPercent": 15, "aggression": 1.5}},
            {
                "lb_policy": "LEAST_REQUEST",
                "least_request_lb_config": {
                    "slow_start_config": {
                        "slow_start_window": "20s",
                        "aggression": {"default_value": 1.5},
                        "min_weight_percent": {"value": 15.0},
                    }
                },
            },
            id="warmup-message-on-default",
        ),
        pytest.param(
            {"simple": "RANDOM", "warmupDurationSecs": "5s"},
            {"lb_policy": "RANDOM"},
            id="random-has-no-slow-start",
        ),
        pytest.param(
            {"consistentHash": {"httpHeaderName": "x-user"}},
            {"lb_policy": "RING_HASH", "ring_hash_lb_config": {"minimum_ring_size": "1024"}},
            id="ring-hash-default-size",
        ),
        pytest.param(
            {"consistentHash": {"httpHeaderName": "x-user", "minimumRingSize": "4096"}},
            {"lb_policy": "RING_HASH", "ring_hash_lb_config": {"minimum_ring_size": "4096"}},
            id="ring-hash-deprecated-size",
        ),
        pytest.param(
            {"consistentHash": {"useSourceIp": True, "ringHash": {"minimumRingSize": "2048"}}},
            {"lb_policy": "RING_HASH", "ring_hash_lb_config": {"minimum_ring_size": "2048"}},
            id="ring-hash-explicit",
        ),
        pytest.param(
            {"consistentHash": {"useSourceIp": True, "ringHash": {}}},
            {"lb_policy": "RING_HASH"},
            id="ring-hash-explicit-zero-leaves-envoy-default",
        ),
        pytest.param(
            {"consistentHash": {"useSourceIp": True, "maglev": {"tableSize": "65537"}}},
            {"lb_policy": "MAGLEV", "maglev_lb_config": {"table_size": "65537"}},
            id="maglev",
        ),
        pytest.param(
            {"consistentHash": {"useSourceIp": True, "maglev": {}}},
            {"lb_policy": "MAGLEV"},
            id="maglev-default-size",
        ),
        pytest.param(
            {"consistentHash": {"useSourceIp": True}, "warmupDurationSecs": "5s"},
            {"lb_policy": "RING_HASH", "ring_hash_lb_config": {"minimum_ring_size": "1024"}},
            id="consistent-hash-ignores-warmup",
        ),
    ],
)
def test_builder_lb_policy(lb: dict[str, Any] | None, expected: dict[str, Any]) -> None:
    assert lb_fields(lb) == expected


def test_builder_lb_passthrough_makes_original_dst() -> None:
    cluster = build_cluster(
        ClusterInputs(name=NAME, policy=policy({"loadBalancer": {"simple": "PASSTHROUGH"}}))
    )
    assert cluster.type == Cluster.ORIGINAL_DST
    assert cluster.lb_policy == Cluster.CLUSTER_PROVIDED
    assert not cluster.HasField("eds_cluster_config")
    assert not cluster.HasField("load_assignment")
    assert is_passthrough(policy({"loadBalancer": {"simple": "PASSTHROUGH"}}).load_balancer)
    assert not is_passthrough(None)


def test_builder_lb_original_dst_discovery_is_cluster_provided() -> None:
    cluster = build_cluster(
        ClusterInputs(
            name=NAME,
            discovery=Discovery.ORIGINAL_DST,
            policy=policy({"loadBalancer": {"simple": "ROUND_ROBIN"}}),
        )
    )
    assert cluster.lb_policy == Cluster.CLUSTER_PROVIDED


OUTLIER = {"outlierDetection": {"consecutive5xxErrors": 3}}


@pytest.mark.parametrize(
    ("locality", "extra", "weighted"),
    [
        pytest.param(None, {}, False, id="none"),
        pytest.param({"enabled": True}, {}, False, id="enabled-alone"),
        pytest.param(
            {"distribute": [{"from": "r/z/*", "to": {"r/z/*": 80, "r2/*": 20}}]},
            {},
            True,
            id="distribute",
        ),
        pytest.param(
            {"enabled": False, "distribute": [{"from": "r/*", "to": {"r/*": 100}}]},
            {},
            False,
            id="distribute-but-disabled",
        ),
        pytest.param({"failover": [{"from": "r1", "to": "r2"}]}, {}, False, id="failover-alone"),
        pytest.param(
            {"failover": [{"from": "r1", "to": "r2"}]}, OUTLIER, True, id="failover-outlier"
        ),
        pytest.param(
            {"failoverPriority": ["topology.kubernetes.io/region"]},
            OUTLIER,
            True,
            id="failover-priority-outlier",
        ),
        pytest.param(
            {"failoverPriority": ["topology.kubernetes.io/region"]},
            {},
            False,
            id="failover-priority-alone",
        ),
    ],
)
def test_builder_lb_locality_weighted_config(
    locality: dict[str, Any] | None, extra: dict[str, Any], weighted: bool
) -> None:
    lb: dict[str, Any] = {"simple": "ROUND_ROBIN"}
    if locality is not None:
        lb["localityLbSetting"] = locality
    fields = lb_fields(lb, **extra)
    assert fields.get("locality_weighted", False) is weighted
    assert fields["lb_policy"] == "ROUND_ROBIN"


def test_builder_lb_locality_setting_disabled_is_none() -> None:
    disabled = policy({"loadBalancer": {"localityLbSetting": {"enabled": False}}})
    assert locality_setting(disabled.load_balancer) is None
    assert locality_setting(None) is None


HashPolicy = route_components_pb2.RouteAction.HashPolicy
ConsistentHashLB = dr_pb2.LoadBalancerSettings.ConsistentHashLB


def consistent(spec: dict[str, Any]) -> ConsistentHashLB:
    return json_format.ParseDict(spec, ConsistentHashLB())


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {"httpHeaderName": "x-user"},
            [HashPolicy(header=HashPolicy.Header(header_name="x-user"))],
            id="header",
        ),
        pytest.param(
            {
                "httpCookie": {
                    "name": "session",
                    "path": "/app",
                    "ttl": "60s",
                    "attributes": [{"name": "SameSite", "value": "Strict"}],
                }
            },
            [
                HashPolicy(
                    cookie=HashPolicy.Cookie(
                        name="session",
                        path="/app",
                        ttl={"seconds": 60},
                        attributes=[HashPolicy.CookieAttribute(name="SameSite", value="Strict")],
                    )
                )
            ],
            id="cookie",
        ),
        pytest.param(
            {"httpCookie": {"name": "session"}},
            [HashPolicy(cookie=HashPolicy.Cookie(name="session"))],
            id="cookie-without-ttl",
        ),
        pytest.param(
            {"useSourceIp": True},
            [HashPolicy(connection_properties=HashPolicy.ConnectionProperties(source_ip=True))],
            id="source-ip",
        ),
        pytest.param({"useSourceIp": False}, [], id="source-ip-false"),
        pytest.param(
            {"httpQueryParameterName": "user"},
            [HashPolicy(query_parameter=HashPolicy.QueryParameter(name="user"))],
            id="query-parameter",
        ),
        pytest.param({"maglev": {"tableSize": "7"}}, [], id="no-key"),
    ],
)
def test_builder_hash_policy(spec: dict[str, Any], expected: list[Any]) -> None:
    assert hash_policy(consistent(spec)) == expected


def test_builder_hash_policy_none() -> None:
    assert hash_policy(None) == []
    cookie = hash_policy(consistent({"httpCookie": {"name": "s"}}))[0].cookie
    assert not cookie.HasField("ttl")
