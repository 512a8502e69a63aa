"""What a client subscribes to next: the follow-up policy the caller plugs into the engine.

The client engine knows the protocol (how to ask, ACK, NACK and resume); what
to ask for is the caller's.  A ``FollowUpPolicy`` maps the engine's per-type
watches to the subscription wanted now for every type; after every accepted
response the engine asks for the difference.  The load generator's policies
simulate Envoy (CDS, then EDS for the clusters' names, …) and grpcio
(``loadtest/plans``); the ``xds://`` source asks for a fixed list of Istio
config types, every one wildcard (``StaticSubscriptions``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Protocol

from pilothouse.protocol.client_watch import ClientWatch
from pilothouse.protocol.subscriptions import Subscription

WILDCARD_SUBSCRIPTION = Subscription(frozenset(), wildcard=True)


class FollowUpPolicy(Protocol):
    @property
    def order(self) -> tuple[str, ...]:
        """The types in the order the client requests them."""
        ...

    @property
    def ack_first(self) -> bool:
        """Whether a response is ACKed before the follow-up requests it causes."""
        ...

    def desired(self, watches: Mapping[str, ClientWatch]) -> Mapping[str, Subscription]:
        """The subscription wanted now for every type the client should watch.

        ``watches`` has an entry for every type of ``order``.
        """
        ...


class StaticSubscriptions:
    """Every type of a fixed list, wildcard, from the start; nothing follows from content."""

    ack_first = True

    def __init__(self, type_urls: Iterable[str]) -> None:
        self.order = tuple(type_urls)
        self._wanted = MappingProxyType(dict.fromkeys(self.order, WILDCARD_SUBSCRIPTION))

    def desired(self, watches: Mapping[str, ClientWatch]) -> Mapping[str, Subscription]:
        return self._wanted
