"""From text to validated Config objects: metadata rules, kinds, versions, file:line problems."""

from __future__ import annotations

import pytest

from pilothouse.api.istio.networking.v1alpha3.service_entry_pb2 import ServiceEntry
from pilothouse.config.load import ConfigError, Loader
from pilothouse.config.model import ConfigKey
from pilothouse.config.validation.report import Severity
from pilothouse.kinds.table import SCHEMAS

GOOD = """\
apiVersion: networking.istio.io/v1beta1
kind: ServiceEntry
metadata:
  name: httpbin
  namespace: web
  labels: {app: httpbin}
  annotations: {owner: team-a}
  resourceVersion: "42"
  creationTimestamp: "2026-01-02T03:04:05Z"
spec:
  hosts: [httpbin.example.com]
  location: MESH_EXTERNAL
  resolution: DNS
  ports:
  - {number: 80, name: http, protocol: HTTP}
"""


def test_good_object_loads_with_metadata_and_origin() -> None:
    (config,) = Loader(SCHEMAS, source="test").load_strict(GOOD, "se.yaml")
    assert config.key == ConfigKey("ServiceEntry", "web", "httpbin")
    assert dict(config.labels) == {"app": "httpbin"}
    assert dict(config.annotations) == {"owner": "team-a"}
    assert config.resource_version == "42"
    assert config.creation_time is not None and config.creation_time.year == 2026
    assert config.origin.file == "se.yaml" and config.origin.line == 1
    assert config.origin.source == "test"
    assert list(config.spec.hosts) == ["httpbin.example.com"]  # type: ignore[attr-defined]


def test_namespace_defaults_and_is_settable() -> None:
    text = GOOD.replace("  namespace: web\n", "")
    (config,) = Loader(SCHEMAS).load_strict(text, "se.yaml")
    assert config.namespace == "default"
    (config,) = Loader(SCHEMAS, default_namespace="team-b").load_strict(text, "se.yaml")
    assert config.namespace == "team-b"


@pytest.mark.parametrize("version", ["v1", "v1beta1", "v1alpha3"])
def test_every_networking_version_is_accepted(version: str) -> None:
    text = GOOD.replace("networking.istio.io/v1beta1", f"networking.istio.io/{version}")
    assert Loader(SCHEMAS).load_text(text, "se.yaml").ok


def _error(text: str) -> str:
    result = Loader(SCHEMAS).load_text(text, "x.yaml")
    assert not result.ok
    return str(result.errors[0])


def test_unknown_kind_names_supported_kinds() -> None:
    message = _error(
        "apiVersion: networking.istio.io/v1\nkind: VirtualServce\nmetadata: {name: a}\n"
    )
    assert message.startswith("x.yaml:2: unknown kind 'VirtualServce'; supported kinds: ")
    for schema in SCHEMAS:
        assert schema.manifest_kind in message


def test_wrong_api_version() -> None:
    message = _error("apiVersion: networking.istio.io/v2\nkind: Gateway\nmetadata: {name: a}\n")
    assert "x.yaml:1: apiVersion 'networking.istio.io/v2' is not valid for Gateway" in message


def test_missing_name() -> None:
    message = _error(
        "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {namespace: a}\n"
    )
    assert message == "x.yaml:3: metadata.name is required"


def test_missing_metadata() -> None:
    assert "metadata with a name is required" in _error(
        "apiVersion: networking.istio.io/v1\nkind: Gateway\nspec: {}\n"
    )


def test_bad_name_and_namespace() -> None:
    result = Loader(SCHEMAS).load_text(
        "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata:\n  name: Bad_Name\n"
        "  namespace: Team\n",
        "x.yaml",
    )
    messages = [str(p) for p in result.errors]
    assert any("x.yaml:4:" in m and "metadata.name 'Bad_Name'" in m for m in messages)
    assert any("x.yaml:5:" in m and "metadata.namespace 'Team'" in m for m in messages)


@pytest.mark.parametrize(
    ("namespace", "name", "field"),
    [
        ("web", "httpbin\n", "metadata.name"),  # '$' alone would let a trailing newline in
        ("web\n", "httpbin", "metadata.namespace"),
        ("web", "Httpbin", "metadata.name"),
        ("-web", "httpbin", "metadata.namespace"),
    ],
)
def test_decoded_objects_get_the_same_name_checks(namespace: str, name: str, field: str) -> None:
    """Objects that arrive decoded (MCP, MCP over xDS) are named by their sender: the
    loader checks those names exactly as it checks names read from YAML."""
    schema = SCHEMAS.by_kind("ServiceEntry")
    assert schema is not None
    spec = ServiceEntry(hosts=["httpbin.example.com"], resolution=ServiceEntry.DNS)
    loader = Loader(SCHEMAS, source="xds://upstream")
    config, problems = loader.load_message(schema, namespace, name, spec)
    assert config is None
    assert [p.severity for p in problems] == [Severity.ERROR]
    assert f"{field} {(namespace if field.endswith('namespace') else name)!r}" in str(problems[0])
    ok, found = Loader(SCHEMAS).load_message(schema, "web", "httpbin", spec)
    assert ok is not None and ok.key == ConfigKey("ServiceEntry", "web", "httpbin") and not found


def test_label_values_must_be_strings() -> None:
    message = _error(
        "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata:\n  name: a\n"
        "  labels:\n    version: 2\n"
    )
    assert "metadata.labels must map names to strings" in message


def test_unknown_spec_field_has_its_own_line() -> None:
    text = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: reviews}
spec:
  hosts: [reviews]
  http:
  - route:
    - destination: {host: reviews}
      weight: 50
    - destination:
        hostt: ratings
      weight: 50
"""
    message = _error(text)
    assert message.startswith(
        "x.yaml:11: VirtualService default/reviews: "
        "spec.http[0].route[1].destination.hostt: unknown field"
    )


def test_unknown_top_level_field() -> None:
    message = _error(
        "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: a}\nspecs: {}\n"
    )
    assert message == "x.yaml:4: Gateway default/a: specs: unknown top-level field"


def test_semantic_error_points_at_the_field_line() -> None:
    text = GOOD.replace(
        "{number: 80, name: http, protocol: HTTP}", "{number: 0, name: http, protocol: HTTP}"
    )
    message = _error(text)
    assert message.startswith("x.yaml:15: ServiceEntry web/httpbin: spec.ports[0].number")


def test_invalid_object_skipped_valid_sibling_loads() -> None:
    bad = GOOD.replace("name: httpbin", "name: broken").replace("protocol: HTTP", "protocol: NOPE")
    result = Loader(SCHEMAS).load_text(GOOD + "---\n" + bad, "x.yaml")
    assert [c.name for c in result.configs] == ["httpbin"]
    assert result.rejected == (ConfigKey("ServiceEntry", "web", "broken"),)
    assert len(result.errors) == 1 and "web/broken" in str(result.errors[0])


def test_strict_loader_raises_config_error() -> None:
    with pytest.raises(ConfigError) as caught:
        Loader(SCHEMAS).load_strict("kind: [", "x.yaml")
    assert caught.value.problems[0].file == "x.yaml"


def test_warnings_do_not_reject() -> None:
    text = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: m}
spec:
  hosts: [m]
  http:
  - route:
    - destination: {host: m}
    mirror: {host: shadow}
    mirrorPercent: 50
"""
    result = Loader(SCHEMAS).load_text(text, "x.yaml")
    assert result.ok and len(result.configs) == 1
    assert any(p.severity is Severity.WARNING for p in result.problems)
