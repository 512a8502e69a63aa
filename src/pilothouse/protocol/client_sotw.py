"""The state-of-the-world client: ``DiscoveryResponse`` in, ``DiscoveryRequest`` out.

- An ACK repeats the response's ``version_info`` and nonce with the type's
  current ``resource_names`` (the legacy empty list for a bare wildcard).
- A NACK carries the response's nonce, ``error_detail``, and as
  ``version_info`` the last version accepted ("" if none).
- A subscription change (EDS names after a CDS update, say) carries the last
  accepted version and the last nonce received for the type on this stream,
  as Envoy does; on a new stream the nonce is empty, so the first request
  after a reconnect resumes from the version held.
- Full-state types (CDS, LDS, Istio config types) replace what is held with
  every response (a name left out is deleted); EDS and RDS responses update
  the names they carry, and a name no longer subscribed is dropped.
- Resources may arrive bare or wrapped in ``envoy.service.discovery.v3.Resource``
  (the ``xds.config.resource-in-sotw`` form); a resource of another type
  rejects the response.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from pilothouse.protocol.client import (
    BodyReader,
    ClientEngine,
    Delivery,
    Incoming,
    RejectedResponse,
    skips_empty,
)
from pilothouse.protocol.client_requests import RequestStatus, SotwClientRequest
from pilothouse.protocol.client_watch import ClientWatch, HeldResource, sotw_resource_names
from pilothouse.protocol.subscriptions import Subscription
from pilothouse.protocol.type_urls import TYPE_PREFIX, is_full_state_type

RESOURCE_WRAPPER: Final = TYPE_PREFIX + "envoy.service.discovery.v3.Resource"
NO_REMOVALS: Final[tuple[str, ...]] = ()


def unwrap_resource(body: bytes) -> tuple[str, str, bytes]:
    """``(name, type_url, body)`` of an ``envoy.service.discovery.v3.Resource`` wrapper.

    Imported late: the engine itself needs no generated code.
    """
    from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

    wrapped = discovery_pb2.Resource.FromString(body)
    packed = wrapped.resource
    return str(wrapped.name), str(packed.type_url), bytes(packed.value)


class SotwClientEngine(ClientEngine):
    """A client's side of a SotW ADS stream (Envoy, grpcio, istiod as a config consumer)."""

    keeps_version_of_unchanged = True

    def read(self, response: Any, read_body: BodyReader) -> list[Incoming]:
        type_url = response.type_url
        version = response.version_info
        incoming: list[Incoming] = []
        for packed in response.resources:
            name: str | None = None
            packed_type = packed.type_url
            body = packed.value
            if packed_type == RESOURCE_WRAPPER:
                name, packed_type, body = unwrap_resource(body)
                name = name or None
            if packed_type != type_url:
                raise RejectedResponse(f"resource of type {packed_type} in a {type_url} response")
            incoming.append((read_body(type_url, body, name), version))
        return incoming

    def _delivery(self, response: Any, watch: ClientWatch) -> Delivery:
        return Delivery(watch.type_url, response.version_info, watch.nonce, NO_REMOVALS, watch)

    def _apply(
        self, watch: ClientWatch, incoming: Sequence[Incoming], removed: tuple[str, ...]
    ) -> tuple[dict[str, HeldResource], bool]:
        held = {} if is_full_state_type(watch.type_url) else dict(watch.held)
        created = self._merge(watch, incoming, held)
        return held, created

    def _accepted(self, watch: ClientWatch, delivery: Delivery) -> None:
        watch.version_info = delivery.version

    def _ack(self, watch: ClientWatch) -> SotwClientRequest:
        return SotwClientRequest(
            watch.type_url, watch.version_info, watch.nonce, watch.resource_names
        )

    def _nack(self, watch: ClientWatch, status: RequestStatus) -> SotwClientRequest:
        return SotwClientRequest(
            watch.type_url, watch.version_info, watch.nonce, watch.resource_names, status
        )

    def _subscribe(
        self, watch: ClientWatch, subscription: Subscription
    ) -> SotwClientRequest | None:
        if skips_empty(watch, subscription):
            return None
        return SotwClientRequest(
            watch.type_url, watch.version_info, watch.nonce, sotw_resource_names(subscription)
        )
