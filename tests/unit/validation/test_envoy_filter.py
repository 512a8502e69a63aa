"""EnvoyFilter validation: istiod's rules, and values read strictly as Envoy messages."""

from __future__ import annotations

from typing import Any

import pytest

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.config.validation import Report, validate_envoy_filter

from .checking import assert_clean, assert_error, assert_no_errors, assert_warning, run

HCM = "envoy.filters.network.http_connection_manager"
LUA = "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua"


def lua_filter(**fields: Any) -> dict[str, Any]:
    return {
        "name": "envoy.filters.http.lua",
        "typed_config": {
            "@type": LUA,
            "inline_code": "function envoy_on_response(h) end",
            **fields,
        },
    }


def insert_lua(**typed: Any) -> dict[str, Any]:
    return {
        "applyTo": "HTTP_FILTER",
        "match": {
            "context": "GATEWAY",
            "listener": {
                "filterChain": {
                    "filter": {"name": HCM, "subFilter": {"name": "envoy.filters.http.router"}}
                }
            },
        },
        "patch": {"operation": "INSERT_BEFORE", "value": lua_filter(**typed)},
    }


def check(spec: dict[str, Any]) -> Report:
    return run(validate_envoy_filter, EnvoyFilter, spec, namespace="istio-system")


def patches(*items: dict[str, Any]) -> dict[str, Any]:
    return {"configPatches": list(items)}


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(patches(insert_lua()), id="lua-before-router"),
        pytest.param(
            patches(
                {
                    "applyTo": "CLUSTER",
                    "match": {"cluster": {"service": "reviews.default.svc.cluster.local"}},
                    "patch": {
                        "operation": "MERGE",
                        "value": {
                            "connect_timeout": "3s",
                            "per_connection_buffer_limit_bytes": 1024,
                        },
                    },
                }
            ),
            id="cluster-merge",
        ),
        pytest.param(
            patches(
                {
                    "applyTo": "VIRTUAL_HOST",
                    "match": {"routeConfiguration": {"vhost": {"name": "a:80"}}},
                    "patch": {
                        "operation": "MERGE",
                        "value": {
                            "response_headers_to_add": [
                                {"header": {"key": "x-patched", "value": "1"}}
                            ]
                        },
                    },
                }
            ),
            id="vhost-merge",
        ),
        pytest.param(
            patches(
                {
                    "applyTo": "HTTP_FILTER",
                    "match": {
                        "listener": {
                            "filterChain": {"filter": {"name": HCM, "subFilter": {"name": "x"}}}
                        }
                    },
                    "patch": {"operation": "REMOVE"},
                }
            ),
            id="remove-needs-no-value",
        ),
        pytest.param(
            {
                "workloadSelector": {"labels": {"app": "reviews"}},
                "priority": -3,
                **patches(
                    {
                        "applyTo": "NETWORK_FILTER",
                        "match": {"proxy": {"proxyVersion": r"^1\.2[0-9].*"}},
                        "patch": {
                            "operation": "INSERT_FIRST",
                            "value": {
                                "name": "udpa",
                                "typed_config": {
                                    "@type": "type.googleapis.com/udpa.type.v1.TypedStruct",
                                    "type_url": "type.googleapis.com/some.unknown.Thing",
                                    "value": {"anything": 1},
                                },
                            },
                        },
                    }
                ),
            },
            id="typed-struct-passes-through",
        ),
    ],
)
def test_valid_envoy_filters(spec: dict[str, Any]) -> None:
    assert_clean(check(spec))


