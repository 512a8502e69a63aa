"""Child processes driven from synchronous code (the MCP sync and REST benchmarks):
started, polled, measured, always stopped.

A :class:`Child` runs in its own session (process group) with its output in a log
file, and asks the kernel to SIGKILL it if the benchmark process dies
(``PR_SET_PDEATHSIG``), so nothing outlives the benchmark even when it is killed.
``stop`` sends SIGTERM to the group, then SIGKILL after a grace period.

:class:`ServeChild` is ``pilothouse serve`` so started, on ports of its own.

Also here: reading a process's resident memory from ``/proc``, polling an admin
``/ready``, and reading the UTC millisecond timestamps of pilothouse's log lines
(:mod:`pilothouse.logfmt`), which is how the benchmark sees when the sink's upstream
stream opened (the source logs ``proxy connected``) and when it synced.
"""

from __future__ import annotations

import bisect
import calendar
import contextlib
import ctypes
import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pilothouse.loadtest.cpu_time import process_cpu
from pilothouse.loadtest.server_process import process_tree

PR_SET_PDEATHSIG = 1
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{3})Z ")


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class ChildFailed(RuntimeError):
    """A child exited or did not get where it should in time; the message says which."""


@dataclass(frozen=True, slots=True)
class Memory:
    """Resident memory of a process, MiB: now and the peak so far."""

    rss_mib: float
    peak_mib: float


