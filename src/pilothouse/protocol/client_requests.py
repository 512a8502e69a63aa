"""The requests the client engine decides to send, as frozen values.

``SotwClientRequest`` and ``DeltaClientRequest`` carry the fields of Envoy's
``DiscoveryRequest`` and ``DeltaDiscoveryRequest`` that a client sets, and read
like them (``HasField("error_detail")``, ``error_detail.message``…), so they
satisfy the request shapes of ``messages`` that the server engines read: a
client engine's output goes straight into a ``SotwSession`` or ``DeltaSession``
in memory.  ``client_wire`` turns them into bytes for the wire.

They are named tuples: a simulated proxy makes one per message, and tuples are
several times cheaper to build than frozen dataclasses.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, NamedTuple

from pilothouse.protocol.messages import NodeLike


class RequestStatus(NamedTuple):
    """``google.rpc.Status``: the ``error_detail`` of a NACK."""

    code: int
    message: str


class RequestNode(NamedTuple):
    """Stands in for an absent ``node``: only a stream's first request carries one."""

    id: str = ""


NO_STATUS: Final = RequestStatus(0, "")
"""``error_detail`` of a request that is not a NACK (``HasField`` says False)."""
NO_NODE: Final = RequestNode()
"""``node`` of a request that carries none (``HasField`` says False)."""
NO_VERSIONS: Final[Mapping[str, str]] = MappingProxyType({})

INTERNAL: Final = 13
"""``google.rpc.Code.INTERNAL``: what Envoy sets in a NACK's ``error_detail``."""


class SotwClientRequest(NamedTuple):
    """A ``DiscoveryRequest`` as the client engine decided it."""

    type_url: str
    version_info: str
    response_nonce: str
    resource_names: tuple[str, ...]
    error_detail: RequestStatus = NO_STATUS
    node: NodeLike = NO_NODE
    """The node message (``envoy.config.core.v3.Node``) on a stream's first request."""

    def HasField(self, field_name: str) -> bool:
        return has_field(self, field_name)

    def with_node(self, node: NodeLike) -> SotwClientRequest:
        return self._replace(node=node)


class DeltaClientRequest(NamedTuple):
    """A ``DeltaDiscoveryRequest`` as the client engine decided it."""

    type_url: str
    response_nonce: str = ""
    resource_names_subscribe: tuple[str, ...] = ()
    resource_names_unsubscribe: tuple[str, ...] = ()
    initial_resource_versions: Mapping[str, str] = NO_VERSIONS
    error_detail: RequestStatus = NO_STATUS
    node: NodeLike = NO_NODE

    def HasField(self, field_name: str) -> bool:
        return has_field(self, field_name)

    def with_node(self, node: NodeLike) -> DeltaClientRequest:
        return self._replace(node=node)


ClientRequest = SotwClientRequest | DeltaClientRequest


def has_field(request: ClientRequest, field_name: str) -> bool:
    """protobuf's ``HasField`` for the two message fields a client sets."""
    if field_name == "error_detail":
        return request.error_detail is not NO_STATUS
    if field_name == "node":
        return request.node is not NO_NODE
    raise ValueError(f"{type(request).__name__} has no message field {field_name!r}")
