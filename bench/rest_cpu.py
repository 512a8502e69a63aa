"""CPU time of a whole process group, from ``/proc/<pid>/stat``.

A server under test may be several processes (sovereign runs a gunicorn master and
its workers), all in the process group its launcher started. Their CPU is the sum of
each member's user and system time, plus what the members' reaped children left in
``cutime``/``cstime`` (a worker that exited and was waited for).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

TICKS: Final = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class StatLine:
    """The fields of one ``/proc/<pid>/stat`` this module reads."""

    pid: int
    pgrp: int
    ticks: int
    """utime + stime + cutime + cstime, in clock ticks."""


def parse_stat(text: str) -> StatLine:
    """One ``stat`` line; the command name may hold spaces and parentheses."""
    head, _, rest = text.rpartition(")")
    fields = rest.split()
    pid = int(head.split("(", 1)[0])
    # after the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt
    # cmajflt utime stime cutime cstime ...
    ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))
    return StatLine(pid=pid, pgrp=int(fields[2]), ticks=ticks)


def group_cpu_seconds(pgrp: int, proc: Path = Path("/proc")) -> float:
    """CPU seconds used so far by every live process in group ``pgrp``."""
    ticks = 0
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            line = parse_stat((entry / "stat").read_text(encoding="utf-8", errors="replace"))
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile, or not readable
        if line.pgrp == pgrp:
            ticks += line.ticks
    return ticks / TICKS
