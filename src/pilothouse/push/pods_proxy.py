"""A connecting sidecar matched to its Pod: labels, service account and locality from it.

istiod (``kc/util.go`` podKeyByProxy, ``model/context.go`` SetWorkloadLabels):

- the node id's third part ``<pod>.<namespace>`` is split at the first ``.``; the Pod is
  looked up only when the proxy's namespace (metadata ``NAMESPACE``, else the id's) is
  that namespace, and only when metadata ``CLUSTER_ID`` is empty or the registry's cluster;
- the proxy's labels are the Pod's with the topology labels istiod adds
  (:meth:`Pod.workload_labels`); labels the node's metadata ``LABELS`` gives win over them
  (the node's own word, as the agent sends it; read from the metadata, so completing a
  proxy again after its Pod changed gives what completing the node's own would);
- its service account is the Pod's, unless metadata ``SERVICE_ACCOUNT`` names one;
- its locality is the Pod's (its locality label, else its Node's), else ``node.locality``.

Its inbound ports then come, as for every proxy, from the endpoints at its address whose
labels it carries: the Pod's endpoints in the slices of the Services selecting it.
"""

from __future__ import annotations

import dataclasses

from pilothouse.push.proxy import BadNode, ProxyIdentity, ProxyType, metadata_labels
from pilothouse.registry.kubernetes.registry import KubeRegistry
from pilothouse.registry.model import Labels

SERVICE_ACCOUNT = "SERVICE_ACCOUNT"


def proxy_with_pod(registry: KubeRegistry, proxy: ProxyIdentity) -> ProxyIdentity:
    """``proxy`` completed from its Pod, or unchanged when no Pod matches it."""
    if proxy.type is not ProxyType.SIDECAR and proxy.type is not ProxyType.ROUTER:
        return proxy
    name, dot, namespace = proxy.id.partition(".")
    if not dot or namespace != proxy.namespace:
        return proxy
    if proxy.cluster_id and proxy.cluster_id != registry.cluster_id:
        return proxy
    pod = registry.pod(namespace, name)
    if pod is None:
        return proxy
    node = registry.node_topology(pod.node_name)
    metadata = dict(proxy.metadata or {})
    labels = pod.workload_labels(node, registry.cluster_id)
    told = metadata.get("LABELS")
    if told:
        labels = labels.merged(_node_labels(told, proxy))
    if pod.service_account and not metadata.get(SERVICE_ACCOUNT):
        metadata[SERVICE_ACCOUNT] = pod.service_account
    return dataclasses.replace(
        proxy,
        labels=labels,
        locality=pod.topology(node).locality or proxy.locality,
        metadata=dict(sorted(metadata.items())),
    )


def _node_labels(told: str, proxy: ProxyIdentity) -> Labels:
    """The labels of metadata ``LABELS`` (kept as JSON text in the proxy's metadata)."""
    try:
        return metadata_labels(told, proxy.node_id)
    except BadNode:  # parse_node read it once already: cannot happen
        return proxy.labels
