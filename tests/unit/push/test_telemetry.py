"""The effective telemetry of a proxy, step by step through istiod's hierarchy: the
mesh's defaults, the root namespace, the proxy's namespace, the workload's selector or
targetRefs; modes (CLIENT, SERVER); provider inheritance; disabling; filters; tracing's
field-by-field overrides; the legacy mesh fields; what is not applied."""

from __future__ import annotations

import datetime
from typing import Any

import yaml

from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.meshconfig import load_mesh_config
from pilothouse.config.model import Config, ConfigKey
from pilothouse.config.telemetry_providers import FileLog, ZipkinTracer
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.proxy import ProxyIdentity, parse_node
from pilothouse.push.telemetry import ProxyTelemetry, TelemetryIndex, Upstream
from pilothouse.push.telemetry_merge import SpanTag

MESH = """\
rootNamespace: istio-system
extensionProviders:
- name: a
  envoyFileAccessLog: {path: /tmp/a.log}
- name: b
  envoyFileAccessLog: {path: /tmp/b.log}
- name: zipkin
  zipkin: {service: zipkin.obs.svc.cluster.local, port: 9411}
- name: other-zipkin
  zipkin: {service: obs/zipkin2.obs.svc.cluster.local, port: 9411}
- name: dd
  datadog: {service: dd.obs.svc.cluster.local, port: 8126}
"""
HOSTS = {
    "zipkin.obs.svc.cluster.local": (("zipkin.obs.svc.cluster.local", "obs"),),
    "zipkin2.obs.svc.cluster.local": (
        ("zipkin2.obs.svc.cluster.local", "obs"),
        ("zipkin2.obs.svc.cluster.local", "elsewhere"),
    ),
}
T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def mesh(text: str = MESH) -> MeshSettings:
    return load_mesh_config(text, "mesh.yaml").mesh


