"""Reading another process's CPU time (``pilothouse.loadtest.cpu_time``): to the nanosecond,
every thread, and a clear failure for a process that is gone. Real child processes."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from pilothouse.loadtest.cpu_time import CLOCK, TICKS, process_cpu, stat_ticks_seconds, worse

BURNER = """\
import sys, threading, time
def burn(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
worker = threading.Thread(target=burn, args=(0.1234,))
worker.start()
burn(0.0567)
worker.join()
used = time.process_time()
with open(sys.argv[1], "w") as out:
    out.write(repr(used))
sys.stdin.read()  # idle until told to go
"""


def test_a_busy_childs_cpu_is_read_to_better_than_a_millisecond(tmp_path: Path) -> None:
    # the child burns CPU on two threads, writes what its own CPU clock says, and idles:
    # our reading from outside must agree to within 1 ms (a 10 ms tick could not)
    report = tmp_path / "used"
    child = subprocess.Popen(
        [sys.executable, "-c", BURNER, str(report)], stdin=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 30
        while not report.exists() or not report.read_text():
            assert time.monotonic() < deadline, "the child never reported its CPU time"
            time.sleep(0.01)
        own = float(report.read_text())
        reading = process_cpu(child.pid)
        assert reading.clock == CLOCK
        assert own > 0.18  # both threads' burning counted
        assert abs(reading.seconds - own) < 0.001, (reading.seconds, own)
        assert abs(stat_ticks_seconds(child.pid) - own) < 0.05  # the fallback: ticks
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(30)


def test_a_gone_process_fails_clearly() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(30)  # exited and reaped: its pid names nothing now
    with pytest.raises(ProcessLookupError, match=rf"process {child.pid} is gone"):
        process_cpu(child.pid)
    with pytest.raises(ProcessLookupError, match=rf"process {child.pid} is gone"):
        stat_ticks_seconds(child.pid)
    with pytest.raises(ProcessLookupError, match="process 0 is gone"):
        process_cpu(0)


def test_a_sum_is_as_coarse_as_its_coarsest_reading() -> None:
    assert worse(CLOCK, CLOCK) == CLOCK
    assert worse(CLOCK, TICKS) == TICKS == worse(TICKS, CLOCK)
