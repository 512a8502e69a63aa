"""PeerAuthentication: the mutual-TLS mode a workload accepts on each of its ports.

istiod's rules (``ComposePeerAuthentication``), applied to the policies of the
workload's namespace and of the root namespace:

- a policy without a selector (or with an empty ``matchLabels``) in the root namespace
  is mesh-wide; one in any other namespace is namespace-wide;
- a policy with a selector that matches the workload's labels is workload-wide, and
  only outside the root namespace (istiod ignores selecting policies there);
- of several at one level the oldest wins (creation time, then key, for an order that
  does not depend on arrival);
- levels apply mesh, then namespace, then workload: a level that leaves ``mtls`` unset
  (or says ``UNSET``) inherits the mode above it; with no policy the mode is PERMISSIVE;
- ``portLevelMtls`` of the workload-wide policy overrides the mode per workload port;
  an UNSET port inherits the workload's mode. Port-level modes need a selector: those
  of mesh- and namespace-wide policies are ignored, as istiod does (validation rejects
  them).

:meth:`PeerAuthenticationIndex.namespace_mode` is the mode istiod infers for a
*service* (mesh- and namespace-wide policies only), which auto-mTLS reads on the
client side.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pilothouse.api.istio.security.v1beta1 import peer_authentication_pb2 as pa_pb2
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config, ConfigKey
from pilothouse.kinds import peer_authentication
from pilothouse.registry.model import Labels

PEER_AUTHENTICATION = peer_authentication.KIND.name
_UNSET = pa_pb2.PeerAuthentication.MutualTLS.UNSET


class MtlsMode(StrEnum):
    """The mode an inbound port runs in (UNSET never survives resolution)."""

    DISABLE = "DISABLE"
    PERMISSIVE = "PERMISSIVE"
    STRICT = "STRICT"


DEFAULT_MODE = MtlsMode.PERMISSIVE

_MODES = {
    pa_pb2.PeerAuthentication.MutualTLS.DISABLE: MtlsMode.DISABLE,
    pa_pb2.PeerAuthentication.MutualTLS.PERMISSIVE: MtlsMode.PERMISSIVE,
    pa_pb2.PeerAuthentication.MutualTLS.STRICT: MtlsMode.STRICT,
}


@dataclass(frozen=True, slots=True)
class MtlsPolicy:
    """A workload's merged policy: its mode and the ports that differ from it."""

    mode: MtlsMode = DEFAULT_MODE
    ports: tuple[tuple[int, MtlsMode], ...] = ()

    def for_port(self, port: int) -> MtlsMode:
        """The mode of workload port ``port``."""
        for number, mode in self.ports:
            if number == port:
                return mode
        return self.mode


class PolicyRevision:
    """Every PeerAuthentication by key, source and resource version, as a cache input
    hashed once and naming no dependency.

    Assignments read the index through it; with a tuple, every cache lookup hashed every
    policy again (200 namespaces with a policy each made a cold EDS generation four
    times slower), and every cached assignment was registered under every policy's key.
    An edit gives a new revision, so the cache key changes and the assignment is rebuilt;
    the entries of the old revision age out of the cache.
    """

    __slots__ = ("_hash", "entries")

    def __init__(self, entries: tuple[tuple[ConfigKey, str, str], ...]) -> None:
        self.entries = entries
        self._hash = hash(entries)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, PolicyRevision):
            return NotImplemented
        return self._hash == other._hash and self.entries == other.entries

    def __repr__(self) -> str:
        return f"PolicyRevision({len(self.entries)} policies)"


class PeerAuthenticationIndex:
    """Which PeerAuthentication applies to a workload, by namespace and labels."""

    def __init__(self, configs: Iterable[Config], mesh: MeshSettings) -> None:
        self._root = mesh.root_namespace
        by_namespace: dict[str, list[Config]] = {}
        for config in configs:
            by_namespace.setdefault(config.namespace, []).append(config)
        for found in by_namespace.values():
            found.sort(key=_age)
        self._by_namespace: Mapping[str, list[Config]] = by_namespace
        self.keys = frozenset(c.key for found in by_namespace.values() for c in found)
        self.revision = PolicyRevision(
            tuple(
                sorted(
                    (c.key, c.origin.source, c.resource_version)
                    for found in by_namespace.values()
                    for c in found
                )
            )
        )
        """Every policy by key, source and resource version: changes with any edit (a
        cache input for what reads the index, see ``PeerAuthenticationAt``)."""

    def namespace_mode(self, namespace: str) -> MtlsMode:
        """The mode from the mesh- and namespace-wide policies alone."""
        mode = _inherit(DEFAULT_MODE, self._wide(self._root))
        if namespace != self._root:
            mode = _inherit(mode, self._wide(namespace))
        return mode

    def workload_policy(self, namespace: str, labels: Labels) -> MtlsPolicy:
        """The merged policy of a workload of ``namespace`` with ``labels``."""
        mode = self.namespace_mode(namespace)
        chosen = None
        if namespace != self._root:
            for config in self._by_namespace.get(namespace, ()):
                selector = _selector(config)
                if selector and labels.matches(selector):
                    chosen = config
                    break
        if chosen is None:
            return MtlsPolicy(mode)
        spec: Any = chosen.spec
        mode = _inherit(mode, spec.mtls if spec.HasField("mtls") else None)
        ports = tuple(
            (int(port), _inherit(mode, spec.port_level_mtls[port]))
            for port in sorted(spec.port_level_mtls)
        )
        return MtlsPolicy(mode, tuple(p for p in ports if p[1] != mode))

    def _wide(self, namespace: str) -> Any:
        """The ``mtls`` of the namespace's oldest policy without a selector, if any."""
        for config in self._by_namespace.get(namespace, ()):
            if not _selector(config):
                spec: Any = config.spec
                return spec.mtls if spec.HasField("mtls") else None
        return None


def _inherit(parent: MtlsMode, mtls: Any) -> MtlsMode:
    if mtls is None or mtls.mode == _UNSET:
        return parent
    return _MODES.get(mtls.mode, parent)


def _selector(config: Config) -> dict[str, str]:
    spec: Any = config.spec
    return dict(spec.selector.match_labels) if spec.HasField("selector") else {}


_EPOCH = datetime.datetime.min.replace(tzinfo=datetime.UTC)


def _age(config: Config) -> tuple[bool, datetime.datetime, Any]:
    created = config.creation_time
    if created is not None and created.tzinfo is None:
        created = created.replace(tzinfo=datetime.UTC)
    return (created is None, created or _EPOCH, config.key)


@dataclass(frozen=True, slots=True)
class PeerAuthenticationAt:
    """The PeerAuthentication index as a cache input: compared by its revision, the index
    riding along for the builder to read."""

    revision: PolicyRevision
    index: PeerAuthenticationIndex = field(compare=False, repr=False)

    @classmethod
    def of(cls, index: PeerAuthenticationIndex) -> PeerAuthenticationAt:
        return cls(index.revision, index)

    def disables(self, namespace: str, labels: Labels, port: int) -> bool:
        """Whether the workload's policy turns mutual TLS off on ``port``."""
        return self.index.workload_policy(namespace, labels).for_port(port) is MtlsMode.DISABLE
