"""Delta ADS through the agent: what a new replica is sent for Envoy's delta
subscriptions, and the agent's own delta SDS (no I/O)."""

from __future__ import annotations

from envoy.extensions.transport_sockets.tls.v3 import secret_pb2  # type: ignore[import-untyped]
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]

from pilothouse.agent.delta_secret_stream import DeltaSecretStream
from pilothouse.agent.relay_flavour import DeltaFlavour
from pilothouse.protocol.type_urls import CDS, EDS, LDS, SDS
from pilothouse.security.identity import SpiffeId
from pilothouse.xds.builders.encode import to_any_bytes

ME = SpiffeId("cluster.local", "shop", "client")


def delta(type_url: str, subscribe: tuple[str, ...] = (), unsubscribe: tuple[str, ...] = (),
          nonce: str = "") -> discovery_pb2.DeltaDiscoveryRequest:  # fmt: skip
    return discovery_pb2.DeltaDiscoveryRequest(
        type_url=type_url,
        resource_names_subscribe=subscribe,
        resource_names_unsubscribe=unsubscribe,
        response_nonce=nonce,
        initial_resource_versions={"old": "v1"},
    )


def test_resend_keeps_wildcards_and_named_subscriptions_without_versions() -> None:
    flavour = DeltaFlavour()
    node = discovery_pb2.DiscoveryRequest().node
    node.id = "sidecar~1.1.1.1~a.ns~ns.svc.cluster.local"
    flavour.record(delta(LDS))  # the legacy wildcard
    flavour.record(delta(CDS, ("*", "extra")))
    flavour.record(delta(EDS, ("a", "b")))
    flavour.record(delta(EDS, (), ("a",), nonce="n-1"))
    flavour.record(delta(CDS, (), ("extra",)))
    sent = [discovery_pb2.DeltaDiscoveryRequest.FromString(b) for b in flavour.resend(node)]
    assert [s.type_url for s in sent] == [CDS, EDS, LDS]
    assert list(sent[0].resource_names_subscribe) == []  # wildcard alone: the empty form
    assert list(sent[1].resource_names_subscribe) == ["b"]
    assert list(sent[2].resource_names_subscribe) == []
    assert sent[0].node.id == node.id and not sent[1].HasField("node")
    assert all(not s.initial_resource_versions and not s.response_nonce for s in sent)


def test_a_named_wildcard_subscription_is_resent_with_its_star() -> None:
    flavour = DeltaFlavour()
    flavour.record(delta(CDS, ("*", "extra")))
    (sent,) = [discovery_pb2.DeltaDiscoveryRequest.FromString(b) for b in flavour.resend(None)]
    assert list(sent.resource_names_subscribe) == ["extra", "*"]


def test_delta_sds_sends_new_and_changed_secrets_only() -> None:
    serial = [1]

    def held(identity: SpiffeId, name: str) -> bytes | None:
        if identity != ME or name not in {"default", "ROOTCA"}:
            return None
        return to_any_bytes(secret_pb2.Secret(name=f"{name}-{serial[0]}"))

    stream = DeltaSecretStream(ME, held)
    assert stream.request(delta(SDS, ("default",)))
    first = discovery_pb2.DeltaDiscoveryResponse.FromString(stream.response())
    assert [r.name for r in first.resources] == ["default"] and first.nonce == stream.nonce
    assert not stream.request(delta(SDS, nonce=stream.nonce))  # an ACK
    assert stream.response() is None
    assert stream.request(delta(SDS, ("ROOTCA",), nonce="stale"))  # subscribes all the same
    second = discovery_pb2.DeltaDiscoveryResponse.FromString(stream.response())
    assert [r.name for r in second.resources] == ["ROOTCA"]
    serial[0] = 2  # a rotation: both changed
    third = discovery_pb2.DeltaDiscoveryResponse.FromString(stream.response())
    assert [r.name for r in third.resources] == ["ROOTCA", "default"]
    secret = secret_pb2.Secret()
    third.resources[1].resource.Unpack(secret)
    assert secret.name == "default-2" and third.resources[1].version
    stream.request(delta(SDS, (), ("ROOTCA",)))
    assert stream.watched == {"default"}
