"""Virtual host domains for sidecars, virtual hosts, the default route and RouteConfiguration."""

from __future__ import annotations

from typing import Any

import pytest
from envoy.config.route.v3 import route_components_pb2 as rc_pb2  # type: ignore[import-untyped]
from google.protobuf import json_format

from pilothouse.api.istio.networking.v1alpha3 import destination_rule_pb2 as dr_pb2
from pilothouse.xds.builders.load_balancer import hash_policy
from pilothouse.xds.builders.route import build_default_route
from pilothouse.xds.builders.route_virtual_host import (
    build_catch_all_virtual_host,
    build_route_configuration,
    build_virtual_host,
    service_virtual_host,
    sidecar_domains,
    virtual_host_domains,
)

REVIEWS = "reviews.bookinfo.svc.cluster.local"


def as_dict(message: Any) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


@pytest.mark.parametrize(
    ("hostname", "namespace", "options", "expected"),
    [
        pytest.param(
            REVIEWS,
            "bookinfo",
            {},
            [
                REVIEWS,
                f"{REVIEWS}:9080",
                "reviews",
                "reviews:9080",
                "reviews.bookinfo.svc",
                "reviews.bookinfo.svc:9080",
                "reviews.bookinfo",
                "reviews.bookinfo:9080",
            ],
            id="same-namespace",
        ),
        pytest.param(
            REVIEWS,
            "default",
            {},
            [
                REVIEWS,
                f"{REVIEWS}:9080",
                "reviews.bookinfo",
                "reviews.bookinfo:9080",
                "reviews.bookinfo.svc",
                "reviews.bookinfo.svc:9080",
            ],
            id="other-namespace-no-bare-name",
        ),
        pytest.param(
            "api.example.com",
            "bookinfo",
            {},
            ["api.example.com", "api.example.com:9080"],
            id="not-a-kubernetes-host",
        ),
        pytest.param(
            "reviews.bookinfo.svc.other.domain",
            "bookinfo",
            {},
            ["reviews.bookinfo.svc.other.domain", "reviews.bookinfo.svc.other.domain:9080"],
            id="other-domain-suffix",
        ),
        pytest.param(
            REVIEWS, "bookinfo", {"short_names": False}, [REVIEWS, f"{REVIEWS}:9080"], id="no-short"
        ),
        pytest.param(
            REVIEWS,
            "bookinfo",
            {"include_port": False},
            [REVIEWS, "reviews", "reviews.bookinfo.svc", "reviews.bookinfo"],
            id="ignore-port-style",
        ),
        pytest.param(
            REVIEWS,
            "default",
            {"absolute_fqdn": True, "include_port": False},
            [REVIEWS, f"{REVIEWS}.", "reviews.bookinfo", "reviews.bookinfo.svc"],
            id="absolute-fqdn",
        ),
        pytest.param(
            REVIEWS,
            "default",
            {"short_names": False, "addresses": ("10.0.0.7", "fd00::7", "0.0.0.0")},
            [
                REVIEWS,
                f"{REVIEWS}:9080",
                "10.0.0.7",
                "10.0.0.7:9080",
                "[fd00::7]",
                "[fd00::7]:9080",
            ],
            id="addresses",
        ),
        pytest.param(
            "reviews.bookinfo.svc.corp.local",
            "bookinfo",
            {"domain_suffix": "corp.local", "include_port": False},
            [
                "reviews.bookinfo.svc.corp.local",
                "reviews",
                "reviews.bookinfo.svc",
                "reviews.bookinfo",
            ],
            id="custom-domain-suffix",
        ),
    ],
)
def test_route_virtual_host_domains(
    hostname: str, namespace: str, options: dict[str, Any], expected: list[str]
) -> None:
    assert virtual_host_domains(hostname, 9080, namespace, **options) == expected


def test_route_virtual_host() -> None:
    route = build_default_route(f"outbound|9080||{REVIEWS}")
    vhost = build_virtual_host(f"{REVIEWS}:9080", [REVIEWS, "reviews"], [route])
    assert as_dict(vhost) == {
        "name": f"{REVIEWS}:9080",
        "domains": [REVIEWS, "reviews"],
        "routes": [as_dict(route)],
        "include_request_attempt_count": True,
    }
    off = build_virtual_host("x", ["x"], [], include_request_attempt_count=False)
    assert not off.include_request_attempt_count


def test_route_default_route() -> None:
    route = build_default_route(f"outbound|9080||{REVIEWS}")
    assert as_dict(route) == {
        "name": "default",
        "match": {"prefix": "/"},
        "route": {
            "cluster": f"outbound|9080||{REVIEWS}",
            "timeout": "0s",
            "max_stream_duration": {"max_stream_duration": "0s", "grpc_timeout_header_max": "0s"},
            "retry_policy": {
                "retry_on": (
                    "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes"
                ),
                "num_retries": 2,
                "retry_host_predicate": [
                    {
                        "name": "envoy.retry_host_predicates.previous_hosts",
                        "typed_config": {
                            "@type": "type.googleapis.com/envoy.extensions.retry.host."
                            "previous_hosts.v3.PreviousHostsPredicate"
                        },
                    }
                ],
                "host_selection_retry_max_attempts": "5",
            },
        },
        "decorator": {"operation": f"{REVIEWS}:9080/*"},
    }


