"""The server under load, seen from outside: is it ready, how much memory and CPU it uses.

Nothing here is pilothouse-only:

- ``ProcProbe`` reads a local server (``--server-pid``): the resident memory
  (``VmRSS`` in ``/proc``) and CPU time (user + system, from each process's
  CPU-time clock in nanoseconds, ``/proc`` ticks where that cannot be read:
  ``cpu_time``) of that process and every live
  process below it (the workers of a server that runs several, such as ``pilothouse
  serve --workers N``);
- ``MetricsProbe`` reads the standard Prometheus process metrics
  (``process_resident_memory_bytes``, ``process_cpu_seconds_total``) from the
  admin endpoint's ``/metrics``, as istiod serves on port 15014 (and any server
  instrumented with a Prometheus client library);
- ``wait_ready`` polls the admin endpoint's ``/ready`` until it answers 200 (a
  404 means the server has no such page, which is fine).

``ServerRecord`` keeps what the samples of a run add up to: memory at the
start, at the end and at its peak, and CPU time at the run's phase marks.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import aiohttp

from pilothouse.loadtest.cpu_time import process_cpu

HTTP_TIMEOUT: Final = 2.0
READY_POLL: Final = 0.2
_METRIC_LINE: Final = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)", re.MULTILINE)
RSS_METRIC: Final = "process_resident_memory_bytes"
CPU_METRIC: Final = "process_cpu_seconds_total"


@dataclass(frozen=True)
class ServerSample:
    """The server's resident memory and CPU time so far (None: not known)."""

    rss_bytes: int | None
    cpu_seconds: float | None


class ServerProbe(Protocol):
    @property
    def source(self) -> str:
        """Where the figures come from, for the report."""
        ...

    async def sample(self) -> ServerSample | None:
        """The figures now, or None when they cannot be read."""
        ...


def process_tree(root: int) -> list[int]:
    """``root`` and every live process below it, from each process's parent in ``/proc``."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"{entry.path}/stat", encoding="ascii") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children.get(pid, ()))
    return found


def read_process(pid: int) -> tuple[int | None, float]:
    """One process's RSS (bytes, None if it has none) and CPU seconds; OSError if gone."""
    cpu = process_cpu(pid).seconds
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024, cpu
    return None, cpu


class ProcProbe:
    """A local server's memory and CPU from ``/proc``: the process and every live process
    below it, added up (a process that ended no longer counts)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    @property
    def source(self) -> str:
        return f"/proc/{self.pid} and its children"

    def read(self) -> ServerSample | None:
        try:
            rss, cpu = read_process(self.pid)
        except (OSError, IndexError, ValueError):
            return None
        for pid in process_tree(self.pid)[1:]:
            try:
                more, used = read_process(pid)
            except (OSError, IndexError, ValueError):
                continue
            cpu += used
            if more is not None:
                rss = more + (rss or 0)
        return ServerSample(rss, cpu)

    async def sample(self) -> ServerSample | None:
        return self.read()


def parse_process_metrics(text: str) -> ServerSample | None:
    """The process metrics in a Prometheus text exposition, or None if it has neither."""
    found: dict[str, float] = {}
    for match in _METRIC_LINE.finditer(text):
        name = match.group(1)
        if name in (RSS_METRIC, CPU_METRIC) and name not in found:
            try:
                found[name] = float(match.group(3))
            except ValueError:
                continue
    if not found:
        return None
    rss = found.get(RSS_METRIC)
    return ServerSample(None if rss is None else int(rss), found.get(CPU_METRIC))


class MetricsProbe:
    """The process metrics a server publishes on ``http://ADMIN/metrics``."""

    def __init__(self, admin: str, session: aiohttp.ClientSession) -> None:
        self.url = f"http://{admin}/metrics"
        self._session = session

    @property
    def source(self) -> str:
        return self.url

    async def sample(self) -> ServerSample | None:
        try:
            async with self._session.get(self.url) as response:
                if response.status != 200:
                    return None
                return parse_process_metrics(await response.text())
        except (aiohttp.ClientError, TimeoutError, UnicodeDecodeError):
            return None


def http_session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=HTTP_TIMEOUT))


async def wait_ready(
    session: aiohttp.ClientSession, admin: str, timeout: float, stop: asyncio.Event
) -> str | None:
    """Poll ``/ready`` until 200 (or 404: no such page); None when ready, else why not."""
    url = f"http://{admin}/ready"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last = "no answer"
    while not stop.is_set():
        try:
            async with session.get(url) as response:
                if response.status in (200, 404):
                    return None
                body = (await response.text()).strip().replace("\n", " ")
                last = f"{response.status} {body}"[:200]
        except (aiohttp.ClientError, TimeoutError) as problem:
            last = str(problem) or type(problem).__name__
        if loop.time() >= deadline:
            break
        await asyncio.sleep(READY_POLL)
    return f"{url} is not ready: {last}"


class ServerRecord:
    """What the samples of one run add up to."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.first: ServerSample | None = None
        self.last: ServerSample | None = None
        self.peak_rss: int | None = None
        self.marks: dict[str, ServerSample] = {}
        self.samples = 0

    def note(self, sample: ServerSample | None) -> None:
        if sample is None:
            return
        self.samples += 1
        if self.first is None:
            self.first = sample
        self.last = sample
        if sample.rss_bytes is not None:
            self.peak_rss = max(self.peak_rss or 0, sample.rss_bytes)

    def mark(self, name: str, sample: ServerSample | None) -> None:
        self.note(sample)
        if sample is not None:
            self.marks[name] = sample

    def cpu_between(self, start: str, end: str) -> float | None:
        before, after = self.marks.get(start), self.marks.get(end)
        if before is None or after is None:
            return None
        if before.cpu_seconds is None or after.cpu_seconds is None:
            return None
        return after.cpu_seconds - before.cpu_seconds

    def to_json(self, phases: Mapping[str, tuple[str, str, float]]) -> dict[str, Any]:
        """``phases``: name → (start mark, end mark, seconds between them)."""
        cpu: dict[str, float | None] = {}
        percent: dict[str, float | None] = {}
        for name, (start, end, seconds) in phases.items():
            used = self.cpu_between(start, end)
            cpu[name] = used
            percent[name] = None if used is None or seconds <= 0 else 100 * used / seconds
        return {
            "source": self.source,
            "rssBytes": {
                "start": None if self.first is None else self.first.rss_bytes,
                "end": None if self.last is None else self.last.rss_bytes,
                "peak": self.peak_rss,
            },
            "cpuSeconds": cpu,
            "cpuPercent": percent,
        }
