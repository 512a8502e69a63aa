"""`pilothouse serve --workers 2` as real processes: connections spread over both workers,
which serve the same config; the debug answers about proxies (and so `proxy-status`,
`proxy-config`, `inspect`) cover every worker's, every time; a worker killed is logged
and restarted and its proxies come back; `/ready` fails while a worker is missing;
SIGTERM to the parent stops every worker; the shared port stays exclusive to the group
(a one-worker serve on it fails loudly).

The tests that leave the group as they found it share one per module (``group``);
those that stop or kill its parent start their own (``own_group``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from pilothouse.backoff import Backoff
from pilothouse.loadtest.fleet import ProxyFleet, fleet_identities
from tests.e2e.harness.client import fetch
from tests.e2e.harness.http1 import HttpProtocolError
from tests.e2e.harness.ports import LOOPBACK
from tests.e2e.harness.serve_process import ServeProcess

ROOT = Path(__file__).resolve().parents[2]
CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
PROXIES = 24
ENVIRONMENT = {
    "PILOTHOUSE_WORKERS": "2",
    "PILOTHOUSE_DRAIN_SECONDS": "1",
    "PILOTHOUSE_CTRLZ_ADDRESS": "off",
    "PILOTHOUSE_DEBOUNCE_AFTER": "0.02",
}


async def start_group(root: Path) -> ServeProcess:
    """A two-worker serve of the example mesh on ports 0, ready."""
    mesh = root / "mesh"
    shutil.copytree(ROOT / "examples", mesh)
    process = ServeProcess(
        [mesh], xds_port=0, admin_port=0, log_path=root / "serve.log",
        log_level="warn,serve:info,supervisor:info", environment=ENVIRONMENT,
    ).start()  # fmt: skip
    try:
        await process.wait_listening()
        await process.wait_ready()
    except BaseException:
        kill_group(process)
        raise
    return process


def kill_group(process: ServeProcess) -> None:
    """SIGKILL to the process group (parent and workers), and to each worker by PID."""
    pids = _worker_pids_in_log(process)
    process.kill()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def group(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ServeProcess]:
    """One group for the tests that leave it as they found it: two workers, ready (a
    worker a test kills is restarted and ready again before the test ends)."""
    process = await start_group(tmp_path_factory.mktemp("shared-group"))
    try:
        yield process
    finally:
        kill_group(process)


@pytest.fixture
async def own_group(tmp_path: Path) -> AsyncIterator[ServeProcess]:
    """A group of this test's own, for a test that stops or kills its parent."""
    process = await start_group(tmp_path)
    try:
        yield process
    finally:
        kill_group(process)


async def workers(process: ServeProcess) -> dict[str, Any]:
    response = await fetch(LOOPBACK, process.admin_port, "/debug/workers", timeout=2.0)
    assert response.status == 200, response.body
    answer: dict[str, Any] = json.loads(response.body)
    return answer


