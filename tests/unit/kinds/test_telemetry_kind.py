"""Telemetry travels every path the kind table gives a kind: loaded from YAML as
``telemetry.istio.io`` ``v1`` and ``v1alpha1``, validated as istiod validates it
(sampling 0–100, custom tags that say what they are, provider names, one way to select
workloads), refused field by field when malformed, carried out and back in over MCP, and
pushed to the proxies it selects (listeners only)."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

from pilothouse.config.load import Loader
from pilothouse.config.mcp_resource import ResourceDecoder, encode_resource
from pilothouse.config.model import Config, ConfigKey
from pilothouse.config.validation.report import Severity
from pilothouse.kinds import telemetry
from pilothouse.kinds.kind import Audience
from pilothouse.kinds.table import SCHEMAS
from pilothouse.protocol.type_urls import CDS, RDS


def telemetry_object(
    spec: dict[str, Any], version: str = "v1", namespace: str = "shop"
) -> dict[str, Any]:
    return {
        "apiVersion": f"telemetry.istio.io/{version}",
        "kind": "Telemetry",
        "metadata": {"name": "logs", "namespace": namespace},
        "spec": spec,
    }


FULL = {
    "selector": {"matchLabels": {"app": "cart"}},
    "accessLogging": [
        {
            "providers": [{"name": "file-log"}],
            "filter": {"expression": "response.code >= 400"},
            "match": {"mode": "SERVER"},
        },
        {"disabled": True, "match": {"mode": "CLIENT"}},
    ],
    "tracing": [
        {
            "providers": [{"name": "zipkin"}],
            "randomSamplingPercentage": 25.5,
            "customTags": {
                "team": {"literal": {"value": "shop"}},
                "pod": {"environment": {"name": "POD_NAME", "defaultValue": "x"}},
                "agent": {"header": {"name": "user-agent"}},
            },
        }
    ],
    "metrics": [
        {
            "providers": [{"name": "prometheus"}],
            "overrides": [
                {"match": {"metric": "REQUEST_COUNT", "mode": "CLIENT"}, "disabled": True},
                {"tagOverrides": {"request_protocol": {"operation": "REMOVE"}}},
            ],
            "reportingInterval": "15s",
        }
    ],
}


def load(obj: dict[str, Any]) -> Any:
    return Loader(SCHEMAS).load_text(json.dumps(obj), "telemetry.json")


@pytest.mark.parametrize("version", ["v1", "v1alpha1"])
def test_a_full_object_loads_in_both_versions(version: str) -> None:
    result = load(telemetry_object(FULL, version))
    assert not result.problems
    (config,) = result.configs
    assert config.key == ConfigKey("Telemetry", "shop", "logs")
    spec = config.spec
    assert spec.access_logging[0].filter.expression == "response.code >= 400"
    assert spec.access_logging[1].disabled.value is True
    assert spec.tracing[0].random_sampling_percentage.value == 25.5
    assert spec.tracing[0].custom_tags["pod"].environment.default_value == "x"
    assert spec.metrics[0].overrides[0].disabled.value is True


@pytest.mark.parametrize(
    ("spec", "path", "fragment"),
    [
        (
            {"tracing": [{"randomSamplingPercentage": 101}]},
            "spec.tracing[0].randomSamplingPercentage",
            "101 is not a percentage between 0 and 100",
        ),
        (
            {"tracing": [{"randomSamplingPercentage": -1}]},
            "spec.tracing[0].randomSamplingPercentage",
            "not a percentage",
        ),
        (
            {"tracing": [{"customTags": {"team": {}}}]},
            "spec.tracing[0].customTags[team]",
            "one of literal, environment, header or formatter is required",
        ),
        (
            {"tracing": [{"customTags": {"team": {"literal": {}}}}]},
            "spec.tracing[0].customTags[team].literal.value",
            "value is required",
        ),
        (
            {"accessLogging": [{"providers": [{"name": ""}]}]},
            "spec.accessLogging[0].providers[0].name",
            "a provider needs a name",
        ),
        (
            {"accessLogging": [{"filter": {"expression": "  "}}]},
            "spec.accessLogging[0].filter.expression",
            "needs an expression",
        ),
        (
            {"metrics": [{"reportingInterval": "0s"}]},
            "spec.metrics[0].reportingInterval",
            "greater than 0s",
        ),
        (
            {"metrics": [{"overrides": [{"tagOverrides": {"a": {"operation": "UPSERT"}}}]}]},
            "spec.metrics[0].overrides[0].tagOverrides[a].value",
            "UPSERT needs a value expression",
        ),
        (
            {
                "selector": {"matchLabels": {"app": "cart"}},
                "targetRefs": [
                    {"kind": "Gateway", "group": "gateway.networking.k8s.io", "name": "g"}
                ],
            },
            "spec.selector",
            "only one of selector, targetRef or targetRefs",
        ),
    ],
)
def test_bad_specs_are_refused_naming_the_field(
    spec: dict[str, Any], path: str, fragment: str
) -> None:
    result = load(telemetry_object(spec))
    assert not result.configs
    messages = [p.message for p in result.problems if p.severity is Severity.ERROR]
    assert any(path in m and fragment in m for m in messages), messages


def test_an_unknown_field_is_refused_with_its_path() -> None:
    result = load(telemetry_object({"accessLogging": [{"provider": {"name": "envoy"}}]}))
    assert not result.configs
    assert any("accessLogging[0].provider" in p.message for p in result.problems)


def test_two_tracing_providers_are_warned_about() -> None:
    result = load(telemetry_object({"tracing": [{"providers": [{"name": "a"}, {"name": "b"}]}]}))
    assert len(result.configs) == 1
    (warning,) = result.problems
    assert warning.severity is Severity.WARNING and "only the first provider" in warning.message


def test_mcp_carries_it_out_and_back_in() -> None:
    (config,) = Loader(SCHEMAS).load_strict(json.dumps(telemetry_object(FULL)), "t.json")
    schema = SCHEMAS.by_kind("Telemetry")
    assert schema is not None
    when = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    back = ResourceDecoder(schema, "mcp://upstream").decode_bytes(
        encode_resource(config, "1", when)
    )
    assert isinstance(back, Config) and back.key == config.key
    assert back.spec == config.spec


def test_it_concerns_the_workloads_it_selects_and_only_their_listeners() -> None:
    kind = telemetry.KIND
    assert kind.audience is Audience.SELECTED_WORKLOADS and kind.index == "telemetries"
    assert kind.unread_by == {CDS, RDS} and not kind.moves_endpoints
    assert kind.uncompared_audience is Audience.NAMESPACE_OR_ROOT


def test_attachment_by_selector_and_by_gateway_target() -> None:
    (by_labels,) = load(telemetry_object({"selector": {"matchLabels": {"app": "cart"}}})).configs
    assert telemetry.attaches(by_labels.spec, {"app": "cart", "version": "v1"})
    assert not telemetry.attaches(by_labels.spec, {"app": "shop"})
    assert not telemetry.is_namespace_wide(by_labels.spec)
    ref = {"kind": "Gateway", "group": "gateway.networking.k8s.io", "name": "edge"}
    (by_ref,) = load(telemetry_object({"targetRefs": [ref]})).configs
    assert telemetry.attaches(by_ref.spec, {telemetry.GATEWAY_NAME_LABEL: "edge"})
    assert not telemetry.attaches(by_ref.spec, {telemetry.GATEWAY_NAME_LABEL: "other"})
    assert not telemetry.attaches(by_ref.spec, {"app": "cart"})
    (wide,) = load(telemetry_object({})).configs
    assert telemetry.is_namespace_wide(wide.spec)