class Child:
    """One started process (call from the main thread: the death signal is per thread)."""

    def __init__(
        self, name: str, argv: Sequence[str], log: Path, env: Mapping[str, str] | None = None
    ) -> None:
        self.name = name
        self.log = log
        self.started = time.time()
        with log.open("wb") as output:
            self._popen = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                # No TLS port (and no CA): it would listen on a fixed port.
                env={"PILOTHOUSE_XDS_TLS_ADDRESS": "", **os.environ, **(env or {})},
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        self.pid = self._popen.pid

    def alive(self) -> bool:
        return self._popen.poll() is None

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def memory(self) -> Memory:
        """The process and every process it started (so that a helper process could not
        hide memory): RSS summed, peak summed over each process's own peak."""
        rss = peak = 0.0
        for pid in process_tree(self.pid):
            values: dict[str, float] = {}
            try:
                with open(f"/proc/{pid}/status", encoding="ascii") as status:
                    for line in status:
                        key, _, rest = line.partition(":")
                        if key in ("VmRSS", "VmHWM"):
                            values[key] = int(rest.split()[0]) / 1024
            except OSError:
                continue  # it ended meanwhile
            rss += values.get("VmRSS", 0.0)
            peak += values.get("VmHWM", 0.0)
        return Memory(round(rss, 1), round(peak, 1))

    def wait_exit(self, timeout: float) -> int:
        return self._popen.wait(timeout)

    def wait_for_line(self, pattern: str, timeout: float) -> re.Match[str]:
        """The first match of ``pattern`` in the output, waiting up to ``timeout`` s."""
        compiled = re.compile(pattern, re.MULTILINE)
        deadline = time.monotonic() + timeout
        while True:
            found = compiled.search(self.output())
            if found is not None:
                return found
            self.check(deadline, f"a line matching {pattern!r}", timeout)
            time.sleep(0.05)

    def wait_ready(self, admin_port: int, timeout: float) -> float:
        """Poll ``/ready`` until 200; returns the wall-clock time it was first seen."""
        deadline = time.monotonic() + timeout
        while True:
            if ready(admin_port):
                return time.time()
            self.check(deadline, "/ready", timeout)
            time.sleep(0.02)

    def check(self, deadline: float, what: str, timeout: float) -> None:
        """Raise :class:`ChildFailed` if the child exited or ``deadline`` passed."""
        if not self.alive():
            tail = self.output()[-2000:]
            raise ChildFailed(
                f"{self.name} exited ({self._popen.returncode}) before {what}:\n{tail}"
            )
        if time.monotonic() > deadline:
            raise ChildFailed(f"{self.name}: no {what} within {timeout:.0f} s")

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM to the process group, then SIGKILL; safe to call twice."""
        if self._popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGTERM)
            try:
                self._popen.wait(grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.pid, signal.SIGKILL)
                self._popen.wait()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)  # anything the child left in its group


class ServeChild(Child):
    """``pilothouse serve *args`` in a child process, on loopback ports of its own, its log
    in ``workdir``; a drain of one second when it is stopped."""

    def __init__(self, name: str, workdir: Path, *args: str, log_level: str = "info") -> None:
        self.xds_port = free_port()
        self.admin_port = free_port()
        argv = [
            sys.executable, "-m", "pilothouse.cli.main", "serve", *args,
            "--xds-address", f"127.0.0.1:{self.xds_port}",
            "--admin-address", f"127.0.0.1:{self.admin_port}",
            "--log-level", log_level,
        ]  # fmt: skip
        super().__init__(name, argv, workdir / f"{name}.log", {"PILOTHOUSE_DRAIN_SECONDS": "1"})

    @property
    def pgrp(self) -> int:
        return self.pid

    def serve_ready(self, timeout: float) -> float:
        """Wait for its ``/ready``; the wall-clock time it was first seen."""
        return self.wait_ready(self.admin_port, timeout)

    def first_time(self, pattern: str, since: float) -> float | None:
        """The time of its first log line matching ``pattern`` from ``since`` on."""
        for found in re.finditer(rf"^.*{pattern}.*$", self.output(), re.MULTILINE):
            stamp = line_time(found.group(0))
            if stamp >= since - 0.001:  # log stamps are truncated to the millisecond
                return stamp
        return None


class CpuClock:
    """CPU seconds (user + system) of some children, sampled every ``interval`` seconds on
    a thread of its own until :meth:`stop` (one small read per child and sample, so that
    the sampling itself takes next to nothing from the processes it measures).

    Wall-clock spans on a shared machine include the time a process waited for a core;
    the CPU it used in the same span does not, so it tells a slower code path from a
    busier neighbour. Each read is the process's CPU-time clock (nanoseconds,
    ``cpu_time.py``); the samples' interval bounds how finely a span's ends are placed."""

    def __init__(self, children: Sequence[Child], interval: float = 0.01) -> None:
        self._pids = [child.pid for child in children]
        self._samples: dict[int, list[tuple[float, float]]] = {pid: [] for pid in self._pids}
        self._interval = interval
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stopped.is_set():
            now = time.time()
            for pid in self._pids:
                used = cpu_seconds(pid)
                if used is not None:
                    self._samples[pid].append((now, used))
            self._stopped.wait(self._interval)

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()

    def used(self, child: Child, start: float | None, end: float | None) -> float | None:
        """CPU seconds ``child`` used from ``start`` to ``end`` (epoch seconds), read from
        the samples nearest after each; None when either is unknown or not sampled."""
        samples = self._samples.get(child.pid, [])
        if start is None or end is None or not samples or samples[-1][0] < end:
            return None
        times = [stamp for stamp, _ in samples]
        last_index = len(samples) - 1
        first = samples[min(bisect.bisect_left(times, start), last_index)][1]
        last = samples[min(bisect.bisect_left(times, end), last_index)][1]
        return round(last - first, 3)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid``, all its threads (None if it is gone).
    Its child processes are not counted: ``pilothouse serve`` starts none."""
    try:
        return process_cpu(pid).seconds
    except OSError:
        return None


def ready(admin_port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", admin_port, timeout=2)
    try:
        connection.request("GET", "/ready")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def line_time(line: str) -> float:
    """The epoch seconds of a pilothouse log line's timestamp."""
    found = _STAMP.match(line)
    if found is None:
        raise ValueError(f"no timestamp on log line {line!r}")
    whole = calendar.timegm(time.strptime(found.group(1), "%Y-%m-%dT%H:%M:%S"))
    return whole + int(found.group(2)) / 1000


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
