"""The live Pods and the Nodes' topology the Kubernetes registry describes endpoints with.

The :class:`~pilothouse.registry.kubernetes.registry.KubeRegistry` turns EndpointSlices
into endpoints; an endpoint's labels, service account, network and locality come from
its Pod and that Pod's Node. This holds them: Pods by key, by (namespace, IP) (an
endpoint without a ``targetRef`` is matched to its Pod by address) and by Node (a
Node's topology labels change what its Pods' endpoints say), and each Node's topology.
A Pod's workload labels and locality are made once per Pod and Node state.
"""

from __future__ import annotations

from pilothouse.registry.kubernetes.pods import NO_TOPOLOGY, NodeTopology, Pod, PodKey
from pilothouse.registry.model import Labels


class PodCache:
    """Live (not Failed) Pods and Node topologies, as the latest events left them."""

    def __init__(self, cluster_id: str) -> None:
        self._cluster_id = cluster_id
        self._pods: dict[PodKey, Pod] = {}
        self._by_ip: dict[tuple[str, str], PodKey] = {}
        self._by_node: dict[str, set[PodKey]] = {}
        self._nodes: dict[str, NodeTopology] = {}
        self._described: dict[PodKey, tuple[Pod, NodeTopology, tuple[Labels, str]]] = {}

    def get(self, key: PodKey) -> Pod | None:
        return self._pods.get(key)

    def at(self, namespace: str, address: str) -> Pod | None:
        """The Pod with IP ``address`` in ``namespace``."""
        key = self._by_ip.get((namespace, address))
        return self._pods.get(key) if key is not None else None

    def node(self, name: str) -> NodeTopology:
        return self._nodes.get(name, NO_TOPOLOGY)

    def on_node(self, name: str) -> set[PodKey]:
        """The Pods on Node ``name`` (a copy)."""
        return set(self._by_node.get(name, ()))

    def describe(self, pod: Pod) -> tuple[Labels, str]:
        """A Pod's workload labels and locality, made once per Pod and Node state."""
        node = self._nodes.get(pod.node_name, NO_TOPOLOGY) if pod.node_name else NO_TOPOLOGY
        held = self._described.get(pod.key)
        if held is not None and held[0] is pod and held[1] is node:
            return held[2]
        made = (pod.workload_labels(node, self._cluster_id), pod.topology(node).locality)
        self._described[pod.key] = (pod, node, made)
        return made

    def put(self, key: PodKey, new: Pod | None) -> bool:
        """Pod ``key`` is now ``new`` (None: gone); False when that changes nothing."""
        old = self._pods.get(key)
        if old == new:
            return False
        if old is not None:
            for ip in old.ips:
                if self._by_ip.get((old.namespace, ip)) == key:
                    del self._by_ip[(old.namespace, ip)]
            on_node = self._by_node.get(old.node_name)
            if on_node is not None:
                on_node.discard(key)
                if not on_node:
                    del self._by_node[old.node_name]
        if new is None:
            self._pods.pop(key, None)
            self._described.pop(key, None)
        else:
            self._pods[key] = new
            for ip in new.ips:
                self._by_ip[(new.namespace, ip)] = key
            if new.node_name:
                self._by_node.setdefault(new.node_name, set()).add(key)
        return True

    def put_node(self, name: str, new: NodeTopology | None) -> bool:
        """Node ``name``'s topology is now ``new`` (None: gone); False when that changes
        nothing."""
        if self._nodes.get(name) == new:
            return False
        if new is None:
            self._nodes.pop(name, None)
        else:
            self._nodes[name] = new
        return True
