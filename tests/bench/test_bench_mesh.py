"""The push fan-out benchmark's mesh (bench/harness/mesh.py): valid Istio config, and each
trigger rewrites exactly one object into a different state."""

from __future__ import annotations

from pathlib import Path

from bench.harness.mesh import FanoutMesh
from pilothouse.config.load import Loader
from pilothouse.kinds.table import SCHEMAS


def load(root: Path) -> dict[str, str]:
    """Every object in the tree: ``kind ns/name`` → its spec as text."""
    loader = Loader(SCHEMAS)
    objects: dict[str, str] = {}
    for path in sorted(root.rglob("*.yaml")):
        result = loader.load_text(path.read_text(encoding="utf-8"), str(path))
        assert result.ok, result.errors
        for config in result.configs:
            key = f"{config.key.kind} {config.key.namespace}/{config.key.name}"
            objects[key] = str(config.spec)
    return objects


def test_the_mesh_is_valid_and_each_trigger_changes_one_object(tmp_path: Path) -> None:
    mesh = FanoutMesh(tmp_path, services=12, namespaces=4, endpoints=2)
    mesh.write()
    start = load(tmp_path)
    kinds = [key.split()[0] for key in start]
    assert kinds.count("ServiceEntry") == 12
    assert kinds.count("DestinationRule") == 12
    assert kinds.count("WorkloadEntry") == 24
    assert mesh.cluster(5) == "outbound|8080||svc-5.ns-1.svc.cluster.local"

    for trigger, changed in (
        ("eds", "WorkloadEntry ns-0/svc-0-0"),
        ("cds", "DestinationRule ns-0/svc-0"),
    ):
        before = load(tmp_path)
        mesh.set_state(trigger, 1)
        after = load(tmp_path)
        assert after.keys() == before.keys()
        assert [k for k in after if after[k] != before[k]] == [changed]
        mesh.set_state(trigger, 0)
        assert load(tmp_path) == before
    assert not list(tmp_path.rglob(".*.tmp")), "no temporary file is left behind"
