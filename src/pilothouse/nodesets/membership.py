"""Which objects make up each node's set, and which nodes a change touches.

:class:`NodeSetIndex` follows config events (no I/O) and keeps the workloads by address
and by namespace, and the selecting objects by namespace. A node is named by its
addresses (the agent's ``nodeIP``; a node may have several): its set is
:meth:`NodeSetIndex.members`, and :meth:`NodeSetIndex.apply` answers, for one event,
the addresses of the nodes whose set it may change:

- a workload (a WorkloadEntry at its ``address``, a Kubernetes Pod at its
  ``status.hostIP``) touches the node of its old address and of its new one;
- a selecting object touches every node hosting a workload its old or its new version
  selects: a workload of its namespace (any namespace, for the root namespace) whose
  labels include the selector's (no selector: every workload there);
- a Kubernetes Service selects like one, but only in its own namespace and only with a
  selector (:mod:`pilothouse.nodesets.kubernetes`);
- any other kind touches no node.

Which kinds select workloads is the tuple :data:`SELECTING_KINDS`, read from their kind
modules; how an object selects is read from its spec's ``selector`` (``matchLabels``,
the security and telemetry kinds) or ``workloadSelector`` (``labels``, Sidecar and
EnvoyFilter), the two shapes of Istio's workload selector. ``targetRefs`` (Gateway API
attachment) selects no workload on a node and is not followed.

:meth:`NodeSetIndex.runs_at` answers whether an identity (namespace and service account)
runs at an address: how the node-set service on the TLS port decides which node's set a
caller may have.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from google.protobuf.message import Message

from pilothouse.config.model import Config, ConfigKey
from pilothouse.kinds import (
    authorization_policy,
    envoy_filter,
    peer_authentication,
    request_authentication,
    sidecar,
    telemetry,
    wasm_plugin,
    workload_entry,
)
from pilothouse.nodesets.kubernetes import (
    POD_KIND,
    SERVICE_KIND,
    pod_address,
    pod_service_account,
    service_selector,
)
from pilothouse.registry.model import Labels
from pilothouse.sources.events import ConfigEvent

WORKLOAD_KIND = workload_entry.KIND.name
"""The Istio kind whose objects are the node's workloads, placed by their ``address``."""

WORKLOAD_KINDS: tuple[str, ...] = (WORKLOAD_KIND, POD_KIND)
"""The kinds whose objects are workloads placed on a node."""

SELECTING_KINDS: tuple[str, ...] = tuple(
    module.KIND.name
    for module in (
        sidecar,
        authorization_policy,
        peer_authentication,
        request_authentication,
        envoy_filter,
        telemetry,
        wasm_plugin,
    )
)
"""The kinds whose objects concern the workloads they select, in the order a node's set
lists them."""

NODE_SET_KINDS: tuple[str, ...] = (WORKLOAD_KIND, *SELECTING_KINDS, POD_KIND, SERVICE_KIND)
"""Every kind a node's set holds (Pods and Services only when the server reads a
Kubernetes cluster)."""

_EVERYWHERE: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class Placed:
    """A workload as the index sees it: where it runs and what its labels are."""

    config: Config
    address: str
    labels: Labels
    service_account: str = ""


@dataclass(frozen=True, slots=True)
class Selecting:
    """A selecting object: its labels (None: every workload of its namespace)."""

    config: Config
    labels: Mapping[str, str] | None
    mesh_wide: bool = False
    """A root-namespace policy: it selects in every namespace."""

    def selects(self, workload: Placed) -> bool:
        """Whether ``workload`` has every label asked for (no labels: any workload)."""
        return workload.labels.matches(self.labels)


def selector_labels(spec: Message) -> Mapping[str, str] | None:
    """The labels ``spec``'s workload selector asks for; None when it has none (the
    object applies to its whole namespace)."""
    fields = spec.DESCRIPTOR.fields_by_name
    for field_name, labels_name in (("selector", "match_labels"), ("workload_selector", "labels")):
        if field_name in fields and spec.HasField(field_name):
            selector = getattr(spec, field_name)
            if labels_name in selector.DESCRIPTOR.fields_by_name:
                return dict(getattr(selector, labels_name))
    return _EVERYWHERE


def placed(config: Config) -> Placed:
    """A workload (WorkloadEntry or Pod) as the index keeps it."""
    if config.kind == POD_KIND:
        return Placed(
            config, pod_address(config), Labels.of(config.labels), pod_service_account(config)
        )
    spec = config.spec
    return Placed(
        config,
        str(getattr(spec, "address", "")),
        Labels.of(dict(getattr(spec, "labels", {}))),
        str(getattr(spec, "service_account", "")),
    )


def selecting(config: Config, root_namespace: str) -> Selecting | None:
    """A selecting object as the index keeps it; None for a Service without a selector
    (it selects no workload)."""
    if config.kind == SERVICE_KIND:
        labels = service_selector(config)
        return None if labels is None else Selecting(config, labels)
    return Selecting(config, selector_labels(config.spec), config.namespace == root_namespace)


