"""``pilothouse serve`` as a real process for end-to-end tests: start, wait ready, kill, stop.

``ServeProcess`` runs ``python -m pilothouse.cli.main serve`` in its own session (so that
:meth:`kill` can SIGKILL the whole process group, the way a node dies) with its xDS and
admin addresses on loopback ports fixed by the caller, which lets a test start a second
process on the same ports after the first one died; or on ports 0, which
:meth:`wait_listening` then reads from the log.  Its stderr goes to a log file that
every restart appends to.  :meth:`stop` is SIGTERM, a wait, then SIGKILL; it is safe to
call on a process that already died.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.e2e.harness.client import fetch
from tests.e2e.harness.http1 import HttpProtocolError
from tests.e2e.harness.ports import LOOPBACK


class ServeExited(RuntimeError):
    """``pilothouse serve`` died while the test expected it to run."""


class ServeProcess:
    """One ``pilothouse serve`` process over ``config_dirs`` on fixed loopback ports."""

    def __init__(
        self,
        config_dirs: Sequence[Path],
        *,
        xds_port: int,
        admin_port: int,
        log_path: Path,
        log_level: str = "warn",
        environment: Mapping[str, str] | None = None,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.config_dirs = tuple(config_dirs)
        self.extra_args = tuple(extra_args)
        """More ``serve`` flags (e.g. ``--config-source``)."""
        self.xds_port = xds_port
        self.admin_port = admin_port
        self.log_path = log_path
        self.log_level = log_level
        self.environment = dict(environment or {})
        self.xds_tls_port = 0
        """The TLS port, read by :meth:`wait_listening` (0: off, or not read yet)."""
        self._process: subprocess.Popen[bytes] | None = None

    # -- life cycle ---------------------------------------------------------------------

    def start(self) -> ServeProcess:
        if self.running():
            raise RuntimeError("pilothouse serve is already running")
        command = [sys.executable, "-m", "pilothouse.cli.main", "serve"]
        for directory in self.config_dirs:
            command += ["--config", str(directory)]
        command += [
            "--xds-address", f"{LOOPBACK}:{self.xds_port}",
            "--admin-address", f"{LOOPBACK}:{self.admin_port}",
            "--log-level", self.log_level,
            *self.extra_args,
        ]  # fmt: skip
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                env={**os.environ, **self.environment},
                start_new_session=True,
            )
        return self

    @property
    def pid(self) -> int:
        if self._process is None:
            raise RuntimeError("pilothouse serve was not started")
        return self._process.pid

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def kill(self) -> None:
        """SIGKILL the whole process group now and reap the leader."""
        process = self._process
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(5.0)

    async def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM, wait up to ``timeout``, then SIGKILL; returns the exit code."""
        process = self._process
        if process is None:
            return None
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while process.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
        if process.poll() is None:
            self.kill()
        return process.returncode

    # -- readiness ----------------------------------------------------------------------

    async def ready(self, query: str = "") -> tuple[int, str]:
        """``/ready`` (with ``query``, e.g. ``format=json``) on the admin port now:
        (status, body)."""
        path = f"/ready?{query}" if query else "/ready"
        response = await fetch(LOOPBACK, self.admin_port, path, timeout=2.0)
        return response.status, response.body.decode(errors="replace")

    async def wait_ready(self, timeout: float = 30.0) -> float:
        """Wait until ``/ready`` answers 200 while the process lives; returns seconds waited."""
        started = time.monotonic()
        last = "no answer"
        while True:
            if not self.running():
                raise ServeExited(f"pilothouse serve exited early:\n{self.log_tail()}")
            try:
                status, body = await self.ready()
            except (OSError, EOFError, TimeoutError, HttpProtocolError) as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if status == 200:
                    return time.monotonic() - started
                last = f"{status} {body.strip()}"
            if time.monotonic() - started >= timeout:
                raise TimeoutError(
                    f"pilothouse serve not ready after {timeout}s (last /ready: {last}):\n"
                    f"{self.log_tail()}"
                )
            await asyncio.sleep(0.05)

    async def wait_listening(self, timeout: float = 30.0) -> None:
        """For a process started on port 0: wait until its log names the ports it bound
        and take them (its ``log_level`` must let ``serve:info`` through)."""
        started = time.monotonic()
        while True:
            text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
            xds = re.search(r"xDS listening on \S+?:(\d+)", text)
            admin = re.search(r"admin \([^)]*\) listening on \S+?:(\d+)", text)
            tls = re.search(r"xDS \(TLS\)[^\n]* listening on \S+?:(\d+)", text)
            # the TLS port opens after the others, once the CA's root is read
            if xds is not None and admin is not None and (tls is not None or not self.tls_on):
                self.xds_port, self.admin_port = int(xds.group(1)), int(admin.group(1))
                self.xds_tls_port = int(tls.group(1)) if tls is not None else 0
                return
            if not self.running():
                raise ServeExited(f"pilothouse serve exited early:\n{self.log_tail()}")
            if time.monotonic() - started >= timeout:
                raise TimeoutError(f"pilothouse serve did not listen in {timeout}s")
            await asyncio.sleep(0.05)

    @property
    def tls_on(self) -> bool:
        """Whether this process was given a TLS port (``--xds-tls-address`` or
        ``PILOTHOUSE_XDS_TLS_ADDRESS`` not empty)."""
        environment = {**os.environ, **self.environment}  # as the process gets it
        address = environment.get("PILOTHOUSE_XDS_TLS_ADDRESS", "")
        args = list(self.extra_args)
        for at, arg in enumerate(args):
            if arg == "--xds-tls-address" and at + 1 < len(args):
                address = args[at + 1]
            elif arg.startswith("--xds-tls-address="):
                address = arg.partition("=")[2]
        return bool(address)

    def rss_kib(self) -> int:
        """The process's resident memory (VmRSS), KiB."""
        with open(f"/proc/{self.pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])
