"""The worker-cost benchmark reads a process tree's memory from /proc and is part of
``make bench``; the serves it starts are not started here (each costs seconds, and the
figures come from ``make bench``)."""

from __future__ import annotations

import os

from bench.run_all import SCRIPTS
from bench.worker_cost import tree_memory_kib


def test_tree_memory_counts_each_process_and_shares_pages_in_pss() -> None:
    rss, pss = tree_memory_kib([os.getpid()])
    assert rss > 10_000 and 0 < pss <= rss
    twice = tree_memory_kib([os.getpid(), os.getpid()])
    assert abs(twice[0] - 2 * rss) < rss / 10  # counted twice (it may move a little between reads)
    assert tree_memory_kib([2**22 + 7]) == (0, 0)  # no such process: nothing, not an error


def test_make_bench_runs_it() -> None:
    assert "worker_cost" in {script.name for script in SCRIPTS}
