"""Counts the cyclic collector's work in a server process (for bench/gc_cost.py).

gc_cost.py puts this directory on the server's ``PYTHONPATH`` with ``BENCH_GC_STATS``
naming a file; elsewhere (the variable unset) this does nothing. A ``gc.callbacks``
hook times every collection on the CPU clock of the thread running it (the collector
runs on whichever thread allocated), per generation, and a daemon thread rewrites the
file with the running totals every 50 ms: ``{"collections": [g0, g1, g2], "cpu_ns":
[...], "collected": [...], "frozen": n, "thresholds": [...]}``. The bench subtracts two
readings to get a phase's share.
"""

import gc
import json
import os
import threading
import time

_PATH = os.environ.get("BENCH_GC_STATS", "")


def _install(path: str) -> None:
    totals = {"collections": [0, 0, 0], "cpu_ns": [0, 0, 0], "collected": [0, 0, 0]}
    started: dict[int, int] = {}

    def on_collection(phase: str, info: dict[str, int]) -> None:
        thread = threading.get_ident()
        if phase == "start":
            started[thread] = time.thread_time_ns()
            return
        began = started.pop(thread, None)
        generation = info["generation"]
        totals["collections"][generation] += 1
        totals["collected"][generation] += info["collected"]
        if began is not None:
            totals["cpu_ns"][generation] += time.thread_time_ns() - began

    def write_forever() -> None:
        partial = path + ".partial"
        while True:
            time.sleep(0.05)
            figures = {
                **totals,
                "frozen": gc.get_freeze_count(),
                "thresholds": list(gc.get_threshold()),
            }
            with open(partial, "w") as out:
                json.dump(figures, out)
            os.replace(partial, path)

    gc.callbacks.append(on_collection)
    threading.Thread(target=write_forever, name="gc-stats", daemon=True).start()


if _PATH:
    _install(_PATH)
