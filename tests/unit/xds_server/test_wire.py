"""Responses assembled from bytes parse back to the same messages protobuf would build."""

from __future__ import annotations

import gc
import tracemalloc

import pytest
from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2

from pilothouse.protocol.type_urls import CDS
from pilothouse.protowire import text_field
from pilothouse.push.cache import Resource
from pilothouse.xds.builders.encode import content_hash, to_any_bytes
from pilothouse.xds.protocol.wire import (
    HEADS_BUDGET,
    FanOutResponses,
    control_plane_field,
    delta_response,
    sotw_head,
    sotw_response,
)


def cluster(name: str) -> Resource:
    body = to_any_bytes(cluster_pb2.Cluster(name=name))
    return Resource(name, content_hash(body), body)


def test_sotw_response_matches_protobuf() -> None:
    resources = [cluster("a"), cluster("b" * 300)]
    data = sotw_response("v1/2", CDS, "n-1", [r.body for r in resources])
    parsed = discovery_pb2.DiscoveryResponse.FromString(data)
    expected = discovery_pb2.DiscoveryResponse(version_info="v1/2", type_url=CDS, nonce="n-1")
    for r in resources:
        expected.resources.append(any_pb2.Any.FromString(r.body))
    assert parsed == expected
    assert data == expected.SerializeToString()


def test_sotw_responses_of_one_fan_out_differ_only_in_their_nonce() -> None:
    """The framing shared by a fan-out (same version, same bodies) is made once; each
    response still carries its own nonce, and other versions or bodies their own."""
    bodies = [cluster("a").body, cluster("b").body]
    first = sotw_response("v1/2", CDS, "n-1", bodies)
    second = sotw_response("v1/2", CDS, "n-2", list(bodies))
    later = sotw_response("v1/3", CDS, "n-3", bodies)
    fewer = sotw_response("v1/3", CDS, "n-4", bodies[:1])
    parsed = [discovery_pb2.DiscoveryResponse.FromString(d) for d in (first, second, later, fewer)]
    assert [p.nonce for p in parsed] == ["n-1", "n-2", "n-3", "n-4"]
    assert [p.version_info for p in parsed] == ["v1/2", "v1/2", "v1/3", "v1/3"]
    assert [len(p.resources) for p in parsed] == [2, 2, 2, 1]
    assert first.removesuffix(b"n-1") == second.removesuffix(b"n-2")


def test_delta_response_matches_protobuf() -> None:
    resources = [cluster("a"), cluster("c")]
    data = delta_response("sys", CDS, "n-2", resources, ["gone-1", "gone-2"])
    parsed = discovery_pb2.DeltaDiscoveryResponse.FromString(data)
    assert parsed.system_version_info == "sys" and parsed.nonce == "n-2"
    assert parsed.type_url == CDS and list(parsed.removed_resources) == ["gone-1", "gone-2"]
    assert [(r.name, r.version) for r in parsed.resources] == [
        (x.name, x.version) for x in resources
    ]
    unpacked = cluster_pb2.Cluster()
    parsed.resources[1].resource.Unpack(unpacked)
    assert unpacked.name == "c"


def test_empty_response() -> None:
    parsed = discovery_pb2.DiscoveryResponse.FromString(sotw_response("", CDS, "n", []))
    assert not parsed.resources and parsed.nonce == "n" and parsed.version_info == ""


def test_resource_lengths_at_every_varint_width_match_protobuf() -> None:
    sizes = [0, 1, 127, 128, 300, 16383, 16384, 70000, 128, 300]  # repeats reuse headers
    bodies = [any_pb2.Any(type_url=CDS, value=b"x" * size).SerializeToString() for size in sizes]
    data = sotw_response("v", CDS, "n", iter(bodies))
    expected = discovery_pb2.DiscoveryResponse(version_info="v", type_url=CDS, nonce="n")
    for body in bodies:
        expected.resources.append(any_pb2.Any.FromString(body))
    assert data == expected.SerializeToString()
    assert sotw_response("v", CDS, "n", tuple(bodies)) == data


def large_bodies(count: int, size: int, tag: bytes) -> tuple[bytes, ...]:
    """``count`` distinct ``Any`` encodings of about ``size`` bytes each."""
    return tuple(
        any_pb2.Any(type_url=CDS, value=tag + bytes([i]) * size).SerializeToString()
        for i in range(count)
    )


