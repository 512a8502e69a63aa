"""Refusals made visible: each is recorded (bounded), counted by reason, and logged at
info with its peer and reason, throttled per reason with a count of the lines held
back; admission control's own refusals land there with the peer and node id."""

from __future__ import annotations

import logging

import grpc
import pytest

from pilothouse.settings import AdmissionSettings
from pilothouse.xds.server.admission import Admission, Refusal, Refused
from pilothouse.xds.server.refusals import LINES_PER_INTERVAL, LONGEST, RefusalLog

LOGGER = "pilothouse.xds.refusals"


class Clock:
    def __init__(self) -> None:
        self.now = 1_790_000_000.0

    def __call__(self) -> float:
        return self.now


def lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER]


def test_a_refusal_is_logged_at_info_with_peer_reason_and_node(
    caplog: pytest.LogCaptureFixture,
) -> None:
    refusals = RefusalLog(clock=Clock())
    with caplog.at_level(logging.INFO, logger=LOGGER):
        refusals.note("unauthenticated", "ipv4:10.0.0.7:4000", "token expired", "sidecar~a")
    (line,) = lines(caplog)
    assert line.levelno == logging.INFO
    assert "token expired" in line.getMessage()
    assert line.__dict__["reason"] == "unauthenticated"
    assert line.__dict__["peer"] == "ipv4:10.0.0.7:4000"
    assert line.__dict__["node"] == "sidecar~a"


def test_lines_are_throttled_per_reason_and_the_held_back_ones_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    refusals = RefusalLog(log_interval=10.0, clock=clock)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        for n in range(200):
            refusals.note("tls_busy", f"ipv4:10.0.0.1:{n}", "busy")
        refusals.note("unauthenticated", "ipv4:10.0.0.2:1", "no token")
        clock.now += 10.0
        refusals.note("tls_busy", "ipv4:10.0.0.1:9999", "busy")
    busy = [r for r in lines(caplog) if r.__dict__["reason"] == "tls_busy"]
    assert len(busy) == LINES_PER_INTERVAL + 1
    assert busy[-1].__dict__["suppressed"] == 200 - LINES_PER_INTERVAL
    assert [r.__dict__["reason"] for r in lines(caplog)].count("unauthenticated") == 1
    assert refusals.counts() == {"tls_busy": 201, "unauthenticated": 1}


def test_the_record_is_bounded_and_the_view_has_counts_and_latest() -> None:
    clock = Clock()
    refusals = RefusalLog(kept=3, clock=clock)
    for n in range(10):
        clock.now += 1
        refusals.note("rate_limited", f"ipv4:10.0.0.{n}:1", f"slow down {n}", f"node-{n}")
    view = refusals.view()
    assert [e["peer"] for e in view["recent"]] == [
        "ipv4:10.0.0.9:1",
        "ipv4:10.0.0.8:1",
        "ipv4:10.0.0.7:1",
    ]
    latest = view["reasons"]["rate_limited"]
    assert latest["count"] == 10
    assert latest["lastPeer"] == "ipv4:10.0.0.9:1"
    assert latest["lastNodeId"] == "node-9"
    assert latest["lastMessage"] == "slow down 9"
    assert latest["lastTime"].startswith("2026-")


def test_what_the_peer_sent_is_cut_short() -> None:
    refusals = RefusalLog()
    refusals.note("bad_node", "ipv4:10.0.0.1:1", "x" * 10_000, "n" * 10_000)
    (entry,) = refusals.recent()
    assert len(entry.node_id) == LONGEST
    assert len(entry.message) == LONGEST


async def test_admission_refusals_are_recorded_with_peer_node_and_message() -> None:
    admission = Admission(AdmissionSettings(rate=0, max_connections=1))
    async with admission.stream("ipv4:10.0.0.1:1", "sidecar~one"):
        with pytest.raises(Refused) as refused:
            async with admission.stream("ipv4:10.0.0.2:2", "sidecar~two"):
                pass
    assert refused.value.code is grpc.StatusCode.UNAVAILABLE
    admission.refuse(Refusal.UNAUTHENTICATED, "ipv4:10.0.0.3:3", "bad token", "sidecar~three")
    (full, unauthenticated) = admission.refusals.recent()
    assert (full.reason, full.peer, full.node_id) == (
        "max_connections",
        "ipv4:10.0.0.2:2",
        "sidecar~two",
    )
    assert "circuit breaker" in full.message
    assert (unauthenticated.reason, unauthenticated.message) == ("unauthenticated", "bad token")
    assert admission.snapshot().rejected["max_connections"] == 1
    assert admission.snapshot().rejected["unauthenticated"] == 1
