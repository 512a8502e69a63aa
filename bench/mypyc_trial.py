"""Benchmark trial: the per-connection stream engine compiled with mypyc, against the same
tree in pure Python, in the same run (issue #17, item 6).

The engine's modules (``ENGINE``: the xDS stream engine and its protocol flavours, the
connection, its outbound queue and writer, the per-connection resources, the push workers
and queue, the request parser and the latency histogram: the modules a profile of
``push_cost.py`` shows on the per-response and per-ACK paths) are compiled with mypyc into
a copy of ``src/pilothouse`` in a temporary directory; nothing is built in the source tree.
A child run with ``PYTHONPATH`` set to that copy imports the compiled engine (each child
first checks which it got); one without imports the source tree. Then, alternating the
two (pure, compiled, compiled, pure, …) so both see the same machine:

- ``push_cost.py`` in process (no gRPC): µs of server CPU per response, written and ACKed,
  for an EDS and a CDS change to every proxy, and per no-op ACK; each run's own floor
  figure beside it;
- ``push_fanout.py`` end to end (``pilothouse serve`` in its own process, gRPC, the
  transport floor in the same run): the server's CPU per push for the same changes, and
  it over the floor's.

Reported: the build's wall and CPU seconds (what it would add to ``make install``, one
core's gcc; ``--jobs``), the figures of both sides and compiled ÷ pure (median over the
paired runs), with the keep rule the issue sets: end-to-end server CPU per push (over the
floor's in the same run) down by at least 10 % and the build at most about 20 s.

Run: ``.venv/bin/python bench/mypyc_trial.py`` (``--proxies 1000 --runs 2``); one JSON
line per figure group. ``--keep DIR`` builds into (and leaves) ``DIR``; ``--built DIR``
measures that build again without rebuilding it (its build not timed), ``--scripts`` picks
the scripts.

Measured once (2026-11-29, 2 shared cores, 1,000 proxies): compiled ÷ pure 0.79 in
process, 0.90–0.96 end to end, a 42 s build; not kept (``docs/guides/scale.md``,
"Compiling the stream engine").
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.figures import emit, note

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
ENGINE: tuple[str, ...] = (
    "xds/protocol/*.py",
    "xds/server/connection.py",
    "xds/server/outbound.py",
    "xds/server/writer.py",
    "xds/server/proxy_resources.py",
    "push/workers.py",
    "push/queue.py",
    "push/slots.py",
    "protocol/request_bytes.py",
    "metrics/histogram.py",
)
"""The compiled modules (globs under ``src/pilothouse``; package ``__init__`` files stay
Python). Left out on purpose: ``push/proxy_push.py`` and ``push/pipeline.py``, which
``push_cost.py`` replaces functions of (a compiled module's functions cannot be)."""
PROBE = "pilothouse.xds.server.connection"
"""A compiled module whose file tells a child which engine it imported."""
KEEP_DROP = 0.10
"""Keep the build only if end-to-end server CPU per push drops at least this much…"""
KEEP_BUILD_SECONDS = 20.0
"""…and the build adds at most this many seconds to ``make install``."""
SETUP = """
import sys
from setuptools import setup
from mypyc.build import mypycify

setup(
    name="pilothouse-engine-trial",
    ext_modules=mypycify(sys.argv[1:], opt_level="3", group_name="pilothouse_engine"),
    script_args=["build_ext", "--inplace", "--parallel", "{jobs}"],
)
"""
"""The setuptools build a child runs in the copy (``--parallel``: gcc jobs)."""


@dataclass(frozen=True)
class Build:
    tree: Path
    modules: tuple[str, ...]
    wall_seconds: float
    cpu_seconds: float


def engine_files(src: Path) -> list[str]:
    """The engine's module files, relative to ``src`` (the directory holding pilothouse)."""
    package = src / "pilothouse"
    found = [p for pattern in ENGINE for p in sorted(package.glob(pattern))]
    return [str(p.relative_to(src)) for p in found if p.name != "__init__.py"]


def mypy_config() -> str:
    """The repository's ``[tool.mypy]`` tables alone (the build copy has no setuptools
    tables: those would send the extensions to ``src/``)."""
    text = (ROOT / "pyproject.toml").read_text()
    tables = re.split(r"\n(?=\[)", text)
    return "\n".join(t for t in tables if t.lstrip("[").startswith("tool.mypy")) + "\n"


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def build(tree: Path, jobs: int) -> Build:
    """Copy ``src/pilothouse`` into ``tree`` and compile the engine there."""
    shutil.copytree(
        ROOT / "src" / "pilothouse",
        tree / "pilothouse",
        ignore=shutil.ignore_patterns("__pycache__", "*.so"),
    )
    (tree / "pyproject.toml").write_text(mypy_config())
    files = engine_files(tree)
    note(f"mypyc_trial: compiling {len(files)} modules into {tree}")
    cpu, started = children_cpu(), time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", SETUP.format(jobs=jobs), *files],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"the mypyc build failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    modules = tuple(f[:-3].replace("/", ".") for f in files)
    return Build(tree, modules, wall, children_cpu() - cpu)


def environment(tree: Path | None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return env


def check_engine(tree: Path | None) -> None:
    """Fail unless a child with this environment imports the engine it should."""
    done = subprocess.run(
        [sys.executable, "-c", f"import {PROBE} as m; print(m.__file__)"],
        env=environment(tree),
        capture_output=True,
        text=True,
        check=True,
    )
    path = done.stdout.strip()
    compiled = path.endswith(".so")
    if compiled != (tree is not None) or (tree is not None and not path.startswith(str(tree))):
        raise RuntimeError(f"{PROBE} came from {path}: not the engine this side measures")


def run_script(name: str, argv: Sequence[str], tree: Path | None, timeout: float) -> list[Any]:
    """One run of ``bench/<name>.py``: its JSON figure lines."""
    side = "compiled" if tree else "pure"
    note(f"mypyc_trial: {name} {' '.join(argv)} ({side})")
    done = subprocess.run(
        [sys.executable, str(BENCH / f"{name}.py"), *argv],
        env=environment(tree),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{name} ({side}) failed:\n{done.stderr[-3000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def alternated(runs: int) -> Iterator[tuple[int, bool]]:
    """(run, compiled?) in the order pure, compiled, compiled, pure, pure, compiled, …"""
    for index in range(runs):
        order = (False, True) if index % 2 == 0 else (True, False)
        for compiled in order:
            yield index, compiled


def line_of(lines: list[Any], prefix: str) -> dict[str, Any]:
    for line in lines:
        if line["benchmark"].startswith(prefix):
            return dict(line)
    raise LookupError(f"no figure group {prefix!r}")


def share(part: float, whole: float) -> float:
    """``part`` ÷ ``whole``; NaN where a tiny run measured no CPU at all."""
    return part / whole if whole else math.nan


def paired(pure: list[float], compiled: list[float]) -> dict[str, Any]:
    """Both sides' medians and compiled ÷ pure, median over the paired runs."""
    ratios = [share(c, p) for p, c in zip(pure, compiled, strict=True)]
    return {
        "pure": round(statistics.median(pure), 2),
        "compiled": round(statistics.median(compiled), 2),
        "compiled_to_pure": round(statistics.median(ratios), 3),
        "compiled_to_pure_per_run": [round(r, 3) for r in ratios],
    }


SERVER_CPU = "pilothouse_server_cpu_ms_per_push"
FIGURES: dict[str, tuple[str, str, str, str | None]] = {
    "in_process_eds_us_per_response": (
        "push_cost", "push_cost: EDS", "pilothouse_us_per_response", None,
    ),
    "in_process_cds_us_per_response": (
        "push_cost", "push_cost: CDS", "pilothouse_us_per_response", None,
    ),
    "in_process_floor_eds_us_per_response": (
        "push_cost", "push_cost: EDS", "floor_us_per_response", None,
    ),
    "in_process_noop_ack_us": ("push_cost", "push_cost: an ACK", "pilothouse_us_per_ack", None),
    "server_eds_cpu_ms_per_push": ("push_fanout", "push_fanout: EDS", SERVER_CPU, None),
    "server_cds_cpu_ms_per_push": ("push_fanout", "push_fanout: CDS", SERVER_CPU, None),
    "server_eds_cpu_times_floor": (
        "push_fanout", "push_fanout: EDS", SERVER_CPU, "floor_server_cpu_ms_per_push",
    ),
    "server_cds_cpu_times_floor": (
        "push_fanout", "push_fanout: CDS", SERVER_CPU, "floor_server_cpu_ms_per_push",
    ),
}  # fmt: skip
"""Figure → (script, its figure group's prefix, the key read from it, the key it is
divided by: the floor's figure in the same run, or none)."""


def script_args(options: argparse.Namespace) -> dict[str, tuple[str, ...]]:
    """The scripts ``--scripts`` names, with their command lines."""
    every = {
        "push_cost": (
            "--proxies", str(options.proxies), "--rounds", str(options.rounds),
            "--ack-repeats", "3",
        ),
        "push_fanout": ("--proxies", str(options.proxies), "--runs", str(options.fanout_runs)),
    }  # fmt: skip
    return {name: every[name] for name in options.scripts.split(",")}


def figures_of(results: dict[tuple[str, bool], list[list[Any]]]) -> dict[str, Any]:
    """Every figure of the scripts that ran, paired over the runs."""
    figures: dict[str, Any] = {}
    for figure, (name, prefix, key, divisor) in FIGURES.items():
        if (name, False) not in results:
            continue
        sides = []
        for compiled in (False, True):
            values = []
            for lines in results[(name, compiled)]:
                line = line_of(lines, prefix)
                values.append(share(float(line[key]), float(line[divisor]) if divisor else 1.0))
            sides.append(values)
        figures[figure] = paired(*sides)
    return figures


def trial(options: argparse.Namespace, built: Build) -> list[dict[str, Any]]:
    check_engine(None)
    check_engine(built.tree)
    results: dict[tuple[str, bool], list[list[Any]]] = {}
    for name, argv in script_args(options).items():
        for _, compiled in alternated(options.runs):
            tree = built.tree if compiled else None
            results.setdefault((name, compiled), []).append(
                run_script(name, argv, tree, options.timeout)
            )
    figures = figures_of(results)
    lines: list[dict[str, Any]] = [
        {
            "benchmark": f"mypyc_trial: the stream engine compiled ({len(built.modules)} "
            "modules), build",
            "baseline": "none (what the build adds to make install)",
            "modules": list(built.modules),
            "build_wall_seconds": round(built.wall_seconds, 1) if built.wall_seconds else "—",
            "build_cpu_seconds": round(built.cpu_seconds, 1) if built.cpu_seconds else "—",
            "ratio_to_baseline": "—",
        },
    ]
    verdict: dict[str, Any] = {"target": "—", "target_met": "—", "ratio_to_baseline": "—"}
    if "server_eds_cpu_times_floor" in figures:
        worse = max(
            figures["server_eds_cpu_times_floor"]["compiled_to_pure"],
            figures["server_cds_cpu_times_floor"]["compiled_to_pure"],
        )
        drop = 1 - worse
        verdict = {
            "headline": "server CPU per push over the floor's, compiled ÷ pure (the worse of "
            "EDS and CDS)",
            "ratio_to_baseline": round(worse, 3),
            "ratio_definition": "compiled ÷ pure of the server's CPU per push over the floor's "
            "in the same run (push_fanout), median over the paired runs, the larger of EDS "
            "and CDS",
            "target": f"keep only if server CPU per push drops ≥ {KEEP_DROP:.0%} and the build "
            f"adds ≤ {KEEP_BUILD_SECONDS:.0f} s",
            "target_met": met(drop, built),
        }
    lines.append(
        {
            "benchmark": f"mypyc_trial: compiled vs pure Python ({options.proxies} proxies, "
            f"{options.runs} runs each, alternated)",
            "baseline": "the same tree in pure Python, runs alternated with the compiled one's",
            **figures,
            **verdict,
        }
    )
    return lines


def met(drop: float, built: Build) -> str:
    """The keep rule's verdict (a reused build was not timed: only its speed is judged)."""
    timed = built.wall_seconds > 0
    build = f"build {built.wall_seconds:.0f} s wall ({built.cpu_seconds:.0f} s CPU)"
    if drop >= KEEP_DROP and timed and built.wall_seconds <= KEEP_BUILD_SECONDS:
        return f"yes: keep (server CPU per push down {drop:.1%}, {build})"
    if drop >= KEEP_DROP and not timed:
        return f"not judged: server CPU per push down {drop:.1%}, build reused (not timed)"
    return f"no: server CPU per push down {drop:.1%}, " + (build if timed else "build not timed")


def reused(tree: Path) -> Build:
    """A tree built by an earlier ``--keep`` run (its build not timed again)."""
    files = engine_files(tree)
    missing = [f for f in files if not list((tree / f).parent.glob(Path(f).stem + ".*.so"))]
    if missing:
        raise RuntimeError(f"{tree} holds no compiled {', '.join(missing)}")
    return Build(tree, tuple(f[:-3].replace("/", ".") for f in files), 0.0, 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--proxies", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=2, help="runs of each script per side")
    parser.add_argument("--rounds", type=int, default=4, help="push_cost rounds per run")
    parser.add_argument("--fanout-runs", type=int, default=3, help="push_fanout pushes per run")
    parser.add_argument("--scripts", default="push_cost,push_fanout", help="which to run")
    parser.add_argument("--jobs", type=int, default=1, help="gcc jobs for the build")
    parser.add_argument("--timeout", type=float, default=900.0, help="per script run, seconds")
    parser.add_argument("--keep", type=Path, help="build into this new directory and leave it")
    parser.add_argument("--built", type=Path, help="reuse the tree an earlier --keep built")
    options = parser.parse_args()
    if options.built:
        emit(trial(options, reused(options.built)))
        return
    with tempfile.TemporaryDirectory(prefix="mypyc-trial-") as scratch:
        tree = options.keep or Path(scratch)
        emit(trial(options, build(tree, options.jobs)))


if __name__ == "__main__":
    main()
