"""A small mesh for the client engine tests: readable bodies, a follow-up chain, responses.

A resource's body is ``name|content``; what it refers to follows from its type
and content, so a change of content can change the client's next subscription:

- a cluster ``c`` refers to the load assignment ``c`` unless its content is
  ``static``;
- a listener refers to the route configuration ``route-<content>``.

``ChainPolicy`` is Envoy's order in miniature: CDS wildcard, EDS for what the
clusters refer to once CDS was accepted, LDS wildcard once CDS was accepted,
RDS for what the listeners refer to.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from envoy.service.discovery.v3 import discovery_pb2
from google.protobuf import any_pb2

from pilothouse.protocol.client_policy import WILDCARD_SUBSCRIPTION
from pilothouse.protocol.client_watch import ClientWatch
from pilothouse.protocol.subscriptions import Subscription
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS

ORDER = (CDS, EDS, LDS, RDS)


class Facts(NamedTuple):
    """A resource as the tests' reader sees it."""

    name: str
    body: bytes
    refs: tuple[str, ...]


def body(name: str, content: str) -> bytes:
    return f"{name}|{content}".encode()


def refs_of(type_url: str, name: str, content: str) -> tuple[str, ...]:
    if type_url == CDS:
        return () if content == "static" else (name,)
    if type_url == LDS:
        return (f"route-{content}",)
    return ()


def read_body(type_url: str, data: bytes, name: str | None) -> Facts:
    """The tests' ``BodyReader``: the name from the body, checked against the envelope's."""
    text = data.decode()
    if "|" not in text:
        raise ValueError(f"not a test resource: {text!r}")
    found, content = text.split("|", 1)
    if name is not None and name != found:
        raise ValueError(f"envelope says {name!r}, body says {found!r}")
    return Facts(found, data, refs_of(type_url, found, content))


class ChainPolicy:
    """CDS → EDS (clusters' refs) and LDS (once CDS accepted) → RDS (listeners' refs)."""

    order = ORDER

    def __init__(self, ack_first: bool = False) -> None:
        self.ack_first = ack_first

    def desired(self, watches: Mapping[str, ClientWatch]) -> dict[str, Subscription]:
        want = {CDS: WILDCARD_SUBSCRIPTION}
        clusters = watches[CDS]
        if clusters.acks:
            refs = clusters.refs()
            if refs or watches[EDS].started:
                want[EDS] = Subscription(refs)
            want[LDS] = WILDCARD_SUBSCRIPTION
        listeners = watches[LDS]
        if listeners.acks:
            refs = listeners.refs()
            if refs or watches[RDS].started:
                want[RDS] = Subscription(refs)
        return want


def sotw_response(
    type_url: str, version: str, nonce: str, contents: Mapping[str, str]
) -> discovery_pb2.DiscoveryResponse:
    return discovery_pb2.DiscoveryResponse(
        type_url=type_url,
        version_info=version,
        nonce=nonce,
        resources=[
            any_pb2.Any(type_url=type_url, value=body(name, content))
            for name, content in sorted(contents.items())
        ],
    )


def delta_response(
    type_url: str,
    nonce: str,
    contents: Mapping[str, str],
    removed: tuple[str, ...] = (),
    system_version: str = "",
) -> discovery_pb2.DeltaDiscoveryResponse:
    """Each resource's version is its content."""
    return discovery_pb2.DeltaDiscoveryResponse(
        type_url=type_url,
        system_version_info=system_version,
        nonce=nonce,
        resources=[
            discovery_pb2.Resource(
                name=name,
                version=content,
                resource=any_pb2.Any(type_url=type_url, value=body(name, content)),
            )
            for name, content in sorted(contents.items())
        ],
        removed_resources=list(removed),
    )
