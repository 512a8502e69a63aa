"""``/debug/gateway_apiz``: the status of every Gateway API object, as a controller would
write it to Kubernetes (conditions without times), for meshes read from files or etcd."""

from __future__ import annotations

from typing import Any

from pilothouse.config.model import ConfigKey
from pilothouse.kinds.gateway_api.status import Status, gateway_api_status, kind_of
from pilothouse.xds.server.debug_view import DebugView


def current_statuses(discovery: DebugView) -> dict[ConfigKey, Status]:
    """The status of every Gateway API object this controller owns, from the current
    push context (empty until the first one)."""
    if not discovery.ready():
        return {}
    context = discovery.context
    hosts = frozenset(service.hostname for service in discovery.services())
    return gateway_api_status(
        context.gateway_api,
        discovery.store.configs,
        hosts.__contains__,
        context.mesh.domain_suffix,
    )


def gateway_apiz(discovery: DebugView, namespace: str = "") -> dict[str, Any]:
    """Every Gateway API object this controller owns with its status (``namespace``: only
    those of one namespace)."""
    statuses = current_statuses(discovery)
    objects: list[dict[str, Any]] = []
    for key, status in sorted(statuses.items()):
        if namespace and key.namespace != namespace:
            continue
        written = kind_of(key)
        assert written is not None
        metadata = {"name": key.name, **({"namespace": key.namespace} if key.namespace else {})}
        objects.append(
            {"apiVersion": written[0], "kind": written[1], "metadata": metadata, "status": status}
        )
    return {"objects": objects}
