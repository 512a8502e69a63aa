"""build_load_assignment: locality grouping, grpcio's rules, determinism."""

from __future__ import annotations

import random
from typing import Any

import pytest
from envoy.config.endpoint.v3 import endpoint_pb2
from google.protobuf import json_format
from hypothesis import given, settings
from hypothesis import strategies as st

from pilothouse.xds.builders.endpoint import (
    MAX_WEIGHT,
    LbEndpointInput,
    build_dns_load_assignment,
    build_load_assignment,
    parse_locality,
)

CLUSTER = "outbound|9080||reviews.default.svc.cluster.local"


def as_json(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def socket(address: str, port: int) -> dict[str, Any]:
    return {"address": {"socket_address": {"address": address, "port_value": port}}}


def test_builder_endpoints_grouped_by_locality() -> None:
    assignment = build_load_assignment(
        CLUSTER,
        [
            LbEndpointInput("10.0.0.3", 9080, "us-east/a", weight=2),
            LbEndpointInput("10.0.0.1", 9080, "eu-west/b/rack1", labels=(("version", "v1"),)),
            LbEndpointInput("10.0.0.2", 9080, "us-east/a", health="DRAINING"),
            LbEndpointInput("10.0.0.9", 9080),
        ],
    )
    assert as_json(assignment) == {
        "cluster_name": CLUSTER,
        "endpoints": [
            {  # no locality sorts first, and still has a Locality message
                "locality": {},
                "lb_endpoints": [
                    {
                        "endpoint": socket("10.0.0.9", 9080),
                        "health_status": "HEALTHY",
                        "load_balancing_weight": 1,
                    }
                ],
                "load_balancing_weight": 1,
            },
            {
                "locality": {"region": "eu-west", "zone": "b", "sub_zone": "rack1"},
                "lb_endpoints": [
                    {
                        "endpoint": socket("10.0.0.1", 9080),
                        "health_status": "HEALTHY",
                        "metadata": {"filter_metadata": {"envoy.lb": {"version": "v1"}}},
                        "load_balancing_weight": 1,
                    }
                ],
                "load_balancing_weight": 1,
            },
            {
                "locality": {"region": "us-east", "zone": "a"},
                "lb_endpoints": [
                    {
                        "endpoint": socket("10.0.0.2", 9080),
                        "health_status": "DRAINING",
                        "load_balancing_weight": 1,
                    },
                    {
                        "endpoint": socket("10.0.0.3", 9080),
                        "health_status": "HEALTHY",
                        "load_balancing_weight": 2,
                    },
                ],
                "load_balancing_weight": 3,
            },
        ],
    }


def test_builder_endpoints_empty_locality_message_is_present() -> None:
    (group,) = build_load_assignment(CLUSTER, [LbEndpointInput("10.0.0.1", 80)]).endpoints
    # grpcio NACKs a LocalityLbEndpoints without the locality field, so presence matters.
    assert group.HasField("locality")
    assert group.HasField("load_balancing_weight")
    wire = endpoint_pb2.ClusterLoadAssignment.FromString(
        build_load_assignment(CLUSTER, [LbEndpointInput("10.0.0.1", 80)]).SerializeToString()
    )
    assert wire.endpoints[0].HasField("locality")


def test_builder_endpoints_zero_weight_reads_as_one_and_sums_clamp() -> None:
    assignment = build_load_assignment(
        CLUSTER,
        [
            LbEndpointInput("10.0.0.1", 80, weight=0),
            LbEndpointInput("10.0.0.2", 80, weight=MAX_WEIGHT),
            LbEndpointInput("10.0.0.3", 80, "r", weight=0),
        ],
    )
    first, second = assignment.endpoints
    assert [e.load_balancing_weight.value for e in first.lb_endpoints] == [1, MAX_WEIGHT]
    assert first.load_balancing_weight.value == MAX_WEIGHT
    assert second.load_balancing_weight.value == 1


def test_builder_endpoints_empty_list() -> None:
    assignment = build_load_assignment(CLUSTER, [])
    assert assignment.cluster_name == CLUSTER
    assert len(assignment.endpoints) == 0


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("", ("", "", "")),
        ("us", ("us", "", "")),
        ("us/a", ("us", "a", "")),
        ("us/a/r1", ("us", "a", "r1")),
        ("us/a/r1/x", ("us", "a", "r1/x")),
    ],
)
def test_builder_parse_locality(text: str, parts: tuple[str, str, str]) -> None:
    assert parse_locality(text) == parts


