"""The fingerprint of a SotW request's resource names, taken from its bytes."""

from __future__ import annotations

from envoy.service.discovery.v3 import discovery_pb2

from pilothouse.protocol.request_bytes import (
    KEPT_BYTES,
    Arrival,
    KnownNames,
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


def test_long_fields_and_an_error_after_the_names_leave_it_unchanged() -> None:
    """Lengths of two bytes and more (a long version, node or nonce), and an
    ``error_detail`` after the nonce (a NACK), are read as well as the short ones."""
    base = _fingerprint(_body(NAMES, nonce="n"))
    long_nonce = _fingerprint(_body(NAMES, version="v" * 300, nonce="n" * 200))
    long_node = _fingerprint(_body(NAMES, node="sidecar~" + "x" * 20_000))
    request = discovery_pb2.DiscoveryRequest.FromString(_body(NAMES, nonce="n" * 130))
    request.error_detail.code = 13
    request.error_detail.message = "rejected " * 40
    nack = _fingerprint(request.SerializeToString())
    assert base is not None and base == long_nonce == long_node == nack


def test_no_fingerprint_with_names_after_the_nonce() -> None:
    """Names written after the type URL (legal protobuf, out of number order) are not
    taken for a request that repeats the names before them."""
    body = _body(NAMES, nonce="n")
    late = discovery_pb2.DiscoveryRequest(resource_names=["late"]).SerializeToString()
    assert _fingerprint(body + late) is None


def test_names_seen_before_get_the_fingerprint_of_their_bytes() -> None:
    """A parser's kept regions give every request exactly :func:`names_fingerprint`:
    the same names again (in place, whatever the nonce), other orders and lengths, a
    NACK's tail, names after the type URL (none), more lists than it keeps."""
    known = KnownNames()
    late = discovery_pb2.DiscoveryRequest(resource_names=["late"]).SerializeToString()
    nack = discovery_pb2.DiscoveryRequest.FromString(_body(NAMES, nonce="n-1"))
    nack.error_detail.message = "rejected"
    lists = [NAMES, NAMES[::-1], NAMES[:-1], [], *([NAMES[i]] for i in range(8))]
    bodies = [
        *(_body(names, version=f"v/{i}", nonce=f"n-{i}") for i, names in enumerate(lists)),
        _body(NAMES, nonce="n" * 200, node="sidecar~" + "x" * 300),
        _body(NAMES, nonce="n-2") + late,
        nack.SerializeToString(),
        _body([*NAMES[:-1], NAMES[-1] + "x"], nonce="n-3"),
    ]
    for body in bodies * 2:
        assert known.fingerprint(body, type_url_field(EDS)) == _fingerprint(body)
        assert known.fingerprint(body, type_url_field(CDS)) is None  # another type's field
    assert known.fingerprint(b"", type_url_field(EDS)) is None


def test_the_names_kept_stay_within_their_byte_budget() -> None:
    """A client chooses how long its names are: what a parser keeps of them is bounded,
    and names it no longer keeps still get their fingerprint."""
    known = KnownNames()
    huge = [f"outbound|80||{'x' * 200}-{i}.ns.svc.cluster.local" for i in range(2_000)]
    body = _body(huge, nonce="n")
    assert known.fingerprint(body, type_url_field(EDS)) == _fingerprint(body)
    assert known.kept_bytes == 0  # over an eighth of the budget: not kept
    lists = [[f"{n}-{i}" for n in huge[:500]] for i in range(40)]
    for index, names in enumerate(lists):
        for type_url in (EDS, CDS):
            request = discovery_pb2.DiscoveryRequest.FromString(_body(names, nonce="n"))
            request.type_url = f"{type_url}-{index % 3}"
            body = request.SerializeToString()
            needle = type_url_field(request.type_url)
            assert known.fingerprint(body, needle) == names_fingerprint(body, needle)
            assert 0 < known.kept_bytes <= KEPT_BYTES
