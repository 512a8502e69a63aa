"""MCP messages: hand-assembled ``Resources`` bytes equal protobuf's, and requests round-trip."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pilothouse.api.istio.mcp.v1alpha1 import mcp_pb2, resource_pb2
from pilothouse.mcp.messages import (
    TRIGGER_COLLECTION,
    Code,
    EncodedResource,
    McpError,
    Push,
    SinkRequest,
    encode_push,
    request_from_proto,
    request_to_proto,
    trigger_push,
)
from tests.unit.mcp.builders import SE, encoded, service_entry

texts = st.text(max_size=300)
lowercase = "abcdefghijklmnopqrstuvwxyz"
# "<namespace>/<name>", as the regex [a-z]{1,8}/[a-z]{1,20} says, built from two texts
# (from_regex draws the same strings several times slower)
names = st.builds(
    "{}/{}".format,
    st.text(lowercase, min_size=1, max_size=8),
    st.text(lowercase, min_size=1, max_size=20),
)


@st.composite
def pushes(draw: st.DrawFn) -> Push:
    resource_names = draw(st.lists(names, max_size=6, unique=True))
    resources = tuple(
        encoded(service_entry(n.split("/")[1], n.split("/")[0])) for n in resource_names
    )
    return Push(
        collection=draw(texts),
        nonce=draw(texts),
        system_version_info=draw(texts),
        incremental=draw(st.booleans()),
        resources=resources,
        removed=tuple(draw(st.lists(texts, max_size=5))),
    )


@settings(max_examples=200, deadline=None)
@given(pushes())
def test_encoded_push_is_byte_for_byte_what_protobuf_serializes(push: Push) -> None:
    message = mcp_pb2.Resources(
        system_version_info=push.system_version_info,
        collection=push.collection,
        resources=[resource_pb2.Resource.FromString(r.encoded) for r in push.resources],
        removed_resources=list(push.removed),
        nonce=push.nonce,
        incremental=push.incremental,
    )
    assert encode_push(push) == message.SerializeToString(deterministic=True)
    parsed = mcp_pb2.Resources.FromString(encode_push(push))
    assert [r.metadata.name for r in parsed.resources] == list(push.names)


def test_a_large_resource_gets_a_multi_byte_length() -> None:
    body = EncodedResource("a/b", "1", b"\x0a" + bytes([0x80, 0x01]) + b"x" * 128)
    push = Push(collection=SE, nonce="7", resources=(body,))
    parsed = mcp_pb2.Resources.FromString(encode_push(push))
    assert parsed.resources[0].SerializeToString() == body.encoded


def test_trigger_is_resources_with_only_the_trigger_collection() -> None:
    parsed = mcp_pb2.Resources.FromString(encode_push(trigger_push()))
    assert parsed == mcp_pb2.Resources(collection=TRIGGER_COLLECTION)


def test_request_round_trips_through_the_proto() -> None:
    request = SinkRequest(
        collection=SE,
        response_nonce="3",
        incremental=True,
        initial_resource_versions={"ns/a": "v1"},
        error=McpError(Code.INVALID_ARGUMENT, "bad"),
        sink_id="pilot",
        sink_annotations={"k": "v"},
    )
    proto = request_to_proto(request)
    assert proto.error_detail.code == 3
    assert proto.sink_node.id == "pilot"
    assert request_from_proto(mcp_pb2.RequestResources.FromString(proto.SerializeToString())) == (
        request
    )


def test_ack_has_no_error_detail_on_the_wire() -> None:
    proto = request_to_proto(SinkRequest(collection=SE, response_nonce="1"))
    assert not proto.HasField("error_detail")
    assert request_from_proto(proto).error is None
