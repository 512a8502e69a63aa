"""PeerAuthentication validation."""

from __future__ import annotations

from typing import Any

import pytest

from pilothouse.api.istio.security.v1beta1.peer_authentication_pb2 import PeerAuthentication
from pilothouse.config.validation import validate_peer_authentication

from .checking import assert_clean, assert_error, assert_warning, run


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({"mtls": {"mode": "STRICT"}}, id="mesh-strict"),
        pytest.param({}, id="empty-inherits"),
        pytest.param(
            {
                "selector": {"matchLabels": {"app": "reviews"}},
                "mtls": {"mode": "STRICT"},
                "portLevelMtls": {"8080": {"mode": "DISABLE"}, "9090": {"mode": "PERMISSIVE"}},
            },
            id="workload-ports",
        ),
        pytest.param({"mtls": {"mode": "UNSET"}}, id="unset"),
    ],
)
def test_valid_peer_authentications(spec: dict[str, Any]) -> None:
    assert_clean(run(validate_peer_authentication, PeerAuthentication, spec))


SELECTOR = {"matchLabels": {"app": "reviews"}}

INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "ports-without-selector",
        {"portLevelMtls": {"8080": {"mode": "DISABLE"}}},
        "spec.portLevelMtls",
        "needs a selector with labels",
    ),
    (
        "ports-with-empty-selector",
        {"selector": {}, "portLevelMtls": {"8080": {"mode": "DISABLE"}}},
        "spec.portLevelMtls",
        "mesh-wide and namespace-wide policies",
    ),
    (
        "port-zero",
        {"selector": SELECTOR, "portLevelMtls": {"0": {"mode": "DISABLE"}}},
        "spec.portLevelMtls[0]",
        "port 0 must be in 1..65535",
    ),
    (
        "port-too-big",
        {"selector": SELECTOR, "portLevelMtls": {"70000": {"mode": "STRICT"}}},
        "spec.portLevelMtls[70000]",
        "must be in 1..65535",
    ),
    ("unknown-mode", {"mtls": {"mode": 7}}, "spec.mtls.mode", "unknown Mode value 7"),
    (
        "unknown-port-mode",
        {"selector": SELECTOR, "portLevelMtls": {"8080": {"mode": 9}}},
        "spec.portLevelMtls[8080].mode",
        "known: UNSET, DISABLE, PERMISSIVE, STRICT",
    ),
    (
        "selector-label",
        {"selector": {"matchLabels": {"app": "re views"}}},
        "spec.selector.matchLabels[app]",
        "label value 're views' is invalid",
    ),
    (
        "selector-wildcard",
        {"selector": {"matchLabels": {"app*": "reviews"}}},
        "spec.selector.matchLabels[app*]",
        "wildcards are not supported",
    ),
]


@pytest.mark.parametrize(
    ("spec", "path", "fragment"), [case[1:] for case in INVALID], ids=[case[0] for case in INVALID]
)
def test_invalid_peer_authentications(spec: dict[str, Any], path: str, fragment: str) -> None:
    assert_error(run(validate_peer_authentication, PeerAuthentication, spec), path, fragment)


def test_empty_selector_warns() -> None:
    report = run(validate_peer_authentication, PeerAuthentication, {"selector": {}})
    assert report.ok
    assert_warning(report, "spec.selector.matchLabels", "selects every workload")
