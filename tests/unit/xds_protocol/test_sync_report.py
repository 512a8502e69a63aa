"""Per-type sync reports read from SotW and delta sessions driven with real requests."""

from __future__ import annotations

from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.rpc import status_pb2

from pilothouse.protocol.messages import NackError
from pilothouse.protocol.type_urls import CDS, EDS, LDS
from pilothouse.xds.protocol.delta import DeltaSession
from pilothouse.xds.protocol.sotw import SotwSession
from pilothouse.xds.protocol.sync_report import type_syncs
from pilothouse.xds.protocol.sync_status import SyncStatus

NODE = "sidecar~10.0.0.1~a.ns~ns.svc.cluster.local"


def sotw(type_url: str, **fields: object) -> discovery_pb2.DiscoveryRequest:
    return discovery_pb2.DiscoveryRequest(type_url=type_url, **fields)


def delta(type_url: str, **fields: object) -> discovery_pb2.DeltaDiscoveryRequest:
    return discovery_pb2.DeltaDiscoveryRequest(type_url=type_url, **fields)


def test_sotw_types_move_from_stale_to_synced_and_to_error() -> None:
    session = SotwSession()
    session.receive(sotw(CDS, node={"id": NODE}), 1.0)
    session.receive(sotw(EDS, resource_names=["c"]), 1.0)
    session.receive(sotw(LDS), 1.0)
    session.record_sent(CDS, "v1", "n1", {"c": "h1"}, 10.0)
    session.record_sent(LDS, "v1", "n2", {"l": "h1"}, 11.0)

    report = type_syncs(session)
    assert list(report) == [CDS, EDS, LDS]  # push order
    assert report[CDS].status is SyncStatus.STALE and report[CDS].sent_at == 10.0
    assert report[EDS].status is SyncStatus.NOT_SENT and report[EDS].sent_at is None

    session.receive(sotw(CDS, version_info="v1", response_nonce="n1"), 12.0)
    nack = status_pb2.Status(code=3, message="listener l: bad")
    session.receive(sotw(LDS, response_nonce="n2", error_detail=nack), 12.0)
    report = type_syncs(session)
    assert report[CDS].status is SyncStatus.SYNCED
    assert (report[CDS].nonce_sent, report[CDS].nonce_acked) == ("n1", "n1")
    assert report[CDS].version_sent == "v1"
    assert report[LDS].status is SyncStatus.ERROR
    assert report[LDS].error == NackError(3, "listener l: bad")


def test_delta_send_time_is_that_of_the_latest_responses_resources() -> None:
    session = DeltaSession()
    session.receive(delta(CDS, node={"id": NODE}), 1.0)
    session.record_sent(CDS, "n1", {"a": "h1", "b": "h1"}, frozenset(), 5.0, system_version="v1")
    session.receive(delta(CDS, response_nonce="n1"), 6.0)
    session.record_sent(CDS, "n2", {"b": "h2"}, frozenset(), 7.0, system_version="v2")
    report = type_syncs(session)[CDS]
    assert report.status is SyncStatus.STALE
    assert (report.nonce_sent, report.nonce_acked, report.version_sent) == ("n2", "n1", "v2")
    assert report.sent_at == 7.0
    session.receive(delta(CDS, response_nonce="n2"), 8.0)
    assert type_syncs(session)[CDS].status is SyncStatus.SYNCED


def test_a_delta_response_that_only_removed_has_no_known_send_time() -> None:
    session = DeltaSession()
    session.receive(delta(CDS, node={"id": NODE}), 1.0)
    session.record_sent(CDS, "n1", {"a": "h1"}, frozenset(), 5.0, system_version="v1")
    session.receive(delta(CDS, response_nonce="n1"), 6.0)
    session.record_sent(CDS, "n2", {}, frozenset({"a"}), 7.0, system_version="v2")
    assert type_syncs(session)[CDS].sent_at is None
