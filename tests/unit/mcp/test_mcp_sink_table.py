"""The sink session's decision table, row by row."""

from __future__ import annotations

from pilothouse.config.model import Config, ConfigKey
from pilothouse.mcp.messages import (
    TRIGGER_COLLECTION,
    Code,
    EncodedResource,
    Push,
    ReceivedResources,
    trigger_push,
)
from pilothouse.mcp.sink_session import SinkKind, SinkOptions, SinkSession
from tests.unit.mcp.builders import SCHEMAS, SE, VS, encoded, over_the_wire, service_entry

A = service_entry("a")
B = service_entry("b")
BAD = service_entry("bad", valid=False)


def sink(incremental: bool = False, held: dict[str, dict[str, str]] | None = None) -> SinkSession:
    options = SinkOptions(
        collections=(SE, VS),
        incremental=frozenset({SE}) if incremental else frozenset(),
        sink_id="pilothouse-sink",
        annotations={"zone": "a"},
        source="upstream",
    )
    return SinkSession(options, SCHEMAS, held)


def push(
    *resources: EncodedResource,
    nonce: str = "1",
    incremental: bool = False,
    removed: tuple[str, ...] = (),
) -> ReceivedResources:
    return over_the_wire(
        Push(SE, nonce, "v", incremental=incremental, resources=resources, removed=removed)
    )


def keys(configs: tuple[Config, ...]) -> list[str]:
    return [f"{c.namespace}/{c.name}" for c in configs]


def test_initial_requests_one_per_collection_with_empty_nonce() -> None:
    requests = sink().initial_requests()
    assert [r.collection for r in requests] == [SE, VS]
    assert all(r.response_nonce == "" and r.error is None for r in requests)
    assert all(not r.incremental and not r.initial_resource_versions for r in requests)
    assert requests[0].sink_id == "pilothouse-sink"
    assert requests[0].sink_annotations == {"zone": "a"}


def test_initial_versions_only_for_incremental_collections() -> None:
    held = {SE: {"default/a": "1"}, VS: {"default/r": "2"}}
    requests = sink(incremental=True, held=held).initial_requests()
    assert requests[0].incremental and requests[0].initial_resource_versions == {"default/a": "1"}
    assert not requests[1].incremental and requests[1].initial_resource_versions == {}


def test_full_push_is_applied_and_acked() -> None:
    session = sink(incremental=True)
    decision = session.receive(push(encoded(A), encoded(B), nonce="7"))
    assert decision.kind is SinkKind.ACK and decision.first
    reply = decision.reply
    assert (reply.collection, reply.response_nonce, reply.error) == (SE, "7", None)
    assert reply.incremental and reply.sink_id == "pilothouse-sink"
    assert reply.initial_resource_versions == {}
    change = decision.change
    assert change is not None and change.full
    assert keys(change.upserts) == ["default/a", "default/b"]
    assert all(c.origin.source == "upstream" for c in change.upserts)
    assert session.held[SE] == {"default/a": encoded(A).version, "default/b": encoded(B).version}
    assert not session.receive(push(encoded(A), nonce="8")).first


def test_full_push_replaces_the_collection() -> None:
    session = sink()
    session.receive(push(encoded(A), encoded(B)))
    change = session.receive(push(encoded(B), nonce="2")).change
    assert change is not None
    assert change.deletes == (ConfigKey("ServiceEntry", "default", "a"),)
    assert session.held[SE] == {"default/b": encoded(B).version}


def test_incremental_push_upserts_and_removes() -> None:
    session = sink(incremental=True)
    session.receive(push(encoded(A), encoded(B)))
    changed_a = service_entry("a", host="new.example.com")
    decision = session.receive(
        push(encoded(changed_a), nonce="2", incremental=True, removed=("default/b", "default/zz"))
    )
    change = decision.change
    assert decision.kind is SinkKind.ACK and change is not None and not change.full
    assert keys(change.upserts) == ["default/a"]
    assert change.deletes == (ConfigKey("ServiceEntry", "default", "b"),)  # zz was never held
    assert session.held[SE] == {"default/a": encoded(changed_a).version}


