"""Starting the two servers a fleet benchmark compares: ``pilothouse serve`` and the floor.

``pilothouse serve`` on a mesh directory and the transport floor (``floor.py``) each run in
their own process (``ServerProcess``: /proc figures, stopped even if the benchmark dies),
on 127.0.0.1 with ports the kernel picks. ``floor_load_requests`` turns what a converged
proxy of pilothouse holds into the control calls that make the floor serve the same
bytes; ``FloorControl`` sends them, to every process of a floor at once. ``serving_*``
start either on an exit stack that stops it, and wait until it is ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import resource
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import grpc
from envoy.service.discovery.v3 import discovery_pb2  # type: ignore[import-untyped]
from google.protobuf import any_pb2

from bench.harness.floor import APPLY_METHOD
from bench.harness.process import ServerProcess
from pilothouse.loadtest.holdings import HeldResource
from pilothouse.loadtest.proxy import SimulatedProxy
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS

SERVED_TYPES = (CDS, EDS, LDS, RDS)
STARTUP_TIMEOUT = 90.0
FLOOR_SCRIPT = Path(__file__).resolve().parent / "floor.py"


def raise_open_file_limit() -> int:
    """Lift the soft limit on open files to the hard one (thousands of streams); the new
    soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # An unlimited hard limit (RLIM_INFINITY, -1) is not a valid soft limit for files.
    target = max(soft, 1 << 16) if hard == resource.RLIM_INFINITY else hard
    if target != soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return target


async def serving_pilothouse(
    stack: contextlib.AsyncExitStack,
    mesh_root: Path,
    log: Path,
    env: Mapping[str, str] | None = None,
    workers: int = 1,
) -> tuple[ServerProcess, str]:
    """``pilothouse serve`` on ``mesh_root`` (``env``: its ``PILOTHOUSE_*`` settings; with
    ``workers`` above 1, ``serve --workers N``, whose CPU counts every worker), stopped when
    ``stack`` closes; once it listens and every worker has built its first context, with
    its xDS address."""
    server = ServerProcess(
        "pilothouse" if workers == 1 else f"pilothouse --workers {workers}",
        [
            sys.executable, "-m", "pilothouse.cli.main", "serve", "--config", str(mesh_root),
            "--xds-address", "127.0.0.1:0", "--admin-address", "127.0.0.1:0",
            *(("--workers", str(workers)) if workers > 1 else ()),
        ],
        log,
        env={"PILOTHOUSE_DRAIN_SECONDS": "1", **(env or {})},
    )  # fmt: skip
    stack.callback(server.stop)
    found = await server.wait_for_line(r"xDS listening on (\S+):(\d+)", STARTUP_TIMEOUT)
    await server.wait_for_line(r"xds ready", STARTUP_TIMEOUT)  # fails at once if it exits
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while server.output().count("xds ready") < workers:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{server.name}: not every worker became ready")
        await asyncio.sleep(0.05)
    return server, f"{found.group(1)}:{found.group(2)}"


async def floor_controls(floor: ServerProcess, processes: int) -> tuple[str, list[str]]:
    """The floor's ADS address and the control address of each of its processes (none for
    a floor started without a control port)."""
    found = await floor.wait_for_line(r"floor listening on (\S+):(\d+)", STARTUP_TIMEOUT)
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while True:
        controls = re.findall(r"^floor control on (\S+:\d+)$", floor.output(), re.MULTILINE)
        if len(controls) >= processes:
            return f"{found.group(1)}:{found.group(2)}", controls
        if time.monotonic() > deadline:
            raise TimeoutError(f"transport floor: {len(controls)} of {processes} processes up")
        await asyncio.sleep(0.05)


async def serving_floor(
    stack: contextlib.AsyncExitStack, log: Path, processes: int = 1, control: bool = False
) -> tuple[ServerProcess, str, FloorControl]:
    """The transport floor, stopped when ``stack`` closes, once listening; its ADS address
    and its control. With ``processes`` above 1 (or ``control``) each of its processes
    listens on a control port of its own, all of which the control drives; otherwise the
    control calls go to the ADS port."""
    controlled = control or processes > 1
    shared = ("--processes", str(processes)) if processes > 1 else ()
    own = ("--control-address", "127.0.0.1:0") if controlled else ()
    server = ServerProcess(
        "transport floor",
        [sys.executable, str(FLOOR_SCRIPT), "--address", "127.0.0.1:0", *shared, *own],
        log,
    )
    stack.callback(server.stop)
    target, controls = await floor_controls(server, processes if controlled else 0)
    floor = FloorControl(controls or [target])
    stack.push_async_callback(floor.close)
    return server, target, floor


async def idle_cpu_rate(server: ServerProcess, seconds: float) -> float:
    """CPU seconds per second the server spends doing nothing in particular."""
    start_cpu = server.cpu_seconds()
    start = time.monotonic()
    await asyncio.sleep(seconds)
    return (server.cpu_seconds() - start_cpu) / (time.monotonic() - start)


def resource_message(type_url: str, held: HeldResource) -> Any:
    """A held resource as an ``envoy.service.discovery.v3.Resource`` (name, version, Any)."""
    return discovery_pb2.Resource(
        name=held.name,
        version=held.version,
        resource=any_pb2.Any(type_url=type_url, value=held.body),
    )


def floor_load_requests(probe: SimulatedProxy) -> list[Any]:
    """Control requests that make the floor serve what ``probe`` holds, type by type."""
    return [
        discovery_pb2.DeltaDiscoveryResponse(
            system_version_info="load",
            type_url=type_url,
            resources=[resource_message(type_url, held) for held in probe.holds(type_url).values()],
        )
        for type_url in SERVED_TYPES
        if probe.counters(type_url).responses
    ]


def _serialize(message: Any) -> bytes:
    return bytes(message.SerializeToString())


def _raw(body: bytes) -> bytes:
    return body


class FloorControl:
    """The floor's control channels (one per process): ``apply`` hands every process one
    load or push request at once."""

    def __init__(self, targets: str | Sequence[str]) -> None:
        addresses = [targets] if isinstance(targets, str) else list(targets)
        self._channels = [grpc.aio.insecure_channel(address) for address in addresses]
        self._applies = [
            channel.unary_unary(
                APPLY_METHOD, request_serializer=_serialize, response_deserializer=_raw
            )
            for channel in self._channels
        ]

    async def apply(self, request: Any) -> None:
        await asyncio.gather(*(apply(request) for apply in self._applies))

    async def load(self, requests: Sequence[Any]) -> None:
        for request in requests:
            await self.apply(request)

    async def close(self) -> None:
        for channel in self._channels:
            await channel.close()
