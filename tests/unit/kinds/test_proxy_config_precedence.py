"""The effective ProxyConfig of one proxy, one test per step of istiod's precedence:
MeshConfig defaultConfig < root-namespace ProxyConfig < namespace ProxyConfig < the pod's
``proxy.istio.io/config`` annotation < the ProxyConfig selecting the workload; fields
merge one by one and the environment name by name."""

from __future__ import annotations

import datetime

from pilothouse.api.istio.mesh.v1alpha1 import proxy_pb2
from pilothouse.api.istio.networking.v1beta1.proxy_config_pb2 import ProxyConfig, ProxyImage
from pilothouse.config.model import Config
from pilothouse.kinds.proxy_config import (
    ProxySettings,
    effective_settings,
    ignored_namespace_wide,
    settings_of_mesh_proxy_config,
)

ROOT = "istio-system"
LABELS = {"app": "ratings", "version": "v1"}


def pc(
    namespace: str,
    name: str,
    concurrency: int | None = None,
    env: dict[str, str] | None = None,
    selector: dict[str, str] | None = None,
    image: str | None = None,
    age: int = 0,
) -> Config:
    spec = ProxyConfig(environment_variables=env or {})
    if concurrency is not None:
        spec.concurrency.value = concurrency
    if selector is not None:
        spec.selector.match_labels.update(selector)
        spec.selector.SetInParent()
    if image is not None:
        spec.image.CopyFrom(ProxyImage(image_type=image))
    created = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC) - datetime.timedelta(days=age)
    return Config("ProxyConfig", name, namespace, spec, creation_time=created)


def mesh_default(concurrency: int | None = None, **env: str) -> ProxySettings:
    message = proxy_pb2.ProxyConfig(proxy_metadata=env)
    if concurrency is not None:
        message.concurrency.value = concurrency
    return settings_of_mesh_proxy_config(message, "meshConfig.defaultConfig")


def annotation(concurrency: int | None = None, **env: str) -> ProxySettings:
    message = proxy_pb2.ProxyConfig(proxy_metadata=env)
    if concurrency is not None:
        message.concurrency.value = concurrency
    return settings_of_mesh_proxy_config(message, "annotation proxy.istio.io/config")


def effective(configs: list[Config], **kwargs: ProxySettings) -> ProxySettings:
    return effective_settings(configs, "shop", LABELS, ROOT, **kwargs)


def test_nothing_set_leaves_everything_unset() -> None:
    result = effective([])
    assert result.concurrency is None and not result.environment and result.image_type is None
    assert result.origins == ()


def test_mesh_default_config_alone() -> None:
    result = effective([], mesh_default=mesh_default(2, ISTIO_META_A="mesh"))
    assert result.concurrency == 2 and dict(result.environment) == {"ISTIO_META_A": "mesh"}
    assert result.origins == ("meshConfig.defaultConfig",)


def test_root_namespace_object_over_mesh_default() -> None:
    configs = [pc(ROOT, "mesh-wide", concurrency=3, env={"B": "root"})]
    result = effective(configs, mesh_default=mesh_default(2, A="mesh", B="mesh"))
    assert result.concurrency == 3
    assert dict(result.environment) == {"A": "mesh", "B": "root"}
    assert result.origins == ("meshConfig.defaultConfig", f"ProxyConfig {ROOT}/mesh-wide")


def test_namespace_object_over_root_namespace_object() -> None:
    configs = [
        pc("shop", "shop-wide", concurrency=4),
        pc(ROOT, "mesh-wide", concurrency=3, env={"B": "root"}),
    ]
    result = effective(configs)
    assert result.concurrency == 4 and dict(result.environment) == {"B": "root"}


def test_another_namespace_s_object_does_not_apply() -> None:
    assert effective([pc("billing", "other", concurrency=9)]).concurrency is None


def test_annotation_over_namespace_object() -> None:
    configs = [pc("shop", "shop-wide", concurrency=4, env={"C": "ns"})]
    result = effective(configs, annotation=annotation(5, D="pod"))
    assert result.concurrency == 5 and dict(result.environment) == {"C": "ns", "D": "pod"}


def test_workload_object_over_annotation() -> None:
    configs = [
        pc("shop", "ratings", concurrency=6, selector={"app": "ratings"}, image="debug"),
        pc("shop", "shop-wide", concurrency=4),
    ]
    result = effective(configs, annotation=annotation(5, D="pod"))
    assert result.concurrency == 6 and result.image_type == "debug"
    assert dict(result.environment) == {"D": "pod"}
    assert result.origins[-1] == "ProxyConfig shop/ratings"


def test_a_selector_matches_only_a_subset_of_the_labels() -> None:
    miss = pc("shop", "v2", concurrency=7, selector={"app": "ratings", "version": "v2"})
    assert effective([miss]).concurrency is None
    hit = pc("shop", "v1", concurrency=8, selector={"version": "v1"})
    assert effective([miss, hit]).concurrency == 8


def test_an_empty_selector_selects_nothing_and_is_not_namespace_wide() -> None:
    assert effective([pc("shop", "empty", concurrency=1, selector={})]).concurrency is None


def test_zero_concurrency_is_set_and_wins() -> None:
    configs = [pc("shop", "shop-wide", concurrency=0)]
    assert effective(configs, mesh_default=mesh_default(2)).concurrency == 0


def test_the_oldest_of_several_candidates_applies_and_the_others_are_warned() -> None:
    configs = [pc("shop", "newer", concurrency=1), pc("shop", "older", concurrency=2, age=3)]
    assert effective(configs).concurrency == 2
    ((ignored, message),) = ignored_namespace_wide(configs)
    assert ignored.name == "newer"
    assert message == (
        "ignored: namespace shop has more than one ProxyConfig without a selector and older"
        " applies"
    )
    selected = [
        pc("shop", "a-new", concurrency=1, selector={"app": "ratings"}),
        pc("shop", "z-old", concurrency=2, selector={"app": "ratings"}, age=1),
    ]
    assert effective(selected).concurrency == 2
    assert ignored_namespace_wide(selected) == ()


def test_other_kinds_are_ignored() -> None:
    other = Config("Sidecar", "default", "shop", ProxyConfig())
    assert effective([other]).origins == ()


def test_the_admin_port_comes_from_mesh_proxy_configs_only() -> None:
    message = proxy_pb2.ProxyConfig(proxy_admin_port=15100)
    default = settings_of_mesh_proxy_config(message, "meshConfig.defaultConfig")
    pod = settings_of_mesh_proxy_config(
        proxy_pb2.ProxyConfig(proxy_admin_port=15200), "annotation proxy.istio.io/config"
    )
    configs = [pc("shop", "ratings", concurrency=6, selector={"app": "ratings"})]
    assert effective(configs, mesh_default=default).admin_port == 15100
    assert effective(configs, mesh_default=default, annotation=pod).admin_port == 15200
    unset = settings_of_mesh_proxy_config(proxy_pb2.ProxyConfig(), "annotation")
    assert effective([], mesh_default=default, annotation=unset).admin_port == 15100
