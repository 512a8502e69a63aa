"""PeerAuthentication: the effective mTLS mode of a workload and of its ports."""

from __future__ import annotations

import datetime

import pytest

from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config
from pilothouse.kinds.table import SCHEMAS
from pilothouse.push.peer_authentication import MtlsMode, MtlsPolicy, PeerAuthenticationIndex
from pilothouse.registry.model import Labels

WEB = Labels.of({"app": "web"})
DB = Labels.of({"app": "db"})


def policy(
    name: str,
    namespace: str,
    mode: str | None = None,
    selector: dict[str, str] | None = None,
    ports: dict[int, str] | None = None,
    created: int | None = None,
) -> Config:
    lines = [
        "apiVersion: security.istio.io/v1",
        "kind: PeerAuthentication",
        f"metadata: {{name: {name}, namespace: {namespace}}}",
        "spec:",
    ]
    if selector is not None:
        labels = ", ".join(f"{k}: {v}" for k, v in selector.items())
        lines.append(f"  selector: {{matchLabels: {{{labels}}}}}")
    if mode is not None:
        lines.append(f"  mtls: {{mode: {mode}}}")
    if ports:
        lines.append("  portLevelMtls:")
        lines.extend(f"    {port}: {{mode: {value}}}" for port, value in ports.items())
    if len(lines) == 4:
        lines[-1] = "spec: {}"
    (config,) = Loader(SCHEMAS).load_strict("\n".join(lines) + "\n", "pa.yaml")
    if created is not None:
        stamp = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(
            minutes=created
        )
        config = Config(
            config.kind, config.name, config.namespace, config.spec, creation_time=stamp
        )
    return config


def index(*configs: Config, root: str = "istio-system") -> PeerAuthenticationIndex:
    return PeerAuthenticationIndex(configs, MeshSettings(root_namespace=root))


def test_without_a_policy_every_port_is_permissive() -> None:
    found = index().workload_policy("shop", WEB)
    assert found == MtlsPolicy(MtlsMode.PERMISSIVE)
    assert found.for_port(8080) is MtlsMode.PERMISSIVE
    assert index().namespace_mode("shop") is MtlsMode.PERMISSIVE


def test_mesh_then_namespace_then_workload_each_overrides_the_one_above() -> None:
    mesh = policy("default", "istio-system", "STRICT")
    namespace = policy("default", "shop", "DISABLE")
    workload = policy("web", "shop", "PERMISSIVE", selector={"app": "web"})
    assert index(mesh).workload_policy("shop", WEB).mode is MtlsMode.STRICT
    assert index(mesh, namespace).workload_policy("shop", WEB).mode is MtlsMode.DISABLE
    both = index(mesh, namespace, workload)
    assert both.workload_policy("shop", WEB).mode is MtlsMode.PERMISSIVE
    # the selector picks web only; db keeps the namespace's mode
    assert both.workload_policy("shop", DB).mode is MtlsMode.DISABLE
    # other namespaces keep the mesh's
    assert both.workload_policy("cart", WEB).mode is MtlsMode.STRICT
    # the service-level inference ignores workload policies
    assert both.namespace_mode("shop") is MtlsMode.DISABLE
    assert both.namespace_mode("cart") is MtlsMode.STRICT


@pytest.mark.parametrize("unset", [None, "UNSET"])
def test_unset_inherits_from_the_level_above(unset: str | None) -> None:
    mesh = policy("default", "istio-system", "STRICT")
    namespace = policy("default", "shop", unset)
    workload = policy("web", "shop", unset, selector={"app": "web"})
    assert index(mesh, namespace, workload).workload_policy("shop", WEB).mode is MtlsMode.STRICT
    assert index(namespace).workload_policy("shop", WEB).mode is MtlsMode.PERMISSIVE


def test_port_level_overrides_the_workload_and_unset_ports_inherit() -> None:
    workload = policy(
        "web",
        "shop",
        "STRICT",
        selector={"app": "web"},
        ports={8080: "PERMISSIVE", 9000: "DISABLE", 9100: "UNSET"},
    )
    found = index(workload).workload_policy("shop", WEB)
    assert found.mode is MtlsMode.STRICT
    assert found.for_port(8080) is MtlsMode.PERMISSIVE
    assert found.for_port(9000) is MtlsMode.DISABLE
    assert found.for_port(9100) is MtlsMode.STRICT
    assert found.for_port(7000) is MtlsMode.STRICT


def test_port_level_with_an_unset_workload_mode_inherits_the_namespace() -> None:
    namespace = policy("default", "shop", "DISABLE")
    workload = policy("web", "shop", selector={"app": "web"}, ports={8080: "STRICT"})
    found = index(namespace, workload).workload_policy("shop", WEB)
    assert found.mode is MtlsMode.DISABLE
    assert found.for_port(8080) is MtlsMode.STRICT


def test_selector_policies_in_the_root_namespace_are_ignored() -> None:
    selecting = policy("web", "istio-system", "STRICT", selector={"app": "web"})
    assert index(selecting).workload_policy("shop", WEB).mode is MtlsMode.PERMISSIVE
    assert index(selecting).workload_policy("istio-system", WEB).mode is MtlsMode.PERMISSIVE


def test_the_root_namespace_follows_mesh_config() -> None:
    mesh = policy("default", "mesh-root", "STRICT")
    assert index(mesh, root="mesh-root").workload_policy("shop", WEB).mode is MtlsMode.STRICT
    # elsewhere the same policy is only namespace-wide
    assert index(mesh).workload_policy("shop", WEB).mode is MtlsMode.PERMISSIVE
    assert index(mesh).workload_policy("mesh-root", WEB).mode is MtlsMode.STRICT


def test_the_oldest_policy_of_a_level_wins() -> None:
    older = policy("b-older", "shop", "STRICT", created=1)
    newer = policy("a-newer", "shop", "DISABLE", created=2)
    assert index(newer, older).workload_policy("shop", WEB).mode is MtlsMode.STRICT
    older_web = policy("z", "shop", "DISABLE", selector={"app": "web"}, created=1)
    newer_web = policy("a", "shop", "STRICT", selector={"app": "web"}, created=5)
    assert index(newer_web, older_web).workload_policy("shop", WEB).mode is MtlsMode.DISABLE
