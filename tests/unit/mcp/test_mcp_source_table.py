"""The source session's decision table, row by row."""

from __future__ import annotations

import pytest

from pilothouse.mcp.messages import TRIGGER_COLLECTION, Code, McpError, SinkRequest
from pilothouse.mcp.snapshot import CollectionSnapshot
from pilothouse.mcp.source_session import SourceKind, SourceSession
from tests.unit.mcp.builders import SE, VS, encoded, service_entry, snapshot

A = service_entry("a")
B = service_entry("b")
C = service_entry("c")
A2 = service_entry("a", host="a2.example.com")


def session(*snapshots: CollectionSnapshot, incremental: bool = False) -> SourceSession:
    return SourceSession(
        [SE, VS],
        incremental=[SE] if incremental else [],
        snapshots={s.collection: s for s in snapshots},
    )


def subscribe(collection: str = SE, **fields: object) -> SinkRequest:
    return SinkRequest(collection=collection, **fields)  # type: ignore[arg-type]


def ack(nonce: str, collection: str = SE, incremental: bool = False) -> SinkRequest:
    return SinkRequest(collection=collection, response_nonce=nonce, incremental=incremental)


def nack(nonce: str, collection: str = SE) -> SinkRequest:
    return SinkRequest(
        collection=collection,
        response_nonce=nonce,
        error=McpError(Code.INVALID_ARGUMENT, "bad"),
    )


def test_subscription_is_answered_with_the_full_state() -> None:
    source = session(snapshot("v1", [B, A]))
    decision = source.receive(subscribe())
    assert decision.kind is SourceKind.SUBSCRIBE
    push = decision.push
    assert push is not None
    assert (push.collection, push.nonce, push.incremental) == (SE, "1", False)
    assert push.names == ("default/a", "default/b")
    assert push.system_version_info == "v1"
    assert push.removed == ()


def test_subscription_waits_for_a_first_snapshot() -> None:
    source = session()
    assert source.receive(subscribe()).push is None
    push = source.set_snapshot(snapshot("v1", [A]))
    assert push is not None and push.names == ("default/a",)


def test_snapshot_for_a_collection_nobody_asked_for_sends_nothing() -> None:
    source = session()
    assert source.set_snapshot(snapshot("v1", [A])) is None
    assert source.watch(SE) is None


def test_one_outstanding_response_per_collection() -> None:
    source = session(snapshot("v1", [A]))
    assert source.receive(subscribe()).push is not None
    assert source.set_snapshot(snapshot("v2", [A, B])) is None
    assert source.set_snapshot(snapshot("v3", [A, B, C])) is None
    after_ack = source.receive(ack("1")).push
    assert after_ack is not None
    assert after_ack.system_version_info == "v3"
    assert after_ack.nonce == "2"


def test_collections_are_independent_and_nonces_unique_per_stream() -> None:
    source = session(snapshot("v1", [A]), CollectionSnapshot(VS, "w1"))
    first = source.receive(subscribe(SE)).push
    second = source.receive(subscribe(VS)).push
    assert first is not None and second is not None
    assert (first.nonce, second.nonce) == ("1", "2")
    assert second.resources == ()


def test_ack_without_change_sends_nothing_until_the_snapshot_changes() -> None:
    source = session(snapshot("v1", [A]))
    source.receive(subscribe())
    decision = source.receive(ack("1"))
    assert decision.kind is SourceKind.ACK and decision.push is None
    watch = source.watch(SE)
    assert watch is not None and watch.held == {"default/a": encoded(A).version}
    assert source.set_snapshot(snapshot("v2", [A, B])) is not None


@pytest.mark.parametrize("nonce", ["0", "2", "x"])
def test_stale_nonce_is_dropped_and_counted(nonce: str) -> None:
    source = session(snapshot("v1", [A]))
    source.receive(subscribe())
    before = source.watch(SE)
    decision = source.receive(ack(nonce))
    assert decision.kind is SourceKind.STALE and decision.push is None
    assert source.watch(SE) == before
    assert source.stats.stale == 1
    assert source.set_snapshot(snapshot("v2", [B])) is None  # "1" is still outstanding


def test_ack_of_an_answered_nonce_is_stale() -> None:
    source = session(snapshot("v1", [A]))
    source.receive(subscribe())
    source.receive(ack("1"))
    assert source.receive(ack("1")).kind is SourceKind.STALE
    assert source.receive(nack("1")).kind is SourceKind.STALE
    assert source.stats.nacks == 0


def test_nack_is_recorded_and_the_version_is_not_resent() -> None:
    source = session(snapshot("v1", [A]), incremental=True)
    source.receive(subscribe(incremental=True))
    decision = source.receive(nack("1"))
    assert decision.kind is SourceKind.NACK and decision.push is None
    assert decision.error == McpError(Code.INVALID_ARGUMENT, "bad")
    watch = source.watch(SE)
    assert watch is not None
    assert watch.last_error == decision.error and watch.nacked_version == "v1"
    assert source.stats.nacks == 1
    assert source.set_snapshot(snapshot("v1", [A])) is None  # same version: not again
    after = source.set_snapshot(snapshot("v2", [A, B]))
    assert after is not None
    assert not after.incremental  # after a NACK the sink's state is unknown: full state
    assert after.names == ("default/a", "default/b")


