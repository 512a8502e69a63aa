"""The ``istio.io/debug/*`` types on an ADS stream, answered as istiod answers them.

``istioctl proxy-status`` (and ``pilothouse proxy-status`` when pointed at xDS) opens
an ADS stream with ``GENERATOR=event`` and asks:

- ``istio.io/debug/syncz``: one ``envoy.service.status.v3.ClientConfig`` per proxy
  connected to this replica (:mod:`pilothouse.xds.server.syncz`), named by proxy id;
  the asking client itself is not listed;
- ``istio.io/debug/config_dump`` with one resource name, a proxy id (``pod.ns``, or a
  full node id): the ``configs`` of what pilothouse would send that proxy
  (:mod:`pilothouse.xds.server.config_dump`: ClustersConfigDump, ListenersConfigDump,
  RoutesConfigDump), one ``Any`` each, unnamed as istiod sends them (named by their
  type on delta streams, where a resource needs a name). A proxy not connected here
  gets an empty answer, as from istiod: the client asks the other replicas.

These are questions, not subscriptions: each request without a ``response_nonce`` is
answered once, from the state at that moment, and the client's ACK (or NACK) of the
answer is not answered again. So they are handled here, beside the stream engine,
which never sees them and keeps no watch for them. Another ``istio.io/debug/...`` name
gets an empty answer.

Access follows the HTTP debug endpoints (:mod:`pilothouse.boundary.debug_access`): a
peer that is not on loopback is refused with PERMISSION_DENIED unless
``PILOTHOUSE_DEBUG_ALLOW_REMOTE`` is set. On the TLS port the caller's identity
decides instead (root namespace only, :mod:`pilothouse.xds.server.tls_guard`). Every
answer carries the replica's ``control_plane`` like any other response.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping
from typing import Any, Final, Protocol

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2

from pilothouse.boundary.debug_access import debug_denial, grpc_peer_host
from pilothouse.settings import XdsSettings
from pilothouse.xds.server.backend import Backend
from pilothouse.xds.server.config_dump import config_dump, proxy_dump
from pilothouse.xds.server.connection import Connection
from pilothouse.xds.server.control_plane import ControlPlaneIdentity
from pilothouse.xds.server.proxies import find_connection
from pilothouse.xds.server.syncz import client_config, proxy_syncs

DEBUG_PREFIX: Final = "istio.io/debug"
SYNCZ: Final = "istio.io/debug/syncz"
CONFIG_DUMP: Final = "istio.io/debug/config_dump"

log = logging.getLogger("pilothouse.xds")


class DebugDenied(Exception):
    """The peer may not read debug types; the message says why and what opens them."""


class DebugBackend(Backend, Protocol):
    """What the answers read from the discovery server."""

    @property
    def settings(self) -> XdsSettings: ...

    @property
    def identity(self) -> ControlPlaneIdentity: ...

    @property
    def connections(self) -> Mapping[str, Connection]: ...


_DEBUG_TYPES: Final = DEBUG_PREFIX + "/"


def is_debug_type(type_url: str) -> bool:
    """Whether ``type_url`` is one of the debug types (asked on every request of a
    stream: the prefix is made once)."""
    return type_url == DEBUG_PREFIX or type_url.startswith(_DEBUG_TYPES)


class DebugAnswers:
    """Answers debug requests on the streams of one discovery server."""

    def __init__(self, backend: DebugBackend) -> None:
        self._backend = backend
        self._nonces = itertools.count(1)

    def answer(
        self, connection: Connection, request: Any, *, delta: bool, authorised: bool = False
    ) -> bytes | None:
        """The encoded response to ``request`` (a debug type), or None for an ACK/NACK.

        ``authorised``: the caller's identity was checked already (the TLS port: root
        namespace only), so the peer's address does not matter. Otherwise raises
        :class:`DebugDenied` when the peer may not ask.
        """
        backend = self._backend
        denial = debug_denial(
            grpc_peer_host(connection.peer), allow_remote=backend.settings.debug_allow_remote
        )
        if denial is not None and not authorised:
            raise DebugDenied(denial)
        if request.response_nonce:
            return None
        type_url = request.type_url
        names = list(request.resource_names_subscribe if delta else request.resource_names)
        resources = self._resources(type_url, names)
        if delta:
            return self._delta(type_url, resources)
        return self._sotw(type_url, [body for _, body in resources])

    def _resources(self, type_url: str, names: list[str]) -> list[tuple[str, Any]]:
        backend = self._backend
        if type_url == SYNCZ:
            syncs = proxy_syncs(backend.connections.values(), backend.identity.replica)
            return [(s.proxy.id, _packed(client_config(s))) for s in syncs]
        if type_url == CONFIG_DUMP:
            wanted = [n for n in names if n != "*"]
            if len(wanted) != 1:
                log.info("%s asked with %d resource names; expected 1", CONFIG_DUMP, len(wanted))
                return []
            target = find_connection(backend.connections, wanted[0])
            if target is None:
                log.debug("%s: %s is not connected to this replica", CONFIG_DUMP, wanted[0])
                return []
            dump = config_dump(proxy_dump(target.proxy, target.session.wants, backend))
            return [(f"{wanted[0]}/{_kind(part)}", part) for part in dump.configs]
        return []

    def _nonce(self) -> str:
        return f"debug-{next(self._nonces)}"

    def _sotw(self, type_url: str, bodies: list[Any]) -> bytes:
        response = discovery_pb2.DiscoveryResponse(
            version_info=self._backend.version, type_url=type_url, nonce=self._nonce()
        )
        response.resources.extend(bodies)
        response.control_plane.identifier = self._backend.identity.identifier
        return bytes(response.SerializeToString())

    def _delta(self, type_url: str, resources: list[tuple[str, Any]]) -> bytes:
        response = discovery_pb2.DeltaDiscoveryResponse(
            system_version_info=self._backend.version, type_url=type_url, nonce=self._nonce()
        )
        for name, body in resources:
            response.resources.add(name=name, version=self._backend.version, resource=body)
        response.control_plane.identifier = self._backend.identity.identifier
        return bytes(response.SerializeToString())


def _kind(packed: Any) -> str:
    """``ClustersConfigDump`` of an ``Any`` holding one."""
    return str(packed.type_url).rsplit(".", 1)[-1]


def _packed(message: Any) -> Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed
