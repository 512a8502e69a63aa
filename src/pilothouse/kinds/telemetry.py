"""Telemetry: the access logs, traces and metrics of the proxies it selects.

Served as ``telemetry.istio.io`` ``v1`` and ``v1alpha1`` (one message, Istio's
``istio.telemetry.v1alpha1.Telemetry``), over legacy MCP in
``istio/telemetry/v1alpha1/telemetries``. One without a selector or targetRefs in the
mesh's root namespace applies to every proxy, one without them elsewhere to its
namespace's proxies, one with a selector to the workloads of its namespace whose labels
hold it, one with targetRefs to the Kubernetes Gateways they name
(:func:`attaches`). :mod:`pilothouse.push.telemetry` lays them over each other for one
proxy, istiod's hierarchy.

A change concerns the proxies its old or new version selects (asked of the push
context's ``telemetries`` index) and only their listeners: access logs and tracing live
on the connection managers and TCP proxies (LDS); clusters and routes read nothing of it.
One that reached a push context before the request naming it did cannot be compared: it
concerns every proxy of its namespace, or every proxy from the root. It moves no endpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from pilothouse.api.istio.telemetry.v1alpha1 import telemetry_pb2
from pilothouse.config.schema import Schema
from pilothouse.config.validation.telemetry import validate_telemetry
from pilothouse.kinds.kind import Audience, Kind
from pilothouse.protocol.type_urls import CDS, RDS

GROUP: Final = "telemetry.istio.io"
GATEWAY_NAME_LABEL: Final = "gateway.networking.k8s.io/gateway-name"
"""The label of a Kubernetes Gateway's proxies that ``targetRefs`` are matched against."""

KIND = Kind(
    name="Telemetry",
    schema=Schema(
        kind="Telemetry",
        group=GROUP,
        versions=("v1", "v1alpha1"),
        message=telemetry_pb2.Telemetry,
        plural="telemetries",
        collection="istio/telemetry/v1alpha1/telemetries",
        namespaced=True,
        validator=validate_telemetry,
    ),
    audience=Audience.SELECTED_WORKLOADS,
    unread_by=frozenset({CDS, RDS}),
    index="telemetries",
    uncompared_audience=Audience.NAMESPACE_OR_ROOT,
    # Istio's CRD declares "telemetry"; "tm" is the one the istioctl habits ask for
    short_names=("telemetry", "tm"),
)


def is_namespace_wide(spec: telemetry_pb2.Telemetry) -> bool:
    """Whether ``spec`` names no workloads (no selector, no targetRef(s)): it applies to
    its whole namespace, or the whole mesh from the root namespace."""
    return (
        not spec.HasField("selector") and not spec.HasField("targetRef") and not (spec.targetRefs)
    )


def attaches(spec: telemetry_pb2.Telemetry, labels: Mapping[str, str]) -> bool:
    """Whether a Telemetry of the proxy's own namespace that names workloads selects the
    proxy with ``labels``: every label of its selector (an empty selector selects
    every workload, as istiod's does), or a ``Gateway`` its targetRefs name."""
    refs = list(spec.targetRefs)
    if spec.HasField("targetRef"):
        refs.append(spec.targetRef)
    if refs:
        gateway = labels.get(GATEWAY_NAME_LABEL)
        return gateway is not None and any(r.kind == "Gateway" and r.name == gateway for r in refs)
    wanted = spec.selector.match_labels
    return all(labels.get(k) == v for k, v in wanted.items())