@pytest.mark.parametrize(
    ("source_allows", "sink_asks", "incremental"),
    [(True, True, True), (True, False, False), (False, True, False), (False, False, False)],
)
def test_incremental_only_when_source_and_sink_both_want_it(
    source_allows: bool, sink_asks: bool, incremental: bool
) -> None:
    source = session(snapshot("v1", [A, B]), incremental=source_allows)
    first = source.receive(subscribe(incremental=sink_asks)).push
    assert first is not None and not first.incremental  # nothing acked yet: full
    source.receive(ack("1", incremental=sink_asks))
    push = source.set_snapshot(snapshot("v2", [A2, C]))
    assert push is not None
    assert push.incremental is incremental
    if incremental:
        assert push.names == ("default/a", "default/c")  # changed and new
        assert push.removed == ("default/b",)
    else:
        assert push.names == ("default/a", "default/c") and push.removed == ()


def test_incremental_follows_the_last_accepted_request() -> None:
    source = session(snapshot("v1", [A]), incremental=True)
    source.receive(subscribe(incremental=True))
    source.receive(ack("1", incremental=False))
    push = source.set_snapshot(snapshot("v2", [A, B]))
    assert push is not None and not push.incremental


def test_incremental_push_of_unchanged_content_is_empty() -> None:
    source = session(snapshot("v1", [A]), incremental=True)
    source.receive(subscribe(incremental=True))
    source.receive(ack("1", incremental=True))
    push = source.set_snapshot(snapshot("v2", [A]))
    assert push is not None and push.incremental
    assert push.resources == () and push.removed == ()


def test_initial_resource_versions_let_a_resumed_sink_skip_unchanged() -> None:
    source = session(snapshot("v9", [A2, B, C]), incremental=True)
    held = {"default/a": encoded(A).version, "default/b": encoded(B).version, "default/gone": "1"}
    push = source.receive(subscribe(incremental=True, initial_resource_versions=held)).push
    assert push is not None and push.incremental
    assert push.names == ("default/a", "default/c")
    assert push.removed == ("default/gone",)


def test_initial_resource_versions_are_ignored_without_incremental() -> None:
    source = session(snapshot("v9", [A, B]), incremental=False)
    held = {"default/a": encoded(A).version}
    push = source.receive(subscribe(incremental=True, initial_resource_versions=held)).push
    assert push is not None and not push.incremental
    assert push.names == ("default/a", "default/b")


def test_resubscription_while_outstanding_answers_again_and_old_nonce_goes_stale() -> None:
    source = session(snapshot("v1", [A]))
    source.receive(subscribe())
    again = source.receive(subscribe()).push
    assert again is not None and again.nonce == "2"
    assert source.receive(ack("1")).kind is SourceKind.STALE
    assert source.receive(ack("2")).kind is SourceKind.ACK


def test_unknown_collection_ends_the_stream_with_invalid_argument() -> None:
    source = session(snapshot("v1", [A]))
    decision = source.receive(subscribe("istio/config/v1alpha2/httpapispecs"))
    assert decision.kind is SourceKind.UNKNOWN
    assert decision.error is not None and decision.error.code == Code.INVALID_ARGUMENT
    assert "httpapispecs" in decision.error.message


def test_the_trigger_nack_is_ignored() -> None:
    source = session(snapshot("v1", [A]))
    request = SinkRequest(
        collection=TRIGGER_COLLECTION,
        error=McpError(Code.UNIMPLEMENTED, "unsupported collection"),
    )
    decision = source.receive(request)
    assert decision.kind is SourceKind.TRIGGER and decision.push is None
    assert source.stats.triggers == 1 and source.watches() == {}


@pytest.mark.parametrize(
    "error", [None, McpError(Code.INVALID_ARGUMENT, "x"), McpError(Code.UNKNOWN, "x")]
)
def test_only_the_unimplemented_nack_of_the_trigger_is_ignored(error: McpError | None) -> None:
    decision = session().receive(SinkRequest(collection=TRIGGER_COLLECTION, error=error))
    assert decision.kind is SourceKind.UNKNOWN


def test_stats_count_pushes_and_resources() -> None:
    source = session(snapshot("v1", [A, B]), incremental=True)
    source.receive(subscribe(incremental=True))
    source.receive(ack("1", incremental=True))
    source.set_snapshot(snapshot("v2", [A, B, C]))
    stats = source.stats
    assert (stats.pushes, stats.incremental_pushes, stats.resources_sent) == (2, 1, 3)
    assert (stats.requests, stats.subscribes, stats.acks) == (2, 1, 1)
