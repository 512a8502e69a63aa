"""`serve --workers N` pieces that need no process: the setting, the board every worker
reads `/ready` from, and the parent's port reservations."""

from __future__ import annotations

import multiprocessing
import socket

import pytest

from pilothouse.cli.main import build_parser
from pilothouse.cli.port_reservation import reserve
from pilothouse.cli.serve_args import settings_from
from pilothouse.cli.supervisor import reserve_all, shared_addresses, worker_settings
from pilothouse.cli.worker_board import WorkerBoard
from pilothouse.cli.worker_debug import MERGED
from pilothouse.environment import SettingsError
from pilothouse.settings import Settings


def test_workers_come_from_the_flag_or_the_environment_and_default_to_one() -> None:
    parse = build_parser().parse_args
    assert settings_from(parse(["serve"]), {}).workers == 1
    assert settings_from(parse(["serve"]), {"PILOTHOUSE_WORKERS": "3"}).workers == 3
    assert (
        settings_from(parse(["serve", "--workers", "2"]), {"PILOTHOUSE_WORKERS": "3"}).workers == 2
    )
    with pytest.raises(SettingsError, match="PILOTHOUSE_WORKERS must be at least 1"):
        settings_from(parse(["serve", "--workers", "0"]), {})


def test_the_board_is_ready_only_when_every_slot_holds_a_ready_worker() -> None:
    board = WorkerBoard(2, multiprocessing.get_context("spawn"))
    assert board.not_ready() == "workers not ready: 0 (not started), 1 (not started)"
    board.publish(0, 100, ready=True, connections=3)
    board.publish(1, 101, ready=False, connections=0)
    assert board.not_ready() == "workers not ready: 1 (pid 101)"
    board.publish(1, 101, ready=True, connections=4)
    board.publish_admin_port(1, 40001)
    assert board.not_ready() is None
    assert [row.as_dict() for row in board.rows()] == [
        {"index": 0, "pid": 100, "ready": True, "connections": 3, "admin_port": 0},
        {"index": 1, "pid": 101, "ready": True, "connections": 4, "admin_port": 40001},
    ]
    board.clear(1)  # the parent saw worker 1 die
    assert board.not_ready() == "workers not ready: 1 (not started)"
    assert board.rows()[1].admin_port == 0  # nobody asks a dead worker's port


def test_a_reservation_picks_one_port_that_workers_can_share_and_others_cannot() -> None:
    held = reserve("127.0.0.1:0")
    try:
        assert held.port > 0 and held.address == f"127.0.0.1:{held.port}"
        worker = socket.socket()
        worker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        worker.bind(("127.0.0.1", held.port))  # a worker joins
        worker.listen()
        worker.close()
        stranger = socket.socket()
        with pytest.raises(OSError):  # without SO_REUSEPORT: taken
            stranger.bind(("127.0.0.1", held.port))
        stranger.close()
    finally:
        held.close()


def test_a_reservation_takes_bracketed_ipv6_and_refuses_what_is_not_an_address() -> None:
    try:
        held = reserve("[::1]:0")
    except OSError:
        pytest.skip("no IPv6 loopback here")
    try:
        assert held.host == "::1" and held.address == f"[::1]:{held.port}"
        assert held.sock.family == socket.AF_INET6
    finally:
        held.close()
    with pytest.raises(ValueError, match=r"expected HOST:PORT or \[IPv6\]:PORT, got '::1:0'"):
        reserve("::1:0")


def test_a_port_taken_without_reuseport_stops_the_parent_loudly() -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    settings = Settings(workers=2).with_overrides(
        {"xds.address": "127.0.0.1:0", "admin.address": f"127.0.0.1:{port}",
         "xds.tls_address": ""}
    )  # fmt: skip
    try:
        with pytest.raises(SystemExit, match=f"cannot listen on 127.0.0.1:{port}"):
            reserve_all(settings)
    finally:
        taken.close()


def test_the_shared_ports_are_xds_admin_and_tls_and_webhook_when_on() -> None:
    settings = Settings().with_overrides({"xds.tls_address": ""})
    assert set(shared_addresses(settings)) == {"xds.address", "admin.address"}
    on = Settings().with_overrides({"webhook.cert": "c", "webhook.key": "k"})
    assert set(shared_addresses(on)) == {
        "xds.address",
        "admin.address",
        "xds.tls_address",
        "webhook.address",
    }


def test_only_worker_zero_runs_controlz_and_writes_kubernetes_status() -> None:
    settings = Settings().with_overrides({"kube.write_status": True})
    first, second = worker_settings(settings, 0), worker_settings(settings, 1)
    assert first == settings and first.kube.write_status
    assert second.ctrlz.address == "off" and not second.kube.write_status
    assert second.with_overrides(
        {"ctrlz.address": settings.ctrlz.address, "kube.write_status": True}
    ) == settings


def test_worker_answers_merge_as_one_replicas() -> None:
    merge_syncz = MERGED["/debug/syncz"]
    syncz = merge_syncz([(1, (200, [{"proxy": "a.ns"}])), (0, (200, [{"proxy": "b.ns"}]))])
    assert syncz == (200, [{"proxy": "a.ns", "worker": 1}, {"proxy": "b.ns", "worker": 0}])
    gone = (404, {"error": "proxy p.ns is not connected", "status": 404})
    held = (200, {"configs": []})
    assert MERGED["/debug/config_dump"]([(0, gone), (1, held)]) == held
    assert MERGED["/debug/config_dump"]([(0, gone), (1, gone)]) == gone  # nobody holds it
    listed = MERGED["/debug/acked"]([(0, (200, {"proxies": [{"proxyID": "a"}]})),
                                     (1, (200, {"proxies": [{"proxyID": "b"}]}))])  # fmt: skip
    assert listed == (200, {"proxies": [{"proxyID": "a"}, {"proxyID": "b"}]})
    early = {"count": 2, "lastTime": "2026-01-01T00:00:01", "lastPeer": "p1"}
    late = {"count": 3, "lastTime": "2026-01-01T00:00:05", "lastPeer": "p2"}
    refused = MERGED["/debug/refusals"](
        [(0, (200, {"reasons": {"rate": late}, "recent": [{"time": "5"}]})),
         (1, (200, {"reasons": {"rate": early, "auth": early}, "recent": [{"time": "7"}]}))]
    )  # fmt: skip
    assert refused == (
        200,
        {
            "reasons": {"auth": early, "rate": {**late, "count": 5}},
            "recent": [{"time": "7"}, {"time": "5"}],
        },
    )
