"""A real ``pilothouse serve`` process whose ``k8s://`` API server cannot be reached.

The API server address is a loopback port nobody listens on (connections are refused at
once), so no fake is needed. Start-up must not wait for it: the xDS and admin ports open
at once, ``/ready`` answers 503 naming the unreachable source, a port clash is reported
at once, and the process exits cleanly (no ``Unclosed client session`` or other warning
from objects left open).
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.harness.http1 import HttpProtocolError
from tests.e2e.harness.ports import LOOPBACK, free_port, free_ports, port_accepts
from tests.e2e.harness.serve_process import ServeProcess

LEFT_OPEN = ("Unclosed", "Task was destroyed", "Traceback", "never awaited")
STARTED_WITHIN = 15.0
"""Seconds from start to ports open: a Python start-up on a busy shared machine, well
under the 30 s the old start-up waited for the mesh ConfigMap."""


def unreachable_kubeconfig(path: Path) -> Path:
    port = free_port()  # chosen and closed again: nothing listens there
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "gone", "cluster": {"server": f"http://{LOOPBACK}:{port}"}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "u"}}],
        "current-context": "gone",
    }
    path.write_text(json.dumps(config))
    return path


def serve(tmp_path: Path, xds: int, admin: int) -> ServeProcess:
    kubeconfig = unreachable_kubeconfig(tmp_path / "kubeconfig")
    return ServeProcess(
        [],
        xds_port=xds,
        admin_port=admin,
        log_path=tmp_path / "pilothouse.log",
        log_level="info",
        extra_args=["--config-source", "k8s://", "--kubeconfig", str(kubeconfig)],
    )


@pytest.fixture
async def plane(tmp_path: Path) -> AsyncIterator[ServeProcess]:
    xds, admin = free_ports(2)
    process = serve(tmp_path, xds, admin)
    try:
        yield process
    finally:
        await process.stop()


async def test_ports_open_at_once_and_ready_says_why_not(plane: ServeProcess) -> None:
    started = time.monotonic()
    plane.start()
    answer: tuple[int, str] | None = None
    while answer is None:
        assert plane.running(), plane.log_tail()
        assert time.monotonic() - started < STARTED_WITHIN, plane.log_tail()
        try:
            answer = await plane.ready("format=json")
        except (OSError, EOFError, TimeoutError, HttpProtocolError):
            await _pause()
    assert port_accepts(plane.xds_port)
    # 503 from the start; the reason names the refused connection once it has been tried.
    while True:
        status, body = answer
        assert status == 503, body
        report = json.loads(body)
        assert any(
            r.startswith("config sources have not synced yet: k8s://") for r in report["reasons"]
        ), report["reasons"]
        # the CA's root lives in the API server too (istio-ca-secret): waited for, not fatal
        assert any(r.startswith("CA root: ") for r in report["reasons"]), report["reasons"]
        sources = {s["source"]: s for s in report["sources"]}
        assert sorted(sources) == ["k8s://", "k8s:// service registry"]
        assert {s["state"] for s in sources.values()} == {"unavailable"}
        if all("Cannot connect" in s["reason"] for s in sources.values()):
            break
        assert time.monotonic() - started < 2 * STARTED_WITHIN, sources
        await _pause()
        answer = await plane.ready("format=json")
    # Still 503 a while later: an unreachable API server is never an empty, synced one.
    await _pause(1.0)
    assert (await plane.ready())[0] == 503
    assert await plane.stop() == 0
    log = plane.log_path.read_text()
    assert [line for line in log.splitlines() if any(m in line for m in LEFT_OPEN)] == []


async def test_a_port_clash_is_reported_at_once(tmp_path: Path) -> None:
    xds = free_port()
    with socket.socket() as taken:
        taken.bind((LOOPBACK, 0))
        taken.listen()
        plane = serve(tmp_path, xds, taken.getsockname()[1])
        started = time.monotonic()
        plane.start()
        try:
            while plane.running():
                assert time.monotonic() - started < STARTED_WITHIN, plane.log_tail()
                await _pause()
        finally:
            code = await plane.stop()
    assert code not in (0, None)
    log = plane.log_path.read_text()
    assert "cannot listen on" in log, log
    assert [line for line in log.splitlines() if any(m in line for m in LEFT_OPEN)] == []


async def _pause(seconds: float = 0.05) -> None:
    await asyncio.sleep(seconds)