def test_route_default_route_with_hash_policy() -> None:
    lb = json_format.ParseDict(
        {"httpCookie": {"name": "session", "ttl": "60s"}},
        dr_pb2.LoadBalancerSettings.ConsistentHashLB(),
    )
    route = build_default_route(f"outbound|9080||{REVIEWS}", hash_policy=hash_policy(lb))
    assert as_dict(route.route)["hash_policy"] == [{"cookie": {"name": "session", "ttl": "60s"}}]
    assert len(route.route.retry_policy.retry_host_predicate) == 1


@pytest.mark.parametrize(
    ("allow_any", "expected_route"),
    [
        (
            True,
            {
                "name": "allow_any",
                "match": {"prefix": "/"},
                "route": {
                    "cluster": "PassthroughCluster",
                    "timeout": "0s",
                    "max_stream_duration": {
                        "max_stream_duration": "0s",
                        "grpc_timeout_header_max": "0s",
                    },
                },
            },
        ),
        (
            False,
            {"name": "block_all", "match": {"prefix": "/"}, "direct_response": {"status": 502}},
        ),
    ],
)
def test_route_catch_all_virtual_host(allow_any: bool, expected_route: dict[str, Any]) -> None:
    vhost = build_catch_all_virtual_host(allow_any=allow_any)
    assert as_dict(vhost) == {
        "name": expected_route["name"],
        "domains": ["*"],
        "routes": [expected_route],
        "include_request_attempt_count": True,
    }


def test_route_configuration() -> None:
    vhosts = [
        build_catch_all_virtual_host(allow_any=True),
        build_virtual_host("zeta:80", ["zeta"], []),
        build_virtual_host("alpha:80", ["alpha"], []),
    ]
    config = build_route_configuration("80", vhosts)
    assert config.name == "80"
    assert [vhost.name for vhost in config.virtual_hosts] == ["alpha:80", "zeta:80", "allow_any"]
    assert config.HasField("validate_clusters")
    assert config.validate_clusters.value is False
    assert config.max_direct_response_body_size_bytes.value == 1024 * 1024
    assert not config.ignore_port_in_host_matching
    again = build_route_configuration("80", list(reversed(vhosts)))
    assert again.SerializeToString(deterministic=True) == config.SerializeToString(
        deterministic=True
    )


def test_route_configuration_options() -> None:
    config = build_route_configuration(
        "80", [], validate_clusters=True, ignore_port_in_host_matching=True
    )
    assert config.validate_clusters.value is True
    assert config.ignore_port_in_host_matching is True
    assert len(config.virtual_hosts) == 0


@pytest.mark.parametrize(
    "hostname",
    [
        "reviews.shop.svc.cluster.local",
        "a.b.shop.svc.cluster.local",  # namespace "b.shop": never the proxy's here
        "reviews.shop.svc.other.local",  # another suffix: no short names
        "api.example.com",
        ".shop.svc.cluster.local",
    ],
)
def test_sidecar_domains_are_the_domains_from_every_namespace(hostname: str) -> None:
    for namespace in ("shop", "b.shop", "other", ""):
        expected = virtual_host_domains(hostname, 9080, namespace)
        assert list(sidecar_domains(hostname, 9080, namespace)) == expected, namespace
        # remembered per hostname and port: asked again, or for another port, the same
        assert list(sidecar_domains(hostname, 9080, namespace)) == expected
        assert list(sidecar_domains(hostname, 80, namespace)) == virtual_host_domains(
            hostname, 80, namespace
        )


def test_a_service_virtual_host_equals_one_built_afresh_and_is_the_callers_own() -> None:
    cluster = "outbound|9080||reviews.shop.svc.cluster.local"
    policy = rc_pb2.RouteAction.HashPolicy()
    policy.header.header_name = "x-user"
    domains = virtual_host_domains("reviews.shop.svc.cluster.local", 9080, "shop")
    for policies in ((), (policy,)):
        fresh = build_virtual_host(
            "reviews.shop.svc.cluster.local:9080",
            domains,
            [build_default_route(cluster, hash_policy=policies)],
        )
        first = service_virtual_host(
            "reviews.shop.svc.cluster.local:9080", domains, cluster, policies
        )
        assert first == fresh
        assert first.SerializeToString() == fresh.SerializeToString()
        first.domains.append("changed")  # the caller's own: the next one is as built
        again = service_virtual_host(
            "reviews.shop.svc.cluster.local:9080", domains, cluster, policies
        )
        assert again == fresh
    other = service_virtual_host("reviews.shop.svc.cluster.local:9080", domains[:2], cluster)
    assert list(other.domains) == domains[:2]  # the domains are part of what is kept