async def wait_workers(process: ServeProcess, check: Any, timeout: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        answer = await workers(process)
        if check(answer["workers"]):
            return answer
        assert time.monotonic() < deadline, f"workers never as expected: {answer}"
        await asyncio.sleep(0.05)


def _worker_pids_in_log(process: ServeProcess) -> list[int]:
    text = process.log_path.read_text(errors="replace") if process.log_path.exists() else ""
    return [int(pid) for pid in re.findall(r"worker started worker=\d+ pid=(\d+)", text)]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (dead, not reaped yet) counts as gone.
    with contextlib.suppress(OSError), open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    return False


async def test_connections_spread_and_a_killed_worker_restarts(group: ServeProcess) -> None:
    rows = (await workers(group))["workers"]
    pids = [row["pid"] for row in rows]
    assert len(set(pids)) == 2 and all(alive(pid) for pid in pids)
    assert group.pid not in pids

    fleet = ProxyFleet(
        f"{LOOPBACK}:{group.xds_port}",
        fleet_identities(PROXIES),
        streams_per_channel=1,  # one TCP connection per proxy, so the kernel spreads them
        backoff=Backoff(initial=0.1, maximum=0.4),
        seed=7,
    )
    await fleet.start()
    try:
        report = await fleet.wait_converged(timeout=20)
        assert report.converged, report.unconverged
        answer = await wait_workers(
            group, lambda rows: sum(row["connections"] for row in rows) == PROXIES
        )
        assert all(row["connections"] > 0 for row in answer["workers"]), answer
        held = {frozenset(proxy.holds(CDS)) for proxy in fleet.proxies}
        assert len(held) == 1 and len(next(iter(held))) > 2, "workers serve different config"

        victim = answer["workers"][1]
        os.kill(victim["pid"], signal.SIGKILL)
        deadline = time.monotonic() + 5
        status, body = 200, ""
        while status != 503:  # a worker is missing: not ready
            assert time.monotonic() < deadline, "/ready stayed 200 with a worker dead"
            await asyncio.sleep(0.02)
            # A request that was queued on the killed worker's socket is reset.
            with contextlib.suppress(OSError, EOFError, HttpProtocolError):
                status, body = await group.ready()
        assert "workers not ready: 1" in body, body
        await group.wait_ready(timeout=30)
        rows = (await workers(group))["workers"]
        assert rows[1]["pid"] not in (0, victim["pid"]) and rows[1]["ready"]
        assert rows[0]["pid"] == answer["workers"][0]["pid"]
        log = group.log_path.read_text()
        assert f"worker 1 (pid {victim['pid']}) died (signal SIGKILL); restarting in" in log

        report = await fleet.wait_converged(
            lambda proxy: proxy.connected and proxy.settled(), timeout=20
        )
        assert report.converged, report.unconverged
        assert {frozenset(proxy.holds(CDS)) for proxy in fleet.proxies} == held
        await wait_workers(group, lambda rows: sum(row["connections"] for row in rows) == PROXIES)
    finally:
        await fleet.close()


async def test_debug_answers_and_the_cli_see_every_workers_proxies(group: ServeProcess) -> None:
    count = 10
    fleet = ProxyFleet(
        f"{LOOPBACK}:{group.xds_port}",
        fleet_identities(count, app="seen"),
        streams_per_channel=1,  # one TCP connection per proxy, so the kernel spreads them
        backoff=Backoff(initial=0.1, maximum=0.4),
        seed=11,
    )
    await fleet.start()
    try:
        report = await fleet.wait_converged(timeout=20)
        assert report.converged, report.unconverged
        answer = await wait_workers(
            group,
            lambda rows: all(row["connections"] > 0 for row in rows)
            and all(row["admin_port"] > 0 for row in rows),
        )
        ids = {f"seen-{i}.default" for i in range(count)}
        for _ in range(6):  # each request lands on either worker: all of them, every time
            response = await fetch(LOOPBACK, group.admin_port, "/debug/syncz", timeout=5.0)
            assert response.status == 200 and "Pilothouse-Workers-Missing" not in response.headers
            entries = [e for e in json.loads(response.body) if e["proxy"] in ids]
            assert {e["proxy"] for e in entries} == ids and len(entries) == count
            assert {e["worker"] for e in entries} == {0, 1}, answer
        for proxy in sorted(ids):  # whichever worker holds it, and whichever answers
            for path in (
                f"/debug/config_dump?proxyID={proxy}&types=cds",
                f"/debug/acked?proxyID={proxy}",
            ):
                response = await fetch(LOOPBACK, group.admin_port, path, timeout=5.0)
                assert response.status == 200, (path, response.body)
        response = await fetch(LOOPBACK, group.admin_port, "/debug/config_dump?proxyID=nobody.x")
        assert response.status == 404
        listed = json.loads((await fetch(LOOPBACK, group.admin_port, "/debug/acked")).body)
        assert ids <= {p["proxyID"] for p in listed["proxies"]}

        admin = f"{LOOPBACK}:{group.admin_port}"
        status = await _cli("proxy-status", "--admin", admin, "-o", "json")
        assert status.returncode == 0, status.stderr
        assert ids <= {e["proxy"] for e in json.loads(status.stdout)}
        for proxy in ("seen-0.default", "seen-1.default", "seen-2.default"):
            config = await _cli("proxy-config", "cluster", proxy, "--admin", admin)
            assert config.returncode == 0 and "PassthroughCluster" in config.stdout, config.stderr
    finally:
        await fleet.close()


async def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "pilothouse.cli.main", *argv],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip


