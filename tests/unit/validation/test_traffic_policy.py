"""DestinationRule traffic policies: load balancing, locality, connection pools, outlier
detection, port-level settings, tunnels and retry budgets."""

from __future__ import annotations

from typing import Any

import pytest

from .checking import assert_error
from .destination_rule_specs import CH, LB, LOC, OD, POOL, TP, check, hashed, lb, locality, tp

INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    ("hash-without-key", hashed(maglev={"tableSize": 7}), CH, "needs a hash key"),
    (
        "cookie-without-name",
        hashed(httpCookie={"ttl": "10s"}),
        f"{CH}.httpCookie.name",
        "needs a name",
    ),
    ("empty-hash-header", hashed(httpHeaderName=""), f"{CH}.httpHeaderName", "must not be empty"),
    (
        "maglev-not-prime",
        hashed(useSourceIp=True, maglev={"tableSize": 65536}),
        f"{CH}.maglev.tableSize",
        "must be a prime number",
    ),
    (
        "maglev-without-size",
        hashed(useSourceIp=True, maglev={}),
        f"{CH}.maglev.tableSize",
        "needs a tableSize",
    ),
    (
        "maglev-too-large",
        hashed(useSourceIp=True, maglev={"tableSize": 5000011}),
        f"{CH}.maglev.tableSize",
        "must be below 5000011",
    ),
    (
        "ring-size-with-algorithm",
        hashed(useSourceIp=True, minimumRingSize=1024, ringHash={"minimumRingSize": 1024}),
        f"{CH}.minimumRingSize",
        "cannot be combined with ringHash or maglev",
    ),
    (
        "ring-too-large",
        hashed(useSourceIp=True, ringHash={"minimumRingSize": 10_000_000}),
        f"{CH}.ringHash.minimumRingSize",
        "exceeds Envoy's limit",
    ),
    (
        "locality-weights-sum",
        locality(distribute=[{"from": "us-east/*", "to": {"us-east/*": 60, "us-west/*": 30}}]),
        f"{LOC}.distribute[0].to",
        "add up to 90",
    ),
    (
        "locality-weight-zero",
        locality(distribute=[{"from": "us-east/*", "to": {"us-east/*": 100, "us-west/*": 0}}]),
        f"{LOC}.distribute[0].to[us-west/*]",
        "must be in 1..100",
    ),
    (
        "distribute-and-failover",
        locality(
            distribute=[{"from": "a/*", "to": {"a/*": 100}}], failover=[{"from": "a", "to": "b"}]
        ),
        LOC,
        "cannot both be set",
    ),
    (
        "locality-wildcard-inside",
        locality(distribute=[{"from": "us-east/*/zone1", "to": {"us-east/*": 100}}]),
        f"{LOC}.distribute[0].from",
        "'*' may appear once, at the end",
    ),
    (
        "locality-partial-wildcard",
        locality(distribute=[{"from": "us-east/zone*", "to": {"us-east/*": 100}}]),
        f"{LOC}.distribute[0].from",
        "must be a whole region, zone or subzone",
    ),
    (
        "locality-empty-part",
        locality(distribute=[{"from": "us-east//a", "to": {"us-east/*": 100}}]),
        f"{LOC}.distribute[0].from",
        "empty region, zone or subzone",
    ),
    (
        "locality-overlap",
        locality(
            distribute=[
                {"from": "us-east/*", "to": {"us-east/*": 100}},
                {"from": "us-east/zone1", "to": {"us-east/*": 100}},
            ]
        ),
        f"{LOC}.distribute[1].from",
        "overlaps locality 'us-east/*'",
    ),
    (
        "distribute-without-targets",
        locality(distribute=[{"from": "us-east/*"}]),
        f"{LOC}.distribute[0].to",
        "at least one target",
    ),
    (
        "failover-same-region",
        locality(failover=[{"from": "us-east", "to": "us-east"}]),
        f"{LOC}.failover[0]",
        "must be different regions",
    ),
    (
        "failover-zone",
        locality(failover=[{"from": "us-east/zone1", "to": "us-west"}]),
        f"{LOC}.failover[0]",
        "regions only",
    ),
    (
        "failover-wildcard",
        locality(failover=[{"from": "*", "to": "us-west"}]),
        f"{LOC}.failover[0]",
        "cannot contain the '*' wildcard",
    ),
    (
        "failover-with-topology-priority",
        locality(
            failover=[{"from": "a", "to": "b"}], failoverPriority=["topology.kubernetes.io/zone"]
        ),
        f"{LOC}.failoverPriority[0]",
        "cannot be used together with failover",
    ),
    (
        "warmup-percent",
        lb(warmup={"minimumPercent": 150}),
        f"{LB}.warmup.minimumPercent",
        "must be in 0..100",
    ),
    (
        "warmup-without-duration",
        lb(warmup={"minimumPercent": 5}),
        f"{LB}.warmup.duration",
        "needs a duration",
    ),
    (
        "warmup-aggression-below-one",
        lb(warmup={"duration": "300s", "aggression": 0.3}),
        f"{LB}.warmup.aggression",
        "at least 1",
    ),
    (
        "warmup-duration",
        lb(warmupDurationSecs="0s"),
        f"{LB}.warmupDurationSecs",
        "at least 1ms",
    ),
    ("empty-pool", tp(connectionPool={}), POOL, "needs tcp or http settings"),
    (
        "negative-max-connections",
        tp(connectionPool={"tcp": {"maxConnections": -1}}),
        f"{POOL}.tcp.maxConnections",
        "must not be negative",
    ),
    (
        "negative-pending-requests",
        tp(connectionPool={"http": {"http1MaxPendingRequests": -5}}),
        f"{POOL}.http.http1MaxPendingRequests",
        "must not be negative",
    ),
    (
        "negative-concurrent-streams",
        tp(connectionPool={"http": {"maxConcurrentStreams": -1}}),
        f"{POOL}.http.maxConcurrentStreams",
        "must not be negative",
    ),
    (
        "connect-timeout-zero",
        tp(connectionPool={"tcp": {"connectTimeout": "0s"}}),
        f"{POOL}.tcp.connectTimeout",
        "at least 1ms",
    ),
    (
        "idle-timeout-precision",
        tp(connectionPool={"http": {"idleTimeout": "1.0005s"}}),
        f"{POOL}.http.idleTimeout",
        "whole number of milliseconds",
    ),
    (
        "keepalive-interval",
        tp(connectionPool={"tcp": {"tcpKeepalive": {"interval": "0s"}}}),
        f"{POOL}.tcp.tcpKeepalive.interval",
        "at least 1ms",
    ),
    (
        "upgrade-and-client-protocol",
        tp(connectionPool={"http": {"h2UpgradePolicy": "UPGRADE", "useClientProtocol": True}}),
        f"{POOL}.http.useClientProtocol",
        "cannot be true when h2UpgradePolicy is UPGRADE",
    ),
    (
        "max-ejection-percent",
        tp(outlierDetection={"maxEjectionPercent": 150}),
        f"{OD}.maxEjectionPercent",
        "percentage 150 must be in 0..100",
    ),
    (
        "min-health-percent",
        tp(outlierDetection={"minHealthPercent": -1}),
        f"{OD}.minHealthPercent",
        "must be in 0..100",
    ),
    (
        "outlier-interval",
        tp(outlierDetection={"interval": "0s"}),
        f"{OD}.interval",
        "at least 1ms",
    ),
    (
        "base-ejection-time",
        tp(outlierDetection={"baseEjectionTime": "0.0005s"}),
        f"{OD}.baseEjectionTime",
        "at least 1ms",
    ),
    (
        "local-origin-without-split",
        tp(outlierDetection={"consecutiveLocalOriginFailures": 5}),
        f"{OD}.consecutiveLocalOriginFailures",
        "needs splitExternalLocalOriginErrors",
    ),
    (
        "outlier-error-code",
        tp(outlierDetection={"outlierDetectionHttpErrorCodes": [503, 700]}),
        f"{OD}.outlierDetectionHttpErrorCodes[1]",
        "HTTP status 700",
    ),
    (
        "port-settings-without-port",
        tp(portLevelSettings=[{"loadBalancer": {"simple": "RANDOM"}}]),
        f"{TP}.portLevelSettings[0].port",
        "need a port",
    ),
    (
        "port-settings-port-zero",
        tp(portLevelSettings=[{"port": {}, "loadBalancer": {"simple": "RANDOM"}}]),
        f"{TP}.portLevelSettings[0].port.number",
        "must be in 1..65535",
    ),
    (
        "port-settings-duplicate",
        tp(
            portLevelSettings=[
                {"port": {"number": 80}, "loadBalancer": {"simple": "RANDOM"}},
                {"port": {"number": 80}, "tls": {"mode": "ISTIO_MUTUAL"}},
            ]
        ),
        f"{TP}.portLevelSettings[1].port.number",
        "already has settings in portLevelSettings[0]",
    ),
    (
        "port-settings-empty",
        tp(portLevelSettings=[{"port": {"number": 80}}]),
        f"{TP}.portLevelSettings[0]",
        "at least one policy",
    ),
    (
        "port-settings-tls",
        tp(portLevelSettings=[{"port": {"number": 80}, "tls": {"mode": "MUTUAL"}}]),
        f"{TP}.portLevelSettings[0].tls.clientCertificate",
        "MUTUAL needs",
    ),
    (
        "tunnel-and-proxy-protocol",
        tp(
            tunnel={"targetHost": "p.example", "targetPort": 3128},
            proxyProtocol={"version": "V1"},
        ),
        TP,
        "tunnel and proxyProtocol cannot both be set",
    ),
    (
        "tunnel-protocol",
        tp(tunnel={"protocol": "GET", "targetHost": "p.example", "targetPort": 3128}),
        f"{TP}.tunnel.protocol",
        "must be CONNECT or POST",
    ),
    (
        "tunnel-target-host",
        tp(tunnel={"targetHost": "*.p.example", "targetPort": 3128}),
        f"{TP}.tunnel.targetHost",
        "must be an FQDN or an IP address",
    ),
    (
        "tunnel-target-port",
        tp(tunnel={"targetHost": "10.0.0.1"}),
        f"{TP}.tunnel.targetPort",
        "port number 0",
    ),
    (
        "retry-budget-percent",
        tp(retryBudget={"percent": 150}),
        f"{TP}.retryBudget.percent",
        "must be in 0..100",
    ),
]


@pytest.mark.parametrize(
    ("spec", "path", "fragment"), [case[1:] for case in INVALID], ids=[case[0] for case in INVALID]
)
def test_invalid_traffic_policies(spec: dict[str, Any], path: str, fragment: str) -> None:
    assert_error(check(spec), path, fragment)
