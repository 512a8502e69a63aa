"""What ControlZ shows of the process: memory, process facts, arguments, environment, version.

Each function returns a JSON-ready value read now. Linux's ``/proc/self`` gives resident
memory, threads, open files and the start time; elsewhere those read as None. Nothing
here walks the heap (``gc.get_objects`` would allocate a list as long as every object
pilothouse holds): the figures are the collector's counters, ``sys.getallocatedblocks``
and, when ``tracemalloc`` is tracing, its totals.

Values that look secret are not shown: an environment variable whose name contains
``SECRET``, ``TOKEN``, ``PASSWORD``, ``CREDENTIAL`` or ``APIKEY``, or has a part such as
``KEY``, ``AUTH``, ``PWD``, ``PRIVATE``, ``COOKIE`` or ``SESSION`` (split at ``_``, ``-``
and ``.``), and likewise ``name=value`` arguments (``--sink-meta authorization=...``) and
the argument after such a flag.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.metadata
import os
import platform
import re
import resource
import socket
import sys
import threading
import time
import tracemalloc
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from pilothouse import __version__

REDACTED: Final = "<redacted>"
_SECRET_INSIDE: Final = ("SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL", "APIKEY")
_SECRET_PARTS: Final = frozenset(
    {"KEY", "AUTH", "AUTHORIZATION", "PWD", "PASS", "PRIVATE", "COOKIE", "SESSION", "SIG"}
)
_LIBRARIES: Final = ("grpcio", "protobuf", "aiohttp", "xds-protos", "PyYAML", "watchfiles")
_PROC: Final = Path("/proc/self")


def looks_secret(name: str) -> bool:
    upper = name.upper()
    if any(word in upper for word in _SECRET_INSIDE):
        return True
    return not _SECRET_PARTS.isdisjoint(re.split(r"[_\-.]+", upper))


def _status_fields() -> dict[str, str]:
    """``/proc/self/status`` as a dict (empty where there is no /proc)."""
    try:
        text = (_PROC / "status").read_text()
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def _kib(value: str | None) -> int | None:
    if not value or not value.endswith("kB"):
        return None
    return int(value.split()[0]) * 1024


def memory() -> dict[str, Any]:
    status = _status_fields()
    peak = _kib(status.get("VmHWM"))
    if peak is None:  # no /proc: ru_maxrss is KiB on Linux, bytes on macOS
        scale = 1 if sys.platform == "darwin" else 1024
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
    generations = [
        {
            "collections": stats.get("collections", 0),
            "collected": stats.get("collected", 0),
            "uncollectable": stats.get("uncollectable", 0),
        }
        for stats in gc.get_stats()
    ]
    traced: dict[str, Any] = {"tracing": tracemalloc.is_tracing()}
    if traced["tracing"]:
        current, traced_peak = tracemalloc.get_traced_memory()
        traced |= {"currentBytes": current, "peakBytes": traced_peak}
    return {
        "residentBytes": _kib(status.get("VmRSS")),
        "peakResidentBytes": peak,
        "virtualBytes": _kib(status.get("VmSize")),
        "allocatedBlocks": sys.getallocatedblocks(),
        "gc": {
            "enabled": gc.isenabled(),
            "counts": list(gc.get_count()),
            "thresholds": list(gc.get_threshold()),
            "frozenObjects": gc.get_freeze_count(),
            "generations": generations,
        },
        "tracemalloc": traced,
    }


def collect_garbage() -> dict[str, Any]:
    """A full collection now; how many objects it found unreachable and how long it took."""
    started = time.perf_counter()
    found = gc.collect()
    return {"collected": found, "seconds": round(time.perf_counter() - started, 6)}


def _started_at() -> float | None:
    """When the process started (epoch seconds), from /proc; None without it."""
    try:
        stat = (_PROC / "stat").read_text()
        boot = next(
            line for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime")
        )
    except (OSError, StopIteration):
        return None
    after_name = stat.rsplit(")", 1)[1].split()
    ticks = int(after_name[19])  # field 22 (starttime); fields 1-2 are before ")"
    return int(boot.split()[1]) + ticks / os.sysconf("SC_CLK_TCK")


def _open_files() -> int | None:
    try:
        return len(os.listdir(_PROC / "fd"))
    except OSError:
        return None


def process(fallback_start: float) -> dict[str, Any]:
    """Facts about this process; ``fallback_start`` is used where /proc is not."""
    started = _started_at() or fallback_start
    times = os.times()
    status = _status_fields()
    threads = status.get("Threads")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        tasks: int | None = len(asyncio.all_tasks())
    except RuntimeError:
        tasks = None
    return {
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "uid": os.getuid(),
        "gid": os.getgid(),
        "hostname": socket.gethostname(),
        "cwd": os.getcwd(),
        "executable": sys.executable,
        "threads": int(threads) if threads else threading.active_count(),
        "pythonThreads": threading.active_count(),
        "asyncioTasks": tasks,
        "openFiles": _open_files(),
        "openFilesLimit": soft if soft != resource.RLIM_INFINITY else None,
        "openFilesHardLimit": hard if hard != resource.RLIM_INFINITY else None,
        "startTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "uptimeSeconds": round(time.time() - started, 3),
        "cpuUserSeconds": round(times.user, 3),
        "cpuSystemSeconds": round(times.system, 3),
    }


def arguments() -> dict[str, Any]:
    """``args``: the program's arguments (``sys.argv``); ``command``: the whole command
    line the interpreter was started with."""
    return {"args": redacted_arguments(sys.argv), "command": redacted_arguments(sys.orig_argv)}


def redacted_arguments(argv: list[str]) -> list[str]:
    shown: list[str] = []
    hide_next = False
    for argument in argv:
        if hide_next:
            shown.append(REDACTED)
            hide_next = False
            continue
        name, equals, _ = argument.partition("=")
        if equals and looks_secret(name.lstrip("-")):
            shown.append(f"{name}={REDACTED}")
            continue
        if argument.startswith("--") and looks_secret(argument[2:]) and not equals:
            hide_next = True
        shown.append(argument)
    return shown


def environment(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    variables = os.environ if environ is None else environ
    return {
        "variables": [
            {"name": name, "value": REDACTED, "redacted": True}
            if looks_secret(name)
            else {"name": name, "value": value, "redacted": False}
            for name, value in sorted(variables.items())
        ]
    }


def version() -> dict[str, Any]:
    libraries: dict[str, str | None] = {}
    for name in _LIBRARIES:
        try:
            libraries[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            libraries[name] = None
    return {
        "version": __version__,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "libraries": libraries,
    }
