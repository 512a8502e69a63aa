"""`pilothouse loadtest --server HOST:PORT`: point simulated proxies at any ADS server.

N simulated Envoys (sidecar or router) or proxyless gRPC clients, over SotW or
delta ADS, spread over ``--processes`` processes, each behaving as the real
client does (ACK/NACK, follow-up subscriptions, reconnect with backoff).
Scenarios: ``connect`` (a connection storm), ``push`` (make a change, time
until every proxy has it), ``churn`` (changes at a rate).  A live progress line
on stderr, and a final report (``-o json`` for one JSON object). The flags and
their checks are :mod:`~pilothouse.cli.loadtest_args`.

Exit status: 0 when every proxy converged and reached every change, 1 when not
(or the run failed), 2 on usage errors, 130 when interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from pilothouse.cli.loadtest_args import UsageError, add_arguments, spec_from_args
from pilothouse.heap import HeapKeeper
from pilothouse.loadtest.progress import ProgressDisplay, follow
from pilothouse.loadtest.report import build_report, render_text
from pilothouse.loadtest.scenarios import LoadRun, LoadtestError
from pilothouse.loadtest.server_process import (
    MetricsProbe,
    ProcProbe,
    ServerProbe,
    ServerRecord,
    http_session,
    wait_ready,
)
from pilothouse.loadtest.shares import LocalShare, Share
from pilothouse.loadtest.spec import LoadSpec, fleet_slices
from pilothouse.loadtest.workers import WorkerError, WorkerShare, run_worker

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
EXIT_INTERRUPTED: Final = 130


@dataclass(frozen=True)
class Observation:
    """How the run looks at the server and reports."""

    admin: str | None = None
    server_pid: int | None = None
    output: str = "text"
    quiet: bool = False


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "loadtest",
        help="point simulated proxies at an xDS server and time them",
        description=(
            "Connect N simulated Envoys or proxyless gRPC clients to any ADS server and "
            "measure how fast they converge: on connecting, after a change, under churn."
        ),
    )
    add_arguments(parser)
    parser.set_defaults(run=run)


# -- running ------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    if args.worker:
        return asyncio.run(run_worker())
    try:
        spec = spec_from_args(args)
    except UsageError as problem:
        print(f"pilothouse loadtest: {problem}", file=sys.stderr)
        return EXIT_USAGE
    observation = Observation(args.admin, args.server_pid, args.output, args.quiet)
    try:
        return asyncio.run(loadtest(spec, observation))
    except (asyncio.CancelledError, KeyboardInterrupt):
        print("pilothouse loadtest: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


@contextlib.contextmanager
def _signals_stop(stop: asyncio.Event) -> Iterator[None]:
    """First SIGINT/SIGTERM: stop the run and report; a second: cancel it outright."""
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()

    def interrupt() -> None:
        if stop.is_set():
            if main is not None:
                main.cancel()
        else:
            stop.set()

    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, interrupt)
            installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


async def loadtest(spec: LoadSpec, observation: Observation) -> int:
    """Run the load test and print its report; the exit status."""
    stop = asyncio.Event()
    with _signals_stop(stop):
        return await _loadtest(spec, observation, stop)


async def _loadtest(spec: LoadSpec, observation: Observation, stop: asyncio.Event) -> int:
    async with http_session() as session:
        if observation.admin is not None:
            problem = await wait_ready(session, observation.admin, spec.timeout, stop)
            if problem is not None:
                print(f"pilothouse loadtest: {problem}", file=sys.stderr)
                return EXIT_FAILED
        probe: ServerProbe | None = None
        if observation.server_pid is not None:
            probe = ProcProbe(observation.server_pid)
        elif observation.admin is not None:
            probe = MetricsProbe(observation.admin, session)
        server = ServerRecord(probe.source) if probe is not None else None
        slices = fleet_slices(spec.proxies, spec.processes)
        shares: list[Share] = [LocalShare(spec, slices[0])]
        shares.extend(WorkerShare(spec, part) for part in slices[1:])
        load = LoadRun(spec, shares, stop, probe=probe, server=server)
        display = ProgressDisplay(sys.stderr, enabled=not observation.quiet)
        loop = asyncio.get_running_loop()
        monitor = loop.create_task(follow(load, probe, server, display))
        # thousands of simulated proxies' state: kept out of the collector's full scans
        keeper = loop.create_task(HeapKeeper().run())
        failure: Exception | None = None
        try:
            record = await load.run()
        except (LoadtestError, WorkerError) as problem:
            failure = problem
        finally:
            monitor.cancel()
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await monitor
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
            display.close()
            await asyncio.gather(*(share.close() for share in shares), return_exceptions=True)
    if failure is not None:
        print(f"pilothouse loadtest: {failure}", file=sys.stderr)
        return EXIT_FAILED
    report = build_report(
        record, server=server, server_pid=observation.server_pid, admin=observation.admin
    )
    _print(report, observation.output)
    if report["interrupted"]:
        return EXIT_INTERRUPTED
    return EXIT_OK if report["ok"] else EXIT_FAILED


def _print(report: dict[str, Any], output: str) -> None:
    if output == "json":
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_text(report))
    sys.stdout.flush()
