"""Analysis of the kinds that came later: Telemetry's providers and selectors (Istio's
telemetry.ProviderAnalyzer and telemetry.SelectorAnalyzer codes), WasmPlugin and
EnvoyFilter selectors that select nothing, and a WasmPlugin's ``oci://`` URL."""

from __future__ import annotations

from pilothouse.analysis.analyzers import ANALYZERS, analyze
from pilothouse.analysis.mesh_view import mesh_view
from pilothouse.analysis.schema import schema_messages
from pilothouse.api.istio.mesh.v1alpha1 import config_pb2
from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.telemetry_providers import mesh_telemetry
from pilothouse.kinds.table import SCHEMAS
from tests.unit.analysis.mesh import SERVICES, findings

TELEMETRIES = """
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {name: traced, namespace: shop}
spec:
  selector: {matchLabels: {app: reviews}}
  tracing: [{providers: [{name: zipkn}]}]
  accessLogging: [{providers: [{name: envoy}]}, {disabled: true}, {}]
---
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {name: also-reviews, namespace: shop}
spec:
  selector: {matchLabels: {version: v1, app: reviews}}
  metrics: [{providers: [{name: prometheus}]}]
---
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {name: nobody, namespace: shop}
spec:
  selector: {matchLabels: {app: nobody}}
---
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {name: default, namespace: shop}
spec: {tracing: [{providers: [{name: zipkin}]}]}
---
apiVersion: telemetry.istio.io/v1
kind: Telemetry
metadata: {name: default-two, namespace: shop}
spec: {}
"""


def with_mesh(text: str, mesh: config_pb2.MeshConfig, analyzer: str) -> list[str]:
    loader = Loader(SCHEMAS, default_namespace="shop", skip_plain=True)
    result = loader.load_text(SERVICES + "---\n" + text, "mesh.yaml")
    assert not result.errors, [str(p) for p in result.errors]
    view = mesh_view(result.configs, mesh=MeshSettings(telemetry=mesh_telemetry(mesh)))
    return [str(m) for m in analyze(view, [a for a in ANALYZERS if a.name == analyzer])]


def zipkin_mesh(*, default_logging: bool = False) -> config_pb2.MeshConfig:
    mesh = config_pb2.MeshConfig()
    zipkin = mesh.extension_providers.add(name="zipkin")
    zipkin.zipkin.service = "zipkin.istio-system.svc.cluster.local"
    zipkin.zipkin.port = 9411
    if default_logging:
        mesh.default_providers.access_logging.append("envoy")
    return mesh


def test_telemetry_providers_must_be_in_the_mesh_config() -> None:
    assert with_mesh(TELEMETRIES, zipkin_mesh(), "telemetry.ProviderAnalyzer") == [
        "Error [IST0101] (Telemetry shop/traced mesh.yaml:35) Referenced provider not found:"
        ' "zipkn" (did you mean "zipkin"?)',
        "Warning [IST0157] (Telemetry shop/traced mesh.yaml:35) The Telemetry traced in"
        ' namespace "shop" with empty providers will be ignored.',
    ]
    # with a default access-log provider, an entry without providers uses it
    defaulted = with_mesh(
        TELEMETRIES, zipkin_mesh(default_logging=True), "telemetry.ProviderAnalyzer"
    )
    assert [m.split("]")[0] for m in defaulted] == ["Error [IST0101"]
    # over files alone the mesh config is not known: nothing is judged
    assert findings(TELEMETRIES, "telemetry.ProviderAnalyzer") == []


def test_telemetry_selectors() -> None:
    assert findings(TELEMETRIES, "telemetry.SelectorAnalyzer") == [
        "Error [IST0159] (Telemetry shop/also-reviews mesh.yaml:43) The Telemetries"
        ' [also-reviews traced] in namespace "shop" select the same workload pod'
        ' "reviews-v1", which can lead to undefined behavior.',
        "Error [IST0160] (Telemetry shop/default mesh.yaml:56) The Telemetries"
        ' [default default-two] in namespace "shop" have no workload selector, which can'
        " lead to undefined behavior.",
        "Error [IST0160] (Telemetry shop/default-two mesh.yaml:61) The Telemetries"
        ' [default default-two] in namespace "shop" have no workload selector, which can'
        " lead to undefined behavior.",
        "Error [IST0101] (Telemetry shop/nobody mesh.yaml:50) Referenced selector not found:"
        ' "app=nobody"',
        "Error [IST0159] (Telemetry shop/traced mesh.yaml:35) The Telemetries"
        ' [also-reviews traced] in namespace "shop" select the same workload pod'
        ' "reviews-v1", which can lead to undefined behavior.',
    ]


PLUGINS_AND_FILTERS = """
apiVersion: extensions.istio.io/v1alpha1
kind: WasmPlugin
metadata: {name: nobody, namespace: shop}
spec:
  selector: {matchLabels: {app: nobody}}
  url: https://example.com/plugin.wasm
---
apiVersion: extensions.istio.io/v1alpha1
kind: WasmPlugin
metadata: {name: reviews, namespace: shop}
spec:
  selector: {matchLabels: {app: reviews}}
  url: https://example.com/plugin.wasm
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: nobody, namespace: shop}
spec:
  workloadSelector: {labels: {app: nobody}}
  configPatches:
  - applyTo: CLUSTER
    patch: {operation: MERGE, value: {connect_timeout: 2s}}
---
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: reviews, namespace: shop}
spec:
  workloadSelector: {labels: {app: reviews}}
  configPatches:
  - applyTo: CLUSTER
    patch: {operation: MERGE, value: {connect_timeout: 2s}}
"""


def test_wasm_plugin_and_envoy_filter_selectors_that_select_nothing() -> None:
    assert findings(PLUGINS_AND_FILTERS, "selector.WorkloadSelectorAnalyzer") == [
        "Warning [IST0127] (EnvoyFilter shop/nobody mesh.yaml:49) No matching workloads for"
        " this resource with the following labels: app=nobody",
        "Warning [IST0127] (WasmPlugin shop/nobody mesh.yaml:35) No matching workloads for"
        " this resource with the following labels: app=nobody",
    ]


def test_an_oci_url_is_an_error_at_its_line_saying_what_to_do_instead() -> None:
    """Validation refuses ``oci://`` (no registry client), so ``analyze`` reports it as
    IST0106 at the field's line, like every validation error."""
    loader = Loader(SCHEMAS, default_namespace="shop", skip_plain=True)
    result = loader.load_text(
        "apiVersion: extensions.istio.io/v1alpha1\nkind: WasmPlugin\n"
        "metadata: {name: oci, namespace: shop}\nspec:\n  url: oci://ghcr.io/acme/plugin:1.0\n",
        "mesh.yaml",
    )
    (message,) = [str(m) for m in schema_messages(result.problems)]
    assert message.startswith("Error [IST0106] (WasmPlugin shop/oci mesh.yaml:5) ")
    assert "is an OCI image" in message and "file:// or http(s)://" in message
