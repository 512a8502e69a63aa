"""One SotW SDS stream between Envoy and the agent: which secrets it watches, what to send.

No I/O: the stream is fed Envoy's ``DiscoveryRequest`` and answers whether a response is
due; :meth:`SecretStream.response` encodes it (only the names the agent holds now; none
held means no response yet, and the next certificate change brings it). xDS rules:

- a request with no nonce (the first, or a new subscription) is answered;
- a request whose nonce is not the last one sent is stale and ignored;
- an ACK (last nonce, same names) needs nothing; a NACK (``error_detail``) is logged and
  nothing is resent until the secret changes;
- a request naming other secrets is answered with those.

The same stream serves SDS on the agent's SDS socket and the SDS requests Envoy sends on
its ADS stream (answered by the agent, never forwarded to pilothouse).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.protocol.type_urls import SDS
from pilothouse.security.identity import SpiffeId
from pilothouse.xds.protocol.wire import sotw_response

log = logging.getLogger("pilothouse.agent.sds")

SecretSource = Callable[[SpiffeId, str], bytes | None]
"""Encoded ``Any`` of a named secret for an identity, or None if not held."""


@dataclass(slots=True)
class SecretStream:
    """What one stream watches and was sent (one per Envoy stream)."""

    identity: SpiffeId
    source: SecretSource
    watched: frozenset[str] = frozenset()
    sent: dict[str, bytes] = field(default_factory=dict)
    """What the last response held, by name."""
    nonce: str = ""
    version: int = 0
    nacks: int = 0

    def request(self, request: discovery_pb2.DiscoveryRequest) -> bool:
        """Take Envoy's request; True when a response is due now."""
        if request.type_url != SDS:
            return False
        if request.response_nonce and request.response_nonce != self.nonce:
            return False  # stale: answers a response that was superseded
        names = frozenset(request.resource_names)
        if request.HasField("error_detail"):
            self.nacks += 1
            log.warning(
                "Envoy rejected secrets: %s",
                request.error_detail.message,
                extra={"identity": str(self.identity), "secrets": ",".join(sorted(names))},
            )
        changed = names != self.watched
        self.watched = names
        if not request.response_nonce:
            self.sent.clear()  # a new subscription: send what is held again
            return True
        return changed

    def response(self) -> bytes | None:
        """The response for what is watched, if any of it is held and it differs from
        what was sent; None otherwise."""
        held = {}
        for name in sorted(self.watched):
            body = self.source(self.identity, name)
            if body is not None:
                held[name] = body
        if not held or held == self.sent:
            return None
        self.sent = held
        self.version += 1
        self.nonce = f"agent-{self.version}"
        return sotw_response(str(self.version), SDS, self.nonce, tuple(held.values()))
