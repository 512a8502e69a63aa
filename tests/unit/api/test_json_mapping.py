"""Istio YAML specs (the proto3 JSON mapping) parse into the generated messages."""

from __future__ import annotations

from typing import Any, TypeVar

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from pilothouse.api.istio.mesh.v1alpha1 import config_pb2
from pilothouse.api.istio.networking.v1alpha3 import (
    destination_rule_pb2,
    service_entry_pb2,
    sidecar_pb2,
    virtual_service_pb2,
)
from pilothouse.api.istio.security.v1beta1 import peer_authentication_pb2

M = TypeVar("M", bound=Message)

VS = virtual_service_pb2
DR = destination_rule_pb2
SE = service_entry_pb2

VIRTUAL_SERVICE: dict[str, Any] = {
    "hosts": ["reviews"],
    "gateways": ["mesh"],
    "exportTo": ["."],
    "http": [
        {
            "name": "jason",
            "match": [
                {
                    "uri": {"prefix": "/api"},
                    "headers": {"end-user": {"exact": "jason"}},
                    "withoutHeaders": {"x-debug": {"regex": ".+"}},
                    "ignoreUriCase": True,
                    "sourceLabels": {"app": "web"},
                }
            ],
            "route": [
                {
                    "destination": {"host": "reviews", "subset": "v2", "port": {"number": 9080}},
                    "weight": 80,
                    "headers": {"request": {"set": {"x-route": "v2"}, "remove": ["x-old"]}},
                },
                {"destination": {"host": "reviews", "subset": "v1"}, "weight": 20},
            ],
            "timeout": "5s",
            "retries": {"attempts": 3, "perTryTimeout": "2s", "retryOn": "5xx,reset"},
            "fault": {
                "delay": {"fixedDelay": "7s", "percentage": {"value": 10.0}},
                "abort": {"httpStatus": 503, "percentage": {"value": 1.5}},
            },
            "mirror": {"host": "shadow"},
            "mirrorPercentage": {"value": 50.0},
            "corsPolicy": {
                "allowOrigins": [{"exact": "https://example.com"}],
                "maxAge": "86400s",
                "allowCredentials": False,
                "unmatchedPreflights": "IGNORE",
            },
        },
        {"redirect": {"uri": "/v2", "derivePort": "FROM_REQUEST_PORT", "redirectCode": 302}},
        {"directResponse": {"status": 200, "body": {"string": "ok"}}},
    ],
    "tcp": [{"match": [{"port": 27017}], "route": [{"destination": {"host": "mongo"}}]}],
    "tls": [
        {
            "match": [{"sniHosts": ["login.example.com"], "port": 443}],
            "route": [{"destination": {"host": "login"}}],
        }
    ],
}

DESTINATION_RULE: dict[str, Any] = {
    "host": "reviews.prod.svc.cluster.local",
    "exportTo": ["*"],
    "workloadSelector": {"matchLabels": {"app": "ratings"}},
    "trafficPolicy": {
        "loadBalancer": {
            "simple": "LEAST_REQUEST",
            "localityLbSetting": {
                "enabled": True,
                "distribute": [{"from": "us-west/zone1/*", "to": {"us-west/zone2/*": 20}}],
            },
        },
        "connectionPool": {
            "tcp": {"maxConnections": 100, "connectTimeout": "0.030s"},
            "http": {"http2MaxRequests": 1000, "h2UpgradePolicy": "UPGRADE"},
        },
        "outlierDetection": {"consecutive5xxErrors": 7, "interval": "300s"},
        "tls": {"mode": "ISTIO_MUTUAL", "sni": "reviews.example.com"},
        "portLevelSettings": [{"port": {"number": 9080}, "loadBalancer": {"simple": "RANDOM"}}],
    },
    "subsets": [
        {
            "name": "v1",
            "labels": {"version": "v1"},
            "trafficPolicy": {
                "loadBalancer": {
                    "consistentHash": {
                        "httpCookie": {"name": "user", "ttl": "0s"},
                        "ringHash": {"minimumRingSize": "1024"},
                    }
                }
            },
        }
    ],
}

SERVICE_ENTRY: dict[str, Any] = {
    "hosts": ["api.example.com"],
    "addresses": ["240.0.0.1"],
    "ports": [{"number": 443, "name": "https", "protocol": "TLS", "targetPort": 8443}],
    "location": "MESH_INTERNAL",
    "resolution": "STATIC",
    "endpoints": [
        {
            "address": "10.0.0.7",
            "ports": {"https": 8443},
            "labels": {"version": "v1"},
            "locality": "us-west/zone1",
            "weight": 3,
            "serviceAccount": "api",
        }
    ],
    "workloadSelector": {"labels": {"app": "api"}},
    "exportTo": ["."],
    "subjectAltNames": ["spiffe://cluster.local/ns/default/sa/api"],
}


def _parse(data: dict[str, Any], message: M) -> M:
    return json_format.ParseDict(data, message, ignore_unknown_fields=False)


