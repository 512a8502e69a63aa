"""TCP and TLS routes: clusters and weights, match selection, destination subnets, SNI hosts."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as vs_pb2
from pilothouse.xds.builders.route_destination import service_resolver
from pilothouse.xds.builders.route_l4 import (
    ClusterWeight,
    TlsMatch,
    build_tcp_route_clusters,
    tcp_destination_subnets,
    tcp_route_applies,
    tcp_stat_prefix,
    tls_route_matches,
)

DB = "db.data.svc.cluster.local"
SERVICES = {DB: [5432], "cache.data.svc.cluster.local": [6379, 6380]}


def tcp(spec: dict[str, Any]) -> vs_pb2.TCPRoute:
    return json_format.ParseDict(spec, vs_pb2.TCPRoute())


def tls(spec: dict[str, Any]) -> vs_pb2.TLSRoute:
    return json_format.ParseDict(spec, vs_pb2.TLSRoute())


def clusters(route: Any, port: int = 5432) -> list[ClusterWeight]:
    return build_tcp_route_clusters(
        route, "data", service_resolver(SERVICES, current_port=port), port=port
    )


@pytest.mark.parametrize(
    ("destinations", "port", "expected"),
    [
        pytest.param(
            [{"destination": {"host": "db"}, "weight": 10}],
            5432,
            [(f"outbound|5432||{DB}", 100)],
            id="single-weight-ignored",
        ),
        pytest.param(
            [
                {"destination": {"host": "db", "subset": "primary"}, "weight": 80},
                {"destination": {"host": "db", "subset": "replica"}, "weight": 20},
                {"destination": {"host": "db", "subset": "off"}, "weight": 0},
            ],
            5432,
            [(f"outbound|5432|primary|{DB}", 80), (f"outbound|5432|replica|{DB}", 20)],
            id="weighted-zero-dropped",
        ),
        pytest.param(
            [{"destination": {"host": "cache"}}],
            6380,
            [("outbound|6380||cache.data.svc.cluster.local", 100)],
            id="multi-port-uses-listener-port",
        ),
        pytest.param(
            [{"destination": {"host": "cache", "port": {"number": 6379}}}],
            7000,
            [("outbound|6379||cache.data.svc.cluster.local", 100)],
            id="explicit-port",
        ),
        pytest.param(
            [{"destination": {"host": "legacy.example.com"}}],
            3306,
            [("outbound|3306||legacy.example.com", 100)],
            id="unknown-host",
        ),
    ],
)
def test_route_tcp_clusters(
    destinations: list[dict[str, Any]], port: int, expected: list[tuple[str, int]]
) -> None:
    built = clusters(tcp({"route": destinations}), port)
    assert built == expected
    assert all(isinstance(item, ClusterWeight) for item in built)


def test_route_tcp_stat_prefix() -> None:
    one = [ClusterWeight("outbound|5432||db", 100)]
    two = [*one, ClusterWeight("outbound|5432|b|db", 1)]
    assert tcp_stat_prefix(one, "db-vs", "data") == "outbound|5432||db"
    assert tcp_stat_prefix(two, "db-vs", "data") == "db-vs.data"


@pytest.mark.parametrize(
    ("match", "kwargs", "applies"),
    [
        pytest.param(None, {}, True, id="no-match"),
        pytest.param(None, {"gateway": "data/gw"}, False, id="no-match-not-bound"),
        pytest.param({"port": 5432}, {}, True, id="port"),
        pytest.param({"port": 5433}, {}, False, id="other-port"),
        pytest.param({"gateways": ["gw"]}, {"gateway": "data/gw"}, True, id="gateway"),
        pytest.param({"gateways": ["gw"]}, {}, False, id="gateway-not-mesh"),
        pytest.param({}, {"vs_gateways": ["gw"], "gateway": "data/gw"}, True, id="vs-gateway"),
        pytest.param({}, {"vs_gateways": ["gw"]}, False, id="vs-gateway-not-mesh"),
        pytest.param(
            {"sourceLabels": {"app": "api"}}, {"proxy_labels": {"app": "api"}}, True, id="labels"
        ),
        pytest.param({"sourceLabels": {"app": "api"}}, {}, False, id="labels-unknown-proxy"),
        pytest.param({"sourceNamespace": "web"}, {"proxy_namespace": "web"}, True, id="ns"),
        pytest.param({"sourceNamespace": "web"}, {"proxy_namespace": "x"}, False, id="other-ns"),
    ],
)
def test_route_tcp_selection(
    match: dict[str, Any] | None, kwargs: dict[str, Any], applies: bool
) -> None:
    spec: dict[str, Any] = {"route": [{"destination": {"host": "db"}}]}
    if match is not None:
        spec["match"] = [match]
    options: dict[str, Any] = {
        "port": 5432,
        "gateway": None,
        "vs_gateways": [],
        "namespace": "data",
    }
    options.update(kwargs)
    assert tcp_route_applies(tcp(spec), **options) is applies


@pytest.mark.parametrize(
    ("matches", "expected"),
    [
        pytest.param(None, (), id="no-match-terminal"),
        pytest.param([{"destinationSubnets": ["10.0.0.0/8"]}], ("10.0.0.0/8",), id="subnets"),
        pytest.param(
            [
                {"destinationSubnets": ["10.0.0.0/8"]},
                {"destinationSubnets": ["192.168.0.0/16"], "port": 5432},
                {"destinationSubnets": ["172.16.0.0/12"], "port": 1},
            ],
            ("10.0.0.0/8", "192.168.0.0/16"),
            id="united-over-applicable-matches",
        ),
        pytest.param(
            [{"destinationSubnets": ["10.0.0.0/8"]}, {"port": 5432}], (), id="any-destination-wins"
        ),
        pytest.param([{"port": 1}], None, id="not-applicable"),
    ],
)
def test_route_tcp_destination_subnets(
    matches: list[dict[str, Any]] | None, expected: tuple[str, ...] | None
) -> None:
    spec: dict[str, Any] = {"route": [{"destination": {"host": "db"}}]}
    if matches is not None:
        spec["match"] = matches
    subnets = tcp_destination_subnets(
        tcp(spec), port=5432, gateway=None, vs_gateways=[], namespace="data"
    )
    assert subnets == expected


def test_route_tls_sni_matches() -> None:
    route = tls(
        {
            "match": [
                {"sniHosts": ["a.example.com", "b.example.com"], "port": 443},
                {"sniHosts": ["c.example.com"], "destinationSubnets": ["10.0.0.0/8"]},
                {"sniHosts": ["d.example.com"], "port": 8443},
                {"sniHosts": ["e.example.com"], "gateways": ["edge/gw"]},
                {"sniHosts": ["a.example.com", "b.example.com"], "sourceLabels": {"x": "y"}},
            ],
            "route": [{"destination": {"host": "db"}}],
        }
    )
    found = tls_route_matches(
        route,
        port=443,
        gateway=None,
        vs_gateways=[],
        namespace="data",
        proxy_labels={"x": "y"},
    )
    assert found == [
        TlsMatch(("a.example.com", "b.example.com"), ()),
        TlsMatch(("c.example.com",), ("10.0.0.0/8",)),
    ]


def test_route_tls_duplicates_across_routes_dropped() -> None:
    first = tls({"match": [{"sniHosts": ["a.example.com"]}], "route": []})
    second = tls(
        {"match": [{"sniHosts": ["a.example.com"]}, {"sniHosts": ["b.example.com"]}], "route": []}
    )
    seen: set[TlsMatch] = set()
    options: dict[str, Any] = {"port": 443, "gateway": None, "vs_gateways": [], "namespace": "n"}
    assert tls_route_matches(first, seen=seen, **options) == [TlsMatch(("a.example.com",), ())]
    assert tls_route_matches(second, seen=seen, **options) == [TlsMatch(("b.example.com",), ())]


def test_route_tls_route_clusters() -> None:
    route = tls(
        {
            "match": [{"sniHosts": ["db.example.com"]}],
            "route": [
                {"destination": {"host": "db", "port": {"number": 5432}}, "weight": 60},
                {"destination": {"host": "cache", "port": {"number": 6379}}, "weight": 40},
            ],
        }
    )
    assert clusters(route, 443) == [
        (f"outbound|5432||{DB}", 60),
        ("outbound|6379||cache.data.svc.cluster.local", 40),
    ]
