"""The fingerprint of a SotW request's resource names, taken from its bytes."""

from __future__ import annotations

from envoy.service.discovery.v3 import discovery_pb2

from pilothouse.protocol.request_bytes import (
    Arrival,
    Undecodable,
    discovery_request_parser,
    names_fingerprint,
    type_url_field,
)
from pilothouse.protocol.type_urls import CDS, EDS

NAMES = [f"outbound|80||svc-{i}.ns.svc.cluster.local" for i in range(100)]


def _body(names: list[str], *, version: str = "", nonce: str = "", node: str = "") -> bytes:
    request = discovery_pb2.DiscoveryRequest(
        type_url=EDS, version_info=version, response_nonce=nonce, resource_names=names
    )
    if node:
        request.node.id = node
        request.node.cluster = "reviews.default"
    return request.SerializeToString()


def _fingerprint(body: bytes, type_url: str = EDS) -> int | None:
    return names_fingerprint(body, type_url_field(type_url))


def test_requests_naming_the_same_names_share_it_whatever_else_differs() -> None:
    first = _fingerprint(_body(NAMES, node="sidecar~10.0.0.1~a.ns~ns.svc.cluster.local"))
    ack = _fingerprint(_body(NAMES, version="v/2", nonce="n-2"))
    later = _fingerprint(_body(NAMES, version="v/3", nonce="n-3", node="other"))
    assert first is not None and first == ack == later


def test_any_change_of_the_names_changes_it() -> None:
    base = _fingerprint(_body(NAMES, nonce="n"))
    changed = [
        NAMES[:-1],
        [*NAMES, "outbound|80||new.ns.svc.cluster.local"],
        [NAMES[1], NAMES[0], *NAMES[2:]],
        [*NAMES[:50], NAMES[50] + "x", *NAMES[51:]],
        [],
    ]
    fingerprints = {_fingerprint(_body(names, nonce="n")) for names in changed}
    assert None not in fingerprints and base not in fingerprints
    assert len(fingerprints) == len(changed)


def test_no_fingerprint_without_a_type_url_in_the_bytes() -> None:
    request = discovery_pb2.DiscoveryRequest(resource_names=NAMES, response_nonce="n")
    assert _fingerprint(request.SerializeToString()) is None
    assert _fingerprint(_body(NAMES, nonce="n"), CDS) is None  # another type's field


def test_no_fingerprint_when_fields_are_out_of_number_order() -> None:
    names = discovery_pb2.DiscoveryRequest(resource_names=NAMES).SerializeToString()
    rest = discovery_pb2.DiscoveryRequest(type_url=EDS, response_nonce="n").SerializeToString()
    nonce_first = discovery_pb2.DiscoveryRequest(response_nonce="n").SerializeToString()
    assert _fingerprint(rest + names) is None
    assert _fingerprint(nonce_first + names + rest) is None
    assert _fingerprint(_body(NAMES, nonce="n")[:-1]) is None  # cut short


def test_the_parser_gives_the_request_and_its_fingerprint() -> None:
    sotw = discovery_request_parser(discovery_pb2.DiscoveryRequest, fingerprint=True)
    arrival = sotw(_body(NAMES, nonce="n"))
    assert isinstance(arrival, Arrival)
    assert list(arrival.request.resource_names) == NAMES
    assert arrival.names == _fingerprint(_body(NAMES))
    delta = discovery_request_parser(discovery_pb2.DeltaDiscoveryRequest, fingerprint=False)
    parsed = delta(discovery_pb2.DeltaDiscoveryRequest(type_url=EDS).SerializeToString())
    assert isinstance(parsed, Arrival) and parsed.names is None
    bad = sotw(b"\xff\xff\xff")
    assert isinstance(bad, Undecodable) and "DiscoveryRequest" in bad.reason
