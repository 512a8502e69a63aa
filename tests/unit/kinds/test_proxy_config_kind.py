"""ProxyConfig travels every path the kind table gives a kind: loaded from YAML as
``networking.istio.io/v1beta1`` only, validated as istiod validates it (selector labels,
a negative concurrency warned), admitted or denied by the webhook, carried out and back
in over MCP, and seen by no proxy's push scope (it changes no xDS resource)."""

from __future__ import annotations

import datetime
import json
from typing import Any

from pilothouse.config.load import Loader
from pilothouse.config.mcp_resource import ResourceDecoder, encode_resource
from pilothouse.config.model import Config, ConfigKey
from pilothouse.config.validation.report import Severity
from pilothouse.kinds import proxy_config
from pilothouse.kinds.table import SCHEMAS
from pilothouse.protocol.type_urls import CDS, LDS, RDS
from pilothouse.push.proxy import ProxyType
from pilothouse.push.scope import ProxyScope, ScopeKey
from pilothouse.webhook.review import REASON_INVALID_CONFIG, review


def proxy_config_object(
    spec: dict[str, Any], version: str = "v1beta1", namespace: str = "shop"
) -> dict[str, Any]:
    return {
        "apiVersion": f"networking.istio.io/{version}",
        "kind": "ProxyConfig",
        "metadata": {"name": "threads", "namespace": namespace},
        "spec": spec,
    }


FULL = {
    "selector": {"matchLabels": {"app": "ratings"}},
    "concurrency": 3,
    "environmentVariables": {"ISTIO_META_TEAM": "shop", "LOG_LEVEL": "debug"},
    "image": {"imageType": "distroless"},
}


def load(obj: dict[str, Any]) -> Any:
    return Loader(SCHEMAS).load_text(json.dumps(obj), "pc.json")


def test_a_full_object_loads_with_every_field() -> None:
    result = load(proxy_config_object(FULL))
    assert not result.problems
    (config,) = result.configs
    assert config.key == ConfigKey("ProxyConfig", "shop", "threads")
    spec = config.spec
    assert dict(spec.selector.match_labels) == {"app": "ratings"}
    assert spec.HasField("concurrency") and spec.concurrency.value == 3
    assert dict(spec.environment_variables) == FULL["environmentVariables"]
    assert spec.image.image_type == "distroless"


def test_only_v1beta1_is_accepted() -> None:
    result = load(proxy_config_object(FULL, version="v1"))
    assert not result.configs
    assert any("v1" in p.message for p in result.problems)


def test_an_unknown_field_is_refused_with_its_path() -> None:
    result = load(proxy_config_object({"concurrency": 2, "terminationDrainDuration": "5s"}))
    assert not result.configs
    assert any("terminationDrainDuration" in p.message for p in result.problems)


def test_a_negative_concurrency_is_warned_not_refused() -> None:
    result = load(proxy_config_object({"concurrency": -1}))
    assert len(result.configs) == 1
    (warning,) = result.problems
    assert warning.severity is Severity.WARNING
    assert "concurrency -1 must be greater than or equal to 0" in warning.message


def test_zero_concurrency_is_fine() -> None:
    result = load(proxy_config_object({"concurrency": 0}))
    assert len(result.configs) == 1 and not result.problems


def test_selector_rules_are_the_workload_selector_s() -> None:
    wildcard = load(proxy_config_object({"selector": {"matchLabels": {"app": "*"}}}))
    assert not wildcard.configs
    assert any("wildcards" in p.message for p in wildcard.problems)
    empty = load(proxy_config_object({"selector": {}, "concurrency": 1}))
    assert len(empty.configs) == 1
    assert any(p.severity is Severity.WARNING for p in empty.problems)


def admission(obj: dict[str, Any]) -> bytes:
    request = {
        "uid": "u-1",
        "kind": {"group": "networking.istio.io", "version": "v1beta1", "kind": "ProxyConfig"},
        "resource": {
            "group": "networking.istio.io",
            "version": "v1beta1",
            "resource": "proxyconfigs",
        },
        "namespace": "shop",
        "operation": "CREATE",
        "userInfo": {"username": "admin"},
        "object": obj,
    }
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    return json.dumps(body).encode()


def test_the_webhook_admits_a_good_object_and_denies_a_wildcard_selector() -> None:
    good = review(admission(proxy_config_object(FULL)), "application/json").payload
    assert good["response"]["allowed"] is True
    bad = proxy_config_object({"selector": {"matchLabels": {"app": "rat*"}}})
    result = review(admission(bad), "application/json")
    response = result.payload["response"]
    assert response["allowed"] is False and result.reason == REASON_INVALID_CONFIG
    assert "spec.selector.matchLabels[app]" in response["status"]["message"]


def test_mcp_carries_it_out_and_back_in() -> None:
    (config,) = Loader(SCHEMAS).load_strict(json.dumps(proxy_config_object(FULL)), "pc.json")
    schema = SCHEMAS.by_kind("ProxyConfig")
    assert schema is not None and schema.collection == "istio/networking/v1beta1/proxyconfigs"
    when = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    back = ResourceDecoder(schema, "mcp://upstream").decode_bytes(
        encode_resource(config, "1", when)
    )
    assert isinstance(back, Config) and back.key == config.key
    assert back.spec == config.spec


def test_no_push_scope_sees_a_change_and_no_xds_type_reads_it() -> None:
    assert proxy_config.KIND.unread_by == {CDS, LDS, RDS}
    assert not proxy_config.KIND.moves_endpoints and proxy_config.KIND.index is None
    key = ConfigKey("ProxyConfig", "shop", "threads")
    root_key = ConfigKey("ProxyConfig", "istio-system", "threads")
    for proxy_type in ProxyType:
        scope = ProxyScope(ScopeKey(proxy_type, "shop", None), (), {}, frozenset())
        assert not scope.sees(key, "istio-system")
        assert not scope.sees(root_key, "istio-system")
