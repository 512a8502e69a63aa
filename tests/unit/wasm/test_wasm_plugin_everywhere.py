"""WasmPlugin travels every path the kind table gives a kind: the webhook admits a good one
and denies an OCI image naming the field, MCP carries one out and back in, and
``pilothouse validate`` reads it from a file (the etcd store, MCP-over-xDS and the
Kubernetes source read the same schema table)."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from pilothouse.cli.main import main
from pilothouse.config.load import Loader
from pilothouse.config.mcp_resource import ResourceDecoder, encode_resource
from pilothouse.config.model import Config
from pilothouse.kinds.table import SCHEMAS
from pilothouse.webhook.review import REASON_INVALID_CONFIG, review

SHA = "5c397b9ee1a2ea5988abf166adda4246bff29ed0ba254f4bd2b4a1c04005cc02"


def wasm_plugin(url: str = "https://modules.example/add_header.wasm") -> dict[str, Any]:
    return {
        "apiVersion": "extensions.istio.io/v1alpha1",
        "kind": "WasmPlugin",
        "metadata": {"name": "add-header", "namespace": "shop"},
        "spec": {
            "selector": {"matchLabels": {"app": "cart"}},
            "url": url,
            "sha256": SHA,
            "phase": "AUTHZ",
            "priority": 7,
            "pluginConfig": {"header": "x-wasm"},
            "match": [{"mode": "SERVER", "ports": [{"number": 8080}]}],
        },
    }


def admission(obj: dict[str, Any]) -> bytes:
    request = {
        "uid": "u-1",
        "kind": {"group": "extensions.istio.io", "version": "v1alpha1", "kind": "WasmPlugin"},
        "resource": {
            "group": "extensions.istio.io",
            "version": "v1alpha1",
            "resource": "wasmplugins",
        },
        "namespace": "shop",
        "operation": "CREATE",
        "userInfo": {"username": "admin"},
        "object": obj,
    }
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    return json.dumps(body).encode()


def test_the_webhook_admits_a_good_plugin_and_denies_an_oci_image() -> None:
    good = review(admission(wasm_plugin()), "application/json").payload
    assert good["response"]["allowed"] is True
    result = review(admission(wasm_plugin("oci://registry/add:1")), "application/json")
    response = result.payload["response"]
    assert response["allowed"] is False and result.reason == REASON_INVALID_CONFIG
    assert "spec.url" in response["status"]["message"]
    assert "OCI image" in response["status"]["message"]


def test_mcp_carries_a_plugin_out_and_back_in() -> None:
    (config,) = Loader(SCHEMAS).load_strict(json.dumps(wasm_plugin()), "wp.json")
    schema = SCHEMAS.by_kind("WasmPlugin")
    assert schema is not None and schema.collection == "istio/extensions/v1alpha1/wasmplugins"
    assert schema.api_versions == ("extensions.istio.io/v1alpha1",)
    when = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    back = ResourceDecoder(schema, "mcp://upstream").decode_bytes(
        encode_resource(config, "1", when)
    )
    assert isinstance(back, Config) and back.key == config.key
    assert back.spec == config.spec


def test_validate_reads_a_plugin_file_and_refuses_a_bad_one(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(wasm_plugin()))
    assert main(["validate", str(good)]) == 0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(wasm_plugin("fake://x")))
    assert main(["validate", str(bad)]) != 0