def test_builder_endpoint_unix_socket_is_pipe() -> None:
    assignment = build_load_assignment(CLUSTER, [LbEndpointInput("unix:///run/app.sock", 0)])
    address = assignment.endpoints[0].lb_endpoints[0].endpoint.address
    assert as_json(address) == {"pipe": {"path": "/run/app.sock"}}


def test_builder_endpoint_input_validation() -> None:
    with pytest.raises(ValueError, match="health"):
        LbEndpointInput("10.0.0.1", 80, health="SICK")
    with pytest.raises(ValueError, match="weight"):
        LbEndpointInput("10.0.0.1", 80, weight=-1)


def test_builder_dns_load_assignment() -> None:
    endpoints = [LbEndpointInput("b.example", 443), LbEndpointInput("a.example", 443)]
    strict = build_dns_load_assignment(CLUSTER, endpoints)
    hosts = [e.endpoint.address.socket_address.address for e in strict.endpoints[0].lb_endpoints]
    assert hosts == ["a.example", "b.example"]
    logical = build_dns_load_assignment(CLUSTER, endpoints, logical=True)
    assert len(logical.endpoints) == 1
    assert len(logical.endpoints[0].lb_endpoints) == 1
    assert logical.endpoints[0].load_balancing_weight.value == 1
    with pytest.raises(ValueError, match="at least one endpoint"):
        build_dns_load_assignment(CLUSTER, [])
    with pytest.raises(ValueError, match="cannot use"):
        build_dns_load_assignment(CLUSTER, [LbEndpointInput("unix:///x")])


_localities = st.sampled_from(["", "r1", "r1/z1", "r1/z1/s1", "r1/z2", "r2/z1/s9", "r2"])
_endpoints = st.builds(
    LbEndpointInput,
    address=st.sampled_from(["10.0.0.1", "10.0.0.2", "10.0.1.7", "host.example", "unix:///s"]),
    port=st.integers(min_value=0, max_value=65535),
    locality=_localities,
    weight=st.integers(min_value=0, max_value=MAX_WEIGHT),
    labels=st.lists(
        st.tuples(st.sampled_from(["app", "version"]), st.sampled_from(["a", "v1"])),
        max_size=2,
        unique_by=lambda pair: pair[0],
    ).map(tuple),
    health=st.sampled_from(["HEALTHY", "UNHEALTHY", "DRAINING", "UNKNOWN"]),
)


@settings(max_examples=200, deadline=None)
@given(endpoints=st.lists(_endpoints, max_size=30), seed=st.integers())
def test_builder_load_assignment_is_deterministic_and_grpc_safe(
    endpoints: list[LbEndpointInput], seed: int
) -> None:
    assignment = build_load_assignment(CLUSTER, endpoints)
    shuffled = list(endpoints)
    random.Random(seed).shuffle(shuffled)
    again = build_load_assignment(CLUSTER, shuffled)
    # Same endpoints in any order → the same bytes.
    assert again.SerializeToString(deterministic=True) == assignment.SerializeToString(
        deterministic=True
    )
    keys = []
    total = 0
    for group in assignment.endpoints:
        assert group.HasField("locality")
        assert group.HasField("load_balancing_weight")
        assert group.load_balancing_weight.value >= 1
        assert len(group.lb_endpoints) >= 1
        weights = [e.load_balancing_weight.value for e in group.lb_endpoints]
        assert all(weight >= 1 for weight in weights)
        assert group.load_balancing_weight.value == min(sum(weights), MAX_WEIGHT)
        locality = group.locality
        keys.append((locality.region, locality.zone, locality.sub_zone))
        total += len(group.lb_endpoints)
    assert keys == sorted(set(keys))  # sorted, one group per locality
    assert total == len(endpoints)
