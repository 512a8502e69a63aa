"""Builders of real Envoy discovery requests for the protocol engine tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from envoy.config.core.v3 import base_pb2
from envoy.service.discovery.v3 import discovery_pb2
from google.rpc import status_pb2


def node(node_id: str) -> base_pb2.Node:
    return base_pb2.Node(id=node_id)


def sotw_request(
    type_url: str,
    names: Iterable[str] = (),
    *,
    nonce: str = "",
    version: str = "",
    error: str | None = None,
    node_id: str | None = None,
) -> discovery_pb2.DiscoveryRequest:
    request = discovery_pb2.DiscoveryRequest(
        type_url=type_url,
        resource_names=list(names),
        response_nonce=nonce,
        version_info=version,
    )
    if error is not None:
        request.error_detail.CopyFrom(status_pb2.Status(code=13, message=error))
    if node_id is not None:
        request.node.CopyFrom(node(node_id))
    return request


def delta_request(
    type_url: str,
    subscribe: Iterable[str] = (),
    unsubscribe: Iterable[str] = (),
    *,
    nonce: str = "",
    error: str | None = None,
    initial: Mapping[str, str] | None = None,
    node_id: str | None = None,
) -> discovery_pb2.DeltaDiscoveryRequest:
    request = discovery_pb2.DeltaDiscoveryRequest(
        type_url=type_url,
        resource_names_subscribe=list(subscribe),
        resource_names_unsubscribe=list(unsubscribe),
        response_nonce=nonce,
        initial_resource_versions=dict(initial or {}),
    )
    if error is not None:
        request.error_detail.CopyFrom(status_pb2.Status(code=13, message=error))
    if node_id is not None:
        request.node.CopyFrom(node(node_id))
    return request


def watch_state(watch: Any) -> object:
    """What a SotW watch says, as a value (the watch changes in place: compare these)."""
    if watch is None:
        return None
    return (
        watch.subscription,
        watch.named_before,
        watch.nonce_sent,
        watch.version_sent,
        watch.nonce_acked,
        watch.version_acked,
        watch.nonce_nacked,
        watch.last_error,
        watch.always_respond,
        dict(watch.last_sent),
        watch.rejected,
        dict(watch.responses),
        dict(watch.resources),
    )
