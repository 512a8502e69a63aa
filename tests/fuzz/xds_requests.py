"""Hypothesis strategies for xDS requests: well-formed, odd, broken, and raw bytes.

Shared by the engine fuzz tests and the live-server fuzz tests. Type URLs mix the
Envoy types, Istio GVKs (MCP-over-xDS), debug types and made-up ones; names, nonces,
versions and ``error_detail`` are random text; node ids are valid, broken in each way
``parse_node`` names, or random.
"""

from __future__ import annotations

from typing import Any

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from hypothesis import strategies as st

from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS, SDS

KNOWN_TYPES = (
    CDS,
    EDS,
    LDS,
    RDS,
    SDS,
    "networking.istio.io/v1/ServiceEntry",
    "networking.istio.io/v1alpha3/VirtualService",
    "core/v1alpha1/MeshConfig",
    "istio.io/debug/syncz",
)
type_urls = st.one_of(
    st.sampled_from(KNOWN_TYPES),
    st.sampled_from(("", "type.googleapis.com/", "type.googleapis.com/no.Such", "*")),
    st.text(max_size=40),
)
CLUSTERS = (
    "outbound|9080||reviews.bookinfo.svc.cluster.local",
    "outbound|9080|v1|reviews.bookinfo.svc.cluster.local",
    "outbound|9080||productpage.bookinfo.svc.cluster.local",
    "outbound|443||books.example.com",
    "9080",
    "http.8080",
)
names = st.lists(st.one_of(st.sampled_from((*CLUSTERS, "*", "")), st.text(max_size=30)), max_size=4)
short_text = st.one_of(st.just(""), st.text(max_size=20), st.sampled_from(("1", "n1", "*")))

VALID_NODES = (
    "sidecar~127.0.0.1~productpage-v1.bookinfo~bookinfo.svc.cluster.local",
    "sidecar~10.0.0.1~reviews-v1-abc.bookinfo~bookinfo.svc.cluster.local",
    "router~127.0.0.1~ingressgateway-1.bookinfo~bookinfo.svc.cluster.local",
    "sidecar~fd00::1~ratings-1.bookinfo~bookinfo.svc.cluster.local",
)
BROKEN_NODES = (
    "sidecar~~~",
    "sidecar~~pod.ns~ns.svc.cluster.local",
    "sidecar~10.0.0.1~~ns.svc.cluster.local",
    "~10.0.0.1~a.b~b.svc",
    "sidecar~not-an-ip~a.b~b.svc",
    "gateway~10.0.0.1~a.b~b.svc",
    "sidecar~10.0.0.1~a~",
    "sidecar~10.0.0.1",
    "~~~~~",
    "sidecar~" + "9" * 1100,
)
node_ids = st.one_of(
    st.sampled_from(VALID_NODES), st.sampled_from(BROKEN_NODES), st.text(max_size=60)
)
metadata_values = st.one_of(
    st.none(),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.lists(st.text(max_size=5), max_size=3),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
)
metadata = st.dictionaries(
    st.one_of(
        st.sampled_from(
            ("GENERATOR", "LABELS", "NAMESPACE", "INSTANCE_IPS", "CLUSTER_ID", "ISTIO_VERSION")
        ),
        st.text(max_size=10),
    ),
    st.one_of(
        metadata_values,
        st.sampled_from(("grpc", "api", "envoy", "magic", "10.0.0.1", '{"app": "x"}', "{")),
    ),
    max_size=4,
)


@st.composite
def nodes(draw: st.DrawFn, rich: bool = True) -> dict[str, Any] | None:
    """A node (as keyword parts) or None for a request that carries none; ``rich`` False
    draws only the id (cheaper, for the engines, which only keep the node)."""
    if draw(st.integers(0, 3)) == 0:
        return None
    if not rich:
        return {"id": draw(node_ids), "cluster": "", "metadata": {}, "user_agent_name": ""}
    return {
        "id": draw(node_ids),
        "cluster": draw(short_text),
        "metadata": draw(metadata),
        "user_agent_name": draw(st.sampled_from(("", "envoy", "gRPC Python", "grpc-go"))),
    }


def _set_node(message: Any, node: dict[str, Any] | None) -> None:
    if node is None:
        return
    message.node.id = node["id"]
    message.node.cluster = node["cluster"]
    message.node.user_agent_name = node["user_agent_name"]
    for key, value in node["metadata"].items():
        message.node.metadata.update({key: value})


@st.composite
def errors(draw: st.DrawFn) -> tuple[int, str] | None:
    if draw(st.booleans()):
        return None
    return draw(st.integers(-(2**31), 2**31 - 1)), draw(st.text(max_size=40))


@st.composite
def sotw_requests(
    draw: st.DrawFn, nonce: st.SearchStrategy[str] = short_text, rich_nodes: bool = True
) -> Any:
    """A ``DiscoveryRequest`` with every field random."""
    message = discovery_pb2.DiscoveryRequest(
        type_url=draw(type_urls),
        version_info=draw(short_text),
        response_nonce=draw(nonce),
        resource_names=draw(names),
    )
    error = draw(errors())
    if error is not None:
        message.error_detail.code, message.error_detail.message = error
    _set_node(message, draw(nodes(rich_nodes)))
    return message


@st.composite
def delta_requests(
    draw: st.DrawFn, nonce: st.SearchStrategy[str] = short_text, rich_nodes: bool = True
) -> Any:
    """A ``DeltaDiscoveryRequest`` with every field random."""
    message = discovery_pb2.DeltaDiscoveryRequest(
        type_url=draw(type_urls),
        response_nonce=draw(nonce),
        resource_names_subscribe=draw(names),
        resource_names_unsubscribe=draw(names),
        initial_resource_versions=draw(
            st.dictionaries(
                st.one_of(st.sampled_from(CLUSTERS), st.text(max_size=10)), short_text, max_size=3
            )
        ),
    )
    error = draw(errors())
    if error is not None:
        message.error_detail.code, message.error_detail.message = error
    _set_node(message, draw(nodes(rich_nodes)))
    return message


def as_bytes(message: Any) -> bytes:
    return bytes(message.SerializeToString())


def wire_messages(delta: bool) -> st.SearchStrategy[bytes]:
    """What a fuzzing client writes: a random request's bytes, those bytes cut or with a
    byte flipped, or raw random bytes."""
    requests = delta_requests() if delta else sotw_requests()
    encoded = requests.map(as_bytes)

    @st.composite
    def damaged(draw: st.DrawFn) -> bytes:
        body = draw(encoded)
        if not body:
            return b"\xff"
        at = draw(st.integers(0, len(body) - 1))
        if draw(st.booleans()):
            return body[:at]
        flipped = body[at] ^ draw(st.integers(1, 255))
        return body[:at] + bytes([flipped]) + body[at + 1 :]

    return st.one_of(encoded, encoded, damaged(), st.binary(max_size=64))