def telemetry(namespace: str, name: str, spec: dict[str, Any], age: int = 0) -> Config:
    doc = {
        "apiVersion": "telemetry.istio.io/v1",
        "kind": "Telemetry",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    (config,) = Loader(SCHEMAS, source="test").load_strict(yaml.safe_dump(doc), "t.yaml")
    return Config(
        config.kind, config.name, config.namespace, config.spec,
        creation_time=T0 + datetime.timedelta(seconds=age),
    )  # fmt: skip


def sidecar(namespace: str = "shop", app: str = "cart", **labels: str) -> ProxyIdentity:
    node = f"sidecar~10.0.0.1~pod.{namespace}~{namespace}.svc.cluster.local"
    return parse_node(node, {"LABELS": {"app": app, **labels}}, node_cluster=f"{app}.{namespace}")


def effective(
    configs: list[Config], proxy: ProxyIdentity | None = None, settings: MeshSettings | None = None
) -> ProxyTelemetry:
    index = TelemetryIndex(configs, settings if settings is not None else mesh())
    providers = index.providers(lambda host: HOSTS.get(host, ()))
    return index.for_proxy(proxy or sidecar(), providers, None)


def log_paths(result: ProxyTelemetry, side: str = "client") -> list[tuple[str, str]]:
    mode = getattr(result, side)
    return [(log.provider.name, log.filter) for log in mode.access_logs]


def logs(*names: str, **extra: Any) -> dict[str, Any]:
    return {"accessLogging": [{"providers": [{"name": n} for n in names], **extra}]}


def test_nothing_configured_gives_nothing() -> None:
    assert effective([]) == ProxyTelemetry()
    assert effective([], settings=MeshSettings()) == ProxyTelemetry()


def test_root_namespace_applies_to_every_proxy_and_only_the_oldest_counts() -> None:
    root = [
        telemetry("istio-system", "old", logs("a"), 0),
        telemetry("istio-system", "new", logs("b"), 1),
    ]
    result = effective(root)
    assert log_paths(result) == [("a", "")] and log_paths(result, "server") == [("a", "")]
    assert result.applied_from == (ConfigKey("Telemetry", "istio-system", "old"),)
    assert log_paths(effective(root, sidecar("other"))) == [("a", "")]


def test_the_namespace_level_replaces_the_root_s_providers() -> None:
    configs = [telemetry("istio-system", "mesh", logs("a")), telemetry("shop", "ns", logs("b"))]
    assert log_paths(effective(configs)) == [("b", "")]
    assert log_paths(effective(configs, sidecar("other"))) == [("a", "")]


def test_a_workload_selector_applies_to_matching_workloads_only() -> None:
    configs = [
        telemetry("istio-system", "mesh", logs("a")),
        telemetry("shop", "cart-only", {**logs("b"), "selector": {"matchLabels": {"app": "cart"}}}),
    ]
    assert log_paths(effective(configs, sidecar(app="cart"))) == [("b", "")]
    assert log_paths(effective(configs, sidecar(app="shelf"))) == [("a", "")]
    # a root-namespace Telemetry with a selector is not mesh-wide
    root_selector = telemetry(
        "istio-system", "sel", {**logs("b"), "selector": {"matchLabels": {"app": "cart"}}}
    )
    assert effective([root_selector]) == ProxyTelemetry()


def test_gateway_target_refs_select_the_gateway_s_proxies() -> None:
    ref = {"kind": "Gateway", "group": "gateway.networking.k8s.io", "name": "edge"}
    configs = [telemetry("shop", "gw", {**logs("a"), "targetRefs": [ref]})]
    edge = sidecar(**{"gateway.networking.k8s.io/gateway-name": "edge"})
    assert log_paths(effective(configs, edge)) == [("a", "")]
    assert effective(configs, sidecar()) == ProxyTelemetry()


def test_disabled_turns_the_inherited_providers_off_for_its_mode() -> None:
    configs = [
        telemetry("istio-system", "mesh", logs("a")),
        telemetry(
            "shop", "quiet", {"accessLogging": [{"disabled": True, "match": {"mode": "SERVER"}}]}
        ),
    ]
    result = effective(configs)
    assert log_paths(result) == [("a", "")]
    assert log_paths(result, "server") == []
    everything = telemetry("shop", "quiet", {"accessLogging": [{"disabled": True}]})
    result = effective([configs[0], everything])
    assert log_paths(result) == [] and log_paths(result, "server") == []


def test_a_filter_rides_with_the_provider_and_a_mode_narrows_an_entry() -> None:
    configs = [
        telemetry("istio-system", "mesh", logs("a", filter={"expression": "response.code >= 500"})),
        telemetry("shop", "client", logs("b", match={"mode": "CLIENT"})),
    ]
    result = effective(configs)
    assert log_paths(result) == [("b", "")]
    assert log_paths(result, "server") == [("a", "response.code >= 500")]


def test_default_providers_start_the_chain() -> None:
    settings = mesh(MESH + "defaultProviders: {accessLogging: [b, a]}\n")
    assert log_paths(effective([], settings=settings)) == [("a", ""), ("b", "")]
    filtered = telemetry("shop", "f", {"accessLogging": [{"filter": {"expression": "true"}}]})
    assert log_paths(effective([filtered], settings=settings)) == [("a", ""), ("b", "")]


def test_unknown_and_unapplied_providers_are_skipped_and_named() -> None:
    result = effective([telemetry("shop", "x", logs("nope", "dd", "zipkin", "a"))])
    assert log_paths(result) == [("a", "")]
    assert result.not_applied == (
        "access logging: provider 'dd' (datadog) accepted; not applied",
        "access logging: provider 'nope' is not defined in extensionProviders",
        "access logging: provider 'zipkin' cannot be used for access logging",
    )


def test_the_legacy_access_log_file_applies_only_without_telemetry_logging() -> None:
    settings = mesh(MESH + "accessLogFile: /tmp/legacy.log\n")
    result = effective([], settings=settings)
    (log,) = result.client.access_logs
    assert isinstance(log.provider, FileLog) and log.provider.path == "/tmp/legacy.log"
    assert log_paths(effective([telemetry("shop", "x", logs("a"))], settings=settings)) == [
        ("a", "")
    ]


def test_tracing_uses_the_first_provider_and_overrides_field_by_field() -> None:
    configs = [
        telemetry(
            "istio-system", "mesh",
            {"tracing": [{
                "providers": [{"name": "zipkin"}, {"name": "other"}],
                "randomSamplingPercentage": 10,
                "customTags": {"team": {"literal": {"value": "ops"}}},
            }]},
        ),
        telemetry("shop", "ns", {"tracing": [{"randomSamplingPercentage": 50}]}),
    ]  # fmt: skip
    tracing = effective(configs).client.tracing
    assert tracing is not None and isinstance(tracing.provider, ZipkinTracer)
    assert tracing.upstream == Upstream("zipkin.obs.svc.cluster.local", 9411)
    assert tracing.sampling == 50.0
    assert tracing.tags == (SpanTag("team", "literal", "ops"),)
    server_off = telemetry(
        "shop", "ns", {"tracing": [{"disableSpanReporting": True, "match": {"mode": "SERVER"}}]}
    )
    result = effective([configs[0], server_off])
    assert result.client.tracing is not None and result.server.tracing is None


def test_tracing_sampling_falls_back_to_proxy_config_then_one_percent() -> None:
    zipkin = telemetry("istio-system", "mesh", {"tracing": [{"providers": [{"name": "zipkin"}]}]})
    tracing = effective([zipkin]).client.tracing
    assert tracing is not None and tracing.sampling == 1.0
    settings = mesh(MESH + "defaultConfig: {tracing: {sampling: 30}}\n")
    tracing = effective([zipkin], settings=settings).client.tracing
    assert tracing is not None and tracing.sampling == 30.0
    settings = mesh(MESH + "defaultConfig: {tracing: {sampling: 300}}\n")
    tracing = effective([zipkin], settings=settings).client.tracing
    assert tracing is not None and tracing.sampling == 1.0  # above 100 counts as 1 %


def test_a_tracing_provider_whose_service_cannot_be_resolved_is_skipped() -> None:
    ambiguous = telemetry("shop", "t", {"tracing": [{"providers": [{"name": "other-zipkin"}]}]})
    result = effective([ambiguous])
    assert result.client.tracing is not None  # obs/… picks one of the two namespaces
    bare = mesh(MESH.replace("obs/zipkin2", "zipkin2"))
    result = effective([ambiguous], settings=bare)
    assert result.client.tracing is None
    assert "names services in several namespaces" in result.not_applied[0]


def test_enable_tracing_without_telemetry_gives_sampling_and_legacy_tags_only() -> None:
    settings = mesh(
        MESH
        + "enableTracing: true\n"
        + "defaultConfig: {tracing: {sampling: 5, customTags: {t: {literal: {value: v}}}}}\n"
    )
    tracing = effective([], settings=settings).client.tracing
    assert tracing is not None and tracing.provider is None and tracing.sampling == 5.0
    assert tracing.tags == (SpanTag("t", "literal", "v"),)


def test_metrics_are_accepted_and_reported_not_applied() -> None:
    result = effective(
        [telemetry("shop", "m", {"metrics": [{"providers": [{"name": "prometheus"}]}]})]
    )
    assert not result.client and not result.server
    assert result.not_applied == (
        "metrics: accepted; not applied (Istio's stats filter needs Istio's proxy build)",
    )


def test_selects_answers_for_the_push() -> None:
    configs = [
        telemetry("istio-system", "mesh", logs("a")),
        telemetry("shop", "cart", {**logs("b"), "selector": {"matchLabels": {"app": "cart"}}}),
    ]
    index = TelemetryIndex(configs, mesh())
    root, cart = (c.key for c in configs)
    assert index.selects(root, sidecar("anywhere"))
    assert index.selects(cart, sidecar(app="cart")) and not index.selects(
        cart, sidecar(app="shelf")
    )
    assert not index.selects(cart, sidecar("other", app="cart"))
    assert not index.selects(ConfigKey("Telemetry", "shop", "absent"), sidecar())
