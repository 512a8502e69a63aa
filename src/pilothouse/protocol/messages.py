"""The shapes of xDS requests the engines read, and the NACK error they record.

The engines take Envoy's ``DiscoveryRequest`` and ``DeltaDiscoveryRequest``
(``envoy.service.discovery.v3.discovery_pb2``) but describe them here as
structural types, so that they depend on the fields they read and nothing else
(no grpc, no generated code at import time).  A real protobuf message satisfies
these protocols, and so does any test double with the same attributes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class StatusLike(Protocol):
    """``google.rpc.Status``: what a NACK carries in ``error_detail``."""

    @property
    def code(self) -> int: ...

    @property
    def message(self) -> str: ...


class NodeLike(Protocol):
    """``envoy.config.core.v3.Node``; the engines only keep it."""

    @property
    def id(self) -> str: ...


class SotwRequest(Protocol):
    """``envoy.service.discovery.v3.DiscoveryRequest``."""

    @property
    def type_url(self) -> str: ...

    @property
    def version_info(self) -> str: ...

    @property
    def response_nonce(self) -> str: ...

    @property
    def resource_names(self) -> Sequence[str]: ...

    @property
    def node(self) -> NodeLike: ...

    @property
    def error_detail(self) -> StatusLike: ...

    def HasField(self, field_name: Any) -> bool: ...


class DeltaRequest(Protocol):
    """``envoy.service.discovery.v3.DeltaDiscoveryRequest``."""

    @property
    def type_url(self) -> str: ...

    @property
    def response_nonce(self) -> str: ...

    @property
    def resource_names_subscribe(self) -> Iterable[str]: ...

    @property
    def resource_names_unsubscribe(self) -> Iterable[str]: ...

    @property
    def initial_resource_versions(self) -> Mapping[str, str]: ...

    @property
    def node(self) -> NodeLike: ...

    @property
    def error_detail(self) -> StatusLike: ...

    def HasField(self, field_name: Any) -> bool: ...


@dataclass(frozen=True)
class NackError:
    """Why a client rejected a response: the ``error_detail`` of its NACK."""

    code: int
    message: str

    @classmethod
    def from_status(cls, status: StatusLike) -> NackError:
        return cls(code=int(status.code), message=str(status.message))


def nack_error(request: SotwRequest | DeltaRequest) -> NackError | None:
    """The NACK carried by a request, or None for an ACK or a plain request.

    Presence of ``error_detail`` is the only reliable NACK test; a version
    mismatch means nothing.
    """
    if request.HasField("error_detail"):
        return NackError.from_status(request.error_detail)
    return None


def carried_node(request: SotwRequest | DeltaRequest) -> NodeLike | None:
    """The node in a request, or None when the client left it out (only the first carries it)."""
    if request.HasField("node"):
        return request.node
    return None