async def test_the_tls_port_completes_handshakes_under_workers(group: ServeProcess) -> None:
    assert group.xds_tls_port > 0
    trust = ssl.create_default_context(
        cafile=str(Path(os.environ["PILOTHOUSE_CA_DIR"]) / "root-cert.pem")
    )
    trust.set_alpn_protocols(["h2"])
    for _ in range(8):  # spread over both workers' TLS fronts by the kernel
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(
                LOOPBACK, group.xds_tls_port, ssl=trust, server_hostname="localhost"
            ),
            timeout=5,
        )
        assert writer.get_extra_info("ssl_object").selected_alpn_protocol() == "h2"
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def test_the_shared_port_is_not_open_to_a_single_worker_serve(
    group: ServeProcess, tmp_path: Path
) -> None:
    single = subprocess.run(
        [sys.executable, "-m", "pilothouse.cli.main", "serve", "--config", str(tmp_path),
         "--xds-address", f"{LOOPBACK}:{group.xds_port}",
         "--admin-address", f"{LOOPBACK}:0", "--ctrlz-address", "off"],
        capture_output=True, text=True, timeout=30,
        env={**os.environ, "PILOTHOUSE_WORKERS": "1"},
    )  # fmt: skip
    assert single.returncode != 0
    assert f"cannot listen on {LOOPBACK}:{group.xds_port}: address already in use" in single.stderr


async def test_sigterm_drains_every_worker_and_leaves_no_orphan(own_group: ServeProcess) -> None:
    pids = [row["pid"] for row in (await workers(own_group))["workers"]]
    assert all(alive(pid) for pid in pids)
    started = time.monotonic()
    code = await own_group.stop(timeout=10)
    took = time.monotonic() - started
    assert code == 0
    assert took < 1 + 3 + 1, f"stopping took {took:.1f} s"  # drain 1 s, grace 3 s
    assert not any(alive(pid) for pid in pids), "a worker outlived its parent"
    log = own_group.log_path.read_text()
    assert sorted(re.findall(r" serve stopped worker=(\d)", log)) == ["0", "1"], log
    assert " supervisor stopped" in log


async def test_a_worker_that_cannot_start_stops_the_whole_serve(tmp_path: Path) -> None:
    failed = subprocess.run(
        [sys.executable, "-m", "pilothouse.cli.main", "serve", "--workers", "2",
         "--config-source", "bogus://x", "--xds-address", f"{LOOPBACK}:0",
         "--admin-address", f"{LOOPBACK}:0", "--ctrlz-address", "off"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert failed.returncode == 1, failed.stderr
    assert "unsupported scheme 'bogus'" in failed.stderr
    assert "could not start (exit code 1): stopping" in failed.stderr


async def test_workers_stop_by_themselves_when_the_parent_is_killed(
    own_group: ServeProcess,
) -> None:
    pids = [row["pid"] for row in (await workers(own_group))["workers"]]
    os.kill(own_group.pid, signal.SIGKILL)  # the parent alone, not its process group
    deadline = time.monotonic() + 1 + 3 + 2  # drain 1 s, and time to notice and exit
    while any(alive(pid) for pid in pids):
        assert time.monotonic() < deadline, "workers outlived their parent"
        await asyncio.sleep(0.05)
    assert "the supervising parent is gone: stopping" in own_group.log_path.read_text()
