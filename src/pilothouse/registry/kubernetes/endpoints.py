"""EndpointSlices (``discovery.k8s.io/v1``) into registry endpoints, as istiod reads them.

- A slice belongs to the Service named by its label ``kubernetes.io/service-name``, in its
  namespace. Slices of another controller's multi-cluster service
  (``multicluster.kubernetes.io/service-name``) and ``addressType: FQDN`` slices are
  ignored.
- Each address × each ``ports[]`` entry is one endpoint: the port number as given (the
  target port already resolved), the service port it serves by name (none = "").
- Only ready endpoints are served: ``conditions.ready`` true or missing (istiod's
  HEALTHY); not-ready and terminating endpoints are left out, as EDS leaves them out by
  default.
- An endpoint whose ``targetRef`` is a Pod takes that Pod's labels, service account,
  network and locality; while the Pod is unknown the endpoint is dropped (pending: the
  slice is read again when the Pod arrives). Without a ``targetRef`` the endpoint is kept,
  described by a Pod of the namespace with its address if there is one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pilothouse.config.model import ConfigKey
from pilothouse.registry.kubernetes.pods import Pod, PodKey
from pilothouse.registry.model import NO_LABELS, Endpoint, Labels

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MULTICLUSTER_SERVICE_NAME_LABEL = "multicluster.kubernetes.io/service-name"
ENDPOINT_SLICE = "EndpointSlice"


@dataclass(frozen=True, slots=True)
class SliceEndpoint:
    """One entry of a slice's ``endpoints``."""

    addresses: tuple[str, ...]
    ready: bool
    pod: str | None
    """The name of the Pod its ``targetRef`` names, or None without a Pod reference."""


@dataclass(frozen=True, slots=True)
class Slice:
    """The parts of an EndpointSlice the registry reads."""

    namespace: str
    name: str
    service: str
    """The Service it belongs to ("" when it belongs to none the registry serves)."""
    ports: tuple[tuple[str, int], ...]
    endpoints: tuple[SliceEndpoint, ...]

    @property
    def shard(self) -> ConfigKey:
        """What its endpoints name as their ``source``."""
        return ConfigKey(ENDPOINT_SLICE, self.namespace, self.name)

    @property
    def pods(self) -> frozenset[PodKey]:
        return frozenset((self.namespace, e.pod) for e in self.endpoints if e.pod is not None)


def slice_of(obj: Mapping[str, Any]) -> Slice:
    """The registry's view of an EndpointSlice object (raises KeyError on one without a
    name)."""
    metadata = obj["metadata"]
    labels = metadata.get("labels") or {}
    service = str(labels.get(SERVICE_NAME_LABEL) or "")
    if labels.get(MULTICLUSTER_SERVICE_NAME_LABEL) or obj.get("addressType") == "FQDN":
        service = ""
    ports = tuple(
        (str(port.get("name") or ""), int(port["port"]))
        for port in obj.get("ports") or ()
        if port.get("port") is not None
    )
    endpoints = []
    for entry in obj.get("endpoints") or ():
        conditions = entry.get("conditions") or {}
        ref = entry.get("targetRef") or {}
        endpoints.append(
            SliceEndpoint(
                addresses=tuple(str(a) for a in entry.get("addresses") or ()),
                ready=conditions.get("ready") is not False,
                pod=str(ref["name"]) if ref.get("kind") == "Pod" and ref.get("name") else None,
            )
        )
    return Slice(
        namespace=str(metadata["namespace"]),
        name=str(metadata["name"]),
        service=service,
        ports=ports,
        endpoints=tuple(endpoints),
    )


def slice_endpoints(
    piece: Slice,
    pod_named: Callable[[PodKey], Pod | None],
    pod_at: Callable[[str, str], Pod | None],
    describe: Callable[[Pod], tuple[Labels, str]],
) -> list[Endpoint]:
    """The endpoints ``piece`` serves now. ``pod_named`` finds a Pod by key, ``pod_at`` by
    (namespace, address); ``describe`` gives a Pod's workload labels and locality."""
    out: list[Endpoint] = []
    shard = piece.shard
    for entry in piece.endpoints:
        if not entry.ready or not entry.addresses:
            continue
        if entry.pod is not None:
            pod = pod_named((piece.namespace, entry.pod))
            if pod is None:
                continue  # pending until the Pod is seen
        else:
            pod = pod_at(piece.namespace, entry.addresses[0])
        if pod is not None:
            labels, locality = describe(pod)
            account, network = pod.service_account, pod.network
        else:
            labels, locality, account, network = NO_LABELS, "", "", ""
        for address in entry.addresses:
            for port_name, number in piece.ports:
                out.append(
                    Endpoint(
                        address=address,
                        port=number,
                        service_port_name=port_name,
                        source=shard,
                        labels=labels,
                        locality=locality,
                        network=network,
                        service_account=account,
                    )
                )
    return out