@pytest.mark.parametrize(
    ("spec", "path", "fragment"),
    [
        pytest.param(
            patches({}, {}, insert_lua(), insert_lua(bogus=1)),
            "spec.configPatches[3].patch.value.typed_config.bogus",
            'no field named "bogus"',
            id="unknown-field-in-typed-config",
        ),
        pytest.param(
            patches(
                insert_lua(),
                {
                    "applyTo": "HTTP_FILTER",
                    "patch": {
                        "operation": "INSERT_FIRST",
                        "value": {
                            "name": "x",
                            "typed_config": {"@type": "type.googleapis.com/envoy.NoSuch"},
                        },
                    },
                },
            ),
            "spec.configPatches[1].patch.value.typed_config",
            "referenced type unknown: envoy.NoSuch",
            id="unknown-type",
        ),
        pytest.param(
            patches({"applyTo": "CLUSTER", "patch": {"operation": "MERGE", "value": {"nope": 1}}}),
            "spec.configPatches[0].patch.value.nope",
            'no field named "nope"',
            id="unknown-field-in-value",
        ),
        pytest.param(
            patches({"patch": {"operation": "MERGE", "value": {}}}),
            "spec.configPatches[0].applyTo",
            "applyTo must be set",
            id="no-apply-to",
        ),
        pytest.param(
            patches({"applyTo": "CLUSTER", "patch": {"value": {}}}),
            "spec.configPatches[0].patch.operation",
            "operation must be set",
            id="no-operation",
        ),
        pytest.param(
            patches({"applyTo": "CLUSTER"}),
            "spec.configPatches[0].patch",
            "a patch is required",
            id="no-patch",
        ),
        pytest.param(
            patches({"applyTo": "CLUSTER", "patch": {"operation": "MERGE"}}),
            "spec.configPatches[0].patch.value",
            "MERGE needs a value",
            id="no-value",
        ),
        pytest.param(
            patches(
                {
                    "applyTo": "CLUSTER",
                    "match": {"listener": {"portNumber": 80}},
                    "patch": {"operation": "REMOVE"},
                }
            ),
            "spec.configPatches[0].match",
            "needs a cluster match",
            id="cluster-with-listener-match",
        ),
        pytest.param(
            patches(
                {
                    "applyTo": "HTTP_ROUTE",
                    "match": {"cluster": {"name": "x"}},
                    "patch": {"operation": "REMOVE"},
                }
            ),
            "spec.configPatches[0].match",
            "needs a routeConfiguration match",
            id="route-with-cluster-match",
        ),
        pytest.param(
            patches(
                {
                    "applyTo": "LISTENER",
                    "match": {"routeConfiguration": {"name": "x"}},
                    "patch": {"operation": "REMOVE"},
                }
            ),
            "spec.configPatches[0].match",
            "needs a listener match",
            id="listener-with-route-match",
        ),
        pytest.param(
            patches(
                {
                    "applyTo": "NETWORK_FILTER",
                    "match": {
                        "listener": {"filterChain": {"filter": {"subFilter": {"name": "a"}}}}
                    },
                    "patch": {"operation": "REMOVE"},
                }
            ),
            "spec.configPatches[0].match.listener.filterChain.filter.name",
            "needs a name",
            id="filter-without-name",
        ),
        pytest.param(
            patches(
                {
                    "applyTo": "NETWORK_FILTER",
                    "match": {
                        "listener": {"filterChain": {"filter": {"name": HCM, "subFilter": {}}}}
                    },
                    "patch": {"operation": "REMOVE"},
                }
            ),
            "spec.configPatches[0].match.listener.filterChain.filter.subFilter",
            "only for applyTo HTTP_FILTER",
            id="sub-filter-on-network-filter",
        ),
        pytest.param(
            patches(
                {
                    "applyTo": "HTTP_FILTER",
                    "match": {
                        "listener": {
                            "filterChain": {"filter": {"name": "tcp", "subFilter": {"name": "a"}}}
                        }
                    },
                    "patch": {"operation": "REMOVE"},
                }
            ),
            "spec.configPatches[0].match.listener.filterChain.filter.subFilter",
            "http_connection_manager",
            id="sub-filter-outside-hcm",
        ),
        pytest.param(
            patches(
                {
                    "applyTo": "CLUSTER",
                    "match": {"proxy": {"proxyVersion": "(?=lookahead)"}},
                    "patch": {"operation": "REMOVE"},
                }
            ),
            "spec.configPatches[0].match.proxy.proxyVersion",
            "not valid RE2",
            id="bad-proxy-version",
        ),
        pytest.param(
            {
                "workloadSelector": {"labels": {"app": "a"}},
                "targetRefs": [
                    {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw"}
                ],
            },
            "spec",
            "only one of targetRefs or workloadSelector",
            id="selector-and-target-refs",
        ),
    ],
)
def test_invalid_envoy_filters(spec: dict[str, Any], path: str, fragment: str) -> None:
    assert_error(check(spec), path, fragment)


@pytest.mark.parametrize(
    ("operation", "apply_to", "fragment"),
    [
        ("REPLACE", "LISTENER", "REPLACE has no effect on LISTENER"),
        ("ADD", "ROUTE_CONFIGURATION", "ADD has no effect on ROUTE_CONFIGURATION"),
        ("REPLACE", "HTTP_ROUTE", "REPLACE has no effect on HTTP_ROUTE"),
        ("MERGE", "EXTENSION_CONFIG", "MERGE has no effect on EXTENSION_CONFIG"),
        ("ADD", "HTTP_FILTER", "Envoy refuses"),
        ("ADD", "NETWORK_FILTER", "Envoy refuses"),
        ("ADD", "BOOTSTRAP", "ADD has no effect on BOOTSTRAP: only MERGE is applied"),
        ("REPLACE", "BOOTSTRAP", "REPLACE has no effect on BOOTSTRAP"),
        ("MERGE_AND_REPLACE_LIST", "BOOTSTRAP", "MERGE_AND_REPLACE_LIST has no effect on"),
        ("MERGE_AND_REPLACE_LIST", "HTTP_FILTER", "MERGE_AND_REPLACE_LIST has no effect on"),
        ("MERGE_AND_REPLACE_LIST", "NETWORK_FILTER", "MERGE_AND_REPLACE_LIST has no effect"),
        ("MERGE_AND_REPLACE_LIST", "LISTENER_FILTER", "MERGE_AND_REPLACE_LIST has no effect"),
        ("MERGE_AND_REPLACE_LIST", "EXTENSION_CONFIG", "MERGE_AND_REPLACE_LIST has no effect"),
    ],
)
def test_operations_istiod_ignores_or_envoy_refuses_are_warned(
    operation: str, apply_to: str, fragment: str
) -> None:
    report = check(patches({"applyTo": apply_to, "patch": {"operation": operation, "value": {}}}))
    assert_no_errors(report)
    assert_warning(report, "spec.configPatches[0].patch.operation", fragment)


def test_a_bootstrap_merge_is_accepted_without_a_warning_on_its_operation() -> None:
    patch = {"operation": "MERGE", "value": {"stats_flush_interval": "7s"}}
    report = check(patches({"applyTo": "BOOTSTRAP", "patch": patch}))
    assert_no_errors(report)
    assert not [w for w in report.warnings if w.path.endswith("patch.operation")]


def test_a_bootstrap_value_is_read_as_envoy_s_bootstrap() -> None:
    patch = {"operation": "MERGE", "value": {"stats_flush_interval": "7s", "no_such_field": 1}}
    report = check(patches({"applyTo": "BOOTSTRAP", "patch": patch}))
    assert_error(report, "spec.configPatches[0].patch.value.no_such_field", "Bootstrap")


WAYPOINT_PATCH = {
    "applyTo": "HTTP_FILTER",
    "match": {
        "context": "WAYPOINT",
        "waypoint": {"portNumber": 8080, "filter": {"name": "envoy.filters.network.hcm"}},
    },
    "patch": {"operation": "REMOVE"},
}


def test_a_waypoint_match_is_accepted_with_a_warning_that_it_matches_nothing() -> None:
    report = check(patches(WAYPOINT_PATCH))
    assert_no_errors(report)
    assert_warning(report, "spec.configPatches[0].match.context", "serves no waypoints")


@pytest.mark.parametrize(
    ("match", "path", "fragment"),
    [
        (
            {"context": "SIDECAR_INBOUND", "waypoint": {"portNumber": 80}},
            "spec.configPatches[0].match.waypoint",
            "needs context WAYPOINT",
        ),
        (
            {"waypoint": {"route": {"name": "default"}}},
            "spec.configPatches[0].match.waypoint",
            "needs context WAYPOINT",
        ),
        (
            {"context": "WAYPOINT", "waypoint": {"portNumber": 70000}},
            "spec.configPatches[0].match.waypoint.portNumber",
            "between 1-65535",
        ),
    ],
)
def test_a_waypoint_match_out_of_its_context_or_range_is_refused(
    match: dict[str, Any], path: str, fragment: str
) -> None:
    report = check(patches({**WAYPOINT_PATCH, "match": match}))
    assert_error(report, path, fragment)
