"""Which store ``serve`` shares the CA's root through: the first ``etcd://`` or ``k8s://``
config source (flags first, then the mesh config's ``configSources``), else none (the CA
directory); with such a store the ``--workers`` parent creates nothing (workers agree
through the store)."""

from __future__ import annotations

from pathlib import Path

from pilothouse.cli.serve_security import create_ca, root_store
from pilothouse.config.mesh import MeshSettings
from pilothouse.security.ca_store_etcd import EtcdRootStore
from pilothouse.security.ca_store_kube import KubeRootStore
from pilothouse.settings import Settings


def settings(*sources: str, ca_dir: Path | None = None) -> Settings:
    values: dict[str, object] = {"config_sources": sources, "xds.tls_address": "127.0.0.1:0"}
    if ca_dir is not None:
        values["ca.dir"] = str(ca_dir)
    return Settings().with_overrides(values)


def test_the_first_etcd_or_kubernetes_source_holds_the_root() -> None:
    mesh = MeshSettings()
    store = root_store(settings("xds://127.0.0.1:1", "etcd://127.0.0.1:2,127.0.0.1:3/mesh"), mesh)
    assert isinstance(store, EtcdRootStore)
    assert store.where == ("etcd key /mesh/pilothouse/ca/root (etcd://127.0.0.1:2,127.0.0.1:3)")
    store = root_store(settings("k8s://", "etcd://127.0.0.1:2/mesh"), mesh)
    assert isinstance(store, KubeRootStore)
    assert store.where == "Secret istio-system/istio-ca-secret"


def test_mesh_config_sources_count_after_the_flags() -> None:
    store = root_store(settings("fs:///tmp"), MeshSettings(), ("etcd://127.0.0.1:2/m",))
    assert isinstance(store, EtcdRootStore)
    assert store.where.startswith("etcd key /m/pilothouse/ca/root")


def test_without_a_shared_store_the_directory_keeps_the_root(tmp_path: Path) -> None:
    assert root_store(settings("fs:///tmp", "xds://127.0.0.1:1"), MeshSettings()) is None


def test_the_workers_parent_creates_no_root_when_a_store_is_shared(tmp_path: Path) -> None:
    create_ca(settings("etcd://127.0.0.1:2/mesh", ca_dir=tmp_path / "ca"), MeshSettings())
    assert not (tmp_path / "ca").exists()
