"""The meshes the config and kube benchmarks share (bench/harness/config_mesh.py and
kube_mesh.py): valid Istio config, and the Kubernetes mesh and its file twin alike."""

from __future__ import annotations

from collections import Counter

from bench.harness.config_mesh import KINDS, config_objects, config_text
from bench.harness.kube_mesh import KubeMesh
from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS


def test_the_config_mesh_is_valid_and_holds_the_kinds_asked_for() -> None:
    configs = Loader(SCHEMAS).load_strict(config_text(config_objects(30)), "mesh.yaml")
    assert Counter(c.kind for c in configs) == dict.fromkeys(KINDS, 30)
    assert len({c.namespace for c in configs}) == 20
    only = config_objects(5, ("VirtualService",))
    assert [o["kind"] for o in only] == ["VirtualService"] * 5


def test_the_kube_mesh_and_its_files_hold_the_same_workloads() -> None:
    mesh = KubeMesh(services=12, pods=3)
    api = mesh.by_resource()
    assert {name: len(objects) for name, objects in api.items()} == {
        "services": 12,
        "endpointslices": 12,
        "pods": 36,
        "nodes": 20,
        "namespaces": 10,
    }
    configs = Loader(SCHEMAS).load_strict(mesh.files_text(), "files.yaml")
    entries = [c for c in configs if c.kind == "WorkloadEntry"]
    pod_ips = {pod["status"]["podIP"] for pod in api["pods"]}
    assert {e.spec.address for e in entries} == pod_ips
    unready = mesh.endpoint_slice(0, frozenset({0}))["endpoints"][0]["conditions"]
    assert unready["ready"] is False
