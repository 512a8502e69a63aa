"""A server under test in its own process: started, watched through /proc, always stopped.

``ServerProcess`` runs a command in a new session (its own process group) whose
output goes to a log file, and reads CPU time (each process's CPU-time clock, in
nanoseconds: ``cpu_time.py``) and resident memory (``/proc``) of the whole process
tree (the server and every live process it started, so the workers and the supervisor
of ``serve --workers N``, or every process of a transport floor run with
``--processes N``). ``connections`` counts, per process of the tree,
the established TCP connections on a listening port. The child is started through a
tiny launcher that asks the kernel to kill it when the benchmark dies
(``PR_SET_PDEATHSIG``), so even a benchmark killed with SIGKILL leaves nothing
behind; ``stop`` sends SIGTERM to the group, then SIGKILL.
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

from pilothouse.loadtest.cpu_time import CLOCK, process_cpu, worse
from pilothouse.loadtest.server_process import process_tree

LAUNCHER = """\
import ctypes, os, signal, sys
PR_SET_PDEATHSIG = 1
ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
if os.getppid() != int(sys.argv[1]):
    sys.exit(1)
os.execvp(sys.argv[2], sys.argv[2:])
"""


class ServerProcess:
    """One started server; ``pid`` is the server itself (the launcher execs it)."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log: Path,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.log = log
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
        self.cpu_clock = CLOCK
        """The coarsest clock any CPU reading so far came from (``cpu_time.CLOCK`` or
        ``TICKS``): what a figure built from them reports as its ``cpu_clock``."""

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

    def tree(self) -> list[int]:
        """The server's pid and those of every live process below it."""
        return process_tree(self.pid)

    def cpu_seconds(self) -> float:
        """User and system CPU time of the whole tree so far: the process and every live
        descendant (a process that ended since is no longer counted)."""
        total = 0.0
        for pid in self.tree():
            with contextlib.suppress(OSError, ValueError, IndexError):
                reading = process_cpu(pid)
                total += reading.seconds
                self.cpu_clock = worse(self.cpu_clock, reading.clock)
        return total

    def rss_kib(self) -> int:
        """Resident set size (VmRSS) in KiB, summed over the tree."""
        found = [kib for kib in map(process_rss_kib, self.tree()) if kib is not None]
        if not found:
            raise RuntimeError(f"{self.name}: no VmRSS")
        return sum(found)

    def connections(self, port: int) -> list[int]:
        """Per process of the tree that holds any: its established TCP connections to
        ``port`` (a listening port of the server), largest first."""
        counts = [established(pid, port) for pid in self.tree()]
        return sorted((count for count in counts if count), reverse=True)

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


def process_rss_kib(pid: int) -> int | None:
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def established(pid: int, port: int) -> int:
    """How many established TCP connections (IPv4 or IPv6) process ``pid`` holds whose
    local port is ``port``."""
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    count = 0
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/net/{table}", encoding="ascii") as f:
            next(f, None)
            for line in f:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state == "01" and int(local.rsplit(":", 1)[1], 16) == port and inode in inodes:
                    count += 1
    return count
