"""The agent's SotW SDS stream rules, fed requests by hand (no I/O)."""

from __future__ import annotations

from envoy.extensions.transport_sockets.tls.v3 import secret_pb2  # type: ignore[import-untyped]
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.rpc import status_pb2

from pilothouse.agent.response_fields import response_fields
from pilothouse.agent.secret_stream import SecretStream
from pilothouse.protocol.type_urls import SDS
from pilothouse.security.identity import SpiffeId
from pilothouse.xds.builders.encode import to_any_bytes

ME = SpiffeId("cluster.local", "shop", "client")


class Held:
    """Secrets by name, changed by the test."""

    def __init__(self) -> None:
        self.serial = 1
        self.names = {"default", "ROOTCA"}

    def __call__(self, identity: SpiffeId, name: str) -> bytes | None:
        if name not in self.names or identity != ME:
            return None
        return to_any_bytes(secret_pb2.Secret(name=f"{name}"))


def request(names: list[str], nonce: str = "", error: str = "") -> discovery_pb2.DiscoveryRequest:
    message = discovery_pb2.DiscoveryRequest(
        type_url=SDS, resource_names=names, response_nonce=nonce
    )
    if error:
        message.error_detail.CopyFrom(status_pb2.Status(code=3, message=error))
    return message


def decoded(body: bytes) -> discovery_pb2.DiscoveryResponse:
    return discovery_pb2.DiscoveryResponse.FromString(body)


def test_first_request_is_answered_with_what_is_held() -> None:
    held = Held()
    held.names = {"default"}
    stream = SecretStream(ME, held)
    assert stream.request(request(["default", "ROOTCA"]))
    body = stream.response()
    assert body is not None
    response = decoded(body)
    assert response.type_url == SDS and response.nonce == stream.nonce
    assert [r.type_url for r in response.resources] == [SDS]
    assert response_fields(body) == (SDS, stream.nonce)


def test_ack_needs_nothing_and_stale_nonces_are_ignored() -> None:
    stream = SecretStream(ME, Held())
    stream.request(request(["default"]))
    assert stream.response() is not None
    assert not stream.request(request(["default"], nonce=stream.nonce))  # ACK
    assert stream.response() is None  # nothing changed
    assert not stream.request(request(["ROOTCA"], nonce="agent-0"))  # stale
    assert stream.watched == {"default"}


def test_new_names_are_answered_and_a_nack_is_counted() -> None:
    stream = SecretStream(ME, Held())
    stream.request(request(["default"]))
    stream.response()
    assert stream.request(request(["default", "ROOTCA"], nonce=stream.nonce))
    body = stream.response()
    assert body is not None and len(decoded(body).resources) == 2
    assert not stream.request(request(["default", "ROOTCA"], nonce=stream.nonce, error="bad"))
    assert stream.nacks == 1
    assert stream.response() is None  # a NACKed secret is not resent until it changes


def test_nothing_held_means_no_response_yet() -> None:
    held = Held()
    held.names = set()
    stream = SecretStream(ME, held)
    assert stream.request(request(["default"]))
    assert stream.response() is None
    held.names = {"default"}
    assert stream.response() is not None


def test_another_identity_gets_nothing_of_this_one() -> None:
    stream = SecretStream(SpiffeId("cluster.local", "shop", "server"), Held())
    stream.request(request(["default"]))
    assert stream.response() is None
