"""A process's CPU time, user and system, all its threads, read to the nanosecond.

``/proc/PID/stat`` counts CPU time in clock ticks (10 ms here), while a push to 1,000
proxies costs the transport floor about 200 ms: a tick is 5 % of what is measured, on
each of the two readings that bracket it. The kernel also keeps every process a CPU-time
clock in nanoseconds (``clock_getcpuclockid(pid)``, read with ``clock_gettime``), which
any process may read for another of the same user (or as root). :func:`process_cpu`
reads that clock and falls back to ``/proc`` ticks only where the clock cannot be had,
saying which it used (``CLOCK`` or ``TICKS``: a figure's JSON names it as ``cpu_clock``);
a process that is gone (or never was) raises :class:`ProcessLookupError` naming it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import time
from typing import Final, NamedTuple

CLOCK: Final = "ns"
"""The reading came from the process's CPU-time clock (nanoseconds)."""
TICKS: Final = "ticks"
"""The reading came from ``/proc/PID/stat`` (clock ticks: 10 ms on most kernels)."""


class CpuReading(NamedTuple):
    seconds: float
    clock: str
    """``CLOCK`` or ``TICKS``."""


def gone(pid: int) -> ProcessLookupError:
    return ProcessLookupError(errno.ESRCH, f"process {pid} is gone (or never existed)")


def clock_id(pid: int) -> int | None:
    """The kernel's CPU-time clock of ``pid``; None where libc will not give it (the
    process exists, but its clock is not ours to read). Raises if ``pid`` is gone."""
    if pid <= 0:
        raise gone(pid)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        getter = libc.clock_getcpuclockid
    except (OSError, AttributeError):
        return None
    found = ctypes.c_int(0)  # clockid_t is an int on Linux
    failed = getter(ctypes.c_int(pid), ctypes.byref(found))  # an error number, not errno
    if failed == errno.ESRCH:
        raise gone(pid)
    return None if failed else found.value


def stat_ticks_seconds(pid: int) -> float:
    """utime + stime from ``/proc/PID/stat``, in seconds (tick resolution)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        raise gone(pid) from None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> CpuReading:
    """User + system CPU seconds ``pid`` (every thread of it) has used so far, and which
    clock said so. Its children are not counted."""
    clock = clock_id(pid)
    if clock is not None:
        try:
            return CpuReading(time.clock_gettime_ns(clock) / 1e9, CLOCK)
        except OSError:
            if not os.path.exists(f"/proc/{pid}"):
                raise gone(pid) from None  # it exited between the two calls
    return CpuReading(stat_ticks_seconds(pid), TICKS)


def worse(first: str, second: str) -> str:
    """The coarser of two clocks (a sum of readings is as coarse as its coarsest)."""
    return TICKS if TICKS in (first, second) else CLOCK
