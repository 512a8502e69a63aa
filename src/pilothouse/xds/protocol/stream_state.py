"""What every stream engine keeps, whatever the protocol: the node, watches, counters."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Generic, Protocol, Self, TypeVar

from pilothouse.protocol.messages import DeltaRequest, NodeLike, SotwRequest, carried_node
from pilothouse.protocol.subscriptions import Subscription


class Watched(Protocol):
    @property
    def subscription(self) -> Subscription: ...

    @property
    def always_respond(self) -> bool: ...

    def warming(self) -> Self:
        """The watch with the warming flag set."""
        ...

    def answered(self) -> Self:
        """The watch with the warming flag cleared."""
        ...


W = TypeVar("W", bound=Watched)


class StreamState(Generic[W]):
    """The node from the first request that carried one, one watch per type, and the
    per-type counters ``pilot_xds_expired_nonce`` and ``pilot_total_xds_rejects`` read."""

    def __init__(self) -> None:
        self._node: NodeLike | None = None
        self._watches: dict[str, W] = {}
        self._expired_nonces: dict[str, int] = {}
        self._rejects: dict[str, int] = {}

    @property
    def node(self) -> NodeLike | None:
        """The node from the first request that carried one."""
        return self._node

    @property
    def watches(self) -> Mapping[str, W]:
        return MappingProxyType(self._watches)

    def watch(self, type_url: str) -> W | None:
        return self._watches.get(type_url)

    def wants(self, type_url: str) -> Subscription | None:
        """The subscription for the type, or None if the client does not watch it."""
        watch = self._watches.get(type_url)
        return None if watch is None else watch.subscription

    @property
    def expired_nonces(self) -> Mapping[str, int]:
        """Stale-nonce requests per type (``pilot_xds_expired_nonce``)."""
        return MappingProxyType(self._expired_nonces)

    @property
    def rejects(self) -> Mapping[str, int]:
        """NACKs per type (``pilot_total_xds_rejects``)."""
        return MappingProxyType(self._rejects)

    def _keep_node(self, request: SotwRequest | DeltaRequest) -> None:
        if self._node is None:  # later requests' nodes are ignored: not even read
            self._node = carried_node(request)

    def warming_answered(self, type_url: str) -> None:
        """A response for ``type_url`` went out after the type it warms on (the EDS
        assignments of the clusters a push just changed, sent right behind their CDS):
        that is the fresh response the warming clusters wait for, so the next ACK is an
        ACK again. Answering it too would send every assignment a second time."""
        watch = self._watches.get(type_url)
        if watch is not None and watch.always_respond:
            self._watches[type_url] = watch.answered()

    def mark_always_respond(self, type_url: str) -> None:
        """Answer the next ACK (SotW; delta: or subscription request) for ``type_url``
        even if its names did not change."""
        watch = self._watches.get(type_url)
        if watch is not None:
            self._watches[type_url] = watch.warming()
