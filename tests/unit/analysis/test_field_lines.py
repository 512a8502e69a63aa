"""A message about a field of a file's object moves to that field's line; one whose file
cannot be read again, or that names no field, stays at the object's line."""

from __future__ import annotations

from pathlib import Path

from pilothouse.analysis.field_lines import pinned
from pilothouse.analysis.messages import REFERENCED_RESOURCE_NOT_FOUND, Message
from pilothouse.config.model import ConfigKey, Origin

TEXT = """\
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: front, namespace: shop}
spec:
  hosts: [front]
  http:
  - route:
    - destination:
        host: front
        subset: v9
"""


def message(file: str, path: str) -> Message:
    key = ConfigKey("VirtualService", "shop", "front")
    return Message(
        REFERENCED_RESOURCE_NOT_FOUND, ("x", "y"), key, Origin("file", file, 5), "", path
    )


def test_fields_move_to_their_lines(tmp_path: Path) -> None:
    file = tmp_path / "routes.yaml"
    file.write_text(TEXT)
    subset = message(str(file), "spec.http[0].route[0].destination.subset")
    unnamed = message(str(file), "")
    missing = message(str(tmp_path / "gone.yaml"), "spec.hosts")
    moved = pinned([subset, unnamed, missing], [str(file), str(tmp_path / "gone.yaml")])
    assert [m.reference.rpartition(":")[2] for m in moved] == ["14", "5", "5"]
    file.unlink()
    assert pinned([subset], [str(file)])[0].reference.endswith("routes.yaml:5")
