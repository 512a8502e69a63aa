"""What differs between a SotW and a delta ADS stream the agent relays: the messages,
how Envoy's subscriptions are kept, and what a new upstream call is sent first.

Both keep, per type, what Envoy subscribes to now, and both resend it on a new upstream
call in push order (CDS, EDS, LDS, RDS, then others) with the node on the first request
and no version or nonce: SotW sends each type's last resource names; delta subscribes
again to each type's names (plus ``*`` or, alone, the legacy empty wildcard) with no
``initial_resource_versions``, so the new server sends everything anew.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.agent.delta_secret_stream import DeltaSecretStream
from pilothouse.agent.secret_stream import SecretSource, SecretStream
from pilothouse.protocol.type_urls import push_order_key
from pilothouse.security.identity import SpiffeId

SOTW_METHOD: Final = (
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
)
DELTA_METHOD: Final = (
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources"
)
WILDCARD: Final = "*"


class Secrets(Protocol):
    """The agent's SDS side of one stream (SotW or delta)."""

    identity: SpiffeId

    def request(self, request: Any) -> bool: ...

    def response(self) -> bytes | None: ...


class Flavour(Protocol):
    method: str

    def parse(self, body: bytes) -> Any: ...

    def record(self, request: Any) -> None: ...

    def resend(self, node: Any) -> list[bytes]: ...

    def secrets(self, identity: SpiffeId, source: SecretSource) -> Secrets: ...


@dataclass(slots=True)
class SotwFlavour:
    """``StreamAggregatedResources``: each request names all of its type."""

    method: str = SOTW_METHOD
    subscriptions: dict[str, tuple[str, ...]] = field(default_factory=dict)
    parse: Callable[[bytes], Any] = discovery_pb2.DiscoveryRequest.FromString

    def record(self, request: Any) -> None:
        self.subscriptions[request.type_url] = tuple(request.resource_names)

    def resend(self, node: Any) -> list[bytes]:
        out: list[bytes] = []
        for type_url in sorted(self.subscriptions, key=push_order_key):
            request = discovery_pb2.DiscoveryRequest(
                type_url=type_url, resource_names=self.subscriptions[type_url]
            )
            if not out and node is not None:
                request.node.CopyFrom(node)
            out.append(request.SerializeToString())
        return out

    def secrets(self, identity: SpiffeId, source: SecretSource) -> Secrets:
        return SecretStream(identity, source)


@dataclass(slots=True)
class DeltaFlavour:
    """``DeltaAggregatedResources``: requests subscribe and unsubscribe names."""

    method: str = DELTA_METHOD
    names: dict[str, set[str]] = field(default_factory=dict)
    wildcard: set[str] = field(default_factory=set)
    """Types Envoy subscribes to by wildcard."""
    parse: Callable[[bytes], Any] = discovery_pb2.DeltaDiscoveryRequest.FromString

    def record(self, request: Any) -> None:
        type_url = request.type_url
        first = type_url not in self.names
        names = self.names.setdefault(type_url, set())
        if first and not request.resource_names_subscribe:
            self.wildcard.add(type_url)  # the legacy wildcard: an empty first request
        for name in request.resource_names_subscribe:
            if name == WILDCARD:
                self.wildcard.add(type_url)
            else:
                names.add(name)
        for name in request.resource_names_unsubscribe:
            if name == WILDCARD:
                self.wildcard.discard(type_url)
            else:
                names.discard(name)

    def resend(self, node: Any) -> list[bytes]:
        out: list[bytes] = []
        for type_url in sorted(self.names, key=push_order_key):
            names = sorted(self.names[type_url])
            if type_url in self.wildcard and names:
                names.append(WILDCARD)
            request = discovery_pb2.DeltaDiscoveryRequest(
                type_url=type_url, resource_names_subscribe=names
            )
            if not out and node is not None:
                request.node.CopyFrom(node)
            out.append(request.SerializeToString())
        return out

    def secrets(self, identity: SpiffeId, source: SecretSource) -> Secrets:
        return DeltaSecretStream(identity, source)