def test_unknown_collection_is_nacked_unimplemented() -> None:
    message = over_the_wire(Push("istio/config/v1alpha2/httpapispecs", "4", "v"))
    decision = sink().receive(message)
    assert decision.kind is SinkKind.UNSUPPORTED and decision.change is None
    error = decision.reply.error
    assert error is not None and error.code == Code.UNIMPLEMENTED
    assert error.message == "unsupported collection"
    assert decision.reply.collection == "istio/config/v1alpha2/httpapispecs"
    assert decision.reply.response_nonce == "4"


def test_the_trigger_is_nacked_unimplemented() -> None:
    decision = sink().receive(over_the_wire(trigger_push()))
    assert decision.kind is SinkKind.UNSUPPORTED
    assert decision.reply.collection == TRIGGER_COLLECTION
    assert decision.reply.response_nonce == ""
    assert decision.reply.error is not None and decision.reply.error.code == Code.UNIMPLEMENTED


def test_invalid_resource_is_nacked_invalid_argument_and_the_valid_ones_apply() -> None:
    session = sink()
    decision = session.receive(push(encoded(A), encoded(BAD), nonce="3"))
    assert decision.kind is SinkKind.NACK
    error = decision.reply.error
    assert error is not None and error.code == Code.INVALID_ARGUMENT
    assert "default/bad" in error.message and "at least one host" in error.message
    assert decision.reply.response_nonce == "3"
    assert decision.change is not None and keys(decision.change.upserts) == ["default/a"]
    assert [r.name for r in decision.rejections] == ["default/bad"]
    assert session.held[SE] == {"default/a": encoded(A).version}


def test_rejected_name_keeps_its_last_good_version_on_a_full_push() -> None:
    session = sink()
    good = service_entry("bad")
    session.receive(push(encoded(good), encoded(A)))
    decision = session.receive(push(encoded(BAD), nonce="2"))
    assert decision.kind is SinkKind.NACK and decision.change is not None
    assert decision.change.deletes == (ConfigKey("ServiceEntry", "default", "a"),)
    assert session.held[SE] == {"default/bad": encoded(good).version}


def test_undecodable_body_is_nacked_unknown() -> None:
    broken = EncodedResource("default/x", "1", b"\x12\x03\x0a\x01!")  # body Any with a bad url
    decision = sink().receive(push(broken, encoded(A)))
    assert decision.kind is SinkKind.NACK
    assert decision.reply.error is not None and decision.reply.error.code == Code.UNKNOWN
    assert decision.change is not None and keys(decision.change.upserts) == ["default/a"]


def test_duplicate_names_in_one_message_keep_the_first() -> None:
    other = service_entry("a", host="other.example.com")
    decision = sink().receive(push(encoded(A), encoded(other)))
    assert decision.kind is SinkKind.NACK
    assert decision.change is not None and len(decision.change.upserts) == 1
    assert decision.change.upserts[0].same_content(A)


def test_held_state_carries_over_to_the_next_session() -> None:
    first = sink(incremental=True)
    first.receive(push(encoded(A)))
    second = sink(incremental=True, held=dict(first.held))  # type: ignore[arg-type]
    assert second.initial_requests()[0].initial_resource_versions == {
        "default/a": encoded(A).version
    }
    assert second.answered() == frozenset()


def test_failed_message_is_an_internal_nack_and_restores_what_is_held() -> None:
    session = sink(incremental=True)
    session.receive(push(encoded(A), incremental=True))
    before = session.held
    session.receive(push(encoded(B), nonce="2", incremental=True))  # say applying it raised
    decision = session.failed(push(encoded(B), nonce="2", incremental=True), before)
    assert decision.kind is SinkKind.FAILED and decision.change is None
    assert decision.reply.response_nonce == "2" and decision.reply.error is not None
    assert decision.reply.error.code == Code.INTERNAL
    assert "failed to apply 1 resource(s) of " + SE in decision.reply.error.message
    assert session.held == before
    assert set(session.held[SE]) == {"default/a"}
