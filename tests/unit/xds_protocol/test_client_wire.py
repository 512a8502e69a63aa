"""The client requests' encoding, read back by protobuf: every field as the value said."""

from __future__ import annotations

from typing import Any

from envoy.config.core.v3 import base_pb2
from envoy.service.discovery.v3 import discovery_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from pilothouse.protocol.client_requests import (
    NO_NODE,
    NO_STATUS,
    DeltaClientRequest,
    RequestStatus,
    SotwClientRequest,
)
from pilothouse.protocol.client_wire import RequestEncoder

texts = st.text(max_size=30)
name_tuples = st.lists(st.text(min_size=1, max_size=20), max_size=6).map(tuple)
statuses = st.one_of(
    st.just(NO_STATUS),
    st.builds(RequestStatus, st.integers(-(2**31), 2**31 - 1), texts),
)
nodes = st.one_of(
    st.just(NO_NODE),
    st.builds(lambda i, c: base_pb2.Node(id=i, cluster=c), texts, texts),
)


def status_of(message: Any) -> tuple[int, str] | None:
    if not message.HasField("error_detail"):
        return None
    detail = message.error_detail
    return int(detail.code), str(detail.message)


@settings(max_examples=300, deadline=None)
@given(
    type_url=texts,
    version=texts,
    nonce=texts,
    names=name_tuples,
    status=statuses,
    node=nodes,
)
def test_sotw_requests_read_back_by_protobuf(
    type_url: str,
    version: str,
    nonce: str,
    names: tuple[str, ...],
    status: RequestStatus,
    node: object,
) -> None:
    request = SotwClientRequest(type_url, version, nonce, names, status, node)
    parsed = discovery_pb2.DiscoveryRequest.FromString(RequestEncoder().encode(request))
    assert parsed.type_url == type_url
    assert parsed.version_info == version
    assert parsed.response_nonce == nonce
    assert tuple(parsed.resource_names) == names
    assert status_of(parsed) == status_of(request)
    if status is not NO_STATUS:
        assert (parsed.error_detail.code, parsed.error_detail.message) == tuple(status)
    assert parsed.HasField("node") == (node is not NO_NODE)
    if node is not NO_NODE:
        assert parsed.node == node


@settings(max_examples=300, deadline=None)
@given(
    type_url=texts,
    nonce=texts,
    subscribe=name_tuples,
    unsubscribe=name_tuples,
    initial=st.dictionaries(st.text(max_size=10), texts, max_size=5),
    status=statuses,
    node=nodes,
)
def test_delta_requests_read_back_by_protobuf(
    type_url: str,
    nonce: str,
    subscribe: tuple[str, ...],
    unsubscribe: tuple[str, ...],
    initial: dict[str, str],
    status: RequestStatus,
    node: object,
) -> None:
    request = DeltaClientRequest(type_url, nonce, subscribe, unsubscribe, initial, status, node)
    parsed = discovery_pb2.DeltaDiscoveryRequest.FromString(RequestEncoder().encode(request))
    assert parsed.type_url == type_url
    assert parsed.response_nonce == nonce
    assert tuple(parsed.resource_names_subscribe) == subscribe
    assert tuple(parsed.resource_names_unsubscribe) == unsubscribe
    assert dict(parsed.initial_resource_versions) == initial
    assert status_of(parsed) == status_of(request)
    assert parsed.HasField("node") == (node is not NO_NODE)
    if node is not NO_NODE:
        assert parsed.node == node


def test_equal_name_lists_are_encoded_once() -> None:
    encoder = RequestEncoder(capacity=2)
    names = tuple(f"outbound|80||svc{i}.default.svc.cluster.local" for i in range(100))
    first = SotwClientRequest("t", "v1", "n1", names)
    second = SotwClientRequest("t", "v2", "n2", tuple(list(names)))
    encoder.encode(first)
    remembered = dict(encoder._names)
    encoder.encode(second)
    assert encoder._names == remembered and len(remembered) == 1
    for extra in ("a", "b", "c"):
        encoder.encode(SotwClientRequest("t", "v", "n", (extra,)))
    assert len(encoder._names) <= 2, "the memory is bounded"


def test_varints_match_protobufs_for_boundaries() -> None:
    for value in (0, 1, 127, 128, 300, 2**31 - 1, -1, -(2**31)):
        status = discovery_pb2.DiscoveryRequest(error_detail={"code": value})
        encoded = RequestEncoder().encode(
            SotwClientRequest("", "", "", (), RequestStatus(value, ""))
        )
        assert encoded == status.SerializeToString()
