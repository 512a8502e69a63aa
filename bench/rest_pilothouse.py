"""``pilothouse serve`` for the REST discovery benchmark, on ports the kernel picks.

Both listeners are given port 0; the admin port (where REST discovery is served) is
read from the line ``serve`` logs when it listens, then ``/ready`` is awaited. With
``profile`` set the server runs under cProfile and writes its statistics to that file
when it is stopped (SIGTERM makes ``serve`` drain and return normally).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Final

from bench.harness.child import Child, ChildFailed

ADMIN_LINE: Final = r"admin \([^)]*\) listening on 127\.0\.0\.1:(\d+)"
ENV: Final = {"PILOTHOUSE_DRAIN_SECONDS": "1"}


class Pilothouse:
    """A running ``pilothouse serve``; call :meth:`stop` (also on failure)."""

    def __init__(self, mesh: Path, workdir: Path, profile: Path | None = None) -> None:
        runner = [sys.executable]
        if profile is not None:
            runner += ["-m", "cProfile", "-o", str(profile)]
        argv = [*runner, "-m", "pilothouse.cli.main", "serve", "--config", str(mesh),
                "--xds-address", "127.0.0.1:0", "--admin-address", "127.0.0.1:0",
                "--log-level", "info"]  # fmt: skip
        name = "pilothouse-profiled" if profile is not None else "pilothouse"
        self.child = Child(name, argv, workdir / f"{name}.log", ENV)
        self.port = 0

    @property
    def pgrp(self) -> int:
        return self.child.pid

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v3/discovery:clusters"

    def wait_ready(self, timeout: float) -> None:
        began = time.monotonic()
        self.port = int(self.child.wait_for_line(ADMIN_LINE, timeout).group(1))
        self.child.wait_ready(self.port, max(timeout - (time.monotonic() - began), 1.0))

    def stop(self) -> None:
        self.child.stop()


def start_pilothouse(
    mesh: Path, workdir: Path, timeout: float, profile: Path | None = None
) -> Pilothouse:
    """pilothouse serving ``mesh``, ready (stopped again if it does not get there)."""
    server = Pilothouse(mesh, workdir, profile)
    try:
        server.wait_ready(timeout)
    except ChildFailed:
        server.stop()
        raise
    return server