class NodeSetIndex:
    """Workloads by address and namespace, and selecting objects by namespace."""

    def __init__(self, root_namespace: str = "istio-system") -> None:
        self.root_namespace = root_namespace
        self._workloads: dict[ConfigKey, Placed] = {}
        self._by_address: dict[str, set[ConfigKey]] = {}
        self._by_namespace: dict[str, set[ConfigKey]] = {}
        self._selecting: dict[ConfigKey, Selecting] = {}
        self._selecting_in: dict[str, set[ConfigKey]] = {}

    def load(self, configs: Iterable[Config]) -> None:
        """Add ``configs`` (a store's contents) without computing who they touch."""
        for config in configs:
            self._put(config)

    def apply(self, event: ConfigEvent) -> frozenset[str]:
        """Follow one event; the addresses of the nodes whose set it may change."""
        if event.key.kind not in NODE_SET_KINDS:
            return frozenset()
        touched: set[str] = set()
        if event.old is not None:
            touched |= self._touched_by(self._entry(event.old))
            self._drop(event.old.key)
        if event.new is not None:
            touched |= self._touched_by(self._put(event.new))
        touched.discard("")
        return frozenset(touched)

    def addresses(self) -> frozenset[str]:
        """Every address some workload runs at."""
        return frozenset(self._by_address)

    def workloads_at(self, addresses: Iterable[str]) -> list[Placed]:
        """The workloads at any of ``addresses``, in key order."""
        keys: set[ConfigKey] = set()
        for address in addresses:
            keys |= self._by_address.get(address, set())
        return [self._workloads[key] for key in sorted(keys)]

    def members(self, addresses: Iterable[str]) -> dict[str, dict[str, Config]]:
        """The node's set: per kind, its objects by MCP name (``ns/name``)."""
        found: dict[str, dict[str, Config]] = {kind: {} for kind in NODE_SET_KINDS}
        workloads = self.workloads_at(addresses)
        if not workloads:
            return found
        namespaces: dict[str, list[Placed]] = {}
        for workload in workloads:
            config = workload.config
            found[config.kind][f"{config.namespace}/{config.name}"] = config
            namespaces.setdefault(config.namespace, []).append(workload)
        root = self.root_namespace
        scopes = list(namespaces.items())
        if root not in namespaces:
            scopes.append((root, []))
        for namespace, listed in scopes:
            for key in self._selecting_in.get(namespace, ()):
                rule = self._selecting[key]
                # the root's policies may select any of them
                candidates = workloads if rule.mesh_wide else listed
                if any(rule.selects(workload) for workload in candidates):
                    config = rule.config
                    found[config.kind][f"{config.namespace}/{config.name}"] = config
        return found

    def runs_at(self, address: str, namespace: str, service_account: str) -> bool:
        """Whether a workload at ``address`` runs as ``namespace``/``service_account``."""
        return any(
            workload.config.namespace == namespace and workload.service_account == service_account
            for workload in self.workloads_at((address,))
        )

    def _entry(self, config: Config) -> Placed | Selecting | None:
        """``config`` as the index keeps it; None for a kind it does not keep."""
        if config.kind in WORKLOAD_KINDS:
            return placed(config)
        if config.kind in NODE_SET_KINDS:
            return selecting(config, self.root_namespace)
        return None

    def _touched_by(self, entry: Placed | Selecting | None) -> set[str]:
        if entry is None:
            return set()
        if isinstance(entry, Placed):
            return {entry.address}
        if entry.mesh_wide:
            candidates: Iterable[ConfigKey] = self._workloads
        else:
            candidates = self._by_namespace.get(entry.config.namespace, ())
        workloads = self._workloads
        return {workloads[key].address for key in candidates if entry.selects(workloads[key])}

    def _put(self, config: Config) -> Placed | Selecting | None:
        """Keep ``config`` (in place of its earlier version); what was kept."""
        key = config.key
        if config.kind in NODE_SET_KINDS:
            self._drop(key)
        entry = self._entry(config)
        if isinstance(entry, Placed):
            self._workloads[key] = entry
            self._by_address.setdefault(entry.address, set()).add(key)
            self._by_namespace.setdefault(config.namespace, set()).add(key)
        elif entry is not None:
            self._selecting[key] = entry
            self._selecting_in.setdefault(config.namespace, set()).add(key)
        return entry

    def _drop(self, key: ConfigKey) -> None:
        workload = self._workloads.pop(key, None)
        if workload is not None:
            _discard(self._by_address, workload.address, key)
            _discard(self._by_namespace, key.namespace, key)
        if self._selecting.pop(key, None) is not None:
            _discard(self._selecting_in, key.namespace, key)


def _discard(index: dict[str, set[ConfigKey]], at: str, key: ConfigKey) -> None:
    keys = index.get(at)
    if keys is not None:
        keys.discard(key)
        if not keys:
            del index[at]
