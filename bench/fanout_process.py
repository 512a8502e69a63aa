"""A server under test in its own process: started, watched through /proc, always stopped.

``ServerProcess`` runs a command in a new session (its own process group) whose
output goes to a log file, and reads the process's CPU time and resident memory
from ``/proc``. The child is started through a tiny launcher that asks the kernel
to kill it when the benchmark dies (``PR_SET_PDEATHSIG``), so even a benchmark
killed with SIGKILL leaves nothing behind; ``stop`` sends SIGTERM to the group,
then SIGKILL.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

LAUNCHER = """\
import ctypes, os, signal, sys
PR_SET_PDEATHSIG = 1
ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
if os.getppid() != int(sys.argv[1]):
    sys.exit(1)
os.execvp(sys.argv[2], sys.argv[2:])
"""

_TICKS = os.sysconf("SC_CLK_TCK")


class ServerProcess:
    """One started server; ``pid`` is the server itself (the launcher execs it)."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log: Path,
        env: Mapping[str, str] | None = None,
        *,
        with_children: bool = False,
    ) -> None:
        """``with_children``: :meth:`cpu_seconds` also counts the live processes the
        server started (``serve --workers N``: the workers)."""
        self.name = name
        self.log = log
        self.with_children = with_children
        environment = dict(os.environ)
        # No TLS port (and no CA) and no ControlZ page unless a benchmark asks: each
        # would listen on a fixed port (15012, 9876), and the CA lives under the working
        # directory.
        environment.setdefault("PILOTHOUSE_XDS_TLS_ADDRESS", "")
        environment.setdefault("PILOTHOUSE_CTRLZ_ADDRESS", "off")
        if env:
            environment.update(env)
        with log.open("wb") as output:
            self._popen = subprocess.Popen(
                [sys.executable, "-c", LAUNCHER, str(os.getpid()), *argv],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                env=environment,
                start_new_session=True,
            )
        self.pid = self._popen.pid

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    async def wait_for_line(self, pattern: str, timeout: float) -> re.Match[str]:
        """Wait until the log has a line matching ``pattern``; fail if the process exits."""
        compiled = re.compile(pattern, re.MULTILINE)
        deadline = time.monotonic() + timeout
        while True:
            found = compiled.search(self.output())
            if found is not None:
                return found
            if self._popen.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited with {self._popen.returncode}:\n{self.output()[-3000:]}"
                )
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name}: no {pattern!r} in {timeout}s")
            await asyncio.sleep(0.05)

    def cpu_seconds(self) -> float:
        """User and system CPU time of the whole process so far (threads that ended too);
        with ``with_children``, plus that of its live descendants."""
        if not self.with_children:
            return _process_cpu(self.pid)
        total = 0.0
        for pid in _tree(self.pid):
            with contextlib.suppress(OSError):
                total += _process_cpu(pid)
        return total

    def rss_kib(self) -> int:
        """Resident set size (VmRSS) in KiB."""
        with open(f"/proc/{self.pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError(f"{self.name}: no VmRSS")

    def stop(self, grace: float = 5.0, first: signal.Signals = signal.SIGTERM) -> int | None:
        """``first`` (SIGTERM) to the process group, SIGKILL after ``grace`` seconds; the
        exit code.

        Signals go only while the server is unreaped, so its id cannot have been reused.
        """
        if self._popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, first)
            try:
                self._popen.wait(grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.pid, signal.SIGKILL)
                self._popen.wait(grace)
        return self._popen.returncode


class Profiler:
    """``py-spy record`` attached to a server: one file of collapsed stacks (``--format raw``,
    what flame-graph tools read) per ``start``/``stop``."""

    def __init__(self, server: ServerProcess, folder: Path) -> None:
        self.server = server
        self.folder = folder
        self._running: ServerProcess | None = None

    def start(self, label: str) -> None:
        self.stop()
        self.folder.mkdir(parents=True, exist_ok=True)
        output = self.folder / f"{self.server.name.replace(' ', '-')}-{label}.stacks"
        self._running = ServerProcess(
            f"py-spy {label}",
            [
                shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy")),
                "record",
                "--nonblocking",
                "--format",
                "raw",
                "--rate",
                "250",
                "--pid",
                str(self.server.pid),
                "--output",
                str(output),
            ],
            self.folder / f"py-spy-{label}.log",
        )

    def stop(self) -> None:
        if self._running is not None:
            self._running.stop(grace=30.0, first=signal.SIGINT)
            self._running = None


async def idle_cpu_rate(server: ServerProcess, seconds: float) -> float:
    """CPU seconds per second the server spends doing nothing in particular."""
    start_cpu = server.cpu_seconds()
    start = time.monotonic()
    await asyncio.sleep(seconds)
    return (server.cpu_seconds() - start_cpu) / (time.monotonic() - start)


def _process_cpu(pid: int) -> float:
    """User and system CPU seconds of one process (its threads included)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _tree(pid: int) -> list[int]:
    """``pid`` and its live descendants, from /proc/PID/task/*/children."""
    found = [pid]
    for current in found:
        try:
            for task in Path(f"/proc/{current}/task").iterdir():
                children = (task / "children").read_text(encoding="ascii").split()
                found.extend(int(child) for child in children)
        except OSError:
            continue
    return found
