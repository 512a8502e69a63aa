"""The incremental (delta) client: ``DeltaDiscoveryResponse`` in, ``DeltaDiscoveryRequest`` out.

- An ACK carries only the response's nonce; a NACK adds ``error_detail``.
- A subscription change is a request of its own with an empty nonce, the
  names added in ``resource_names_subscribe`` and the names dropped in
  ``resource_names_unsubscribe`` (``"*"`` for the wildcard either way).
- The first request for a type on a stream subscribes to everything wanted
  (a bare wildcard in the legacy form: both lists empty) and reports every
  resource held that the subscription covers in ``initial_resource_versions``,
  so a server may skip what did not change while the stream was down.
- A response updates the names it carries (those subscribed) and deletes the
  names in ``removed_resources``; ``Resource.version`` is what is kept per
  resource.  A resource without a body is a TTL heartbeat: nothing to apply.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pilothouse.protocol.client import (
    BodyReader,
    ClientEngine,
    Delivery,
    Incoming,
    RejectedResponse,
    skips_empty,
)
from pilothouse.protocol.client_requests import DeltaClientRequest, RequestStatus
from pilothouse.protocol.client_watch import ClientWatch, HeldResource
from pilothouse.protocol.subscriptions import WILDCARD, Subscription


def removed_names(response: Any) -> tuple[str, ...]:
    """``removed_resources`` and the names of ``removed_resource_names``."""
    removed = tuple(response.removed_resources)
    extra = response.removed_resource_names
    if extra:
        removed += tuple(entry.name for entry in extra)
    return removed


class DeltaClientEngine(ClientEngine):
    """A client's side of a delta ADS stream (Envoy's behaviour)."""

    def read(self, response: Any, read_body: BodyReader) -> list[Incoming]:
        type_url = response.type_url
        incoming: list[Incoming] = []
        for resource in response.resources:
            if not resource.HasField("resource"):
                continue
            packed = resource.resource
            if packed.type_url != type_url:
                raise RejectedResponse(
                    f"resource of type {packed.type_url} in a {type_url} response"
                )
            name = resource.name or resource.resource_name.name
            incoming.append((read_body(type_url, packed.value, name), resource.version))
        return incoming

    def _delivery(self, response: Any, watch: ClientWatch) -> Delivery:
        return Delivery(
            watch.type_url,
            response.system_version_info,
            watch.nonce,
            removed_names(response),
            watch,
        )

    def _apply(
        self, watch: ClientWatch, incoming: Sequence[Incoming], removed: tuple[str, ...]
    ) -> tuple[dict[str, HeldResource], bool]:
        held = dict(watch.held)
        created = self._merge(watch, incoming, held)
        for name in removed:
            held.pop(name, None)
        return held, created

    def _ack(self, watch: ClientWatch) -> DeltaClientRequest:
        return DeltaClientRequest(watch.type_url, watch.nonce)

    def _nack(self, watch: ClientWatch, status: RequestStatus) -> DeltaClientRequest:
        return DeltaClientRequest(watch.type_url, watch.nonce, error_detail=status)

    def _subscribe(
        self, watch: ClientWatch, subscription: Subscription
    ) -> DeltaClientRequest | None:
        if not watch.requested_on_stream:
            return self._initial(watch, subscription)
        before = watch.subscription
        subscribe = sorted(subscription.names - before.names)
        unsubscribe = sorted(before.names - subscription.names)
        if subscription.wildcard and not before.wildcard:
            subscribe.insert(0, WILDCARD)
        if before.wildcard and not subscription.wildcard:
            unsubscribe.insert(0, WILDCARD)
        if not subscribe and not unsubscribe:
            return None
        return DeltaClientRequest(
            watch.type_url,
            resource_names_subscribe=tuple(subscribe),
            resource_names_unsubscribe=tuple(unsubscribe),
        )

    def _initial(self, watch: ClientWatch, subscription: Subscription) -> DeltaClientRequest | None:
        if skips_empty(watch, subscription):
            return None
        subscribe = sorted(subscription.names)
        if subscription.wildcard and subscribe:
            subscribe.insert(0, WILDCARD)
        held = {
            name: resource.version
            for name, resource in watch.held.items()
            if subscription.covers(name)
        }
        return DeltaClientRequest(
            watch.type_url,
            resource_names_subscribe=tuple(subscribe),
            initial_resource_versions=held,
        )
