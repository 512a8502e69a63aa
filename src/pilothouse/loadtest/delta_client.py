"""The incremental (delta) client: ``DeltaDiscoveryResponse`` in, ``DeltaDiscoveryRequest`` out.

- An ACK carries only the response's nonce; a NACK adds ``error_detail``.
- A subscription change is a request of its own with an empty nonce and the
  names added in ``resource_names_subscribe`` and the names dropped in
  ``resource_names_unsubscribe`` (Envoy 1.40, reference §5).
- The first request for a type on a stream subscribes to everything wanted
  (a bare wildcard in the legacy form: both lists empty) and reports every
  resource held in ``initial_resource_versions``, so a server may skip what
  did not change while the stream was down.
- A response updates the names it carries (those the proxy subscribes to) and
  deletes the names in ``removed_resources``; ``Resource.version`` is what the
  proxy keeps per resource.
"""

from __future__ import annotations

from typing import Any

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.loadtest.engine import ClientEngine, Incoming, RejectedResponse
from pilothouse.loadtest.holdings import HeldResource, TypeState
from pilothouse.xds.protocol.subscriptions import WILDCARD, Subscription


class DeltaClient(ClientEngine):
    """Envoy's side of a delta ADS stream."""

    def _read(self, state: TypeState, response: Any) -> tuple[list[Incoming], list[str]]:
        type_url = state.type_url
        incoming: list[Incoming] = []
        for resource in response.resources:
            if not resource.HasField("resource"):
                continue  # a TTL heartbeat: nothing to apply
            packed = resource.resource
            if packed.type_url != type_url:
                raise RejectedResponse(
                    f"resource of type {packed.type_url} in a {type_url} response"
                )
            name = resource.name or resource.resource_name.name
            facts = self._read_facts(type_url, packed.value, name)
            incoming.append((facts, str(resource.version)))
        removed = list(response.removed_resources)
        removed.extend(entry.name for entry in response.removed_resource_names)
        return incoming, removed

    def _response_version(self, response: Any) -> str:
        return str(response.system_version_info)

    def _apply(
        self, state: TypeState, incoming: list[Incoming], removed: list[str]
    ) -> tuple[dict[str, HeldResource], bool]:
        held = dict(state.held)
        created = self._merge(state, incoming, held)
        for name in removed:
            held.pop(name, None)
        return held, created

    def _ack(self, state: TypeState) -> Any:
        return discovery_pb2.DeltaDiscoveryRequest(
            type_url=state.type_url, response_nonce=state.nonce
        )

    def _nack(self, state: TypeState, error: str) -> Any:
        request = self._ack(state)
        request.error_detail.CopyFrom(self._status(error))
        return request

    def _subscribe(self, state: TypeState, subscription: Subscription) -> Any | None:
        if not state.requested_on_stream:
            return self._initial(state, subscription)
        before = state.subscription
        subscribe = sorted(subscription.names - before.names)
        unsubscribe = sorted(before.names - subscription.names)
        if subscription.wildcard and not before.wildcard:
            subscribe.insert(0, WILDCARD)
        if before.wildcard and not subscription.wildcard:
            unsubscribe.insert(0, WILDCARD)
        if not subscribe and not unsubscribe:
            return None
        return discovery_pb2.DeltaDiscoveryRequest(
            type_url=state.type_url,
            resource_names_subscribe=subscribe,
            resource_names_unsubscribe=unsubscribe,
        )

    def _initial(self, state: TypeState, subscription: Subscription) -> Any | None:
        if self._skip_empty(subscription):
            return None
        subscribe = sorted(subscription.names)
        if subscription.wildcard and subscribe:
            subscribe.insert(0, WILDCARD)
        held = {
            name: resource.version
            for name, resource in state.held.items()
            if subscription.covers(name)
        }
        return discovery_pb2.DeltaDiscoveryRequest(
            type_url=state.type_url,
            resource_names_subscribe=subscribe,
            initial_resource_versions=held,
        )
