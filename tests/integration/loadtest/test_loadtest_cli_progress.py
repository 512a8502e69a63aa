"""The live progress display (in place on a terminal, now and then elsewhere, off with --quiet)
and the server probes: /proc, Prometheus process metrics, and waiting for /ready."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from pilothouse.loadtest.outcome import ShareStatus, Traffic
from pilothouse.loadtest.progress import ProgressDisplay, follow, progress_line
from pilothouse.loadtest.scenarios import LoadRun
from pilothouse.loadtest.server_process import (
    MetricsProbe,
    ProcProbe,
    ServerRecord,
    ServerSample,
    http_session,
    parse_process_metrics,
    process_tree,
    read_process,
    wait_ready,
)
from pilothouse.loadtest.spec import LoadSpec

from .test_loadtest_cli_driver import StandInShare

STATUS = ShareStatus(
    50, connected=48, converged=40, armed=2, pending=7, stream_failures=1,
    traffic=Traffic(100, 1000, 99, 1, 200),
)  # fmt: skip


def test_progress_line_names_every_figure() -> None:
    line = progress_line(
        elapsed=3.25, phase="push", status=STATUS, responses_per_second=812.4, changes=2,
        server=ServerSample(200 * 2**20, 5.0), server_cpu_percent=37.6,
    )  # fmt: skip
    assert line == (
        "[   3.2s] push | connected 48/50 | converged 40/50 | changes 2 pending 7 | "
        "812 responses/s | errors 2 | server 200 MiB 38% CPU"
    )
    quiet = progress_line(
        elapsed=0.5, phase="connect", status=ShareStatus(3), responses_per_second=None,
        changes=0, server=None, server_cpu_percent=None,
    )  # fmt: skip
    assert quiet == "[   0.5s] connect | connected 0/3 | converged 0/3 | errors 0"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_on_a_terminal_one_line_is_rewritten_and_cleared_at_the_end() -> None:
    stream = io.StringIO()
    display = ProgressDisplay(stream, terminal=True)
    display.show("first")
    display.show("second")
    display.close()
    assert stream.getvalue() == "\rfirst\x1b[K\rsecond\x1b[K\r\x1b[K"


def test_elsewhere_plain_lines_come_every_few_seconds() -> None:
    stream = io.StringIO()
    clock = Clock()
    display = ProgressDisplay(stream, terminal=False, clock=clock)
    for step in range(25):
        clock.now = step * 0.5
        display.show(f"line {step}")
    display.close()
    assert stream.getvalue() == "line 0\nline 10\nline 20\n"


def test_quiet_shows_nothing() -> None:
    stream = io.StringIO()
    display = ProgressDisplay(stream, enabled=False, terminal=True)
    display.show("anything")
    display.close()
    assert stream.getvalue() == ""


def test_proc_probe_reads_a_live_process_and_notices_a_missing_one() -> None:
    sample = ProcProbe(os.getpid()).read()
    assert sample is not None
    assert sample.rss_bytes is not None and sample.rss_bytes > 10 * 2**20
    assert sample.cpu_seconds is not None and sample.cpu_seconds > 0
    assert ProcProbe(4_000_000).read() is None


def test_proc_probe_adds_up_the_processes_below_the_server() -> None:
    """A server with workers (``serve --workers N``) is its whole process tree."""
    hold = 64 * 2**20
    child = subprocess.Popen(
        [sys.executable, "-c", f"import sys, time; x = bytearray({hold}); print(1); "
         "sys.stdout.flush(); time.sleep(60)"],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline() == b"1\n"
        assert child.pid in process_tree(os.getpid())
        alone = read_process(os.getpid())[0]
        tree = ProcProbe(os.getpid()).read()
        assert alone is not None and tree is not None and tree.rss_bytes is not None
        assert tree.rss_bytes - alone >= hold
    finally:
        child.kill()
        child.wait()
    assert child.pid not in process_tree(os.getpid())


def test_process_metrics_are_read_from_a_prometheus_page() -> None:
    text = """\
# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.75
# HELP process_resident_memory_bytes Resident memory size in bytes.
process_resident_memory_bytes 1.2345678e+08
pilot_xds_pushes{type="cds"} 3
"""
    assert parse_process_metrics(text) == ServerSample(123456780, 12.75)
    assert parse_process_metrics('pilot_xds_pushes{type="cds"} 3\n') is None
    assert parse_process_metrics("process_cpu_seconds_total 1.5\n") == ServerSample(None, 1.5)


def test_server_record_keeps_extremes_and_cpu_between_marks() -> None:
    record = ServerRecord("/proc/1")
    record.note(None)
    assert record.samples == 0
    record.mark("start", ServerSample(100, 1.0))
    record.note(ServerSample(300, 1.5))
    record.mark("end", ServerSample(200, 3.0))
    assert (record.first, record.last, record.peak_rss) == (
        ServerSample(100, 1.0), ServerSample(200, 3.0), 300,
    )  # fmt: skip
    assert record.cpu_between("start", "end") == 2.0
    assert record.cpu_between("start", "nowhere") is None
    figures = record.to_json({"run": ("start", "end", 4.0)})
    assert figures["cpuPercent"] == {"run": 50.0}
    assert figures["rssBytes"] == {"start": 100, "end": 200, "peak": 300}


@pytest.fixture
async def admin() -> AsyncIterator[tuple[str, dict[str, int]]]:
    """A tiny admin endpoint: /ready answers 503 twice, then 200; /metrics has the figures."""
    calls = {"ready": 0}

    async def ready(request: web.Request) -> web.Response:
        calls["ready"] += 1
        if calls["ready"] <= 2:
            return web.Response(status=503, text="not ready:\nconfig sources have not synced\n")
        return web.Response(text="ok\n")

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(
            text="process_resident_memory_bytes 4096\nprocess_cpu_seconds_total 2\n"
        )

    app = web.Application()
    app.router.add_get("/ready", ready)
    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"127.0.0.1:{port}", calls
    finally:
        await runner.cleanup()


async def test_wait_ready_polls_until_the_server_is_ready(
    admin: tuple[str, dict[str, int]],
) -> None:
    address, calls = admin
    async with http_session() as session:
        assert await wait_ready(session, address, 5.0, asyncio.Event()) is None
        assert calls["ready"] == 3
        assert await MetricsProbe(address, session).sample() == ServerSample(4096, 2.0)


async def test_wait_ready_gives_up_with_the_reason() -> None:
    async with http_session() as session:
        # A port nobody listens on: bind one, then close it.
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        problem = await wait_ready(session, f"127.0.0.1:{port}", 0.3, asyncio.Event())
        assert problem is not None
        assert problem.startswith(f"http://127.0.0.1:{port}/ready is not ready: ")
        assert await MetricsProbe(f"127.0.0.1:{port}", session).sample() is None


async def test_a_server_without_a_ready_page_counts_as_ready() -> None:
    app = web.Application()
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with http_session() as session:
            assert await wait_ready(session, f"127.0.0.1:{port}", 1.0, asyncio.Event()) is None
            assert await MetricsProbe(f"127.0.0.1:{port}", session).sample() is None
    finally:
        await runner.cleanup()


class StubProbe:
    """A server whose CPU time grows by 0.25 s per sample and whose memory grows too."""

    def __init__(self) -> None:
        self.samples = 0

    @property
    def source(self) -> str:
        return "stub"

    async def sample(self) -> ServerSample | None:
        self.samples += 1
        return ServerSample(self.samples * 2**20, self.samples * 0.25)


async def test_follow_samples_the_server_and_shows_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The line is cut to the terminal's width: wide enough here, whatever runs the test
    # (pytest-xdist's workers say 80 columns).
    monkeypatch.setenv("COLUMNS", "200")
    share = StandInShare(4)
    await share.start(0.0)
    load = LoadRun(LoadSpec(server="127.0.0.1:1", proxies=4), [share], asyncio.Event())
    load.phase = "connect"
    stream = io.StringIO()
    record = ServerRecord("stub")
    probe = StubProbe()
    task = asyncio.create_task(follow(load, probe, record, ProgressDisplay(stream, terminal=True)))
    async with asyncio.timeout(10):  # two samples, 0.5 s apart (later on a busy machine)
        while probe.samples < 2:
            await asyncio.sleep(0.01)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert probe.samples == 2
    assert record.samples == 2
    assert record.peak_rss == 2 * 2**20
    lines = stream.getvalue().split("\r")[1:]
    assert "] connect | connected 4/4 | converged 4/4 | errors 0" in lines[0]
    # Each line shows the seconds since the start (0.5 s apart, more on a busy machine),
    # to a tenth of a second.
    first, second = (float(line[1 : line.index("s]")]) for line in lines[:2])
    assert 0.5 <= first < second
    # The second sample knows the CPU rate: 0.25 s of CPU over the time between the two.
    found = re.search(r"server 2 MiB (\d+)% CPU", lines[1])
    assert found is not None, lines[1]
    between = second - first
    assert (
        100 * 0.25 / (between + 0.1) - 1
        <= int(found.group(1))
        <= 100 * 0.25 / max(between - 0.1, 0.05) + 1
    )
