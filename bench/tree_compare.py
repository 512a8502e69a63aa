"""Benchmark: this tree against an older one, the same benchmarks interleaved in one run.

A refactoring must not cost speed, and on a shared machine only figures taken side by
side say so. This checks the tree at ``--old`` (a git revision) out into a temporary
worktree, then runs each chosen benchmark script ``--rounds`` times from each tree, the
two interleaved and the order flipped every round (old, new, new, old, old, new, …), so
neither tree always runs first or always runs after the other: the old tree's own script
with the old package (``PYTHONPATH`` = its ``src``, its own directory as the working
directory), the new tree's script with this package. Both use the same virtualenv, so
only pilothouse differs: the server, and the load generator that measures it.
In-process benchmarks whose timed work is single-threaded (generation_cost) are timed
by CPU time in both trees (``cpu_clock/``); push_cost reads the process's CPU time
itself. Admission control is off on both sides (``PILOTHOUSE_XDS_ADMISSION_RATE=0``; a
tree without it ignores the variable): it paces new streams at 250/s on purpose, which
would make "1000 proxies connect" measure the limit instead of the code.
``admission_storm`` measures the limit itself.

For every result both trees report (matched by its ``benchmark`` name) the headline
figure (the one ``run_all.py`` would show) is compared round by round: each round's
ratio is old ÷ new of the two runs taken back to back (lower is better for every
headline: above 1, this tree is faster), so a neighbour that loads the machine for a
while slows both sides of the rounds it spans instead of one tree's figure.
``ratio_to_baseline`` is the median of the rounds' ratios and ``ratio_spread`` their
lowest and highest; ``verdict`` says "regression beyond spread" when even the median
plus half the spread stays below 1, "faster beyond spread" when the median minus half
the spread stays above 1, and "no regression beyond spread" otherwise (``target_met``
is "no" only for a regression beyond spread). Each side's own
in-run ratio to its floor (``ratio_to_baseline`` of the inner benchmark, where it has
one) is reported beside it, median of the rounds: the floor is measured in the very same
run as the side, so it cancels most of the machine's noise.

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
    Bench("connect_storm", ("--sizes", "1000", "--runs", "1"), 900.0),
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


REGRESSION = "regression beyond spread"

Round = list[dict[str, Any]]
"""One run's JSON results."""


def old_first(round_number: int) -> bool:
    """Whether round ``round_number`` (from 0) runs the old tree first: every other one."""
    return round_number % 2 == 0


def verdict(ratios: Sequence[float]) -> str:
    """What the rounds' old ÷ new ratios say, given their spread (see the module doc)."""
    middle = statistics.median(ratios)
    half_spread = (max(ratios) - min(ratios)) / 2
    if middle + half_spread < 1:
        return REGRESSION
    if middle - half_spread > 1:
        return "faster beyond spread"
    return "no regression beyond spread"


def compare(
    bench: Bench, old: Sequence[Round], new: Sequence[Round], revision: str
) -> Iterator[dict[str, Any]]:
    """One comparison per result name both trees reported, paired round by round (a
    round where one side lacks the result is left out)."""
    names = list(dict.fromkeys(r["benchmark"] for run in new for r in run))
    for name in names:
        pairs = [
            (mine, theirs)
            for old_run, new_run in zip(old, new, strict=True)
            if (mine := _named(old_run, name)) is not None
            and (theirs := _named(new_run, name)) is not None
        ]
        if not pairs:
            continue
        key = headline_key(pairs[0][1])
        pairs = [(o, n) for o, n in pairs if key is not None and key in o and key in n]
        if key is None or not pairs:
            continue
        olds = [float(o[key]) for o, _ in pairs]
        news = [float(n[key]) for _, n in pairs]
        ratios = [round(o / n, 3) for o, n in zip(olds, news, strict=True) if n]
        if not ratios:
            continue
        entry: dict[str, Any] = {
            "benchmark": f"tree_compare: {name}",
            "headline": f"new_{key}",
            "baseline": f"the tree at {revision}, interleaved with this one in the same run",
            "rounds": len(pairs),
            "script_args": " ".join(bench.args) or "(defaults)",
            f"old_{key}": round(statistics.median(olds), 3),
            f"new_{key}": round(statistics.median(news), 3),
            "old_each": olds,
            "new_each": news,
            "ratio_each": ratios,
            "ratio_to_baseline": round(statistics.median(ratios), 3),
            "ratio_spread": [min(ratios), max(ratios)],
            "ratio_definition": (
                "old ÷ new per round (the two runs back to back), median of the rounds "
                "(above 1: this tree is faster or leaner)"
            ),
            "target": "no regression beyond the rounds' spread",
            "verdict": verdict(ratios),
        }
        entry["target_met"] = "no" if entry["verdict"] == REGRESSION else "yes"
        floor_old = [o["ratio_to_baseline"] for o, _ in pairs if "ratio_to_baseline" in o]
        floor_new = [n["ratio_to_baseline"] for _, n in pairs if "ratio_to_baseline" in n]
        if floor_old and floor_new:
            entry["old_ratio_to_own_baseline"] = statistics.median(floor_old)
            entry["new_ratio_to_own_baseline"] = statistics.median(floor_new)
            entry["own_baseline"] = pairs[0][1].get("baseline", "")
        yield entry


def _named(run: Round, name: str) -> dict[str, Any] | None:
    return next((r for r in run if r.get("benchmark") == name), None)


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
            old_runs: list[Round] = []
            new_runs: list[Round] = []
            for number in range(options.rounds):
                if old_first(number):
                    old_runs.append(run_once(tree, bench))
                    new_runs.append(run_once(ROOT, bench))
                else:
                    new_runs.append(run_once(ROOT, bench))
                    old_runs.append(run_once(tree, bench))
            for entry in compare(bench, old_runs, new_runs, options.old):
                print(json.dumps(entry), flush=True)


if __name__ == "__main__":
    main()
