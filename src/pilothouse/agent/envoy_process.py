"""Envoy started and supervised by the agent, with istio-agent's command line.

Arguments, in istio-agent's order (``pkg/envoy/proxy.go``): ``-c <bootstrap>``,
``--drain-time-s <drain>`` (45), ``--drain-strategy immediate``,
``--local-address-ip-version v4``, ``--file-flush-interval-msec 1000``,
``--disable-hot-restart``, ``--allow-unknown-static-fields``, then ``--concurrency N``
only for N > 0 (the effective ProxyConfig's; 0 or unset lets Envoy use every core).

On stop (SIGTERM to the agent) Envoy is drained as a sidecar is: ``POST
/drain_listeners?graceful&inboundonly`` on its admin port, then the termination drain
duration (5 s) is waited (cut short if Envoy exits), then Envoy is terminated (and
killed if it lingers). Envoy exiting by itself ends :meth:`EnvoyProcess.run` with
:class:`EnvoyExited`: the agent exits with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import aiohttp

from pilothouse.atomic_file import replace_file

log = logging.getLogger("pilothouse.agent.envoy")

STATS_FILTER: Final = "^(cluster_manager.cds|listener_manager.lds).update_"
KILL_AFTER: Final = 5.0
"""Seconds Envoy has to exit after SIGTERM before it is killed."""


class EnvoyExited(RuntimeError):
    """Envoy exited while the agent was not stopping it."""

    def __init__(self, code: int) -> None:
        super().__init__(f"Envoy exited with status {code}")
        self.code = code


@dataclass(frozen=True, slots=True)
class EnvoyCommand:
    """How Envoy is started."""

    binary: str
    bootstrap_path: Path
    admin_port: int
    drain_duration: float = 45.0
    """``--drain-time-s`` (ProxyConfig ``drainDuration``)."""
    termination_drain_duration: float = 5.0
    """How long a stopping agent lets Envoy drain (``terminationDrainDuration``)."""
    concurrency: int | None = None
    log_level: str = ""
    environment: Mapping[str, str] = field(default_factory=dict)

    def args(self) -> list[str]:
        args = [
            self.binary,
            "-c",
            str(self.bootstrap_path),
            "--drain-time-s",
            str(int(self.drain_duration)),
            "--drain-strategy",
            "immediate",
            "--local-address-ip-version",
            "v4",
            "--file-flush-interval-msec",
            "1000",
            "--disable-hot-restart",
            "--allow-unknown-static-fields",
        ]
        if self.log_level:
            args += ["-l", self.log_level]
        if self.concurrency is not None and self.concurrency > 0:
            args += ["--concurrency", str(self.concurrency)]
        return args


class EnvoyProcess:
    """Writes the bootstrap, starts Envoy, drains and stops it."""

    def __init__(self, command: EnvoyCommand, bootstrap: Mapping[str, Any]) -> None:
        self.command = command
        self._bootstrap = bootstrap
        self.process: asyncio.subprocess.Process | None = None
        self.drained = False

    @property
    def admin_url(self) -> str:
        return f"http://127.0.0.1:{self.command.admin_port}"

    def write_bootstrap(self) -> None:
        path = self.command.bootstrap_path
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, json.dumps(self._bootstrap, indent=2).encode(), mode=0o644)

    async def run(self, stop: asyncio.Event) -> None:
        """Run Envoy until ``stop`` (then drain it) or until it exits (EnvoyExited)."""
        self.write_bootstrap()
        self.process = process = await asyncio.create_subprocess_exec(
            *self.command.args(), env={**os.environ, **self.command.environment}
        )
        log.info(
            "Envoy started", extra={"pid": process.pid, "command": " ".join(self.command.args())}
        )
        exited = asyncio.create_task(process.wait())
        stopping = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait((exited, stopping), return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
        if exited.done():
            code = exited.result()
            log.warning("Envoy exited", extra={"status": code})
            raise EnvoyExited(code)
        await self._drain(exited)

    async def _drain(self, exited: asyncio.Task[int]) -> None:
        process = self.process
        assert process is not None
        try:
            async with aiohttp.ClientSession() as session:
                url = f"{self.admin_url}/drain_listeners?graceful&inboundonly"
                async with session.post(url, timeout=aiohttp.ClientTimeout(total=2)) as answer:
                    self.drained = answer.status == 200
        except (aiohttp.ClientError, TimeoutError) as problem:
            log.warning("draining Envoy failed: %s", problem)
        log.info("Envoy draining", extra={"seconds": self.command.termination_drain_duration})
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(exited), self.command.termination_drain_duration)
        if not exited.done():
            process.terminate()
            try:
                await asyncio.wait_for(asyncio.shield(exited), KILL_AFTER)
            except TimeoutError:
                process.kill()
                await exited
        log.info("Envoy stopped", extra={"status": exited.result()})

    async def ready(self) -> str | None:
        """None when Envoy is ready as istio-agent judges it (admin ``/ready`` LIVE, and
        at least one accepted CDS and LDS update); else why not."""
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
                async with session.get(f"{self.admin_url}/ready") as answer:
                    if answer.status != 200:
                        return f"Envoy is not live ({(await answer.text()).strip()})"
                url = f"{self.admin_url}/stats?filter={STATS_FILTER}"
                async with session.get(url) as answer:
                    stats = _stats(await answer.text())
        except (aiohttp.ClientError, TimeoutError) as problem:
            return f"Envoy's admin port does not answer: {problem}"
        cds = stats.get("cluster_manager.cds.update_success", 0)
        lds = stats.get("listener_manager.lds.update_success", 0)
        if cds > 0 and lds > 0:
            return None
        rejected = stats.get("cluster_manager.cds.update_rejected", 0) + stats.get(
            "listener_manager.lds.update_rejected", 0
        )
        if rejected:
            return "config received from pilothouse, but was rejected"
        return "config not received from pilothouse (is it running?)"


def _stats(text: str) -> dict[str, int]:
    found = {}
    for line in text.splitlines():
        name, _, value = line.partition(": ")
        with contextlib.suppress(ValueError):
            found[name.strip()] = int(value)
    return found
