"""EnvoyFilter travels every path the kind table gives a kind: the webhook admits a good
one and denies a bad ``@type`` naming the patch, and MCP carries one out and back in
with its patch values intact (the Kubernetes source is in tests/kube)."""

from __future__ import annotations

import datetime
import json
from typing import Any

from pilothouse.config.load import Loader
from pilothouse.config.mcp_resource import ResourceDecoder, encode_resource
from pilothouse.config.model import Config
from pilothouse.kinds.table import SCHEMAS
from pilothouse.webhook.review import REASON_INVALID_CONFIG, review

LUA = "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua"


def envoy_filter(type_url: str = LUA) -> dict[str, Any]:
    return {
        "apiVersion": "networking.istio.io/v1alpha3",
        "kind": "EnvoyFilter",
        "metadata": {"name": "lua", "namespace": "istio-system"},
        "spec": {
            "configPatches": [
                {
                    "applyTo": "HTTP_FILTER",
                    "patch": {
                        "operation": "INSERT_FIRST",
                        "value": {
                            "name": "envoy.filters.http.lua",
                            "typed_config": {"@type": type_url, "inline_code": "-- x"},
                        },
                    },
                }
            ]
        },
    }


def admission(obj: dict[str, Any]) -> bytes:
    request = {
        "uid": "u-1",
        "kind": {"group": "networking.istio.io", "version": "v1alpha3", "kind": "EnvoyFilter"},
        "resource": {
            "group": "networking.istio.io",
            "version": "v1alpha3",
            "resource": "envoyfilters",
        },
        "namespace": "istio-system",
        "operation": "CREATE",
        "userInfo": {"username": "admin"},
        "object": obj,
    }
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    return json.dumps(body).encode()


def test_the_webhook_admits_a_good_filter_and_denies_an_unknown_type() -> None:
    good = review(admission(envoy_filter()), "application/json").payload
    assert good["response"]["allowed"] is True
    result = review(admission(envoy_filter(LUA + "Nope")), "application/json")
    response = result.payload["response"]
    assert response["allowed"] is False and result.reason == REASON_INVALID_CONFIG
    assert "spec.configPatches[0].patch.value.typed_config" in response["status"]["message"]
    assert "referenced type unknown" in response["status"]["message"]


def test_mcp_carries_a_filter_out_and_back_in() -> None:
    (config,) = Loader(SCHEMAS).load_strict(json.dumps(envoy_filter()), "ef.json")
    schema = SCHEMAS.by_kind("EnvoyFilter")
    assert schema is not None and schema.collection == "istio/networking/v1alpha3/envoyfilters"
    when = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    back = ResourceDecoder(schema, "mcp://upstream").decode_bytes(
        encode_resource(config, "1", when)
    )
    assert isinstance(back, Config) and back.key == config.key
    assert back.spec.SerializeToString(deterministic=True) == config.spec.SerializeToString(
        deterministic=True
    )
