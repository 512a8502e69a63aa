"""The admission webhook judges Gateway API objects by the CRDs' rules, as it does Istio's."""

from __future__ import annotations

import json
from typing import Any

from pilothouse.webhook.review import review


def _review(obj: dict[str, Any]) -> dict[str, Any]:
    body = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "kind": {"group": "gateway.networking.k8s.io", "version": "v1", "kind": obj["kind"]},
            "namespace": "edge",
            "operation": "CREATE",
            "userInfo": {"username": "admin"},
            "object": obj,
        },
    }
    result = review(json.dumps(body).encode(), "application/json")
    assert result.status == 200 and isinstance(result.payload, dict)
    response: dict[str, Any] = result.payload["response"]
    return response


GATEWAY: dict[str, Any] = {
    "apiVersion": "gateway.networking.k8s.io/v1",
    "kind": "Gateway",
    "metadata": {"name": "web", "namespace": "edge"},
    "spec": {
        "gatewayClassName": "istio",
        "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}],
    },
}


def test_a_valid_gateway_is_allowed_and_a_broken_route_denied_with_its_path() -> None:
    assert _review(GATEWAY)["allowed"] is True
    route = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "r", "namespace": "edge"},
        "spec": {"rules": [{"backendRefs": [{"name": "app"}]}]},
    }
    denied = _review(route)
    assert denied["allowed"] is False
    assert (
        "spec.rules[0].backendRefs[0].port: must have port for Service reference"
        in (denied["status"]["message"])
    )
