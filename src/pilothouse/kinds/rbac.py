"""The ClusterRole rules the served kinds need, as ``deploy/kubernetes/clusterrole.yaml``
writes them.

The ``k8s://`` config source lists and watches every served kind; with
``--write-status`` it patches each one's ``status`` subresource. One rule per API group
and purpose, resources sorted, groups in table order. The file's Istio rules are checked
against :func:`istio_rules` (``tests/kube/test_rbac.py``), so a new kind's module is the
only place its RBAC name comes from.
"""

from __future__ import annotations

from typing import Any

from pilothouse.kinds.table import served


def istio_rules() -> list[dict[str, Any]]:
    """The list/watch rules, then the status patch rules, one of each per API group."""
    plurals: dict[str, list[str]] = {}
    for kind in served():
        assert kind.schema is not None
        plurals.setdefault(kind.schema.group, []).append(kind.schema.plural)
    read = [
        {"apiGroups": [group], "resources": sorted(names), "verbs": ["list", "watch"]}
        for group, names in plurals.items()
    ]
    status = [
        {
            "apiGroups": [group],
            "resources": sorted(f"{name}/status" for name in names),
            "verbs": ["patch"],
        }
        for group, names in plurals.items()
    ]
    return read + status
