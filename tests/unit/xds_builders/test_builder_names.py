"""Istio cluster names: building, parsing and the round trip."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pilothouse.xds.builders.names import (
    BLACKHOLE_CLUSTER,
    INBOUND_PASSTHROUGH_CLUSTER,
    PASSTHROUGH_CLUSTER,
    ClusterName,
    Direction,
    inbound_cluster_name,
    is_service_cluster,
    outbound_cluster_name,
    parse_cluster_name,
    srv_cluster_name,
)


@pytest.mark.parametrize(
    ("built", "expected"),
    [
        (
            outbound_cluster_name("reviews.default.svc.cluster.local", 9080, "v1"),
            "outbound|9080|v1|reviews.default.svc.cluster.local",
        ),
        (
            outbound_cluster_name("reviews.default.svc.cluster.local", 9080),
            "outbound|9080||reviews.default.svc.cluster.local",
        ),
        (inbound_cluster_name(8080), "inbound|8080||"),
        (
            srv_cluster_name("reviews.default.svc.cluster.local", 9080, "v1"),
            "outbound_.9080_.v1_.reviews.default.svc.cluster.local",
        ),
        (srv_cluster_name("a.b", 80), "outbound_.80_._.a.b"),
    ],
)
def test_builder_names_spelling(built: str, expected: str) -> None:
    assert built == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "outbound|9080|v1|reviews.default.svc.cluster.local",
            ClusterName(Direction.OUTBOUND, 9080, "v1", "reviews.default.svc.cluster.local"),
        ),
        ("outbound|80||example.com", ClusterName(Direction.OUTBOUND, 80, "", "example.com")),
        ("inbound|8080||", ClusterName(Direction.INBOUND, 8080, "", "")),
        (
            "outbound_.9080_.v1_.reviews.default.svc.cluster.local",
            ClusterName(Direction.OUTBOUND, 9080, "v1", "reviews.default.svc.cluster.local"),
        ),
        ("outbound|80||host|with|bars", ClusterName(Direction.OUTBOUND, 80, "", "host|with|bars")),
    ],
)
def test_builder_names_parse(name: str, expected: ClusterName) -> None:
    assert parse_cluster_name(name) == expected
    assert is_service_cluster(name)


@pytest.mark.parametrize(
    "name",
    [
        BLACKHOLE_CLUSTER,
        PASSTHROUGH_CLUSTER,
        INBOUND_PASSTHROUGH_CLUSTER,
        "xds",
        "outbound|80|v1",
        "sideways|80||host",
        "outbound|http||host",
        "outbound|0||host",
        "outbound|70000||host",
        "outbound|-1||host",
        "outbound|٣||host",
    ],
)
def test_builder_names_other_names_do_not_parse(name: str) -> None:
    assert parse_cluster_name(name) is None
    assert not is_service_cluster(name)


def test_builder_names_fixed_names() -> None:
    assert BLACKHOLE_CLUSTER == "BlackHoleCluster"
    assert PASSTHROUGH_CLUSTER == "PassthroughCluster"


_label = st.text(
    alphabet=st.characters(whitelist_categories=("Ll", "Nd"), whitelist_characters="-."),
    max_size=20,
)


@given(
    host=_label.filter(lambda h: h != ""),
    port=st.integers(min_value=1, max_value=65535),
    subset=_label.filter(lambda s: "|" not in s),
)
def test_builder_names_outbound_round_trip(host: str, port: int, subset: str) -> None:
    name = outbound_cluster_name(host, port, subset)
    assert parse_cluster_name(name) == ClusterName(Direction.OUTBOUND, port, subset, host)
    assert str(parse_cluster_name(name)) == name


@given(port=st.integers(min_value=1, max_value=65535))
def test_builder_names_inbound_round_trip(port: int) -> None:
    assert parse_cluster_name(inbound_cluster_name(port)) == ClusterName(
        Direction.INBOUND, port, "", ""
    )
