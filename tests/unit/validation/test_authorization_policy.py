"""AuthorizationPolicy validation: every invalid shape is reported at its field path."""

from __future__ import annotations

from typing import Any

import pytest

from pilothouse.api.istio.security.v1beta1.authorization_policy_pb2 import AuthorizationPolicy
from pilothouse.config.validation import validate_authorization_policy

from .checking import assert_clean, assert_error, assert_no_errors, assert_warning, run

SELECTOR = {"matchLabels": {"app": "reviews"}}


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({}, id="allow-nothing"),
        pytest.param({"action": "DENY", "rules": [{}]}, id="deny-all"),
        pytest.param(
            {
                "selector": SELECTOR,
                "action": "DENY",
                "rules": [
                    {
                        "to": [
                            {
                                "operation": {
                                    "paths": ["/admin/*", "/users/{*}/keys/{**}"],
                                    "methods": ["POST"],
                                }
                            }
                        ],
                        "when": [
                            {"key": "request.headers[x-user]", "values": ["guest"]},
                            {"key": "source.ip", "notValues": ["10.0.0.0/8"]},
                            {"key": "destination.port", "values": ["8080"]},
                            {"key": "request.auth.claims[groups]", "values": ["admin"]},
                            {"key": "request.auth.claims[org][team]", "values": ["ops"]},
                            {"key": "experimental.envoy.filters.a.b[c]", "values": ["d"]},
                        ],
                    }
                ],
            },
            id="deny-paths-when",
        ),
        pytest.param(
            {
                "action": "CUSTOM",
                "provider": {"name": "ext-authz"},
                "rules": [{"to": [{"operation": {"hosts": ["*.example.com"]}}]}],
            },
            id="custom",
        ),
        pytest.param(
            {
                "action": "AUDIT",
                "rules": [{"from": [{"source": {"requestPrincipals": ["https://issuer/*"]}}]}],
            },
            id="audit-request-principals",
        ),
        pytest.param(
            {
                "targetRefs": [
                    {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "edge"}
                ]
            },
            id="target-refs",
        ),
    ],
)
def test_valid_policies(spec: dict[str, Any]) -> None:
    assert_clean(run(validate_authorization_policy, AuthorizationPolicy, spec))


@pytest.mark.parametrize(
    "paths",
    [
        ["/{**}/path/template", "/a/{**}/b/c.html"],  # literals after {**}: Istio only asks
        # that {**} be the last operator
        ["*/suffix", "admin", "prefix/*"],  # Istio requires no leading '/'
    ],
    ids=["literal-after-double-star", "no-leading-slash"],
)
def test_paths_istio_accepts(paths: list[str]) -> None:
    spec = {"rules": [{"to": [{"operation": {"paths": paths, "notPaths": paths}}]}]}
    assert_clean(run(validate_authorization_policy, AuthorizationPolicy, spec))


def test_service_accounts_alone_and_split_sources_are_valid() -> None:
    spec = {"rules": [{"from": [{"source": {"serviceAccounts": ["baz/sa", "sa"]}},
                                {"source": {"principals": ["bar"]}},
                                {"source": {"namespaces": ["bar"]}}]}]}  # fmt: skip
    assert_no_errors(run(validate_authorization_policy, AuthorizationPolicy, spec))


def test_principals_and_namespaces_warn_about_mtls() -> None:
    report = run(
        validate_authorization_policy,
        AuthorizationPolicy,
        {"rules": [{"from": [{"source": {"principals": ["cluster.local/ns/a/sa/b"],
                                         "notNamespaces": ["x"]}}]}]},
    )  # fmt: skip
    assert_no_errors(report)
    assert_warning(report, "spec.rules[0].from[0].source.principals", "mutual TLS")
    assert_warning(report, "spec.rules[0].from[0].source.notNamespaces", "mutual TLS")


INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    ("custom-without-provider", {"action": "CUSTOM"}, "spec.provider", "needs a provider"),
    (
        "custom-empty-provider-name",
        {"action": "CUSTOM", "provider": {}},
        "spec.provider.name",
        "must not be empty",
    ),
    (
        "provider-on-deny",
        {"action": "DENY", "provider": {"name": "x"}},
        "spec.provider",
        "only allowed with action CUSTOM, not DENY",
    ),
    (
        "provider-on-allow",
        {"provider": {"name": "x"}},
        "spec.provider",
        "not ALLOW",
    ),
    (
        "selector-and-target-refs",
        {"selector": SELECTOR, "targetRefs": [{"kind": "Service", "name": "a"}]},
        "spec.selector",
        "only one of selector, targetRef or targetRefs",
    ),
    (
        "target-ref-and-refs",
        {
            "targetRef": {"kind": "Service", "name": "a"},
            "targetRefs": [{"kind": "Service", "name": "b"}],
        },
        "spec.targetRef",
        "cannot both be set",
    ),
    (
        "target-ref-no-name",
        {"targetRefs": [{"kind": "Service"}]},
        "spec.targetRefs[0].name",
        "name is required",
    ),
    (
        "target-ref-bad-kind",
        {"targetRef": {"kind": "Pod", "name": "a"}},
        "spec.targetRef.kind",
        "cannot be targeted",
    ),
    (
        "target-ref-wrong-group",
        {"targetRef": {"kind": "Gateway", "group": "networking.istio.io", "name": "a"}},
        "spec.targetRef.group",
        "gateway.networking.k8s.io",
    ),
    (
        "target-ref-other-namespace",
        {"targetRef": {"kind": "Service", "name": "a", "namespace": "elsewhere"}},
        "spec.targetRef.namespace",
        "cross-namespace",
    ),
    (
        "empty-source",
        {"rules": [{"from": [{"source": {}}]}]},
        "spec.rules[0].from[0].source",
        "must not be empty",
    ),
    (
        "missing-source",
        {"rules": [{"from": [{}]}]},
        "spec.rules[0].from[0].source",
        "must not be empty",
    ),
    (
        "empty-operation",
        {"rules": [{"to": [{"operation": {}}]}]},
        "spec.rules[0].to[0].operation",
        "must not be empty",
    ),
    (
        "bad-ip-block",
        {"rules": [{"from": [{"source": {"ipBlocks": ["10.0.0.0/33"]}}]}]},
        "spec.rules[0].from[0].source.ipBlocks[0]",
        "not a valid CIDR",
    ),
    (
        "bad-remote-ip-block",
        {"rules": [{"from": [{"source": {"notRemoteIpBlocks": ["a.b"]}}]}]},
        "spec.rules[0].from[0].source.notRemoteIpBlocks[0]",
        "not a valid IP",
    ),
    (
        "empty-principal",
        {"rules": [{"from": [{"source": {"principals": [""]}}]}]},
        "spec.rules[0].from[0].source.principals[0]",
        "must not be empty",
    ),
    (
        "inner-wildcard",
        {"rules": [{"from": [{"source": {"namespaces": ["a*b"]}}]}]},
        "spec.rules[0].from[0].source.namespaces[0]",
        "first or last character",
    ),
    (
        "service-account-shape",
        {"rules": [{"from": [{"source": {"serviceAccounts": ["a/b/c"]}}]}]},
        "spec.rules[0].from[0].source.serviceAccounts[0]",
        "namespace/serviceaccount",
    ),
    (
        "service-accounts-with-principals",
        {"rules": [{"from": [{"source": {"serviceAccounts": ["a/b"], "principals": ["c"]}}]}]},
        "spec.rules[0].from[0].source",
        "cannot be combined with principals",
    ),
    (
        "bad-port",
        {"rules": [{"to": [{"operation": {"ports": ["http"]}}]}]},
        "spec.rules[0].to[0].operation.ports[0]",
        "not a valid port",
    ),
    (
        "port-out-of-range",
        {"rules": [{"to": [{"operation": {"notPorts": ["70000"]}}]}]},
        "spec.rules[0].to[0].operation.notPorts[0]",
        "not a valid port",
    ),
    (
        "service-accounts-with-namespaces",
        {"rules": [{"from": [{"source": {"serviceAccounts": ["bar/sa"], "namespaces": ["bar"]}}]}]},
        "spec.rules[0].from[0].source",
        "cannot be combined with principals or namespaces",
    ),
    (
        "not-service-accounts-with-not-namespaces",
        {"rules": [{"from": [{"source": {"notServiceAccounts": ["sa"], "notNamespaces": ["b"]}}]}]},
        "spec.rules[0].from[0].source",
        "cannot be combined with principals or namespaces",
    ),
    (
        "template-partial-segment",
        {"rules": [{"to": [{"operation": {"paths": ["/a/b{*}"]}}]}]},
        "spec.rules[0].to[0].operation.paths[0]",
        "only whole segments",
    ),
    (
        "template-operator-after-double-star",
        {"rules": [{"to": [{"operation": {"notPaths": ["/a/{**}/{*}"]}}]}]},
        "spec.rules[0].to[0].operation.notPaths[0]",
        "must be the last operator",
    ),
    (
        "template-glob-segment",
        {"rules": [{"to": [{"operation": {"paths": ["/a/*/{**}"]}}]}]},
        "spec.rules[0].to[0].operation.paths[0]",
        "cannot also use '*' globs",
    ),
    (
        "template-bad-literal",
        {"rules": [{"to": [{"operation": {"paths": ["/a b/{*}"]}}]}]},
        "spec.rules[0].to[0].operation.paths[0]",
        "not a valid literal",
    ),
    (
        "when-empty-key",
        {"rules": [{"when": [{"values": ["a"]}]}]},
        "spec.rules[0].when[0].key",
        "must not be empty",
    ),
    (
        "when-unknown-key",
        {"rules": [{"when": [{"key": "request.body", "values": ["a"]}]}]},
        "spec.rules[0].when[0].key",
        "unknown attribute 'request.body'",
    ),
    (
        "when-header-without-name",
        {"rules": [{"when": [{"key": "request.headers", "values": ["a"]}]}]},
        "spec.rules[0].when[0].key",
        "unknown attribute",
    ),
    (
        "when-nested-header",
        {"rules": [{"when": [{"key": "request.headers[a][b]", "values": ["x"]}]}]},
        "spec.rules[0].when[0].key",
        "unknown attribute",
    ),
    (
        "when-no-values",
        {"rules": [{"when": [{"key": "source.namespace"}]}]},
        "spec.rules[0].when[0]",
        "at least one of values or notValues",
    ),
    (
        "when-bad-ip",
        {"rules": [{"when": [{"key": "remote.ip", "values": ["nope"]}]}]},
        "spec.rules[0].when[0].values[0]",
        "not a valid IP",
    ),
    (
        "when-bad-port",
        {"rules": [{"when": [{"key": "destination.port", "notValues": ["0"]}]}]},
        "spec.rules[0].when[0].notValues[0]",
        "not a valid port",
    ),
    (
        "when-bad-service-account",
        {"rules": [{"when": [{"key": "source.serviceAccount", "values": ["x/"]}]}]},
        "spec.rules[0].when[0].values[0]",
        "namespace/serviceaccount",
    ),
    (
        "bad-selector-label",
        {"selector": {"matchLabels": {"app": "a*"}}},
        "spec.selector.matchLabels[app]",
        "",
    ),
    ("unknown-action", {"action": 9}, "spec.action", ""),
]


@pytest.mark.parametrize(("spec", "path", "fragment"), [c[1:] for c in INVALID],
                         ids=[c[0] for c in INVALID])  # fmt: skip
def test_invalid_policies(spec: dict[str, Any], path: str, fragment: str) -> None:
    assert_error(run(validate_authorization_policy, AuthorizationPolicy, spec), path, fragment)
