"""Linux ``perf`` on a running server: its CPU samples over a span, sorted by what they were.

:class:`PerfRecording` runs ``perf record -e cpu-clock -F HZ -g -p PID`` (a software
clock, so it works on virtual machines without hardware counters; every thread of the
process) until :meth:`PerfRecording.stop`; :func:`categories` reads the samples back
(``perf script``) and counts them by what the process was doing (:data:`CATEGORIES`):

- ``python``: the interpreter (libpython's eval loop and object code), GC and allocation
  aside;
- ``gc``: the cyclic garbage collector (``gc_collect*``/``collect*`` in the call chain, or
  a leaf that only the collector runs: ``gc_*`` of gcmodule.c, ``subtract_refs``,
  ``visit_*``, ``*_traverse``…);
- ``allocation``: ``malloc``/``free`` and pymalloc (``_PyObject_Malloc``…, any library);
- ``grpc``: gRPC's C core (the ``cygrpc`` extension);
- ``protobuf``: protobuf's upb ``_message`` extension;
- ``kernel_network``, ``kernel_wait``, ``kernel_other``: the kernel, split by its call
  chain: socket sends and receives (TCP, loopback, skb), epoll, futexes and scheduling,
  anything else;
- ``libc_other``: libc outside allocation; ``rest``: everything else (other extension
  modules, the vDSO's clock reads, unresolved addresses), its largest parts named.

libpython is built without frame pointers, so a Python-side call chain is often cut
short: the collector is recognised by its leaves too. :func:`perf_problem` says why perf
cannot be used here (missing, or not permitted), or None.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

CATEGORIES: Final = (
    "python",
    "gc",
    "allocation",
    "grpc",
    "protobuf",
    "kernel_network",
    "kernel_wait",
    "kernel_other",
    "libc_other",
    "rest",
)
KERNEL_DSOS: Final = ("[kernel.kallsyms]", "[kernel.vmlinux]")
GC_CHAIN = re.compile(r"^(gc_collect|collect|_PyGC_|PyGC_Collect|gc_collect_main)")
GC_LEAF = re.compile(
    r"^(subtract_refs|update_refs|move_unreachable|visit_decref|visit_reachable|"
    r"deduce_unreachable|move_legacy_finalizer|handle_legacy_finalizers|finalize_garbage|"
    r"delete_garbage|handle_weakrefs|untrack_dicts|untrack_tuples|gc_\w+|collect\w*|"
    r"\w+_traverse)$"
)
ALLOCATION = re.compile(
    r"^((__libc_)?(malloc|free|calloc|realloc|cfree)|_int_\w+|malloc_\w+|tcache_\w+|"
    r"unlink_chunk|_?Py(Object|Mem)_(Raw)?(Malloc|Calloc|Realloc|Free)|_PyMem_\w+|"
    r"pymalloc_\w+|allocate_from_new_pool|insert_to_usedpool|insert_to_freepool|"
    r"gpr_(malloc|zalloc|realloc|free)|operator (new|delete).*|_Zn[wa]m\w*|_Zd[la]Pv\w*)$"
)
NETWORK = re.compile(
    r"^(tcp_|__tcp_|sock_|__sock_|sk_|__sk_|skb_|__skb_|kfree_skb|ip_|__ip_|inet_|__inet_|"
    r"loopback_|__dev_queue_xmit|dev_hard_start_xmit|netif_|__netif_|net_rx|napi_|"
    r"__napi|process_backlog|__sys_sendmsg|__sys_recvmsg|__sys_sendto|__sys_recvfrom|"
    r"___sys_sendmsg|___sys_recvmsg|sendmsg|recvmsg|__x64_sys_send|__x64_sys_recv|"
    r"__x64_sys_write|__x64_sys_read|do_softirq|__do_softirq|__local_bh_enable_ip|"
    r"unix_stream_)"
)
WAIT = re.compile(
    r"^(ep_|do_epoll_|__x64_sys_epoll|futex_|__futex|do_futex|__x64_sys_futex|schedule|"
    r"__schedule|finish_task_switch|try_to_wake_up|wake_up_|__wake_up|pick_next_task|"
    r"enqueue_task|dequeue_task|switch_mm|__switch_to|hrtimer_|do_nanosleep|"
    r"__x64_sys_poll|do_sys_poll|do_poll|__x64_sys_sched_yield|do_sched_yield)"
)
FRAME = re.compile(r"^\s+[0-9a-f]+\s+(.*?)\s+\((.*)\)$")


class PerfUnavailable(RuntimeError):
    """perf is missing, or may not record here; the message says which."""


def perf_problem() -> str | None:
    """Why ``perf record`` cannot profile a process here, or None when it can (tried on a
    short-lived process of our own)."""
    if shutil.which("perf") is None:
        return "perf not found"
    with tempfile.TemporaryDirectory(prefix="perf-probe-") as folder:
        out = Path(folder) / "probe.data"
        try:
            done = subprocess.run(
                ["perf", "record", "-e", "cpu-clock", "-o", str(out), "--", "true"],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as failed:
            return f"perf not usable: {failed}"
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"perf not permitted: {last}"
    return None


@dataclass
class PerfRecording:
    """``perf record`` attached to ``pid`` from construction until :meth:`stop`."""

    pid: int
    output: Path
    frequency: int = 999
    _process: subprocess.Popen[bytes] = field(init=False)

    def __post_init__(self) -> None:
        self._process = subprocess.Popen(
            [
                "perf", "record", "-e", "cpu-clock", "-F", str(self.frequency), "-g",
                "-p", str(self.pid), "-o", str(self.output),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )  # fmt: skip

    def stop(self, timeout: float = 60.0) -> Path:
        """Stop recording (SIGINT: perf writes its file and exits); the data file."""
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGINT)
        try:
            _, stderr = self._process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            _, stderr = self._process.communicate()
        if not self.output.exists():
            text = stderr.decode(errors="replace").strip()
            raise PerfUnavailable(f"perf record wrote nothing for pid {self.pid}: {text}")
        return self.output


def samples(data: Path) -> Iterator[list[tuple[str, str]]]:
    """Each sample's call chain, leaf first, as (symbol, DSO) pairs."""
    script = subprocess.Popen(
        ["perf", "script", "-i", str(data), "-F", "tid,ip,sym,dso"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        errors="replace",
    )
    assert script.stdout is not None
    frames: list[tuple[str, str]] = []
    for line in script.stdout:
        found = FRAME.match(line)
        if found is not None:
            frames.append((found.group(1), os.path.basename(found.group(2))))
        elif not line.strip() or not line[0].isspace():
            if frames:
                yield frames
            frames = []
    if frames:
        yield frames
    script.wait()


def symbol_name(symbol: str) -> str:
    """``foo+0x1a`` → ``foo``."""
    return symbol.rsplit("+0x", 1)[0]


def category(chain: Sequence[tuple[str, str]]) -> str:
    """What a sample was doing (one of :data:`CATEGORIES`), from its call chain."""
    leaf, dso = symbol_name(chain[0][0]), chain[0][1]
    if dso in KERNEL_DSOS:
        kernel = [symbol_name(sym) for sym, where in chain if where in KERNEL_DSOS]
        if any(NETWORK.match(sym) for sym in kernel):
            return "kernel_network"
        if any(WAIT.match(sym) for sym in kernel):
            return "kernel_wait"
        return "kernel_other"
    interpreter = "libpython" in dso or dso.startswith("python3")
    if interpreter and (
        GC_LEAF.match(leaf) or any(GC_CHAIN.match(symbol_name(s)) for s, _ in chain[1:])
    ):
        return "gc"
    if ALLOCATION.match(leaf):
        return "allocation"
    if interpreter:
        return "python"
    if "cygrpc" in dso:
        return "grpc"
    if "_message" in dso or "upb" in dso:
        return "protobuf"
    if dso.startswith(("libc.so", "libc-")):
        return "libc_other"
    return "rest"


@dataclass
class Tally:
    """Samples by category, by leaf symbol (with its DSO), and the parts of ``rest``."""

    total: int = 0
    by_category: Counter[str] = field(default_factory=Counter)
    by_symbol: Counter[str] = field(default_factory=Counter)
    rest: Counter[str] = field(default_factory=Counter)

    def share(self, name: str) -> float:
        return self.by_category[name] / self.total if self.total else 0.0


def categories(data: Path) -> Tally:
    tally = Tally()
    for chain in samples(data):
        found = category(chain)
        tally.total += 1
        tally.by_category[found] += 1
        symbol, dso = symbol_name(chain[0][0]), chain[0][1]
        tally.by_symbol[f"{symbol} ({dso})"] += 1
        if found == "rest":
            tally.rest[dso] += 1
    return tally
