"""The native profile (bench/native_profile.py, bench/harness/perf_profile.py): perf's samples
sorted into categories, a real recording of a busy process, and a clean skip without perf.

The whole benchmark is not run here (two servers, two fleets and perf: half a minute);
``bench/native_profile.py --proxies 20 --pushes 2`` is its smoke run."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.harness.perf_profile import (
    PerfRecording,
    categories,
    category,
    perf_problem,
)
from bench.native_profile import main
from pilothouse.loadtest.cpu_time import process_cpu

LIBPYTHON = "libpython3.11.so.1.0"
KERNEL = "[kernel.kallsyms]"
GRPC = "cygrpc.cpython-311-x86_64-linux-gnu.so"


@pytest.mark.parametrize(
    ("chain", "expected"),
    [
        ([("_PyEval_EvalFrameDefault+0x1f", LIBPYTHON)], "python"),
        ([("dict_traverse", LIBPYTHON)], "gc"),
        ([("gc_get_freeze_count", LIBPYTHON)], "gc"),  # a static of gcmodule.c, unnamed
        ([("list_dealloc", LIBPYTHON), ("gc_collect_main", LIBPYTHON)], "gc"),
        ([("_PyObject_Malloc", LIBPYTHON)], "allocation"),
        ([("_int_free", "libc.so.6"), ("x", GRPC)], "allocation"),
        ([("memcpy", "libc.so.6")], "libc_other"),
        ([("[unknown]", GRPC)], "grpc"),
        ([("upb_Decode", "_message.abi3.so")], "protobuf"),
        (
            [("copy_user_generic", KERNEL), ("tcp_sendmsg", KERNEL), ("sendmsg", "libc.so.6")],
            "kernel_network",
        ),
        ([("finish_task_switch.isra.0", KERNEL), ("schedule", KERNEL)], "kernel_wait"),
        ([("do_epoll_wait", KERNEL)], "kernel_wait"),
        ([("clear_page_erms", KERNEL), ("do_anonymous_page", KERNEL)], "kernel_other"),
        ([("__vdso_clock_gettime", "[vdso]")], "rest"),
    ],
)
def test_a_sample_is_sorted_by_its_leaf_and_chain(
    chain: list[tuple[str, str]], expected: str
) -> None:
    assert category(chain) == expected


def test_without_perf_the_script_says_so_and_exits_cleanly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    main(["--proxies", "10"])
    captured = capsys.readouterr()
    (group,) = [json.loads(line) for line in captured.out.splitlines()]
    assert group["skipped"] == "perf not found"
    assert group["benchmark"].startswith("native_profile")
    assert "skipped: perf not found" in captured.err


BUSY = "import time\nend = time.time() + 30\nwhile time.time() < end: sum(range(1000))\n"


def test_a_busy_python_process_is_its_interpreter_and_its_allocator(tmp_path: Path) -> None:
    # sum(range(1000)) makes and frees an int per step: pymalloc shows beside the eval loop
    problem = perf_problem()
    if problem is not None:
        pytest.skip(problem)
    child = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        recording = PerfRecording(child.pid, tmp_path / "busy.data")
        # recorded until the child has used 0.3 s of CPU since (a loaded machine is slower)
        start, deadline = process_cpu(child.pid).seconds, time.monotonic() + 30
        while process_cpu(child.pid).seconds - start < 0.3 and time.monotonic() < deadline:
            time.sleep(0.05)
        tally = categories(recording.stop())
    finally:
        child.kill()
        child.wait(30)
    assert tally.total > 30, tally
    assert tally.share("python") + tally.share("allocation") > 0.8, tally.by_category
    assert tally.share("python") > 0.2, tally.by_category
    assert tally.share("allocation") > 0.1, tally.by_category
    assert tally.by_category["grpc"] == tally.by_category["protobuf"] == 0
