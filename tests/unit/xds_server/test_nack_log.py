"""The NACK warning of one connection: once per rejected nonce, and rate-limited."""

from __future__ import annotations

import logging

import pytest

from pilothouse.protocol.messages import NackError
from pilothouse.protocol.type_urls import CDS, LDS
from pilothouse.xds.server.nack_log import NackLog

NODE = "sidecar~10.0.0.1~app-1.data~data.svc.cluster.local"
ERROR = NackError(code=3, message="Proto constraint validation failed")


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "pilothouse.xds.nack"]


def test_a_nack_is_warned_once_per_nonce_with_the_envoy_filters(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "pilothouse.xds.nack")
    nacks = NackLog(NODE)
    named = ["istio-system/lua", "data/buffers"]
    assert nacks.nacked(CDS, "7", ERROR, 0.0, lambda: named)
    assert not nacks.nacked(CDS, "7", ERROR, 1.0, lambda: named)  # Envoy repeating it
    assert nacks.nacked(LDS, "7", ERROR, 1.0, list)  # same nonce, another type
    assert warnings(caplog) == [
        f"proxy {NODE} rejected CDS (nonce 7): code 3: Proto constraint validation failed"
        "; patched by EnvoyFilter istio-system/lua, data/buffers",
        f"proxy {NODE} rejected LDS (nonce 7): code 3: Proto constraint validation failed",
    ]
    record = next(r for r in caplog.records if r.name == "pilothouse.xds.nack")
    assert record.levelno == logging.WARNING
    assert record.node_id == NODE and record.envoy_filters == named


def test_a_proxy_nacking_in_a_loop_is_rate_limited_and_the_dropped_are_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "pilothouse.xds.nack")
    nacks = NackLog(NODE, rate=0.1, burst=2)
    asked: list[int] = []

    def filters() -> list[str]:
        asked.append(1)
        return []

    written = [nacks.nacked(CDS, str(n), ERROR, n * 0.01, filters) for n in range(6)]
    assert written == [True, True, False, False, False, False]
    assert len(asked) == 2  # the EnvoyFilters are looked up only for a warning written
    assert nacks.nacked(CDS, "6", ERROR, 10.1, filters)  # one token came due
    assert not nacks.nacked(CDS, "7", ERROR, 10.2, filters)
    logged = warnings(caplog)
    assert len(logged) == 3
    assert logged[2].endswith("(4 earlier NACKs from this proxy not logged)")
    assert "not logged" not in logged[0] + logged[1]


def test_a_reidentified_proxy_is_warned_under_its_new_node_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "pilothouse.xds.nack")
    nacks = NackLog(NODE)
    nacks.reidentify("router~10.0.0.2~gw-1.edge~edge.svc.cluster.local")
    nacks.nacked(CDS, "", ERROR, 0.0, list)
    assert warnings(caplog) == [
        "proxy router~10.0.0.2~gw-1.edge~edge.svc.cluster.local rejected CDS (nonce (none)):"
        " code 3: Proto constraint validation failed"
    ]
