"""Benchmark: this tree against an older one, the same benchmarks alternating in one run.

A refactoring must not cost speed, and on a shared machine only figures taken side by
side say so. This checks the tree at ``--old`` (a git revision) out into a temporary
worktree, then runs each chosen benchmark script ``--rounds`` times from each tree in
turn (old, new, old, new, …): the old tree's own script with the old package
(``PYTHONPATH`` = its ``src``, its own directory as the working directory), the new
tree's script with this package. Both use the same virtualenv, so only pilothouse
differs: the server, and the load generator that measures it. In-process benchmarks
whose timed work is single-threaded (generation_cost) are timed by CPU time in both
trees (``cpu_clock/``); push_cost reads the process's CPU time itself. Admission
control is off on both sides (``PILOTHOUSE_XDS_ADMISSION_RATE=0``; a tree without it
ignores the variable): it paces new streams at 250/s on purpose, which would make "1000
proxies connect" measure the limit instead of the code. ``admission_storm`` measures
the limit itself.

For every result both trees report (matched by its ``benchmark`` name) the headline
figure (the one ``run_all.py`` would show) is taken as the best of the rounds (the
slower rounds measure the neighbours), and
``ratio_to_baseline`` is old ÷ new for figures where lower is better (above 1: this
tree is faster). Each side's own in-run ratio to its floor (``ratio_to_baseline`` of
the inner benchmark, where it has one) is reported beside it: the floor is measured in
the very same run as the side, so it cancels most of the machine's noise.

Run: ``.venv/bin/python bench/tree_compare.py --old e841dfd`` (``--only
push_fanout,endpoint_churn``, ``--rounds 3``); one JSON line per compared result.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

HEADLINE_KEYS = (
    "pilothouse_event_p99_ms",
    "us_per_resource",
    "pilothouse_p99_beyond_debounce_ms",
    "pilothouse_kib_per_connection",
    "pilothouse_sync_seconds",
    "pilothouse_seconds",
    "us_per_object",
    "pilothouse_us_per_response",
    "pilothouse_us_per_ack",
)
"""Headline figures, tried in order (lower is better for every one of them)."""


@dataclass(frozen=True)
class Bench:
    """A benchmark script and the (smaller than default) arguments it is compared with."""

    name: str
    args: tuple[str, ...]
    timeout: float
    cpu_clock: bool = False
    """Time with the process's CPU clock (``cpu_clock/sitecustomize.py``): for in-process
    benchmarks whose timed work is single-threaded."""


BENCHES: tuple[Bench, ...] = (
    Bench("push_fanout", ("--runs", "3"), 900.0),
    Bench("endpoint_churn", ("--sizes", "500", "--duration", "10"), 900.0),
    Bench("generation_cost", ("--sample", "4"), 900.0, cpu_clock=True),
    Bench("mcp_sync", ("--sizes", "10000", "--floor-runs", "1"), 900.0),
    Bench("push_cost", ("--rounds", "5", "--ack-repeats", "5"), 900.0),
)


def headline_key(result: Mapping[str, Any]) -> str | None:
    named = result.get("headline")
    if isinstance(named, str) and named in result:
        return named
    for pattern in HEADLINE_KEYS:
        for key, value in result.items():
            if fnmatch.fnmatchcase(key, pattern) and isinstance(value, int | float):
                return key
    return None


@contextlib.contextmanager
def old_tree(revision: str) -> Iterator[Path]:
    """A detached worktree of ``revision``, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="pilothouse-old-") as scratch:
        path = Path(scratch) / "tree"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(path), revision],
            check=True,
        )
        try:
            yield path
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)],
                check=False,
            )


def run_once(tree: Path, bench: Bench) -> list[dict[str, Any]]:
    """The JSON results of one run of ``bench`` from ``tree`` (its package first on the path)."""
    environment = dict(os.environ)
    path = [str(tree / "src"), str(tree)]
    if bench.cpu_clock:
        path.append(str(HERE / "cpu_clock"))
    environment["PYTHONPATH"] = os.pathsep.join(path)
    environment["PILOTHOUSE_XDS_ADMISSION_RATE"] = "0"
    completed = subprocess.run(
        [sys.executable, str(tree / "bench" / f"{bench.name}.py"), *bench.args],
        cwd=tree,
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=bench.timeout,
        check=False,
    )
    results = []
    for line in completed.stdout.splitlines():
        if line.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                results.append(json.loads(line))
    if completed.returncode or not results:
        tail = "\n".join(completed.stderr.splitlines()[-15:])
        print(f"{bench.name} from {tree}: exit {completed.returncode}\n{tail}", file=sys.stderr)
    return [r for r in results if "error" not in r]


def compare(
    bench: Bench,
    old: Sequence[list[dict[str, Any]]],
    new: Sequence[list[dict[str, Any]]],
    revision: str,
) -> Iterator[dict[str, Any]]:
    """One comparison per result name both trees reported in every round."""
    names = [r["benchmark"] for r in (new[0] if new else [])]
    for name in names:
        olds = [r for run in old for r in run if r["benchmark"] == name]
        news = [r for run in new for r in run if r["benchmark"] == name]
        if not olds or not news:
            continue
        key = headline_key(news[0])
        if key is None or any(key not in r for r in olds):
            continue
        old_value = min(float(r[key]) for r in olds)
        new_value = min(float(r[key]) for r in news)
        entry: dict[str, Any] = {
            "benchmark": f"tree_compare: {name}",
            "headline": f"new_{key}",
            "baseline": f"the tree at {revision}, run alternately in the same run",
            "rounds": len(news),
            "script_args": " ".join(bench.args) or "(defaults)",
            f"old_{key}": round(old_value, 3),
            f"new_{key}": round(new_value, 3),
            "old_each": [r[key] for r in olds],
            "new_each": [r[key] for r in news],
            "ratio_to_baseline": round(old_value / new_value, 3) if new_value else None,
            "ratio_definition": "old ÷ new (above 1: this tree is faster or leaner)",
            "target": "no regression (ratio ≥ 1 within the rounds' spread)",
        }
        floor_old = [r["ratio_to_baseline"] for r in olds if "ratio_to_baseline" in r]
        floor_new = [r["ratio_to_baseline"] for r in news if "ratio_to_baseline" in r]
        if floor_old and floor_new:
            entry["old_ratio_to_own_baseline"] = statistics.median(floor_old)
            entry["new_ratio_to_own_baseline"] = statistics.median(floor_new)
            entry["own_baseline"] = news[0].get("baseline", "")
        yield entry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", default="e841dfd", help="git revision of the older tree")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", help="comma-separated benchmark names")
    options = parser.parse_args()
    chosen = [b for b in BENCHES if not options.only or b.name in options.only.split(",")]
    with old_tree(options.old) as tree:
        for bench in chosen:
            if not (tree / "bench" / f"{bench.name}.py").exists():
                print(f"{bench.name}: not in the tree at {options.old}; skipped", file=sys.stderr)
                continue
            old_runs: list[list[dict[str, Any]]] = []
            new_runs: list[list[dict[str, Any]]] = []
            for _ in range(options.rounds):
                old_runs.append(run_once(tree, bench))
                new_runs.append(run_once(ROOT, bench))
            for entry in compare(bench, old_runs, new_runs, options.old):
                print(json.dumps(entry), flush=True)


if __name__ == "__main__":
    main()
