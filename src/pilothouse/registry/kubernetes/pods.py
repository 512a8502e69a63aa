"""Pods and Nodes as the registry needs them: a workload's labels, identity and locality.

What istiod reads from a Pod (``kc/endpoint_builder.go``, ``kc/controller.go``):

- its labels, plus the topology labels istiod adds: ``topology.kubernetes.io/region``,
  ``topology.kubernetes.io/zone``, ``topology.istio.io/subzone`` (from the locality),
  ``topology.istio.io/cluster`` (the cluster id, ``Kubernetes``) and
  ``kubernetes.io/hostname`` (the node);
- its service account (``spec.serviceAccountName``);
- its network: label ``topology.istio.io/network``;
- its locality: pod label ``topology.istio.io/locality`` (legacy ``istio-locality``,
  dots read as slashes) wins; otherwise its Node's ``topology.kubernetes.io/region|zone``
  labels (falling back to ``failure-domain.beta.kubernetes.io/region|zone``) and
  ``topology.istio.io/subzone``, as ``region/zone/subzone``.

A Pod in phase ``Failed`` is not a workload (istiod's Pod informer leaves it out).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pilothouse.registry.model import NO_LABELS, Labels

REGION = "topology.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
SUBZONE = "topology.istio.io/subzone"
LEGACY_REGION = "failure-domain.beta.kubernetes.io/region"
LEGACY_ZONE = "failure-domain.beta.kubernetes.io/zone"
LOCALITY = "topology.istio.io/locality"
LEGACY_LOCALITY = "istio-locality"
CLUSTER = "topology.istio.io/cluster"
HOSTNAME = "kubernetes.io/hostname"
NETWORK = "topology.istio.io/network"
DEFAULT_CLUSTER_ID = "Kubernetes"

PodKey = tuple[str, str]
"""(namespace, name)."""


@dataclass(frozen=True, slots=True)
class NodeTopology:
    """Where a Node is: its region, zone and subzone labels."""

    region: str = ""
    zone: str = ""
    subzone: str = ""

    @property
    def locality(self) -> str:
        return "/".join((self.region, self.zone, self.subzone)).rstrip("/")


NO_TOPOLOGY = NodeTopology()


def node_topology(obj: Mapping[str, Any]) -> NodeTopology:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return NodeTopology(
        region=str(labels.get(REGION) or labels.get(LEGACY_REGION) or ""),
        zone=str(labels.get(ZONE) or labels.get(LEGACY_ZONE) or ""),
        subzone=str(labels.get(SUBZONE) or ""),
    )


@dataclass(frozen=True, slots=True)
class Pod:
    """The parts of a Pod the registry reads."""

    namespace: str
    name: str
    labels: Labels
    service_account: str
    node_name: str
    ips: tuple[str, ...]
    failed: bool
    own_topology: NodeTopology | None = None
    """From its ``topology.istio.io/locality`` (or legacy) label, when it has one."""
    network: str = ""
    host_ip: str = field(default="", compare=False)
    """``status.hostIP``: the address of the node it runs on (empty until scheduled and
    started); node agents' sets place Pods by it. Not compared: the registry's
    services and endpoints do not depend on it."""

    @property
    def key(self) -> PodKey:
        return (self.namespace, self.name)

    def topology(self, node: NodeTopology) -> NodeTopology:
        """The pod's own locality label if it has one, else its node's."""
        return self.own_topology if self.own_topology is not None else node

    def workload_labels(self, node: NodeTopology, cluster_id: str = DEFAULT_CLUSTER_ID) -> Labels:
        """The pod's labels with the topology labels istiod adds (the pod's own win)."""
        topology = self.topology(node)
        merged = {CLUSTER: cluster_id}
        if topology.region:
            merged[REGION] = topology.region
        if topology.zone:
            merged[ZONE] = topology.zone
        if topology.subzone:
            merged[SUBZONE] = topology.subzone
        if self.node_name:
            merged[HOSTNAME] = self.node_name
        merged.update(self.labels.pairs)
        return Labels(tuple(merged.items()))


def _own_topology(labels: Mapping[str, str]) -> NodeTopology | None:
    own = labels.get(LOCALITY) or labels.get(LEGACY_LOCALITY)
    if not own:
        return None
    region, zone, subzone = [*own.replace(".", "/").split("/", 2), "", "", ""][:3]
    return NodeTopology(region, zone, subzone)


def pod_of(obj: Mapping[str, Any]) -> Pod:
    """The registry's view of a Pod object (raises KeyError on one without a name)."""
    metadata = obj["metadata"]
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    ips = [str(entry.get("ip")) for entry in status.get("podIPs") or () if entry.get("ip")]
    if not ips and status.get("podIP"):
        ips = [str(status["podIP"])]
    raw = metadata.get("labels") or {}
    labels = {str(k): str(v) for k, v in raw.items()}
    return Pod(
        namespace=str(metadata["namespace"]),
        name=str(metadata["name"]),
        labels=Labels.of(labels) if labels else NO_LABELS,
        service_account=str(spec.get("serviceAccountName") or spec.get("serviceAccount") or ""),
        node_name=str(spec.get("nodeName") or ""),
        ips=tuple(ips),
        failed=status.get("phase") == "Failed",
        own_topology=_own_topology(labels),
        network=labels.get(NETWORK, ""),
        host_ip=str(status.get("hostIP") or ""),
    )