def test_a_shared_response_is_byte_identical_to_an_uncached_encode() -> None:
    responses = FanOutResponses("tok")
    bodies = (*large_bodies(3, 70_000, b"a"), cluster("a").body)
    plane = control_plane_field('{"ID":"r1"}')
    first = responses.sotw("v1/2", CDS, bodies, plane)
    again = responses.sotw("v1/2", CDS, tuple(bodies), plane)
    assert again is first  # encoded once for the fan-out, nonce included
    assert first.nonce == "v1/2/tok-1"
    expected = discovery_pb2.DiscoveryResponse(
        version_info="v1/2", type_url=CDS, nonce="v1/2/tok-1"
    )
    for body in bodies:
        expected.resources.append(any_pb2.Any.FromString(body))
    expected.control_plane.identifier = '{"ID":"r1"}'
    assert first.body == expected.SerializeToString()
    assert sotw_response("v1/2", CDS, first.nonce, bodies, plane) == first.body
    assert first.body == sotw_head("v1/2", CDS, bodies) + text_field(5, first.nonce) + plane.sotw


def test_a_stream_is_never_sent_the_same_nonce_twice() -> None:
    """A stream passes the serial it was last sent for the type: the shared response is
    reused only above it, so re-sending the same content to the same stream (a forced
    resend) gets a fresh nonce, which the next streams then share."""
    responses = FanOutResponses("tok")
    bodies = (cluster("a").body, cluster("b").body)
    stream_a = responses.sotw("v1", CDS, bodies)
    stream_b = responses.sotw("v1", CDS, bodies, after=0)
    assert stream_b is stream_a
    resent = responses.sotw("v1", CDS, bodies, after=stream_a.serial)
    assert resent.nonce != stream_a.nonce and resent.serial > stream_a.serial
    assert resent.body.replace(resent.nonce.encode(), b"") == stream_a.body.replace(
        stream_a.nonce.encode(), b""
    )
    assert responses.sotw("v1", CDS, bodies, after=stream_b.serial) is resent
    other = responses.sotw("v1", CDS, (cluster("c").body,), after=resent.serial)
    assert other.serial > resent.serial  # nonces count up, whatever the content
    assert len({stream_a.nonce, resent.nonce, other.nonce}) == 3


def test_responses_differ_by_control_plane_and_type() -> None:
    responses = FanOutResponses("tok")
    bodies = (cluster("a").body,)
    one = responses.sotw("v1", CDS, bodies, control_plane_field("r1"))
    two = responses.sotw("v1", CDS, bodies, control_plane_field("r2"))
    three = responses.sotw("v1", "type.googleapis.com/other", bodies, control_plane_field("r1"))
    assert len({one.body, two.body, three.body}) == 3
    assert len({one.nonce, two.nonce, three.nonce}) == 3


def test_a_token_that_would_break_nonce_parsing_is_refused() -> None:
    for token in ("", "a/b"):
        with pytest.raises(ValueError, match="nonce token"):
            FanOutResponses(token)


def test_kept_responses_stay_under_their_byte_budget_with_large_bodies() -> None:
    """Responses of MBs each: those kept (and the bodies their keys keep alive) are
    charged under the budget, oldest dropped first; one over the budget is not kept."""
    budget = 8 << 20
    responses = FanOutResponses("tok", budget)
    first: dict[str, bytes] = {}
    for i in range(12):  # 12 fan-outs of 1.5 MB responses: 36 MB if all were kept
        first[f"v{i}"] = responses.sotw(f"v{i}", CDS, large_bodies(3, 500_000, b"%d" % i)).body
        assert responses.held <= budget
    assert 1 <= len(responses) <= budget // (2 * 1_500_000)
    newest = responses.sotw("v11", CDS, large_bodies(3, 500_000, b"11"))
    assert newest.body is first["v11"]  # kept
    assert responses.sotw("v0", CDS, large_bodies(3, 500_000, b"0")).body is not first["v0"]
    assert responses.held <= budget
    huge = large_bodies(3, 2 << 20, b"huge")
    held = responses.held
    made = responses.sotw("v-huge", CDS, huge)
    assert made.body == sotw_head("v-huge", CDS, huge) + text_field(5, made.nonce)
    assert responses.held == held  # not kept: it alone is over the budget


def test_shared_responses_do_not_pin_more_than_the_budget() -> None:
    """Memory, not just the accounting: after twenty 3 MB responses are sent and
    dropped, what the shared responses still hold stays within their budget."""
    responses = FanOutResponses("tok")
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(20):
            body = responses.sotw(f"pinned-{i}", CDS, large_bodies(3, 1 << 20, b"%d" % i)).body
            del body
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert retained <= HEADS_BUDGET + (1 << 20), f"{retained / 2**20:.1f} MiB still held"


def test_small_responses_are_kept_for_at_most_a_bounded_number_of_fan_outs() -> None:
    responses = FanOutResponses("tok", kept=4)
    bodies = (cluster("a").body,)
    for i in range(10):
        responses.sotw(f"v{i}", CDS, bodies)
    assert len(responses) == 4
    kept = [responses.sotw(f"v{i}", CDS, bodies) for i in range(6, 10)]
    assert [k.serial for k in kept] == [7, 8, 9, 10]  # the last four, not made again
    assert responses.held == 2 * sum(len(k.body) for k in kept)