def test_virtual_service_fields_land_where_istio_puts_them() -> None:
    vs = _parse(VIRTUAL_SERVICE, VS.VirtualService())
    route = vs.http[0]
    assert list(vs.hosts) == ["reviews"]
    assert list(vs.export_to) == ["."]
    assert route.match[0].uri.prefix == "/api"
    assert route.match[0].headers["end-user"].exact == "jason"
    assert route.match[0].without_headers["x-debug"].WhichOneof("match_type") == "regex"
    assert route.match[0].ignore_uri_case
    assert route.route[0].destination.port.number == 9080
    assert route.route[0].headers.request.set["x-route"] == "v2"
    assert [d.weight for d in route.route] == [80, 20]
    assert route.timeout.seconds == 5
    assert route.retries.per_try_timeout.seconds == 2
    assert route.fault.delay.fixed_delay.seconds == 7
    assert route.fault.abort.WhichOneof("error_type") == "http_status"
    assert route.fault.abort.percentage.value == 1.5
    assert route.mirror_percentage.value == 50.0
    assert route.cors_policy.max_age.seconds == 86400
    assert route.cors_policy.HasField("allow_credentials")
    assert not route.cors_policy.allow_credentials.value
    assert route.cors_policy.unmatched_preflights == VS.CorsPolicy.IGNORE
    redirect = vs.http[1].redirect
    assert redirect.derive_port == VS.HTTPRedirect.FROM_REQUEST_PORT
    assert redirect.WhichOneof("redirect_port") == "derive_port"
    assert vs.http[2].direct_response.body.string == "ok"
    assert vs.tcp[0].match[0].port == 27017
    assert list(vs.tls[0].match[0].sni_hosts) == ["login.example.com"]


def test_destination_rule_fields_land_where_istio_puts_them() -> None:
    dr = _parse(DESTINATION_RULE, DR.DestinationRule())
    policy = dr.traffic_policy
    lb = policy.load_balancer
    assert lb.simple == DR.LoadBalancerSettings.LEAST_REQUEST
    assert lb.locality_lb_setting.enabled.value
    assert lb.locality_lb_setting.distribute[0].to["us-west/zone2/*"] == 20
    assert policy.connection_pool.tcp.max_connections == 100
    assert policy.connection_pool.tcp.connect_timeout.nanos == 30_000_000
    http = policy.connection_pool.http
    assert http.h2_upgrade_policy == DR.ConnectionPoolSettings.HTTPSettings.UPGRADE
    assert policy.outlier_detection.consecutive_5xx_errors.value == 7
    assert policy.tls.mode == DR.ClientTLSSettings.ISTIO_MUTUAL
    assert policy.port_level_settings[0].load_balancer.simple == DR.LoadBalancerSettings.RANDOM
    assert dict(dr.workload_selector.match_labels) == {"app": "ratings"}
    hashing = dr.subsets[0].traffic_policy.load_balancer.consistent_hash
    assert hashing.http_cookie.name == "user"
    assert hashing.ring_hash.minimum_ring_size == 1024


def test_service_entry_fields_land_where_istio_puts_them() -> None:
    se = _parse(SERVICE_ENTRY, SE.ServiceEntry())
    assert se.location == SE.ServiceEntry.MESH_INTERNAL
    assert se.resolution == SE.ServiceEntry.STATIC
    assert se.ports[0].target_port == 8443
    endpoint = se.endpoints[0]
    assert endpoint.ports["https"] == 8443
    assert endpoint.service_account == "api"
    assert dict(se.workload_selector.labels) == {"app": "api"}


@pytest.mark.parametrize(
    ("data", "cls"),
    [
        (VIRTUAL_SERVICE, VS.VirtualService),
        (DESTINATION_RULE, DR.DestinationRule),
        (SERVICE_ENTRY, SE.ServiceEntry),
    ],
)
def test_json_round_trip_keeps_the_message(data: dict[str, Any], cls: type[Message]) -> None:
    message = _parse(data, cls())
    again = _parse(json_format.MessageToDict(message), cls())
    assert again == message
    assert cls.FromString(message.SerializeToString()) == message


def test_sidecar_peer_authentication_and_mesh_config_parse() -> None:
    sidecar = _parse(
        {
            "egress": [
                {
                    "port": {"number": 9080, "protocol": "HTTP", "name": "http"},
                    "bind": "127.0.0.1",
                    "captureMode": "NONE",
                    "hosts": ["./reviews.default.svc.cluster.local"],
                }
            ],
            "outboundTrafficPolicy": {"mode": "REGISTRY_ONLY"},
        },
        sidecar_pb2.Sidecar(),
    )
    assert sidecar.egress[0].capture_mode == sidecar_pb2.NONE
    peer = _parse(
        {"mtls": {"mode": "STRICT"}, "portLevelMtls": {"8080": {"mode": "DISABLE"}}},
        peer_authentication_pb2.PeerAuthentication(),
    )
    mtls = peer_authentication_pb2.PeerAuthentication.MutualTLS
    assert peer.mtls.mode == mtls.STRICT
    assert peer.port_level_mtls[8080].mode == mtls.DISABLE
    mesh = _parse(
        {
            "rootNamespace": "istio-system",
            "enableAutoMtls": True,
            "outboundTrafficPolicy": {"mode": "ALLOW_ANY"},
            "configSources": [
                {"address": "xds://127.0.0.1:15010", "tlsSettings": {"mode": "SIMPLE"}}
            ],
            "defaultHttpRetryPolicy": {"attempts": 2},
        },
        config_pb2.MeshConfig(),
    )
    outbound = config_pb2.MeshConfig.OutboundTrafficPolicy
    assert mesh.outbound_traffic_policy.mode == outbound.ALLOW_ANY
    assert mesh.config_sources[0].tls_settings.mode == DR.ClientTLSSettings.SIMPLE
    assert mesh.enable_auto_mtls.value
    assert mesh.default_http_retry_policy.attempts == 2


def test_unknown_and_misplaced_keys_are_rejected() -> None:
    with pytest.raises(json_format.ParseError):
        _parse({"hostz": ["a"]}, VS.VirtualService())
    # ServiceEntry uses the networking selector (labels), not matchLabels.
    with pytest.raises(json_format.ParseError):
        _parse({"workloadSelector": {"matchLabels": {"a": "b"}}}, SE.ServiceEntry())
    # Sidecar has no exportTo.
    with pytest.raises(json_format.ParseError):
        _parse({"exportTo": ["."]}, sidecar_pb2.Sidecar())
