"""One delta SDS subscription between Envoy and the agent (on a DELTA_GRPC ADS stream).

No I/O, like :class:`~pilothouse.agent.secret_stream.SecretStream`: Envoy's
``DeltaDiscoveryRequest`` s change what is subscribed (``resource_names_subscribe`` /
``_unsubscribe``; a nonce does not matter for that, as delta xDS says), and
:meth:`DeltaSecretStream.response` sends only the secrets that are new to the stream or
changed since they were sent, each with a version (a digest of its encoding). A NACK
(``error_detail``) is logged and counted; nothing is resent until the secret changes.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2

from pilothouse.agent.secret_stream import SecretSource
from pilothouse.protocol.type_urls import SDS
from pilothouse.security.identity import SpiffeId

log = logging.getLogger("pilothouse.agent.sds")


@dataclass(slots=True)
class DeltaSecretStream:
    """What one delta stream subscribes to and was sent, by name."""

    identity: SpiffeId
    source: SecretSource
    subscribed: set[str] = field(default_factory=set)
    sent: dict[str, str] = field(default_factory=dict)
    """Version sent, by name."""
    nonce: str = ""
    count: int = 0
    nacks: int = 0

    @property
    def watched(self) -> frozenset[str]:
        return frozenset(self.subscribed)

    def request(self, request: discovery_pb2.DeltaDiscoveryRequest) -> bool:
        """Take Envoy's request; True when a response may be due now."""
        if request.type_url != SDS:
            return False
        if request.HasField("error_detail"):
            self.nacks += 1
            log.warning(
                "Envoy rejected secrets: %s",
                request.error_detail.message,
                extra={"identity": str(self.identity)},
            )
        for name in request.resource_names_subscribe:
            self.subscribed.add(name)
            self.sent.pop(name, None)  # (re)subscribed: send what is held
        for name in request.resource_names_unsubscribe:
            self.subscribed.discard(name)
            self.sent.pop(name, None)
        return bool(request.resource_names_subscribe)

    def response(self) -> bytes | None:
        """A response with what is held and new to the stream; None if nothing is."""
        response = discovery_pb2.DeltaDiscoveryResponse(type_url=SDS)
        for name in sorted(self.subscribed):
            body = self.source(self.identity, name)
            if body is None:
                continue
            version = hashlib.sha256(body).hexdigest()[:16]
            if self.sent.get(name) == version:
                continue
            self.sent[name] = version
            resource = response.resources.add(name=name, version=version)
            resource.resource.CopyFrom(any_pb2.Any.FromString(body))
        if not response.resources:
            return None
        self.count += 1
        self.nonce = response.nonce = f"agent-{self.count}"
        return bytes(response.SerializeToString())
