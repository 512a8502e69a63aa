"""Several Envoys for one test: numbered work directories, one teardown that stops them all.

The ``envoy_factory`` fixture is an ``EnvoyFleet``; calling it starts an Envoy (and waits
until it is ready unless told not to).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.e2e.harness.envoy import EnvoyProcess


class EnvoyFleet:
    """Starts Envoys in numbered work directories and stops all of them at the end."""

    def __init__(self, root: Path, *, log_level: str = "warning") -> None:
        self.root = root
        self.log_level = log_level
        self.processes: list[EnvoyProcess] = []

    async def start(
        self,
        bootstrap: Mapping[str, Any],
        *,
        wait_ready: bool = True,
        ready_timeout: float = 10.0,
        log_level: str | None = None,
        extra_args: tuple[str, ...] = (),
    ) -> EnvoyProcess:
        workdir = self.root / f"envoy-{len(self.processes)}"
        envoy = EnvoyProcess(
            bootstrap,
            workdir=workdir,
            log_level=log_level or self.log_level,
            extra_args=extra_args,
        )
        self.processes.append(envoy)
        envoy.start()
        if wait_ready:
            await envoy.wait_ready(ready_timeout)
        return envoy

    __call__ = start

    def describe(self, lines: int = 20) -> str:
        """Each Envoy's PID, exit code and log tail, for failure reports."""
        parts = []
        for index, envoy in enumerate(self.processes):
            pid = envoy.pid if envoy.started else "-"
            parts.append(
                f"--- envoy-{index} pid {pid} exit {envoy.returncode} ({envoy.workdir})\n"
                f"{envoy.log_tail(lines)}"
            )
        return "\n".join(parts)

    async def stop_all(self) -> None:
        processes, self.processes = self.processes, []
        try:
            await asyncio.gather(*(envoy.stop() for envoy in processes))
        finally:
            for envoy in processes:
                envoy.kill()
