"""Sync status of every proxy connected to this replica: ``/debug/syncz`` and its xDS twin.

One :class:`ProxySync` per proxy (:func:`~pilothouse.xds.server.proxies.proxies`), read
from its stream's watches (:func:`~pilothouse.xds.protocol.sync_report.type_syncs`).
It is written two ways:

- :func:`syncz_entry`: istiod's ``/debug/syncz`` JSON entry: ``proxy`` (``pod.ns``),
  ``proxy_type``, ``cluster_id``, ``istio_version``, ``proxy_version``,
  ``{cluster,listener,route,endpoint}_{sent,acked}`` (nonces), and ``resources`` with,
  per watched type URL, ``sent``, ``acked``, ``sentTime`` and ``lastError``. pilothouse
  adds, per type, ``version`` and the istioctl ``status`` those make, and per entry the
  ``replica`` that holds the stream, the full ``node_id`` and the ``namespace``.
- :func:`client_config`: the CSDS ``envoy.service.status.v3.ClientConfig`` istiod sends
  for ``istio.io/debug/syncz``: ``node`` (id ``pod.ns``, metadata ``CLUSTER_ID``,
  ``NAMESPACE``, ``ISTIO_VERSION``) and one ``generic_xds_configs`` entry per type
  (``type_url``, ``config_status``, ``version_info``, ``last_updated``, ``error_state``):
  LDS, RDS, EDS and CDS always (NOT_SENT when not watched, as istiod), then any other
  type the proxy watches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Protocol

from envoy.service.status.v3 import csds_pb2  # type: ignore[import-untyped]

from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.xds.protocol.delta import DeltaSession
from pilothouse.xds.protocol.sotw import SotwSession
from pilothouse.xds.protocol.sync_report import TypeSync, type_syncs
from pilothouse.xds.protocol.sync_status import SyncStatus
from pilothouse.xds.server.debug_view import rfc3339
from pilothouse.xds.server.proxies import proxies

SYNCZ_FIELDS: Final = (("cluster", CDS), ("listener", LDS), ("route", RDS), ("endpoint", EDS))
"""istiod's ``<prefix>_sent`` / ``<prefix>_acked`` pairs and the type each reports."""
CSDS_TYPES: Final = (LDS, RDS, EDS, CDS)
"""The types every CSDS entry lists, in istiod's order."""
_CONFIG_STATUS: Final[Mapping[SyncStatus, int]] = MappingProxyType(
    {
        SyncStatus.SYNCED: csds_pb2.SYNCED,
        SyncStatus.NOT_SENT: csds_pb2.NOT_SENT,
        SyncStatus.STALE: csds_pb2.STALE,
        SyncStatus.ERROR: csds_pb2.ERROR,
        SyncStatus.IGNORED: csds_pb2.UNKNOWN,
    }
)


class SyncedConnection(Protocol):
    """What syncz reads of a connection."""

    @property
    def id(self) -> str: ...

    @property
    def proxy(self) -> ProxyIdentity: ...

    @property
    def connected_at(self) -> float: ...

    @property
    def peer(self) -> str: ...

    def watched_types(self) -> list[str]: ...

    @property
    def session(self) -> SotwSession | DeltaSession: ...


@dataclass(frozen=True, slots=True)
class ProxySync:
    """One proxy's stream: who it is, where it is connected, and each watched type."""

    connection_id: str
    proxy: ProxyIdentity
    replica: str
    types: Mapping[str, TypeSync]

    def status(self, type_url: str) -> SyncStatus:
        found = self.types.get(type_url)
        return found.status if found is not None else SyncStatus.NOT_SENT


def proxy_syncs(
    connections: Iterable[SyncedConnection], replica: str, namespace: str = ""
) -> list[ProxySync]:
    """Every proxy among ``connections`` (in ``namespace`` when given), by proxy id."""
    return [
        ProxySync(c.id, c.proxy, replica, type_syncs(c.session))
        for c in proxies(connections)
        if not namespace or c.proxy.namespace == namespace
    ]


def proxy_version(proxy: ProxyIdentity) -> str:
    """The proxy's own version (``1.40.0`` of ``envoy/1.40.0``), if it said."""
    return proxy.user_agent.partition("/")[2]


def syncz_entry(sync: ProxySync) -> dict[str, Any]:
    """The ``/debug/syncz`` JSON entry of one proxy."""
    proxy = sync.proxy
    entry: dict[str, Any] = {
        "cluster_id": proxy.cluster_id,
        "proxy": proxy.id,
        "proxy_type": str(proxy.type),
        "proxy_version": proxy_version(proxy),
        "istio_version": proxy.istio_version,
    }
    for prefix, type_url in SYNCZ_FIELDS:
        found = sync.types.get(type_url)
        entry[f"{prefix}_sent"] = found.nonce_sent if found is not None else ""
        entry[f"{prefix}_acked"] = found.nonce_acked if found is not None else ""
    resources: dict[str, Any] = {}
    for type_url, found in sync.types.items():
        item: dict[str, Any] = {
            "sent": found.nonce_sent,
            "acked": found.nonce_acked,
            "version": found.version_sent,
            "status": found.status.value,
        }
        if found.sent_at is not None:
            item["sentTime"] = rfc3339(found.sent_at)
        if found.error is not None:
            item["lastError"] = found.error.message
        resources[type_url] = item
    entry["resources"] = resources
    entry["replica"] = sync.replica
    entry["node_id"] = proxy.node_id
    entry["namespace"] = proxy.namespace
    return entry


def client_config(sync: ProxySync) -> Any:
    """The CSDS ``ClientConfig`` of one proxy, as istiod's syncz sends it."""
    proxy = sync.proxy
    config = csds_pb2.ClientConfig()
    config.node.id = proxy.id
    metadata = config.node.metadata.fields
    metadata["CLUSTER_ID"].string_value = proxy.cluster_id
    metadata["NAMESPACE"].string_value = proxy.namespace
    metadata["ISTIO_VERSION"].string_value = proxy.istio_version
    listed = list(CSDS_TYPES) + [t for t in sync.types if t not in CSDS_TYPES]
    for type_url in listed:
        item = config.generic_xds_configs.add(type_url=type_url)
        found = sync.types.get(type_url)
        if found is None:
            item.config_status = csds_pb2.NOT_SENT
            continue
        item.config_status = _CONFIG_STATUS[found.status]
        item.version_info = found.version_sent
        if found.sent_at is not None:
            item.last_updated.FromNanoseconds(int(found.sent_at * 1e9))
        if found.error is not None:
            item.error_state.details = found.error.message
            item.error_state.version_info = found.version_sent
            if found.sent_at is not None:
                item.error_state.last_update_attempt.FromNanoseconds(int(found.sent_at * 1e9))
    return config
