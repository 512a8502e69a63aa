"""DestinationRule validation: host, subsets, traffic policies, TLS, exportTo, selector."""

from __future__ import annotations

from typing import Any

import pytest

from .checking import assert_clean, assert_error, assert_no_errors, assert_warning
from .destination_rule_specs import CH, LOC, OD, TLS, TP, check, hashed, lb, locality, tls, tp

REVIEWS: dict[str, Any] = {
    "host": "reviews.prod.svc.cluster.local",
    "trafficPolicy": {
        "loadBalancer": {
            "simple": "LEAST_REQUEST",
            "localityLbSetting": {
                "enabled": True,
                "distribute": [
                    {
                        "from": "us-west/zone1/*",
                        "to": {"us-west/zone1/*": 80, "us-west/zone2/*": 20},
                    },
                    {"from": "us-east/*", "to": {"us-east/*": 100}},
                ],
            },
            "warmup": {"duration": "60s", "minimumPercent": 10, "aggression": 1.5},
        },
        "connectionPool": {
            "tcp": {
                "maxConnections": 100,
                "connectTimeout": "0.03s",
                "tcpKeepalive": {"time": "7200s", "interval": "75s", "probes": 9},
                "idleTimeout": "3600s",
            },
            "http": {
                "http1MaxPendingRequests": 1024,
                "http2MaxRequests": 1024,
                "maxRequestsPerConnection": 10,
                "maxRetries": 3,
                "idleTimeout": "300s",
                "h2UpgradePolicy": "UPGRADE",
                "http2KeepAlive": {"interval": "30s", "timeout": "5s"},
            },
        },
        "outlierDetection": {
            "consecutive5xxErrors": 7,
            "consecutiveGatewayErrors": 5,
            "interval": "5s",
            "baseEjectionTime": "900s",
            "maxEjectionPercent": 100,
            "minHealthPercent": 50,
            "splitExternalLocalOriginErrors": True,
            "consecutiveLocalOriginFailures": 3,
            "outlierDetectionHttpErrorCodes": [500, 503],
        },
        "tls": {"mode": "ISTIO_MUTUAL", "sni": "reviews.prod", "subjectAltNames": ["spiffe://x"]},
        "portLevelSettings": [
            {"port": {"number": 9080}, "loadBalancer": {"simple": "ROUND_ROBIN"}},
            {"port": {"number": 9443}, "tls": {"mode": "SIMPLE", "credentialName": "reviews-ca"}},
        ],
        "retryBudget": {"percent": 20, "minRetryConcurrency": 3, "budgetInterval": "10s"},
    },
    "subsets": [
        {"name": "v1", "labels": {"version": "v1"}},
        {
            "name": "v2",
            "labels": {"version": "v2", "app.kubernetes.io/part-of": "bookinfo"},
            "trafficPolicy": {
                "loadBalancer": {"consistentHash": {"httpCookie": {"name": "user", "ttl": "0s"}}}
            },
        },
        {"name": "all"},
    ],
    "exportTo": [".", "frontend"],
}


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(REVIEWS, id="reviews"),
        pytest.param({"host": "*.example.com"}, id="wildcard-host"),
        pytest.param(
            hashed(httpHeaderName="x-user", ringHash={"minimumRingSize": 1024}), id="ring"
        ),
        pytest.param(hashed(useSourceIp=True, maglev={"tableSize": 65537}), id="maglev"),
        pytest.param(hashed(httpQueryParameterName="session"), id="query-hash"),
        pytest.param(
            locality(failover=[{"from": "us-east", "to": "eu-west"}], failoverPriority=["zone"]),
            id="failover",
        ),
        pytest.param(
            tls(mode="MUTUAL", clientCertificate="/c.pem", privateKey="/k.pem"), id="mtls"
        ),
        pytest.param(tls(mode="MUTUAL", credentialName="client-creds"), id="mtls-credential"),
        pytest.param(
            tls(mode="SIMPLE", caCertificates="/ca.pem", sni="api.example.com"), id="simple-tls"
        ),
        pytest.param(tls(mode="SIMPLE", insecureSkipVerify=True), id="skip-verify"),
        pytest.param(
            tp(tunnel={"protocol": "CONNECT", "targetHost": "proxy.example", "targetPort": 3128}),
            id="tunnel",
        ),
        pytest.param(tp(proxyProtocol={"version": "V2"}), id="proxy-protocol"),
        pytest.param(
            {
                "host": "reviews",
                "workloadSelector": {"matchLabels": {"app": "ratings"}},
                "exportTo": ["."],
                "trafficPolicy": {"tls": {"mode": "DISABLE"}},
            },
            id="selector-private",
        ),
    ],
)
def test_valid_destination_rules(spec: dict[str, Any]) -> None:
    assert_clean(check(spec))


INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    ("no-host", {"subsets": [{"name": "v1"}]}, "spec.host", "host is required"),
    ("bad-host", {"host": "reviews:9080"}, "spec.host", "not a valid DNS name"),
    ("empty-traffic-policy", tp(), TP, "at least one field"),
    (
        "subset-without-name",
        {"host": "r", "subsets": [{"labels": {"version": "v1"}}]},
        "spec.subsets[0].name",
        "subset name is required",
    ),
    (
        "subset-bad-name",
        {"host": "r", "subsets": [{"name": "v1.0"}]},
        "spec.subsets[0].name",
        "not a DNS-1123 label",
    ),
    (
        "duplicate-subsets",
        {"host": "r", "subsets": [{"name": "v1"}, {"name": "v1"}]},
        "spec.subsets[1].name",
        "already used by subsets[0]",
    ),
    (
        "subset-label",
        {"host": "r", "subsets": [{"name": "v1", "labels": {"version": "v1 "}}]},
        "spec.subsets[0].labels[version]",
        "label value",
    ),
    (
        "subset-empty-label-key",
        {"host": "r", "subsets": [{"name": "v1", "labels": {"": "v1"}}]},
        "spec.subsets[0].labels[]",
        "label key must not be empty",
    ),
    (
        "subset-policy",
        {
            "host": "r",
            "subsets": [
                {"name": "v1", "trafficPolicy": {"outlierDetection": {"maxEjectionPercent": 101}}}
            ],
        },
        "spec.subsets[0].trafficPolicy.outlierDetection.maxEjectionPercent",
        "percentage 101 must be in 0..100",
    ),
    (
        "disable-with-certificate",
        tls(mode="DISABLE", clientCertificate="/c.pem"),
        f"{TLS}.clientCertificate",
        "DISABLE does not use TLS",
    ),
    (
        "disable-with-credential",
        tls(credentialName="creds"),
        f"{TLS}.credentialName",
        "must not be set: DISABLE",
    ),
    (
        "istio-mutual-with-ca",
        tls(mode="ISTIO_MUTUAL", caCertificates="/ca.pem"),
        f"{TLS}.caCertificates",
        "ISTIO_MUTUAL uses the mesh's own certificates",
    ),
    (
        "mutual-without-certificate",
        tls(mode="MUTUAL", privateKey="/k.pem"),
        f"{TLS}.clientCertificate",
        "MUTUAL needs clientCertificate",
    ),
    (
        "mutual-without-key",
        tls(mode="MUTUAL", clientCertificate="/c.pem"),
        f"{TLS}.privateKey",
        "MUTUAL needs privateKey",
    ),
    (
        "credential-and-files",
        tls(mode="SIMPLE", credentialName="creds", caCertificates="/ca.pem"),
        f"{TLS}.caCertificates",
        "cannot be set together with credentialName",
    ),
    (
        "mutual-credential-and-files",
        tls(mode="MUTUAL", credentialName="creds", clientCertificate="/c.pem"),
        f"{TLS}.clientCertificate",
        "together with credentialName",
    ),
    (
        "skip-verify-with-ca",
        tls(mode="SIMPLE", insecureSkipVerify=True, caCertificates="/ca.pem"),
        f"{TLS}.insecureSkipVerify",
        "cannot be combined",
    ),
    (
        "selector-exported-elsewhere",
        {"host": "r", "workloadSelector": {"matchLabels": {"app": "a"}}, "exportTo": ["*"]},
        "spec.exportTo",
        "only be exported to its own namespace",
    ),
    (
        "selector-several-exports",
        {"host": "r", "workloadSelector": {"matchLabels": {"app": "a"}}, "exportTo": [".", "b"]},
        "spec.exportTo",
        "cannot have several exportTo entries",
    ),
    (
        "selector-wildcard",
        {"host": "r", "workloadSelector": {"matchLabels": {"app": "web*"}}},
        "spec.workloadSelector.matchLabels[app]",
        "wildcards are not supported",
    ),
    (
        "export-bad",
        {"host": "r", "exportTo": ["team a"]},
        "spec.exportTo[0]",
        "not '.', '*' or a namespace name",
    ),
]


@pytest.mark.parametrize(
    ("spec", "path", "fragment"), [case[1:] for case in INVALID], ids=[case[0] for case in INVALID]
)
def test_invalid_destination_rules(spec: dict[str, Any], path: str, fragment: str) -> None:
    assert_error(check(spec), path, fragment)


WARNINGS: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "consecutive-errors-deprecated",
        tp(outlierDetection={"consecutiveErrors": 5}),
        f"{OD}.consecutiveErrors",
        "deprecated; use consecutive5xxErrors",
    ),
    (
        "minimum-ring-size-deprecated",
        hashed(httpHeaderName="x-user", minimumRingSize=1024),
        f"{CH}.minimumRingSize",
        "deprecated; use ringHash",
    ),
    (
        "failover-without-outlier-detection",
        lb(localityLbSetting={"failover": [{"from": "a", "to": "b"}]}),
        LOC,
        "needs outlierDetection",
    ),
    (
        "empty-selector",
        {"host": "r", "workloadSelector": {}},
        "spec.workloadSelector.matchLabels",
        "selects every workload",
    ),
]


@pytest.mark.parametrize(
    ("spec", "path", "fragment"),
    [case[1:] for case in WARNINGS],
    ids=[case[0] for case in WARNINGS],
)
def test_destination_rule_warnings(spec: dict[str, Any], path: str, fragment: str) -> None:
    report = check(spec)
    assert_no_errors(report)
    assert_warning(report, path, fragment)


def test_selector_rule_may_name_its_own_namespace() -> None:
    spec = {"host": "r", "workloadSelector": {"matchLabels": {"app": "a"}}, "exportTo": ["prod"]}
    assert_clean(check(spec))
