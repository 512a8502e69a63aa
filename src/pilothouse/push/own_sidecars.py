"""istiod's ProxyUpdate: the connected sidecars a changed workload *is*, and the push they get.

A sidecar's own inbound clusters and listeners come from its workload
(:mod:`pilothouse.xds.generators.inbound`): the labelled endpoints in its namespace at one
of its IPs whose labels it carries, which a Kubernetes Pod or a WorkloadEntry puts there. When
that workload changes (its ports, its labels, its address), only its endpoints move: the
EDS fast path pushes assignments to whoever watches the service and regenerates no
cluster or listener. The workload's own sidecars need more: their CDS and LDS, which
:func:`proxy_update` asks for (a full push naming the workload, reason ``proxy``); every
other proxy still gets EDS only.

:class:`OwnSidecars` finds those sidecars without walking every connection, in the two
ways a proxy is matched to its workload:

- by proxy id (``<pod>.<namespace>``): the sidecars of a Pod
  (:mod:`pilothouse.push.pod_sidecars`);
- by the rule inbound.py reads the endpoints with: the sidecars of a WorkloadEntry,
  from whatever source it came (directory, etcd, MCP), are those in its namespace, with
  its address among their IPs, carrying all its (non-empty) labels. A changed entry is
  matched as it was and as it is, so when its address or labels move, both the sidecar
  it left and the one it reached are pushed.

Only sidecars are matched so: a gateway (``router``) has no inbound workload.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterable
from typing import Generic, Protocol, TypeVar

from pilothouse.config.model import ConfigKey
from pilothouse.push.proxy import ProxyIdentity, ProxyType
from pilothouse.push.request import PushRequest, TriggerReason
from pilothouse.registry.model import Workload

WorkloadAddress = tuple[str, str]
"""(namespace, IP address) of a workload."""


class Sidecar(Protocol):
    """A connection as seen here: who its proxy is."""

    @property
    def proxy(self) -> ProxyIdentity: ...


S = TypeVar("S", bound=Sidecar)
_K = TypeVar("_K")


class OwnSidecars(Generic[S]):
    """Connected proxies by proxy id, and sidecars by (namespace, IP).

    The id, namespace and IPs of a connection's proxy never change while it is connected
    (a Pod change re-identifies its labels only), so a connection is filed once, under
    the keys it had then.
    """

    def __init__(self) -> None:
        self._by_proxy_id: dict[str, set[S]] = {}
        self._by_address: dict[WorkloadAddress, set[S]] = {}
        self._filed: dict[S, tuple[str, tuple[WorkloadAddress, ...]]] = {}

    def connect(self, connection: S) -> None:
        proxy = connection.proxy
        addresses = _addresses(proxy)
        self._filed[connection] = (proxy.id, addresses)
        self._by_proxy_id.setdefault(proxy.id, set()).add(connection)
        for address in addresses:
            self._by_address.setdefault(address, set()).add(connection)

    def disconnect(self, connection: S) -> None:
        filed = self._filed.pop(connection, None)
        if filed is None:
            return
        proxy_id, addresses = filed
        _discard(self._by_proxy_id, proxy_id, connection)
        for address in addresses:
            _discard(self._by_address, address, connection)

    def with_proxy_ids(self, ids: Iterable[str]) -> list[S]:
        """The connections of the proxies with these ids (``<pod>.<namespace>``)."""
        return [connection for i in ids for connection in self._by_proxy_id.get(i, ())]

    def of(self, workloads: Iterable[Workload]) -> list[S]:
        """The sidecars that are these workloads, each once: in the workload's namespace,
        its address one of their IPs, carrying its labels. A workload without labels
        gives no inbound port (inbound.py reads labelled endpoints only), and an address
        that is not an IP (a WorkloadEntry resolved by DNS) is no proxy's."""
        found: dict[S, None] = {}
        for workload in workloads:
            ip = _ip(workload.address)
            if not ip or not workload.labels:
                continue
            for connection in self._by_address.get((workload.namespace, ip), ()):
                if connection.proxy.labels.matches(workload.labels):
                    found[connection] = None
        return list(found)


def proxy_update(workloads: Iterable[ConfigKey], start: float = math.inf) -> PushRequest:
    """The push a changed workload's own sidecar gets: full (its clusters and listeners
    read the workload's endpoints), naming the workload (a Pod's or WorkloadEntry's key),
    reason ``proxy`` (istiod's label for ProxyUpdate)."""
    return PushRequest.for_configs(workloads, TriggerReason.PROXY, start=start)


def _addresses(proxy: ProxyIdentity) -> tuple[WorkloadAddress, ...]:
    if proxy.type is not ProxyType.SIDECAR:
        return ()
    return tuple((proxy.namespace, ip) for ip in proxy.ip_addresses)


def _ip(address: str) -> str:
    """``address`` as the proxy's IPs are written (parse_node normalises them); "" when
    it is not an IP address."""
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return ""


def _discard(index: dict[_K, set[S]], key: _K, connection: S) -> None:
    held = index.get(key)
    if held is not None:
        held.discard(connection)
        if not held:
            del index[key]
