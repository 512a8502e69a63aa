"""istioctl's analyzer-style checks on the Kubernetes objects found beside Istio config.

``validate`` skips Services and Deployments (they are not Istio config) but reads them
for what the mesh depends on, as ``istioctl analyze`` does, and says so as warnings:

- a Service port whose protocol Istio cannot tell: neither ``appProtocol`` nor a name
  of the form ``<protocol>[-<suffix>]`` (``http-web``, ``grpc``, ``tcp-db``) names one,
  so Istio falls back to protocol detection (the port's protocol is read exactly as the
  Kubernetes registry reads it, :func:`~pilothouse.registry.kubernetes.services.port_protocol`);
- a Deployment whose pod template has no ``app`` or no ``version`` label (or their
  ``app.kubernetes.io/name`` / ``app.kubernetes.io/version`` forms): Istio names the
  workload's canonical service and revision in telemetry after them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pilothouse.registry.kubernetes.services import port_protocol

_APP_LABELS = ("app", "app.kubernetes.io/name")
_VERSION_LABELS = ("version", "app.kubernetes.io/version")


def manifest_findings(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The warnings (field path, message) for one skipped object; none for other kinds."""
    kind = data.get("kind")
    spec = data.get("spec")
    if not isinstance(spec, Mapping):
        return []
    if kind == "Service" and data.get("apiVersion") == "v1":
        return _service_findings(spec)
    if kind == "Deployment" and data.get("apiVersion") == "apps/v1":
        return _deployment_findings(spec)
    return []


def _service_findings(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    if spec.get("type") == "ExternalName":
        return []
    ports = spec.get("ports")
    found: list[tuple[str, str]] = []
    for index, port in enumerate(ports if isinstance(ports, list) else []):
        if not isinstance(port, Mapping) or port_protocol(port):
            continue
        name = port.get("name")
        app = port.get("appProtocol")
        if app:
            reason = f"appProtocol {app!r} is not a protocol Istio knows"
        else:
            written = f"name {name!r}" if name else "no name"
            reason = f"{written} does not follow Istio's <protocol>[-<suffix>] convention"
            reason += " and there is no appProtocol"
        found.append(
            (
                f"spec.ports[{index}]",
                f"port {port.get('port')}: {reason}; Istio will detect the protocol"
                " (name the port like http-web or set appProtocol: http)",
            )
        )
    return found


def _deployment_findings(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    template = spec.get("template")
    metadata = template.get("metadata") if isinstance(template, Mapping) else None
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    labels = labels if isinstance(labels, Mapping) else {}
    found: list[tuple[str, str]] = []
    for wanted, names in (("app", _APP_LABELS), ("version", _VERSION_LABELS)):
        if not any(labels.get(name) for name in names):
            found.append(
                (
                    "spec.template.metadata.labels",
                    f"the pod template has no {wanted!r} label ({' or '.join(names)}):"
                    " Istio's telemetry cannot name the workload's "
                    + ("service" if wanted == "app" else "version"),
                )
            )
    return found
