"""The client engine's transitions, one row at a time: subscribe, ACK, NACK, follow-ups, resume."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from envoy.config.core.v3 import base_pb2
from envoy.service.discovery.v3 import discovery_pb2
from google.protobuf import any_pb2

from pilothouse.protocol.client import AlreadyAnswered, ClientEngine, RejectedResponse
from pilothouse.protocol.client_delta import DeltaClientEngine
from pilothouse.protocol.client_policy import WILDCARD_SUBSCRIPTION, StaticSubscriptions
from pilothouse.protocol.client_requests import INTERNAL
from pilothouse.protocol.client_sotw import RESOURCE_WRAPPER, SotwClientEngine
from pilothouse.protocol.client_watch import ClientWatch
from pilothouse.protocol.subscriptions import Subscription
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS

from .client_fixtures import (
    ChainPolicy,
    body,
    delta_response,
    read_body,
    sotw_response,
)

NODE = base_pb2.Node(id="sidecar~10.0.0.1~a.default~default.svc.cluster.local")


def sotw(ack_first: bool = False) -> SotwClientEngine:
    return SotwClientEngine(ChainPolicy(ack_first), NODE)


def delta(ack_first: bool = False) -> DeltaClientEngine:
    return DeltaClientEngine(ChainPolicy(ack_first), NODE)


def accept(engine: ClientEngine, response: Any) -> list[Any]:
    delivery = engine.receive(response, 10, 1.0)
    return list(engine.ack(delivery, engine.read(response, read_body), 1.0))


def shape(request: Any) -> tuple[object, ...]:
    """A SotW request as (type, version, nonce, names, NACK message or None, node?)."""
    error = request.error_detail.message if request.HasField("error_detail") else None
    return (
        request.type_url,
        request.version_info,
        request.response_nonce,
        list(request.resource_names),
        error,
        request.HasField("node"),
    )


def delta_shape(request: Any) -> tuple[object, ...]:
    """A delta request as (type, nonce, subscribe, unsubscribe, initial versions, NACK?, node?)."""
    error = request.error_detail.message if request.HasField("error_detail") else None
    return (
        request.type_url,
        request.response_nonce,
        list(request.resource_names_subscribe),
        list(request.resource_names_unsubscribe),
        dict(request.initial_resource_versions),
        error,
        request.HasField("node"),
    )


# -- SotW ------------------------------------------------------------------------


def test_sotw_stream_starts_with_wildcard_cds_carrying_the_node() -> None:
    engine = sotw()
    assert [shape(r) for r in engine.open_stream()] == [(CDS, "", "", [], None, True)]


@pytest.mark.parametrize(
    ("ack_first", "expected"),
    [
        (
            False,
            [(EDS, "", "", ["a"], None, False), (LDS, "", "", [], None, False),
             (CDS, "v1", "n1", [], None, False)],
        ),
        (
            True,
            [(CDS, "v1", "n1", [], None, False), (EDS, "", "", ["a"], None, False),
             (LDS, "", "", [], None, False)],
        ),
    ],
)
def test_sotw_ack_and_follow_ups_in_the_policys_order(
    ack_first: bool, expected: list[tuple[object, ...]]
) -> None:
    engine = sotw(ack_first)
    engine.open_stream()
    requests = accept(engine, sotw_response(CDS, "v1", "n1", {"a": "h1", "b": "static"}))
    assert [shape(r) for r in requests] == expected
    assert engine.watch(EDS).subscription == Subscription(frozenset({"a"}))


def test_sotw_nack_carries_the_last_accepted_version_and_changes_nothing() -> None:
    engine = sotw()
    engine.open_stream()
    accept(engine, sotw_response(CDS, "v1", "n1", {"a": "h1"}))
    held = engine.watch(CDS).held
    delivery = engine.receive(sotw_response(CDS, "v2", "n2", {"a": "h2"}))
    (nack,) = engine.nack(delivery, "bad cluster", code=3)
    assert shape(nack) == (CDS, "v1", "n2", [], "bad cluster", False)
    assert nack.error_detail.code == 3
    assert engine.watch(CDS).held is held
    assert engine.watch(CDS).version_info == "v1"
    assert engine.watch(CDS).last_error == "bad cluster"
    (counted,) = [engine.watch(CDS).counters]
    assert (counted.responses, counted.acks, counted.nacks) == (2, 1, 1)


def test_the_default_nack_code_is_internal_as_envoy_sends() -> None:
    engine = sotw()
    engine.open_stream()
    (nack,) = engine.nack(engine.receive(sotw_response(CDS, "v1", "n1", {})), "no")
    assert nack.error_detail.code == INTERNAL


def test_a_response_is_answered_once() -> None:
    engine = sotw()
    engine.open_stream()
    delivery = engine.receive(sotw_response(CDS, "v1", "n1", {}))
    engine.ack(delivery)
    with pytest.raises(AlreadyAnswered):
        engine.ack(delivery)
    with pytest.raises(AlreadyAnswered):
        engine.nack(delivery, "late")


def test_a_superseded_response_cannot_be_answered() -> None:
    engine = sotw()
    engine.open_stream()
    older = engine.receive(sotw_response(CDS, "v1", "n1", {}))
    newer = engine.receive(sotw_response(CDS, "v2", "n2", {}))
    with pytest.raises(AlreadyAnswered):
        engine.ack(older)
    *_, ack = engine.ack(newer)  # follow-ups first, the ACK last
    assert (ack.version_info, ack.response_nonce) == ("v2", "n2")


def test_sotw_full_state_types_replace_and_per_name_types_merge() -> None:
    engine = sotw()
    engine.open_stream()
    accept(engine, sotw_response(CDS, "v1", "n1", {"a": "h1", "b": "h1"}))
    accept(engine, sotw_response(EDS, "v1", "n2", {"a": "h1", "b": "h1"}))
    accept(engine, sotw_response(EDS, "v2", "n3", {"a": "h2"}))
    assert {n: r.body for n, r in engine.watch(EDS).held.items()} == {
        "a": body("a", "h2"),
        "b": body("b", "h1"),
    }
    accept(engine, sotw_response(CDS, "v2", "n4", {"a": "h1"}))
    assert set(engine.watch(CDS).held) == {"a"}


def test_sotw_keeps_the_version_that_last_changed_a_resource() -> None:
    engine = sotw()
    engine.open_stream()
    accept(engine, sotw_response(CDS, "v1", "n1", {"a": "h1"}))
    accept(engine, sotw_response(CDS, "v2", "n2", {"a": "h1"}))
    assert engine.watch(CDS).held["a"].version == "v1"
    assert engine.watch(CDS).version_info == "v2"
    assert engine.watch(CDS).counters.last_change_at == 1.0


def test_a_narrower_subscription_drops_what_it_no_longer_covers() -> None:
    engine = sotw()
    engine.open_stream()
    accept(engine, sotw_response(CDS, "v1", "n1", {"a": "h1", "b": "h1"}))
    accept(engine, sotw_response(EDS, "v1", "n2", {"a": "h1", "b": "h1"}))
    requests = accept(engine, sotw_response(CDS, "v2", "n3", {"a": "h1", "b": "static"}))
    assert shape(requests[0]) == (EDS, "v1", "n2", ["a"], None, False)
    assert set(engine.watch(EDS).held) == {"a"}


def test_sotw_resume_asks_again_from_the_versions_held() -> None:
    engine = sotw()
    engine.open_stream()
    accept(engine, sotw_response(CDS, "v1", "n1", {"a": "h1"}))
    accept(engine, sotw_response(EDS, "v3", "n2", {"a": "h1"}))
    held = dict(engine.watch(EDS).held)
    requests = engine.open_stream()
    assert [shape(r) for r in requests] == [
        (CDS, "v1", "", [], None, True),
        (EDS, "v3", "", ["a"], None, False),
        (LDS, "", "", [], None, False),
    ]
    assert engine.watch(EDS).held == held


def test_a_type_that_wants_nothing_is_not_asked_on_a_new_stream() -> None:
    engine = sotw()
    engine.open_stream()
    accept(engine, sotw_response(CDS, "v1", "n1", {"a": "h1"}))
    accept(engine, sotw_response(EDS, "v1", "n2", {"a": "h1"}))
    accept(engine, sotw_response(CDS, "v2", "n3", {}))
    assert engine.watch(EDS).subscription.empty and engine.watch(EDS).held == {}
    assert [r.type_url for r in engine.open_stream()] == [CDS, LDS]


def test_before_a_stream_opens_an_answer_is_all_there_is() -> None:
    engine = sotw()
    requests = accept(engine, sotw_response(CDS, "v1", "n1", {"a": "h1"}))
    assert [shape(r) for r in requests] == [(CDS, "v1", "n1", [], None, False)]


def test_sotw_reads_wrapped_resources_and_rejects_other_types() -> None:
    engine = sotw()
    wrapped = discovery_pb2.Resource(
        name="a", resource=any_pb2.Any(type_url=CDS, value=body("a", "h1"))
    )
    response = discovery_pb2.DiscoveryResponse(
        type_url=CDS,
        version_info="v1",
        resources=[any_pb2.Any(type_url=RESOURCE_WRAPPER, value=wrapped.SerializeToString())],
    )
    ((facts, version),) = engine.read(response, read_body)
    assert (facts.name, facts.body, version) == ("a", body("a", "h1"), "v1")
    wrong = sotw_response(CDS, "v1", "n1", {})
    wrong.resources.add(type_url=EDS, value=body("a", "h1"))
    with pytest.raises(RejectedResponse, match=r"resource of type .*Assignment in a .*Cluster"):
        engine.read(wrong, read_body)


def test_settled_once_everything_wanted_is_accepted_and_held() -> None:
    engine = sotw()
    engine.open_stream()
    steps = [
        sotw_response(CDS, "v1", "n1", {"a": "h1"}),
        sotw_response(EDS, "v1", "n2", {"a": "h1"}),
        sotw_response(LDS, "v1", "n3", {"x": "h1"}),
        sotw_response(RDS, "v1", "n4", {"route-h1": "h1"}),
    ]
    for step in steps:
        assert not engine.settled()
        accept(engine, step)
    assert engine.settled()


def test_sotw_a_type_wanted_empty_needs_no_ack_to_settle() -> None:
    engine = sotw()
    engine.open_stream()
    accept(engine, sotw_response(CDS, "v1", "n1", {"a": "h1"}))
    accept(engine, sotw_response(LDS, "v1", "n2", {}))
    assert not engine.settled()  # EDS [a] asked, unanswered
    engine.open_stream()
    requests = accept(engine, sotw_response(CDS, "v2", "n1", {}))
    assert shape(requests[0]) == (EDS, "", "", [], None, False)  # no server answers this
    assert engine.watch(EDS).acks == 0
    assert engine.settled()
    assert [r.type_url for r in engine.open_stream()] == [CDS, LDS]
    assert engine.settled()


def test_static_subscriptions_ask_every_type_wildcard_and_resume_from_versions() -> None:
    types = ("core/v1alpha1/MeshConfig", "networking.istio.io/v1/ServiceEntry")
    engine = SotwClientEngine(StaticSubscriptions(types), NODE)
    assert [shape(r) for r in engine.open_stream()] == [
        (types[0], "", "", [], None, True),
        (types[1], "", "", [], None, False),
    ]
    (ack,) = engine.ack(engine.receive(sotw_response(types[1], "7", "n1", {})))
    assert shape(ack) == (types[1], "7", "n1", [], None, False)
    assert engine.watch(types[1]).subscription == WILDCARD_SUBSCRIPTION
    assert [shape(r) for r in engine.open_stream()][1] == (types[1], "7", "", [], None, False)


# -- delta -----------------------------------------------------------------------


def test_delta_stream_starts_with_the_legacy_wildcard() -> None:
    engine = delta()
    assert [delta_shape(r) for r in engine.open_stream()] == [(CDS, "", [], [], {}, None, True)]


def test_delta_ack_carries_the_nonce_and_follow_ups_subscribe() -> None:
    engine = delta()
    engine.open_stream()
    requests = accept(engine, delta_response(CDS, "n1", {"a": "h1", "b": "static"}))
    assert [delta_shape(r) for r in requests] == [
        (EDS, "", ["a"], [], {}, None, False),
        (LDS, "", [], [], {}, None, False),
        (CDS, "n1", [], [], {}, None, False),
    ]


def test_delta_nack_changes_nothing() -> None:
    engine = delta()
    engine.open_stream()
    accept(engine, delta_response(CDS, "n1", {"a": "h1"}))
    (nack,) = engine.nack(engine.receive(delta_response(CDS, "n2", {"a": "bad"})), "no")
    assert delta_shape(nack) == (CDS, "n2", [], [], {}, "no", False)
    assert engine.watch(CDS).held["a"].version == "h1"


def test_delta_removals_and_heartbeats() -> None:
    engine = delta()
    engine.open_stream()
    accept(engine, delta_response(CDS, "n1", {"a": "h1", "b": "h1"}))
    heartbeat = delta_response(CDS, "n2", {}, removed=("b",))
    heartbeat.resources.add(name="a", version="h1")  # no body: a TTL heartbeat
    accept(engine, heartbeat)
    assert {n: r.version for n, r in engine.watch(CDS).held.items()} == {"a": "h1"}


def test_delta_a_type_wanted_empty_needs_no_ack_to_settle() -> None:
    engine = delta()
    engine.open_stream()
    accept(engine, delta_response(CDS, "n1", {"a": "h1"}))
    accept(engine, delta_response(LDS, "n2", {}))
    assert not engine.settled()  # EDS [a] asked, unanswered
    engine.open_stream()
    requests = accept(engine, delta_response(CDS, "n1", {}, removed=("a",)))
    assert delta_shape(requests[0]) == (EDS, "", [], ["a"], {}, None, False)
    assert engine.watch(EDS).acks == 0
    assert engine.settled()
    assert [r.type_url for r in engine.open_stream()] == [CDS, LDS]
    assert engine.settled()


def test_delta_resume_reports_what_is_held() -> None:
    engine = delta()
    engine.open_stream()
    accept(engine, delta_response(CDS, "n1", {"a": "h1", "c": "h2"}))
    accept(engine, delta_response(EDS, "n2", {"a": "h7", "c": "h8"}))
    requests = engine.open_stream()
    assert [delta_shape(r) for r in requests] == [
        (CDS, "", [], [], {"a": "h1", "c": "h2"}, None, True),
        (EDS, "", ["a", "c"], [], {"a": "h7", "c": "h8"}, None, False),
        (LDS, "", [], [], {}, None, False),
    ]


class Scripted:
    """A policy whose EDS wants the test sets (a CDS response makes the engine look)."""

    order = (CDS, EDS)
    ack_first = True

    def __init__(self) -> None:
        self.eds = Subscription(frozenset({"a", "b"}))

    def desired(self, watches: Mapping[str, ClientWatch]) -> dict[str, Subscription]:
        return {CDS: WILDCARD_SUBSCRIPTION, EDS: self.eds}


@pytest.mark.parametrize(
    ("after", "subscribe", "unsubscribe"),
    [
        (Subscription(frozenset({"a", "c"})), ["c"], ["b"]),
        (Subscription(frozenset({"a", "b"}), wildcard=True), ["*"], []),
        (Subscription(frozenset()), [], ["a", "b"]),
    ],
)
def test_delta_subscription_changes_send_the_difference(
    after: Subscription, subscribe: list[str], unsubscribe: list[str]
) -> None:
    policy = Scripted()
    engine = DeltaClientEngine(policy)
    _, first = engine.open_stream()
    assert list(first.resource_names_subscribe) == ["a", "b"]
    policy.eds = after
    requests = accept(engine, delta_response(CDS, "n1", {"a": "h1"}))
    assert [delta_shape(r) for r in requests] == [
        (CDS, "n1", [], [], {}, None, False),
        (EDS, "", subscribe, unsubscribe, {}, None, False),
    ]


def test_delta_wildcard_off_is_an_unsubscribe_of_the_wildcard() -> None:
    policy = Scripted()
    policy.eds = Subscription(frozenset({"a"}), wildcard=True)
    engine = DeltaClientEngine(policy)
    _, first = engine.open_stream()
    assert list(first.resource_names_subscribe) == ["*", "a"]
    accept(engine, delta_response(EDS, "n1", {"a": "h1", "z": "h1"}))
    assert set(engine.watch(EDS).held) == {"a", "z"}
    policy.eds = Subscription(frozenset({"a"}))
    _, change = accept(engine, delta_response(CDS, "n2", {}))
    assert delta_shape(change) == (EDS, "", [], ["*"], {}, None, False)
    assert set(engine.watch(EDS).held) == {"a"}
