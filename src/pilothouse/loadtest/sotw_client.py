"""The state-of-the-world client: ``DiscoveryResponse`` in, ``DiscoveryRequest`` out.

- An ACK repeats the response's ``version_info`` and nonce with the type's
  current ``resource_names`` (the legacy empty list for a wildcard type).
- A NACK carries the response's nonce, ``error_detail``, and as
  ``version_info`` the last version accepted ("" if none).
- A subscription change (EDS names after a CDS update, say) carries the last
  accepted version and the last nonce received for the type on this stream,
  as Envoy does; on a new stream the nonce is empty.
- CDS and LDS responses hold the full set (a name left out is deleted); EDS
  and RDS responses update the names they carry, and a name the proxy stops
  subscribing to is dropped.
- Resources may arrive bare or wrapped in ``envoy.service.discovery.v3.Resource``
  (the ``xds.config.resource-in-sotw`` form).
"""

from __future__ import annotations

from typing import Any, Final

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.loadtest.engine import ClientEngine, Incoming, RejectedResponse
from pilothouse.loadtest.holdings import HeldResource, TypeState
from pilothouse.xds.protocol.subscriptions import WILDCARD, Subscription
from pilothouse.xds.protocol.type_urls import TYPE_PREFIX, is_full_state_type

RESOURCE_WRAPPER: Final = TYPE_PREFIX + "envoy.service.discovery.v3.Resource"


def resource_names(subscription: Subscription) -> list[str]:
    """``resource_names`` for a subscription; a bare wildcard is the legacy empty list."""
    names = sorted(subscription.names)
    if subscription.wildcard and names:
        return [WILDCARD, *names]
    return names


class SotwClient(ClientEngine):
    """Envoy's (or grpcio's) side of a SotW ADS stream."""

    keeps_version_of_unchanged = True

    def _read(self, state: TypeState, response: Any) -> tuple[list[Incoming], list[str]]:
        type_url = state.type_url
        version = str(response.version_info)
        incoming: list[Incoming] = []
        for packed in response.resources:
            name: str | None = None
            body = packed.value
            if packed.type_url == RESOURCE_WRAPPER:
                wrapped = discovery_pb2.Resource.FromString(body)
                name = wrapped.name or None
                packed = wrapped.resource
                body = packed.value
            if packed.type_url != type_url:
                raise RejectedResponse(
                    f"resource of type {packed.type_url} in a {type_url} response"
                )
            incoming.append((self._read_facts(type_url, body, name), version))
        return incoming, []

    def _response_version(self, response: Any) -> str:
        return str(response.version_info)

    def _apply(
        self, state: TypeState, incoming: list[Incoming], removed: list[str]
    ) -> tuple[dict[str, HeldResource], bool]:
        held = {} if is_full_state_type(state.type_url) else dict(state.held)
        created = self._merge(state, incoming, held)
        return held, created

    def _accepted(self, state: TypeState, response: Any) -> None:
        state.version_info = str(response.version_info)

    def _request(self, state: TypeState) -> Any:
        return discovery_pb2.DiscoveryRequest(
            type_url=state.type_url,
            version_info=state.version_info,
            response_nonce=state.nonce,
            resource_names=resource_names(state.subscription),
        )

    def _ack(self, state: TypeState) -> Any:
        return self._request(state)

    def _nack(self, state: TypeState, error: str) -> Any:
        request = self._request(state)
        request.error_detail.CopyFrom(self._status(error))
        return request

    def _subscribe(self, state: TypeState, subscription: Subscription) -> Any | None:
        if not state.requested_on_stream and self._skip_empty(subscription):
            return None
        return discovery_pb2.DiscoveryRequest(
            type_url=state.type_url,
            version_info=state.version_info,
            response_nonce=state.nonce,
            resource_names=resource_names(subscription),
        )
